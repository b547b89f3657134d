// RUN: sparsecc-opt %s -p "convert-tt-to-ttg{num-warps=4 target=sm_90a},sparse-gpu-encoding,tritongpu-pipeline{num-stages=3 wgmma-in-flight=true}" | filecheck %s
// RUN: sparsecc-opt %s -p "convert-tt-to-ttg{num-warps=4 target=sm_90a},sparse-gpu-encoding,tritongpu-pipeline{num-stages=3 wgmma-in-flight=true},tritongpu-wgmma-unroll" --emit ptx | filecheck %s --check-prefix=PTX
// RUN: sparsecc-opt %s -p "convert-tt-to-ttg{num-warps=4 target=sm_90},sparse-gpu-encoding,tritongpu-pipeline{num-stages=3 wgmma-in-flight=true}" | filecheck %s --check-prefix=MMA2
// RUN: sparsecc-opt %s -p "convert-tt-to-ttg{num-warps=4 target=sm_90a},sparse-gpu-encoding,tritongpu-pipeline{num-stages=2 wgmma-in-flight=true}" | filecheck %s --check-prefix=TWO

// wgmma-in-flight=true on a CTA-barrier wgmma K loop (3 stages): the copies run S-2 = 1 step
// ahead, so the prologue fills slot 0 only and the loop writes slot (i+1) % 3 = (i-2) % 3,
// starting at 1; the top of iteration i waits for every copy group (num = S-3 = 0) and keeps the
// wgmma group of iteration i-1 in flight through the barrier (`ttg.wgmma_in_flight`): every warp
// retired the group of i-2, the last reader of the slot it then refills (`ttg.slot_guarded`).

// CHECK: ttg.async_copy_global_to_local
// CHECK: ttg.async_commit_group
// CHECK-NOT: ttg.async_copy_global_to_local
// CHECK: %[[WR0:.*]] = arith.constant 1 : i32
// CHECK: scf.for %i = {{.*}} iter_args({{.*}}, %{{.*}} = %{{.*}}, %{{.*}} = %[[WR0]]) -> ({{.*}}, i32, i32) : i32 {
// CHECK-NEXT: ttg.async_wait {num = 0 : i32, ttg.wgmma_in_flight}
// CHECK: ttg.async_copy_global_to_local {{.*}}ttg.slot_safe, ttg.slot_guarded
// CHECK: tt.dot
// CHECK: scf.yield
// CHECK: ttg.async_wait {num = 0 : i32}

// Unrolled by two (each half its own A and metadata registers), one group stays in flight:
// the barrier waits down to one group, and nothing in the loop waits for zero.
// PTX: $L__loop{{[0-9]+}}:
// PTX-NEXT: cp.async.wait_group 0;
// PTX-NEXT: wgmma.wait_group.sync.aligned 1;
// PTX-NEXT: fence.proxy.async.shared::cta;
// PTX-NEXT: bar.sync 0;
// PTX-NOT: wgmma.wait_group.sync.aligned 0;
// PTX: wgmma.mma_async.sp
// PTX: wgmma.commit_group.sync.aligned;
// PTX-NOT: wgmma.wait_group.sync.aligned 0;
// PTX: wgmma.wait_group.sync.aligned 1;
// PTX-NEXT: fence.proxy.async.shared::cta;
// PTX-NEXT: bar.sync 0;
// PTX-NOT: wgmma.wait_group.sync.aligned 0;
// PTX: wgmma.commit_group.sync.aligned;
// PTX-NOT: wgmma.wait_group.sync.aligned 0;
// PTX: $L__loop_end{{[0-9]+}}:
// PTX-NEXT: wgmma.wait_group.sync.aligned 0;

// mma.sp (sm_90) loops and two-stage rings keep the usual form.
// MMA2: ttg.async_wait {num = 1 : i32}
// TWO: ttg.async_wait {num = 0 : i32}
// TWO-NOT: ttg.wgmma_in_flight
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
      %d = tt.dot %a, %b, %e, %acc, sparseIndex = 0 : tensor<64x32xf16>, tensor<4x64xi16> * tensor<64x64xf16> -> tensor<64x64xf32>
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

