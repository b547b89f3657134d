// RUN: sparsecc-opt %s -p "convert-tt-to-ttg{num-warps=4 target=sm_80},convert-ttg-to-ptx" | filecheck %s
// An argmax as Triton writes it: a two-operand tt.reduce (values, indices) whose combine
// region keeps the larger value, or on a tie the smaller index. The lowering inlines the
// region for each combination: in-thread, after each butterfly (both the value and the index
// are shuffled), and after the cross-warp exchange, which moves two words per warp (the value
// plane at 0, the index plane 16 bytes further).

// CHECK:      shared = 128 : i64
// CHECK:      arith.cmpf ogt
// CHECK:      arith.cmpf oeq
// CHECK:      arith.cmpi slt
// CHECK:      arith.select
// CHECK:      "ptx.asm"({{.*}}) <{template = "shfl.sync.bfly.b32 $0, $1, 1, 0x1f, -1;"}> : (f32) -> f32
// CHECK-NEXT: "ptx.asm"({{.*}}) <{template = "shfl.sync.bfly.b32 $0, $1, 1, 0x1f, -1;"}> : (i32) -> i32
// CHECK:      "ptx.asm"({{.*}}) <{template = "shfl.sync.bfly.b32 $0, $1, 16, 0x1f, -1;"}> : (f32) -> f32
// CHECK-NEXT: "ptx.asm"({{.*}}) <{template = "shfl.sync.bfly.b32 $0, $1, 16, 0x1f, -1;"}> : (i32) -> i32
// CHECK:      "ptx.st.shared"({{.*}}) <{offset = 0 : i64, {{.*}}}> : (i32, f32, i1) -> ()
// CHECK-NEXT: "ptx.st.shared"({{.*}}) <{offset = 16 : i64, {{.*}}}> : (i32, i32, i1) -> ()
// CHECK-NEXT: "ptx.bar.sync"() <{barrier = 0 : i32}> : () -> ()
// CHECK:      = "ptx.ld.shared"({{.*}}) <{offset = 0 : i64, {{.*}}}> : (i32) -> (f32, f32, f32, f32)
// CHECK:      = "ptx.ld.shared"({{.*}}) <{offset = 16 : i64, {{.*}}}> : (i32) -> (i32, i32, i32, i32)
// CHECK:      "ptx.st.global"

builtin.module {
  tt.func public @argmax(%X: !tt.ptr<f32>, %I: !tt.ptr<i32>) {
    %c0 = arith.constant 0 : i32
    %one = arith.constant 1 : i64
    %s1024 = arith.constant 1024 : i64
    %px = tt.make_tensor_ptr %X, shape=[%s1024], strides=[%one], offsets=[%c0] {order = array<i32: 0>} : !tt.ptr<tensor<1024xf32>>
    %x = tt.load %px : !tt.ptr<tensor<1024xf32>>
    %idx = tt.make_range {start = 0 : i32, end = 1024 : i32} : tensor<1024xi32>
    %v, %i = tt.reduce combine %x, %idx {axis = 0 : i32} : tensor<1024xf32>, tensor<1024xi32> -> f32, i32 ({
    ^bb0(%a: f32, %ia: i32, %b: f32, %ib: i32):
      %gt = arith.cmpf ogt, %a, %b : f32
      %eq = arith.cmpf oeq, %a, %b : f32
      %lt = arith.cmpi slt, %ia, %ib : i32
      %tie = arith.andi %eq, %lt : i1
      %take = arith.ori %gt, %tie : i1
      %rv = arith.select %take, %a, %b : f32
      %ri = arith.select %take, %ia, %ib : i32
      tt.reduce.return %rv, %ri : f32, i32
    })
    tt.store %I, %i : !tt.ptr<i32>
    tt.return
  }
}
