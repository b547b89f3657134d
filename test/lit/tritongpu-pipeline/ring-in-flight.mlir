// RUN: sparsecc-opt %s -p "convert-tt-to-ttg{num-warps=4 target=sm_90a},sparse-gpu-encoding,tritongpu-pipeline{num-stages=3 mbarriers=true ring-in-flight=true}" | filecheck %s
// RUN: sparsecc-opt %s -p "convert-tt-to-ttg{num-warps=4 target=sm_90a},sparse-gpu-encoding,tritongpu-pipeline{num-stages=3 mbarriers=true ring-in-flight=true},tritongpu-wgmma-unroll" --emit ptx | filecheck %s --check-prefix=PTX
// RUN: sparsecc-opt %s -p "convert-tt-to-ttg{num-warps=4 target=sm_90a},sparse-gpu-encoding,tritongpu-pipeline{num-stages=3 mbarriers=true},tritongpu-wgmma-unroll" --emit ptx | filecheck %s --check-prefix=OFF
// RUN: sparsecc-opt %S/tma.mlir -p "convert-tt-to-ttg{num-warps=4 target=sm_90a},sparse-gpu-encoding,tritongpu-pipeline{num-stages=3 tma=true ring-in-flight=true}" | filecheck %s --check-prefix=TMA

// ring-in-flight=true on the cp.async mbarrier ring of a sparse wgmma K loop whose A values go
// through a layout convert (here `a + a`; bf16 quantized weights' dequantized tile in
// sparse_linear): the ring's top wait on the full barrier carries `ttg.wgmma_in_flight`, and
// the lowering (analysis.kloops.ring_in_flight: B is a guarded ring slot, A registers) keeps
// the wgmma group committed last running through the convert's scratch store and CTA barriers.
// Unrolled by two, nothing in the loop waits for zero groups; without the option, each
// convert drains every group first.

// CHECK: scf.for
// CHECK: ttg.wait_barrier {{.*}} {ttg.wgmma_in_flight}
// CHECK: ttg.convert_layout
// CHECK: tt.dot
// CHECK-NOT: {ttg.wgmma_in_flight}
// CHECK: scf.yield

// PTX: $L__loop{{[0-9]+}}:
// PTX-NOT: wgmma.wait_group.sync.aligned 0;
// PTX: bar.sync 0;
// PTX-NOT: wgmma.wait_group.sync.aligned 0;
// PTX: st.shared.v4.b32
// PTX-NOT: wgmma.wait_group.sync.aligned 0;
// PTX: bar.sync 0;
// PTX-NEXT: ldmatrix.sync.aligned.m8n8.x4
// PTX-NOT: wgmma.wait_group.sync.aligned 0;
// PTX: wgmma.commit_group.sync.aligned;
// PTX: wgmma.wait_group.sync.aligned 1;
// PTX-NOT: wgmma.wait_group.sync.aligned 0;
// PTX: $L__loop_end{{[0-9]+}}:
// PTX-NEXT: wgmma.wait_group.sync.aligned 0;

// OFF: $L__loop{{[0-9]+}}:
// OFF: wgmma.wait_group.sync.aligned 0;
// OFF-NEXT: fence.proxy.async.shared::cta;
// OFF-NEXT: bar.sync 0;
// OFF: $L__loop_end{{[0-9]+}}:

// TMA rings (tma.mlir's loop) are left alone (their copies are not cp.async): no mark.
// TMA: ttg.async_tma_copy
// TMA-NOT: ttg.wgmma_in_flight


