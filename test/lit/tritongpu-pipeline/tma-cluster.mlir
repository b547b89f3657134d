// RUN: sparsecc-opt %s -p "convert-tt-to-ttg{num-warps=4 target=sm_90a},sparse-gpu-encoding,tritongpu-pipeline{num-stages=3 tma=true num-ctas=2}" | filecheck %s
// RUN: sparsecc-opt %s -p "convert-tt-to-ttg{num-warps=4 target=sm_90a},sparse-gpu-encoding,tritongpu-pipeline{num-stages=3 tma=true num-ctas=2}" --emit ptx | filecheck %s --check-prefix=PTX
// RUN: not sparsecc-opt %s -p "convert-tt-to-ttg{num-warps=4 target=sm_90a},sparse-gpu-encoding,tritongpu-pipeline{num-stages=3 tma=true num-ctas=3}" 2>&1 | filecheck %s --check-prefix=BAD

// num-ctas=2: the kernel runs as CTA pairs whose K loops read the same B tiles (here the
// caller's promise; sparse_mm's CLUSTER_M pairs arrange it). B (64x128, two 128-byte-swizzled
// boxes) is multicast: each CTA issues one of its two boxes into both CTAs. A slot is free once
// the compute warps of both CTAs released it (empty count 2 x 4 warps); the module is marked
// `ttg.num-ctas = 2`.

// CHECK: builtin.module attributes {{{.*}}"ttg.num-ctas" = 2 : i32
// CHECK: ttg.init_barrier %[[FULL:.*]] {count = 1 : i32}
// CHECK: ttg.init_barrier %[[EMPTY:.*]] {count = 8 : i32}
// CHECK: ttg.async_tma_copy %pa0, %{{[0-9]+}}, %{{[0-9]+}}[%{{[0-9]+}}] : !tt.ptr<tensor<64x32xf16
// CHECK: ttg.async_tma_copy %pe0, %{{[0-9]+}}, %{{[0-9]+}}[%{{[0-9]+}}] : !tt.ptr<tensor<4x64xi16
// CHECK: ttg.async_tma_copy %pb0, %{{[0-9]+}}, %{{[0-9]+}}[%{{[0-9]+}}] {multicast = 2 : i32} : !tt.ptr<tensor<64x128xf16

// In the emitted code: a cluster of two, its barriers initialised before either CTA copies or arrives,
// B's boxes split by cluster rank and multicast (mask 0b11), each warp's release reaching both
// CTAs' empty barriers, and a last cluster barrier so neither CTA leaves while the other may
// still write into it.
// PTX: .reqnctapercluster 2, 1, 1
// PTX: mov.u32 %r{{[0-9]+}}, %cluster_ctarank;
// PTX: fence.mbarrier_init.release.cluster;
// PTX-NEXT: barrier.cluster.arrive.release.aligned;
// PTX-NEXT: barrier.cluster.wait.acquire.aligned;
// PTX: mov.b16 %mask, 3;
// PTX-NEXT: cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%r{{[0-9]+}}], [%rd{{[0-9]+}}, {%r{{[0-9]+}}, %r{{[0-9]+}}}], [%r{{[0-9]+}}], %mask;
// PTX: wgmma.mma_async.sp
// PTX: mbarrier.arrive.shared::cta.b64 _, [%[[SLOT:r[0-9]+]]];
// PTX: mapa.shared::cluster.u32 %remote, %[[SLOT]], %r{{[0-9]+}};
// PTX-NEXT: mbarrier.arrive.shared::cluster.b64 _, [%remote];
// PTX: barrier.cluster.arrive.release.aligned;
// PTX-NEXT: barrier.cluster.wait.acquire.aligned;
// PTX-NEXT: ret;

// BAD: error: invalid options for pass 'tritongpu-pipeline': tritongpu-pipeline: num-ctas must be 1 or 2, got 3
builtin.module {
  tt.func public @sgemm(%D: !tt.ptr<f16>, %AV: !tt.ptr<f16>, %AE: !tt.ptr<i16>, %B: !tt.ptr<f16>, %M: i32, %N: i32 {tt.divisibility = 16 : i32}, %K: i32 {tt.divisibility = 16 : i32}) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c2 = arith.constant 2 : i32
    %c15 = arith.constant 15 : i32
    %c16 = arith.constant 16 : i32
    %cbm = arith.constant 64 : i32
    %cbn = arith.constant 128 : i32
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
    %pb0 = tt.make_tensor_ptr %B, shape=[%K64, %N64], strides=[%N64, %one], offsets=[%c0, %on] {order = array<i32: 1, 0>} : !tt.ptr<tensor<64x128xf16>>
    %acc0 = arith.constant dense<0.000000e+00> : tensor<64x128xf32>
    %kp = arith.addi %K, %cbk1 : i32
    %nk = arith.divsi %kp, %cbk : i32
    %r:4 = scf.for %i = %c0 to %nk step %c1 iter_args(%acc = %acc0, %pa = %pa0, %pe = %pe0, %pb = %pb0) -> (tensor<64x128xf32>, !tt.ptr<tensor<64x32xf16>>, !tt.ptr<tensor<4x64xi16>>, !tt.ptr<tensor<64x128xf16>>) : i32 {
      %a = tt.load %pa {boundaryCheck = array<i32: 0, 1>, padding = 1 : i32} : !tt.ptr<tensor<64x32xf16>>
      %e = tt.load %pe {boundaryCheck = array<i32: 0, 1>, padding = 1 : i32} : !tt.ptr<tensor<4x64xi16>>
      %b = tt.load %pb {boundaryCheck = array<i32: 0, 1>, padding = 1 : i32} : !tt.ptr<tensor<64x128xf16>>
      %d = tt.dot %a, %b, %e, %acc, sparseIndex = 0 : tensor<64x32xf16>, tensor<4x64xi16> * tensor<64x128xf16> -> tensor<64x128xf32>
      %pa1 = tt.advance %pa, [%c0, %cbkh] : !tt.ptr<tensor<64x32xf16>>
      %pe1 = tt.advance %pe, [%c0, %cbk] : !tt.ptr<tensor<4x64xi16>>
      %pb1 = tt.advance %pb, [%cbk, %c0] : !tt.ptr<tensor<64x128xf16>>
      scf.yield %d, %pa1, %pe1, %pb1 : tensor<64x128xf32>, !tt.ptr<tensor<64x32xf16>>, !tt.ptr<tensor<4x64xi16>>, !tt.ptr<tensor<64x128xf16>>
    }
    %out = arith.truncf %r#0 : tensor<64x128xf32> to tensor<64x128xf16>
    %pd = tt.make_tensor_ptr %D, shape=[%M64, %N64], strides=[%N64, %one], offsets=[%om, %on] {order = array<i32: 1, 0>} : !tt.ptr<tensor<64x128xf16>>
    tt.store %pd, %out {boundaryCheck = array<i32: 0, 1>} : !tt.ptr<tensor<64x128xf16>>
    tt.return
  }
}

