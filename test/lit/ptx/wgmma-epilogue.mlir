// RUN: sparsecc-opt %s -p "decompose-sparse-tensors,convert-tt-to-ttg{num-warps=4 target=sm_90a},sparse-gpu-encoding,tritongpu-pipeline{num-stages=2},tritongpu-sink-local-loads" --emit ptx | filecheck %s
// The epilogue of a wgmma GEMM (64x64 tile, all four warps along M): under the run-time test
// that 8-element vectors are aligned (the strides here are not known to be), each row's four
// 8-column chunks are transposed across the lane quad (shfl.sync.bfly by 1, then by 2) and
// stored as one 16-byte vector per lane (4 of them for 16 accumulator pairs); the fallback keeps
// the layout's own 4-byte and 2-byte stores.

// CHECK: .target sm_90a
// CHECK: wgmma.mma_async.sp.sync.aligned.m64n64k32.f32.f16.f16
// CHECK: @!%p[[OK:[0-9]+]] bra $L__else[[ELSE:[0-9]+]];
// CHECK-COUNT-2: shfl.sync.bfly.b32 %r{{[0-9]+}}, %r{{[0-9]+}}, 1, 0x1f, -1;
// CHECK-COUNT-2: shfl.sync.bfly.b32 %r{{[0-9]+}}, %r{{[0-9]+}}, 2, 0x1f, -1;
// CHECK: @%p{{[0-9]+}} st.global.v4.b32 [%rd{{[0-9]+}}], {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}};
// CHECK-COUNT-3: st.global.v4.b32
// CHECK-NOT: st.global.v4
// CHECK: $L__else[[ELSE]]:
// CHECK-NOT: shfl.sync
// CHECK: st.global.b32
// CHECK: ret;
builtin.module {
  tt.func public @gemm(%D: !tt.ptr<f16>, %A: !tt.ptr<f16, #tt.sparse<"NV24">>, %B: !tt.ptr<f16>, %m: i64, %n: i64, %k: i64, %sm: i64, %om: i32, %niter: i32) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %one = arith.constant 1 : i64
    %pa = tt.make_tensor_ptr %A, shape=[%m, %k], strides=[%sm, %one], offsets=[%om, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<64x64xf16, #tt.sparse<"NV24">>>
    %pb = tt.make_tensor_ptr %B, shape=[%k, %n], strides=[%n, %one], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<64x64xf16>>
    %zero = arith.constant dense<0.000000e+00> : tensor<64x64xf32>
    %acc, %a_end, %b_end = scf.for %i = %c0 to %niter step %c1 iter_args(%acc_i = %zero, %pa_i = %pa, %pb_i = %pb) -> (tensor<64x64xf32>, !tt.ptr<tensor<64x64xf16, #tt.sparse<"NV24">>>, !tt.ptr<tensor<64x64xf16>>) : i32 {
      %a = tt.load %pa_i {boundaryCheck = array<i32: 0, 1>, padding = 1 : i32} : !tt.ptr<tensor<64x64xf16, #tt.sparse<"NV24">>>
      %b = tt.load %pb_i {boundaryCheck = array<i32: 0, 1>, padding = 1 : i32} : !tt.ptr<tensor<64x64xf16>>
      %d = tt.dot %a, %b, %acc_i : tensor<64x64xf16, #tt.sparse<"NV24">> * tensor<64x64xf16> -> tensor<64x64xf32>
      %c64 = arith.constant 64 : i32
      %pa_n = tt.advance %pa_i, [%c0, %c64] : !tt.ptr<tensor<64x64xf16, #tt.sparse<"NV24">>>
      %pb_n = tt.advance %pb_i, [%c64, %c0] : !tt.ptr<tensor<64x64xf16>>
      scf.yield %d, %pa_n, %pb_n : tensor<64x64xf32>, !tt.ptr<tensor<64x64xf16, #tt.sparse<"NV24">>>, !tt.ptr<tensor<64x64xf16>>
    }
    %pd = tt.make_tensor_ptr %D, shape=[%m, %n], strides=[%n, %one], offsets=[%om, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<64x64xf16>>
    %h = arith.truncf %acc : tensor<64x64xf32> to tensor<64x64xf16>
    tt.store %pd, %h {boundaryCheck = array<i32: 0, 1>} : !tt.ptr<tensor<64x64xf16>>
    tt.return
  }
}