builtin.module {
  tt.func public @sgemm(%D: !tt.ptr<f16>, %AV: !tt.ptr<f16>, %AE: !tt.ptr<i16>, %B: !tt.ptr<f16>, %M: i32, %N: i32, %K: i32) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c2 = arith.constant 2 : i32
    %c15 = arith.constant 15 : i32
    %c16 = arith.constant 16 : i32
    %cbm = arith.constant 64 : i32
    %cbn = arith.constant 64 : i32
    %cbk = arith.constant 64 : i32
    %cbkh = arith.constant 32 : i32
    %cbk1 = arith.constant 63 : i32
    %one = arith.constant 1 : i64
    %pid_m = tt.get_program_id x : i32
    %pid_n = tt.get_program_id y : i32
    %om = arith.muli %pid_m, %cbm : i32
    %on = arith.muli %pid_n, %cbn : i32
    %omb = arith.divsi %om, %c16 : i32
    %kh = arith.divsi %K, %c2 : i32
    %mp = arith.addi %M, %c15 : i32
    %mb = arith.divsi %mp, %c16 : i32
    %M64 = arith.extsi %M : i32 to i64
    %N64 = arith.extsi %N : i32 to i64
    %K64 = arith.extsi %K : i32 to i64
    %kh64 = arith.extsi %kh : i32 to i64
    %mb64 = arith.extsi %mb : i32 to i64
    %pa0 = tt.make_tensor_ptr %AV, shape=[%M64, %kh64], strides=[%kh64, %one], offsets=[%om, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<64x32xf16>>
    %pe0 = tt.make_tensor_ptr %AE, shape=[%mb64, %K64], strides=[%K64, %one], offsets=[%omb, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<4x64xi16>>
    %pb0 = tt.make_tensor_ptr %B, shape=[%K64, %N64], strides=[%N64, %one], offsets=[%c0, %on] {order = array<i32: 1, 0>} : !tt.ptr<tensor<64x64xf16>>
    %acc0 = arith.constant dense<0.000000e+00> : tensor<64x64xf32>
    %kp = arith.addi %K, %cbk1 : i32
    %nk = arith.divsi %kp, %cbk : i32
    %r:4 = scf.for %i = %c0 to %nk step %c1 iter_args(%acc = %acc0, %pa = %pa0, %pe = %pe0, %pb = %pb0) -> (tensor<64x64xf32>, !tt.ptr<tensor<64x32xf16>>, !tt.ptr<tensor<4x64xi16>>, !tt.ptr<tensor<64x64xf16>>) : i32 {
      %a = tt.load %pa {boundaryCheck = array<i32: 0, 1>, padding = 1 : i32} : !tt.ptr<tensor<64x32xf16>>
      %e = tt.load %pe {boundaryCheck = array<i32: 0, 1>, padding = 1 : i32} : !tt.ptr<tensor<4x64xi16>>
      %b = tt.load %pb {boundaryCheck = array<i32: 0, 1>, padding = 1 : i32} : !tt.ptr<tensor<64x64xf16>>
      %a2 = arith.addf %a, %a : tensor<64x32xf16>
      %d = tt.dot %a2, %b, %e, %acc, sparseIndex = 0 : tensor<64x32xf16>, tensor<4x64xi16> * tensor<64x64xf16> -> tensor<64x64xf32>
      %pa1 = tt.advance %pa, [%c0, %cbkh] : !tt.ptr<tensor<64x32xf16>>
      %pe1 = tt.advance %pe, [%c0, %cbk] : !tt.ptr<tensor<4x64xi16>>
      %pb1 = tt.advance %pb, [%cbk, %c0] : !tt.ptr<tensor<64x64xf16>>
      scf.yield %d, %pa1, %pe1, %pb1 : tensor<64x64xf32>, !tt.ptr<tensor<64x32xf16>>, !tt.ptr<tensor<4x64xi16>>, !tt.ptr<tensor<64x64xf16>>
    }
    %out = arith.truncf %r#0 : tensor<64x64xf32> to tensor<64x64xf16>
    %pd = tt.make_tensor_ptr %D, shape=[%M64, %N64], strides=[%N64, %one], offsets=[%om, %on] {order = array<i32: 1, 0>} : !tt.ptr<tensor<64x64xf16>>
    tt.store %pd, %out {boundaryCheck = array<i32: 0, 1>} : !tt.ptr<tensor<64x64xf16>>
    tt.return
  }
}

