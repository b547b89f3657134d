// RUN: sparsecc-opt %s -p "convert-tt-to-ttg{num-warps=4 target=sm_90a},sparse-gpu-encoding,tritongpu-pipeline{num-stages=3 mbarriers=true}" | filecheck %s

// The wgmma K loop of mbarriers.mlir inside an outer loop (a grouped GEMM's `while` over token
// tiles): the next outer trip initialises the same barriers again. After the K loop, wait for
// the phases of full[] that the last S-1 = 2 iterations' cp.async arrivals (steps n, n+1, which
// no iteration waits for) complete, so that none lands after the re-initialisation, then a CTA
// barrier, so that no warp still waits on a barrier thread 0 re-initialises.

// CHECK: scf.for %t =
// CHECK: %[[FULL:.*]] = ttg.local_alloc : () -> !ttg.memdesc<3xi64
// CHECK-NEXT: ttg.init_barrier %[[FULL]] {count = 128 : i32}
// CHECK: scf.for %i =
// CHECK: ttg.dot_wait {pendings = 1 : i32}
// CHECK: scf.yield
// CHECK-NEXT: }
// CHECK: %[[N:.*]] = arith.maxsi
// CHECK: %[[S0:.*]] = arith.remui %[[N]], %{{.*}} : i32
// CHECK: ttg.wait_barrier %[[FULL]][%[[S0]]]
// CHECK: %[[N1:.*]] = arith.addi %[[N]], %{{.*}} : i32
// CHECK: %[[S1:.*]] = arith.remui %[[N1]], %{{.*}} : i32
// CHECK: ttg.wait_barrier %[[FULL]][%[[S1]]]
// CHECK-NOT: ttg.wait_barrier
// CHECK: ttg.barrier
// CHECK-NEXT: arith.truncf
builtin.module {
  tt.func public @sgemm(%D: !tt.ptr<f16>, %AV: !tt.ptr<f16>, %AE: !tt.ptr<i16>, %B: !tt.ptr<f16>, %M: i32, %N: i32, %K: i32, %T: i32) {
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
    scf.for %t = %c0 to %T step %c1 : i32 {
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
      scf.yield
    }
    tt.return
  }
}

