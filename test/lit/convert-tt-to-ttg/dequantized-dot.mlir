// RUN: sparsecc-opt %s -p "decompose-sparse-tensors,convert-tt-to-ttg{num-warps=4}" | filecheck %s
// RUN: sparsecc-opt %s -p "decompose-sparse-tensors,convert-tt-to-ttg{num-warps=4 dequant-warps-m=false}" | filecheck %s --check-prefix=GRID

// A dot whose A is a tt.dequantize puts its 4 warps along M (64 rows: 4 x 16), so no warp
// dequantizes rows another warp also dequantizes; dequant-warps-m=false gives the usual 2 x 2
// grid, whose warps along N share B.

// CHECK: tt.dequantize
// CHECK: tt.dot {{.*}} -> tensor<64x64xf32, #ttg.mma<{versionMajor = 2, warpsPerCTA = [4, 1], instrShape = [16, 8]}>>
// GRID: tt.dot {{.*}} -> tensor<64x64xf32, #ttg.mma<{versionMajor = 2, warpsPerCTA = [2, 2], instrShape = [16, 8]}>>
builtin.module {
  tt.func public @gemm(%D: !tt.ptr<f16>, %A: !tt.ptr<f16, #tt.sparse<"NV24.w4g64z">>, %B: !tt.ptr<f16>, %m: i64, %n: i64, %k: i64, %sm: i64, %om: i32, %niter: i32) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %one = arith.constant 1 : i64
    %pa = tt.make_tensor_ptr %A, shape=[%m, %k], strides=[%sm, %one], offsets=[%om, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<64x128xf16, #tt.sparse<"NV24.w4g64z">>>
    %pb = tt.make_tensor_ptr %B, shape=[%k, %n], strides=[%n, %one], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<128x64xf16>>
    %zero = arith.constant dense<0.000000e+00> : tensor<64x64xf32>
    %acc, %a_end, %b_end = scf.for %i = %c0 to %niter step %c1 iter_args(%acc_i = %zero, %pa_i = %pa, %pb_i = %pb) -> (tensor<64x64xf32>, !tt.ptr<tensor<64x128xf16, #tt.sparse<"NV24.w4g64z">>>, !tt.ptr<tensor<128x64xf16>>) : i32 {
      %a = tt.load %pa_i {boundaryCheck = array<i32: 0, 1>, padding = 1 : i32} : !tt.ptr<tensor<64x128xf16, #tt.sparse<"NV24.w4g64z">>>
      %b = tt.load %pb_i {boundaryCheck = array<i32: 0, 1>, padding = 1 : i32} : !tt.ptr<tensor<128x64xf16>>
      %d = tt.dot %a, %b, %acc_i : tensor<64x128xf16, #tt.sparse<"NV24.w4g64z">> * tensor<128x64xf16> -> tensor<64x64xf32>
      %c128 = arith.constant 128 : i32
      %pa_n = tt.advance %pa_i, [%c0, %c128] : !tt.ptr<tensor<64x128xf16, #tt.sparse<"NV24.w4g64z">>>
      %pb_n = tt.advance %pb_i, [%c128, %c0] : !tt.ptr<tensor<128x64xf16>>
      scf.yield %d, %pa_n, %pb_n : tensor<64x64xf32>, !tt.ptr<tensor<64x128xf16, #tt.sparse<"NV24.w4g64z">>>, !tt.ptr<tensor<128x64xf16>>
    }
    %pd = tt.make_tensor_ptr %D, shape=[%m, %n], strides=[%n, %one], offsets=[%om, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<64x64xf16>>
    %h = arith.truncf %acc : tensor<64x64xf32> to tensor<64x64xf16>
    tt.store %pd, %h {boundaryCheck = array<i32: 0, 1>} : !tt.ptr<tensor<64x64xf16>>
    tt.return
  }
}
