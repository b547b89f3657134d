// RUN: sparsecc-opt %s -p "sparse-gpu-encoding,convert-ttg-to-ptx" | filecheck %s
// A sparse dot (covers handlers/dot.py and the #ttg.dot_op path of handlers/shared.py): the
// values, B and metadata tiles are staged through shared memory (sparse-gpu-encoding, input as
// in sparse-gpu-encoding/seed-kernel.mlir) and read back by ldmatrix into fragments (B and the
// metadata transposed); the 64-deep K step is two mma.sp (selector 0 and 1) sharing one
// metadata register, the second accumulating onto the first's results.

// CHECK:      [[A0:%.*]], [[A1:%.*]], [[A2:%.*]], [[A3:%.*]] = "ptx.ldmatrix"
// CHECK:      [[A4:%.*]], [[A5:%.*]], [[A6:%.*]], [[A7:%.*]] = "ptx.ldmatrix"
// CHECK:      [[B0:%.*]], [[B1:%.*]], [[B2:%.*]], [[B3:%.*]] = "ptx.ldmatrix"(%{{.*}}) <{trans}>
// CHECK:      [[B4:%.*]], [[B5:%.*]], [[B6:%.*]], [[B7:%.*]] = "ptx.ldmatrix"(%{{.*}}) <{trans}>
// CHECK:      [[E:%.*]] = "ptx.ldmatrix"(%{{.*}}) <{trans}> : (i32) -> i32
// CHECK-NEXT: [[C0:%.*]], [[C1:%.*]], [[C2:%.*]], [[C3:%.*]] = "ptx.mma.sp"([[A0]], [[A1]], [[A2]], [[A3]], [[B0]], [[B1]], [[B2]], [[B3]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, [[E]]) <{ab_type = "f16", selector = 0 : i32
// CHECK-NEXT: "ptx.mma.sp"([[A4]], [[A5]], [[A6]], [[A7]], [[B4]], [[B5]], [[B6]], [[B7]], [[C0]], [[C1]], [[C2]], [[C3]], [[E]]) <{ab_type = "f16", selector = 1 : i32
#mma = #ttg.mma<{versionMajor = 2, warpsPerCTA = [2, 2], instrShape = [16, 8]}>
#blocked = #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#blocked1 = #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
#blocked2 = #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [16, 2], warpsPerCTA = [4, 1], order = [1, 0]}>
#dot = #ttg.dot_op<{opIdx = 0, parent = #mma, kWidth = 2, meta = 0}>
#dot1 = #ttg.dot_op<{opIdx = 1, parent = #mma, kWidth = 2}>
#dot2 = #ttg.dot_op<{opIdx = 0, parent = #mma, kWidth = 2, meta = 1}>
builtin.module attributes {"ttg.num-warps" = 4 : i32, "ttg.threads-per-warp" = 32 : i32, ttg.target = "sm_90"} {
  tt.func public @dot_kernel(%arg0: !tt.ptr<f16>, %arg1: !tt.ptr<f16>, %arg2: !tt.ptr<i16>, %arg3: !tt.ptr<f16>) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i64
    %c2 = arith.constant 2 : i64
    %c16 = arith.constant 16 : i64
    %c32 = arith.constant 32 : i64
    %c64 = arith.constant 64 : i64
    %A = tt.make_tensor_ptr %arg1, shape=[%c32, %c32], strides=[%c32, %c1], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<32x32xf16, #blocked>>
    %E = tt.make_tensor_ptr %arg2, shape=[%c2, %c64], strides=[%c64, %c1], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<2x64xi16, #blocked1>>
    %B = tt.make_tensor_ptr %arg3, shape=[%c64, %c16], strides=[%c16, %c1], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<64x16xf16, #blocked2>>
    %D = tt.make_tensor_ptr %arg0, shape=[%c32, %c16], strides=[%c16, %c1], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<32x16xf16, #mma>>
    %a = tt.load %A : !tt.ptr<tensor<32x32xf16, #blocked>>
    %e = tt.load %E : !tt.ptr<tensor<2x64xi16, #blocked1>>
    %b = tt.load %B : !tt.ptr<tensor<64x16xf16, #blocked2>>
    %cst = arith.constant dense<0.000000e+00> : tensor<32x16xf32, #mma>
    %0 = ttg.convert_layout %a : tensor<32x32xf16, #blocked> -> tensor<32x32xf16, #dot>
    %1 = ttg.convert_layout %b : tensor<64x16xf16, #blocked2> -> tensor<64x16xf16, #dot1>
    %2 = ttg.convert_layout %e : tensor<2x64xi16, #blocked1> -> tensor<2x64xi16, #dot2>
    %d = tt.dot %0, %1, %2, %cst, sparseIndex = 0 : tensor<32x32xf16, #dot>, tensor<2x64xi16, #dot2> * tensor<64x16xf16, #dot1> -> tensor<32x16xf32, #mma>
    %t = arith.truncf %d : tensor<32x16xf32, #mma> to tensor<32x16xf16, #mma>
    tt.store %D, %t : !tt.ptr<tensor<32x16xf16, #mma>>
    tt.return
  }
}
