// RUN: sparsecc-opt %s -p sparse-gpu-encoding | filecheck %s

// Each convert of a loaded dot operand becomes local_alloc + local_load, with the shared
// layout of its meta class: values (32x32 f16, 64-byte rows) vec 8 / perPhase 2 / maxPhase 4;
// dense B (64x16 f16, 32-byte rows) vec 8 / perPhase 4 / maxPhase 2; metadata: metaPack.

// CHECK-NOT: ttg.convert_layout
// CHECK: %[[A:.*]] = ttg.local_alloc %a : (tensor<32x32xf16, {{.*}}>) -> !ttg.memdesc<32x32xf16, #ttg.shared<{vec = 8, perPhase = 2, maxPhase = 4, order = [1, 0]}>>
// CHECK-NEXT: ttg.local_load %[[A]] : {{.*}} -> tensor<32x32xf16, #ttg.dot_op<{opIdx = 0, parent = #ttg.mma<{{.*}}>, kWidth = 2, meta = 0}>>
// CHECK-NEXT: %[[B:.*]] = ttg.local_alloc %b : (tensor<64x16xf16, {{.*}}>) -> !ttg.memdesc<64x16xf16, #ttg.shared<{vec = 8, perPhase = 4, maxPhase = 2, order = [1, 0]}>>
// CHECK-NEXT: ttg.local_load %[[B]] : {{.*}} -> tensor<64x16xf16, #ttg.dot_op<{opIdx = 1, parent = #ttg.mma<{{.*}}>, kWidth = 2}>>
// CHECK-NEXT: %[[E:.*]] = ttg.local_alloc %e : (tensor<2x64xi16, {{.*}}>) -> !ttg.memdesc<2x64xi16, #ttg.shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [1, 0], metaPack = 1}>>
// CHECK-NEXT: ttg.local_load %[[E]] : {{.*}} -> tensor<2x64xi16, #ttg.dot_op<{opIdx = 0, parent = #ttg.mma<{{.*}}>, kWidth = 2, meta = 1}>>
// CHECK-NEXT: tt.dot
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
