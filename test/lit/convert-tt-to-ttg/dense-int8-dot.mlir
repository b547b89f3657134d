// RUN: sparsecc-opt %s -p convert-tt-to-ttg | filecheck %s
// A dense int8 dot (no 2:4 operand, i32 accumulator) has no 8-bit mma lowering: it becomes an
// fp16 dot from 0.0 whose fp32 sum is exact (|sum| <= K * 2^14 <= 2^24 for K <= 1024), converted
// to i32 and added to the accumulator. It used to be refused ("a dense i8 tl.dot has no GPU
// lowering"); torchao's int8 matmul writes such dots.

// CHECK:      arith.sitofp %{{.*}} : tensor<32x64xi8, {{.*}}> to tensor<32x64xf16
// CHECK:      arith.sitofp %{{.*}} : tensor<64x32xi8, {{.*}}> to tensor<64x32xf16
// CHECK:      tt.dot {{.*}} -> tensor<32x32xf32
// CHECK:      arith.fptosi %{{.*}} : tensor<32x32xf32, {{.*}}> to tensor<32x32xi32
// CHECK:      arith.addi %{{.*}} : tensor<32x32xi32
// CHECK-NOT:  tt.dot
builtin.module {
  tt.func public @int8_dot(%A: !tt.ptr<i8>, %B: !tt.ptr<i8>) {
    %a = tt.splat %A : !tt.ptr<i8> -> tensor<32x64x!tt.ptr<i8>>
    %b = tt.splat %B : !tt.ptr<i8> -> tensor<64x32x!tt.ptr<i8>>
    %x = tt.load %a : tensor<32x64x!tt.ptr<i8>>
    %y = tt.load %b : tensor<64x32x!tt.ptr<i8>>
    %c = arith.constant dense<0> : tensor<32x32xi32>
    %d = tt.dot %x, %y, %c : tensor<32x64xi8> * tensor<64x32xi8> -> tensor<32x32xi32>
    tt.return
  }
}
