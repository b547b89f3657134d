// RUN: sparsecc-opt %s -p convert-tt-to-ttg{num-warps=4} | filecheck %s

// The decomposed seed-001 kernel: loads in #blocked (16-byte vectors along K), dot operands
// converted to #dot_op by class, accumulator and epilogue in #mma, no convert for the store.

// CHECK: builtin.module attributes {"ttg.num-warps" = 4 : i32, "ttg.threads-per-warp" = 32 : i32, ttg.target = "sm_90"}
// CHECK: tt.func public @dot_kernel(%arg0: !tt.ptr<f16>, %arg1: !tt.ptr<f16>, %arg2: !tt.ptr<i16>, %arg3: !tt.ptr<f16>)
// CHECK: %D = tt.make_tensor_ptr {{.*}} : !tt.ptr<tensor<32x16xf16, #ttg.mma<{versionMajor = 2, warpsPerCTA = [2, 2], instrShape = [16, 8]}>>>
// CHECK: %a = tt.load %A : !tt.ptr<tensor<32x32xf16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>>>
// CHECK: %e = tt.load %E : !tt.ptr<tensor<2x64xi16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>>>
// CHECK: %cst = arith.constant dense<0.000000e+00> : tensor<32x16xf32, #ttg.mma<{versionMajor = 2, warpsPerCTA = [2, 2], instrShape = [16, 8]}>>
// CHECK: ttg.convert_layout %a : {{.*}} -> tensor<32x32xf16, #ttg.dot_op<{opIdx = 0, parent = #ttg.mma<{versionMajor = 2, warpsPerCTA = [2, 2], instrShape = [16, 8]}>, kWidth = 2, meta = 0}>>
// CHECK: ttg.convert_layout %b : {{.*}} -> tensor<64x16xf16, #ttg.dot_op<{opIdx = 1, parent = #ttg.mma<{versionMajor = 2, warpsPerCTA = [2, 2], instrShape = [16, 8]}>, kWidth = 2}>>
// CHECK: ttg.convert_layout %e : {{.*}} -> tensor<2x64xi16, #ttg.dot_op<{opIdx = 0, parent = #ttg.mma<{versionMajor = 2, warpsPerCTA = [2, 2], instrShape = [16, 8]}>, kWidth = 2, meta = 1}>>
// CHECK: %d = tt.dot {{.*}}, sparseIndex = 0 : {{.*}} -> tensor<32x16xf32, #ttg.mma<{versionMajor = 2, warpsPerCTA = [2, 2], instrShape = [16, 8]}>>
// CHECK-NEXT: %t = arith.truncf %d : tensor<32x16xf32, #ttg.mma<{versionMajor = 2, warpsPerCTA = [2, 2], instrShape = [16, 8]}>> to tensor<32x16xf16, #ttg.mma<{versionMajor = 2, warpsPerCTA = [2, 2], instrShape = [16, 8]}>>
// CHECK-NEXT: tt.store %D, %t : !tt.ptr<tensor<32x16xf16, #ttg.mma<{versionMajor = 2, warpsPerCTA = [2, 2], instrShape = [16, 8]}>>>
// CHECK-NOT: ttg.convert_layout

builtin.module {
  tt.func public @dot_kernel(%arg0: !tt.ptr<f16>, %arg1: !tt.ptr<f16>, %arg2: !tt.ptr<i16>, %arg3: !tt.ptr<f16>) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i64
    %c2 = arith.constant 2 : i64
    %c16 = arith.constant 16 : i64
    %c32 = arith.constant 32 : i64
    %c64 = arith.constant 64 : i64
    %A = tt.make_tensor_ptr %arg1, shape=[%c32, %c32], strides=[%c32, %c1], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<32x32xf16>>
    %E = tt.make_tensor_ptr %arg2, shape=[%c2, %c64], strides=[%c64, %c1], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<2x64xi16>>
    %B = tt.make_tensor_ptr %arg3, shape=[%c64, %c16], strides=[%c16, %c1], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<64x16xf16>>
    %D = tt.make_tensor_ptr %arg0, shape=[%c32, %c16], strides=[%c16, %c1], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<32x16xf16>>
    %a = tt.load %A : !tt.ptr<tensor<32x32xf16>>
    %e = tt.load %E : !tt.ptr<tensor<2x64xi16>>
    %b = tt.load %B : !tt.ptr<tensor<64x16xf16>>
    %cst = arith.constant dense<0.000000e+00> : tensor<32x16xf32>
    %d = tt.dot %a, %b, %e, %cst, sparseIndex = 0 : tensor<32x32xf16>, tensor<2x64xi16> * tensor<64x16xf16> -> tensor<32x16xf32>
    %t = arith.truncf %d : tensor<32x16xf32> to tensor<32x16xf16>
    tt.store %D, %t : !tt.ptr<tensor<32x16xf16>>
    tt.return
  }
}
