// RUN: sparsecc-opt %s -p tritongpu-pipeline{num-stages=3},tritongpu-insert-barriers | filecheck %s

// The K loop of k-loop.mlir inside an outer loop (a grouped GEMM walking an expert's token
// tiles): the prologue's copies follow the previous outer trip's shared reads, so they must
// wait for a barrier; one ttg.barrier before the prologue orders all of them, where
// tritongpu-insert-barriers alone would give each copy (each in its own scf.if) a barrier.

// CHECK: scf.for %t =
// CHECK: ttg.barrier
// CHECK-NOT: ttg.barrier
// CHECK: scf.if
// CHECK-NEXT: ttg.async_copy_global_to_local %pa
// CHECK-NOT: ttg.barrier
// CHECK: ttg.async_commit_group
// CHECK-NOT: ttg.barrier
// CHECK: ttg.async_commit_group
// CHECK-NOT: ttg.barrier
// CHECK: scf.for %k =
// CHECK-NEXT: ttg.async_wait {num = 1 : i32}
#mma = #ttg.mma<{versionMajor = 2, warpsPerCTA = [2, 2], instrShape = [16, 8]}>
#blocked = #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#blocked1 = #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
#shared = #ttg.shared<{vec = 8, perPhase = 2, maxPhase = 4, order = [1, 0]}>
#shared1 = #ttg.shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [1, 0]}>
#shared2 = #ttg.shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [1, 0], metaPack = 1}>
#dot = #ttg.dot_op<{opIdx = 0, parent = #mma, kWidth = 2, meta = 0}>
#dot1 = #ttg.dot_op<{opIdx = 1, parent = #mma, kWidth = 2}>
#dot2 = #ttg.dot_op<{opIdx = 0, parent = #mma, kWidth = 2, meta = 1}>
builtin.module attributes {"ttg.num-warps" = 4 : i32, "ttg.threads-per-warp" = 32 : i32, ttg.target = "sm_90"} {
  tt.func public @sparse_gemm(%vals: !tt.ptr<f16>, %meta: !tt.ptr<i16>, %b: !tt.ptr<f16>, %d: !tt.ptr<f16>, %M: i32, %N: i32, %K: i32, %T: i32) {
    %c0 = arith.constant 0 : i32
    %ckh = arith.constant 32 : i32
    %cbk = arith.constant 64 : i32
    %one = arith.constant 1 : i64
    %M64 = arith.extsi %M : i32 to i64
    %N64 = arith.extsi %N : i32 to i64
    %K64 = arith.extsi %K : i32 to i64
    %two = arith.constant 2 : i64
    %sixteen = arith.constant 16 : i64
    %Kh = arith.divsi %K64, %two : i64
    %Mm = arith.divsi %M64, %sixteen : i64
    %c1 = arith.constant 1 : i32
    scf.for %t = %c0 to %T step %c1 : i32 {
      %pa = tt.make_tensor_ptr %vals, shape=[%M64, %Kh], strides=[%Kh, %one], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<64x32xf16, #blocked>>
      %pe = tt.make_tensor_ptr %meta, shape=[%Mm, %K64], strides=[%K64, %one], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<4x64xi16, #blocked1>>
      %pb = tt.make_tensor_ptr %b, shape=[%K64, %N64], strides=[%N64, %one], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<64x64xf16, #blocked1>>
      %pd = tt.make_tensor_ptr %d, shape=[%M64, %N64], strides=[%N64, %one], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<64x64xf16, #mma>>
      %zero = arith.constant dense<0.000000e+00> : tensor<64x64xf32, #mma>
      %acc, %a_out, %e_out, %b_out = scf.for %k = %c0 to %K step %cbk iter_args(%acc_i = %zero, %pa_i = %pa, %pe_i = %pe, %pb_i = %pb) -> (tensor<64x64xf32, #mma>, !tt.ptr<tensor<64x32xf16, #blocked>>, !tt.ptr<tensor<4x64xi16, #blocked1>>, !tt.ptr<tensor<64x64xf16, #blocked1>>) : i32 {
        %a = tt.load %pa_i {boundaryCheck = array<i32: 0, 1>, padding = 1 : i32} : !tt.ptr<tensor<64x32xf16, #blocked>>
        %e = tt.load %pe_i {boundaryCheck = array<i32: 0, 1>, padding = 1 : i32} : !tt.ptr<tensor<4x64xi16, #blocked1>>
        %bt = tt.load %pb_i {boundaryCheck = array<i32: 0, 1>, padding = 1 : i32} : !tt.ptr<tensor<64x64xf16, #blocked1>>
        %0 = ttg.local_alloc %a : (tensor<64x32xf16, #blocked>) -> !ttg.memdesc<64x32xf16, #shared>
        %1 = ttg.local_load %0 : !ttg.memdesc<64x32xf16, #shared> -> tensor<64x32xf16, #dot>
        %2 = ttg.local_alloc %bt : (tensor<64x64xf16, #blocked1>) -> !ttg.memdesc<64x64xf16, #shared1>
        %3 = ttg.local_load %2 : !ttg.memdesc<64x64xf16, #shared1> -> tensor<64x64xf16, #dot1>
        %4 = ttg.local_alloc %e : (tensor<4x64xi16, #blocked1>) -> !ttg.memdesc<4x64xi16, #shared2>
        %5 = ttg.local_load %4 : !ttg.memdesc<4x64xi16, #shared2> -> tensor<4x64xi16, #dot2>
        %acc_n = tt.dot %1, %3, %5, %acc_i, sparseIndex = 0 : tensor<64x32xf16, #dot>, tensor<4x64xi16, #dot2> * tensor<64x64xf16, #dot1> -> tensor<64x64xf32, #mma>
        %pa_n = tt.advance %pa_i, [%c0, %ckh] : !tt.ptr<tensor<64x32xf16, #blocked>>
        %pe_n = tt.advance %pe_i, [%c0, %cbk] : !tt.ptr<tensor<4x64xi16, #blocked1>>
        %pb_n = tt.advance %pb_i, [%cbk, %c0] : !tt.ptr<tensor<64x64xf16, #blocked1>>
        scf.yield %acc_n, %pa_n, %pe_n, %pb_n : tensor<64x64xf32, #mma>, !tt.ptr<tensor<64x32xf16, #blocked>>, !tt.ptr<tensor<4x64xi16, #blocked1>>, !tt.ptr<tensor<64x64xf16, #blocked1>>
      }
      %out = arith.truncf %acc : tensor<64x64xf32, #mma> to tensor<64x64xf16, #mma>
      tt.store %pd, %out {boundaryCheck = array<i32: 0, 1>} : !tt.ptr<tensor<64x64xf16, #mma>>
      scf.yield
    }
    tt.return
  }
}
