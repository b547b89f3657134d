// RUN: sparsecc-opt %s -p "decompose-sparse-tensors,convert-tt-to-ttg{num-warps=4 target=sm_80},sparse-gpu-encoding,tritongpu-pipeline{num-stages=2},tritongpu-sink-local-loads" --emit ptx | filecheck %s
// RUN: not sparsecc-opt %s --emit ptx 2>&1 | filecheck %s --check-prefix=NOTTG
// The PTX printer at the end of the pipeline: a pipelined sparse K loop becomes cp.async copies
// into shared memory, ldmatrix loads (transposed for B and the metadata) and mma.sp with the
// ordered metadata, for the target named by the ttgir module.

// CHECK: .version 8.5
// CHECK-NEXT: .target sm_80
// CHECK-NEXT: .address_size 64
// CHECK: .extern .shared .align 16 .b8 smem[];
// CHECK: .visible .entry gemm(
// CHECK: cp.async.cg.shared.global [%r{{[0-9]+}}], [%rd{{[0-9]+}}], 16
// CHECK: cp.async.commit_group;
// CHECK: cp.async.wait_group
// CHECK: bar.sync 0;
// CHECK: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// CHECK: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// CHECK: mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32 {%f{{[0-9]+}}, %f{{[0-9]+}}, %f{{[0-9]+}}, %f{{[0-9]+}}}
// CHECK: st.global
// CHECK: ret;

// NOTTG: error: --emit=ptx needs ttgir
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
