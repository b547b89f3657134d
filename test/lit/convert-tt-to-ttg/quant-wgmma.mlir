// RUN: sparsecc-opt %s -p "decompose-sparse-tensors,convert-tt-to-ttg{num-warps=4 target=sm_90a quant-wgmma=true}" | filecheck %s
// RUN: sparsecc-opt %s -p "decompose-sparse-tensors,convert-tt-to-ttg{num-warps=4 target=sm_90a}" | filecheck %s --check-prefix=OFF
// RUN: sparsecc-opt %s -p "decompose-sparse-tensors,convert-tt-to-ttg{num-warps=4 target=sm_80 quant-wgmma=true}" | filecheck %s --check-prefix=OFF

// sparse_linear's product W x^T with a quantized W: the dequantized A (64 rows x 128 of K) and a
// K-major B (x^T, order [0, 1]) whose rows of 128 f16 are two 128-byte column blocks. With
// quant-wgmma on sm_90a the dot is a warpgroup MMA (version 3, one m64n64 block, the A
// fragments built in registers, its scales loaded in the accumulator layout: each thread the
// scales of its own fragment rows); without it, or on sm_80, it stays on mma.sp with its warps
// along M and blocked scales.

// CHECK: %pw_scales = tt.make_tensor_ptr {{.*}} !tt.ptr<tensor<64x1xf16, #ttg.mma<{versionMajor = 3, warpsPerCTA = [4, 1], instrShape = [64, 64]}>>>
// OFF: %pw_scales = tt.make_tensor_ptr {{.*}} !tt.ptr<tensor<64x1xf16, #ttg.blocked
// CHECK: tt.dequantize
// CHECK: tt.dot {{.*}} -> tensor<64x64xf32, #ttg.mma<{versionMajor = 3, warpsPerCTA = [4, 1], instrShape = [64, 64]}>>
// OFF: tt.dot {{.*}} -> tensor<64x64xf32, #ttg.mma<{versionMajor = 2, warpsPerCTA = [4, 1], instrShape = [16, 8]}>>
builtin.module {
  tt.func public @linear(%Y: !tt.ptr<f16>, %W: !tt.ptr<f16, #tt.sparse<"NV24.w4g128">>, %X: !tt.ptr<f16>, %m: i64, %n: i64, %k: i64, %sw: i64, %sx: i64, %ow: i32, %niter: i32) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %one = arith.constant 1 : i64
    %pw = tt.make_tensor_ptr %W, shape=[%n, %k], strides=[%sw, %one], offsets=[%ow, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<64x128xf16, #tt.sparse<"NV24.w4g128">>>
    %px = tt.make_tensor_ptr %X, shape=[%k, %m], strides=[%one, %sx], offsets=[%c0, %c0] {order = array<i32: 0, 1>} : !tt.ptr<tensor<128x64xf16>>
    %zero = arith.constant dense<0.000000e+00> : tensor<64x64xf32>
    %acc, %w_end, %x_end = scf.for %i = %c0 to %niter step %c1 iter_args(%acc_i = %zero, %pw_i = %pw, %px_i = %px) -> (tensor<64x64xf32>, !tt.ptr<tensor<64x128xf16, #tt.sparse<"NV24.w4g128">>>, !tt.ptr<tensor<128x64xf16>>) : i32 {
      %w = tt.load %pw_i {boundaryCheck = array<i32: 0, 1>, padding = 1 : i32} : !tt.ptr<tensor<64x128xf16, #tt.sparse<"NV24.w4g128">>>
      %x = tt.load %px_i {boundaryCheck = array<i32: 0, 1>, padding = 1 : i32} : !tt.ptr<tensor<128x64xf16>>
      %d = tt.dot %w, %x, %acc_i : tensor<64x128xf16, #tt.sparse<"NV24.w4g128">> * tensor<128x64xf16> -> tensor<64x64xf32>
      %c128 = arith.constant 128 : i32
      %pw_n = tt.advance %pw_i, [%c0, %c128] : !tt.ptr<tensor<64x128xf16, #tt.sparse<"NV24.w4g128">>>
      %px_n = tt.advance %px_i, [%c128, %c0] : !tt.ptr<tensor<128x64xf16>>
      scf.yield %d, %pw_n, %px_n : tensor<64x64xf32>, !tt.ptr<tensor<64x128xf16, #tt.sparse<"NV24.w4g128">>>, !tt.ptr<tensor<128x64xf16>>
    }
    %py = tt.make_tensor_ptr %Y, shape=[%n, %m], strides=[%one, %n], offsets=[%ow, %c0] {order = array<i32: 0, 1>} : !tt.ptr<tensor<64x64xf16>>
    %h = arith.truncf %acc : tensor<64x64xf32> to tensor<64x64xf16>
    tt.store %py, %h {boundaryCheck = array<i32: 0, 1>} : !tt.ptr<tensor<64x64xf16>>
    tt.return
  }
}
