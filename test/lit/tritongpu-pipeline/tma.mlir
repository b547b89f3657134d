// RUN: sparsecc-opt %s -p "convert-tt-to-ttg{num-warps=4 target=sm_90a},sparse-gpu-encoding,tritongpu-pipeline{num-stages=3 tma=true}" | filecheck %s
// RUN: sparsecc-opt %s -p "convert-tt-to-ttg{num-warps=4 target=sm_90a},sparse-gpu-encoding,tritongpu-pipeline{num-stages=3 tma=true},tritongpu-sink-local-loads,tritongpu-warp-specialize" --emit ptx | filecheck %s --check-prefix=PTX

// tma=true on a wgmma K loop whose row strides are known multiples of 16 bytes (N and K carry
// tt.divisibility = 16): the values (64x32, 64-byte swizzle), metadata (4x64) and B (64x64,
// 128-byte swizzle) tiles are TMA boxes. One thread announces a stage's 12800 bytes on the
// full barrier (count 1) and issues the copies; the empty barrier counts the 4 compute warps.

// CHECK: ttg.init_barrier %[[FULL:.*]] {count = 1 : i32}
// CHECK: ttg.init_barrier %[[EMPTY:.*]] {count = 4 : i32}
// CHECK: scf.if
// CHECK-NEXT: ttg.arrive_barrier %[[FULL]][%{{.*}}] {kind = "tma", bytes = 12800 : i32}
// CHECK: ttg.async_tma_copy %pa0, %{{.*}}, %[[FULL]][%{{.*}}] : !tt.ptr<tensor<64x32xf16
// CHECK: ttg.async_tma_copy %pe0,
// CHECK: ttg.async_tma_copy %pb0,
// CHECK: scf.for
// CHECK: ttg.wait_barrier %[[FULL]]
// CHECK: tt.dot
// CHECK: ttg.dot_wait {pendings = 1 : i32}
// CHECK: ttg.arrive_barrier %[[EMPTY]]{{.*}}kind = "warps"
// CHECK: scf.if
// CHECK-NEXT: ttg.wait_barrier %[[EMPTY]]
// CHECK-NEXT: ttg.arrive_barrier %[[FULL]]{{.*}}kind = "tma"
// CHECK-NOT: ttg.async_copy_global_to_local
// CHECK: scf.yield

// In the emitted PTX text, three 128-byte tensor-map parameters follow the function's own; a producer warp
// (5 warps, the split on a shfl-broadcast warp index) issuing cp.async.bulk.tensor.2d.
// PTX: .param .align 64 .b8 sgemm_param_7[128],
// PTX: .param .align 64 .b8 sgemm_param_9[128]
// PTX: .maxntid 160, 1, 1
// PTX: cvta.param.u64
// PTX: shfl.sync.idx.b32
// PTX: mbarrier.arrive.expect_tx.shared::cta.b64 _, [%{{.*}}], 12800;
// PTX: cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes
// TMA writes through the async proxy, as wgmma reads: neither the producer's wait for a free slot
// nor the consumers' wait for data is followed by a proxy fence (the cp.async form of
// mbarriers.mlir needs one).
// PTX: $L__loop{{[0-9]+}}:
// PTX-NOT: fence.proxy.async
// PTX: mbarrier.try_wait.parity.shared::cta.b64
// PTX-NOT: fence.proxy.async
// PTX: cp.async.bulk.tensor.2d
// PTX: $L__loop{{[0-9]+}}:
// PTX: mbarrier.try_wait.parity.shared::cta.b64
// PTX-NOT: fence.proxy.async
// PTX: wgmma.mma_async.sp
builtin.module {
  tt.func public @sgemm(%D: !tt.ptr<f16>, %AV: !tt.ptr<f16>, %AE: !tt.ptr<i16>, %B: !tt.ptr<f16>, %M: i32, %N: i32 {tt.divisibility = 16 : i32}, %K: i32 {tt.divisibility = 16 : i32}) {
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

