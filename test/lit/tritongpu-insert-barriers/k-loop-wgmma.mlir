// RUN: sparsecc-opt %s --split-input-file -p tritongpu-sink-local-loads,tritongpu-insert-barriers | filecheck %s
// RUN: sparsecc-opt %s --split-input-file -p tritongpu-sink-local-loads,convert-ttg-to-ptx -o %t.lazy.mlir
// RUN: sparsecc-opt %s --split-input-file -p tritongpu-sink-local-loads,tritongpu-insert-barriers,convert-ttg-to-ptx -o %t.explicit.mlir
// RUN: diff %t.lazy.mlir %t.explicit.mlir
// The wgmma K loops of tritongpu-sink-local-loads/sink.mlir. Unpipelined (first module): the
// body starts conservatively, so its three stores wait for the previous iteration's reads (one
// barrier: in a wgmma kernel also the wgmma drain and the proxy fence), and its reads for the
// stores (one more). The B operand's local_load reads nothing (wgmma reads B through a
// descriptor: the dot is the read). Pipelined (second module, reads kept at the top): after
// the async_wait, the A store waits for nothing, the A read for that store, the B store for
// the A read, the metadata read for the metadata store.

// CHECK-LABEL: tt.func public @gemm
// CHECK:       scf.for
// CHECK:       %b = tt.load
// CHECK-NEXT:  ttg.barrier
// CHECK-NEXT:  ttg.local_alloc %a_values
// CHECK-NEXT:  ttg.local_alloc %b
// CHECK-NEXT:  ttg.local_alloc %a_meta
// CHECK-NEXT:  ttg.barrier
// CHECK-NEXT:  ttg.local_load
// CHECK-NEXT:  ttg.local_load
// CHECK-NEXT:  ttg.local_load
// CHECK-NEXT:  tt.dot
// CHECK-NOT:   ttg.barrier
// CHECK:       scf.yield

// CHECK-LABEL: tt.func public @gemm
// CHECK:       scf.for
// CHECK:       ttg.async_wait {num = 0 : i32}
// CHECK-NEXT:  ttg.local_alloc %a_values
// CHECK-NEXT:  ttg.barrier
// CHECK-NEXT:  ttg.local_load
// CHECK-NEXT:  ttg.barrier
// CHECK-NEXT:  ttg.local_alloc %b
// CHECK-NEXT:  ttg.local_load
// CHECK-NEXT:  ttg.local_alloc %a_meta
// CHECK-NEXT:  ttg.barrier
// CHECK-NEXT:  ttg.local_load
// CHECK-NEXT:  tt.dot
// CHECK-NOT:   ttg.barrier
// CHECK:       scf.yield
builtin.module attributes {"ttg.num-warps" = 4 : i32, "ttg.threads-per-warp" = 32 : i32, ttg.target = "sm_90a"} {
  tt.func public @gemm(%D: !tt.ptr<f16>, %A_values: !tt.ptr<f16>, %A_meta: !tt.ptr<i16>, %B: !tt.ptr<f16>, %m: i64, %n: i64, %k: i64, %sm: i64, %om: i32, %niter: i32) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %one = arith.constant 1 : i64
    %0 = arith.constant 2 : i64
    %1 = arith.divsi %k, %0 : i64
    %2 = arith.divsi %sm, %0 : i64
    %3 = arith.constant 15 : i64
    %4 = arith.addi %m, %3 : i64
    %5 = arith.constant 16 : i64
    %6 = arith.divsi %4, %5 : i64
    %7 = arith.constant 16 : i32
    %8 = arith.divsi %om, %7 : i32
    %pa_values = tt.make_tensor_ptr %A_values, shape=[%m, %1], strides=[%2, %one], offsets=[%om, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<64x32xf16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>>>
    %pa_meta = tt.make_tensor_ptr %A_meta, shape=[%6, %k], strides=[%sm, %one], offsets=[%8, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<4x64xi16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>>>
    %pb = tt.make_tensor_ptr %B, shape=[%k, %n], strides=[%n, %one], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<64x64xf16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>>>
    %zero = arith.constant dense<0.000000e+00> : tensor<64x64xf32, #ttg.mma<{versionMajor = 3, warpsPerCTA = [4, 1], instrShape = [64, 64]}>>
    %c64 = arith.constant 64 : i32
    %9 = arith.constant 32 : i32
    %acc, %a_end_values, %a_end_meta, %b_end = scf.for %i = %c0 to %niter step %c1 iter_args(%acc_i = %zero, %pa_i_values = %pa_values, %pa_i_meta = %pa_meta, %pb_i = %pb) -> (tensor<64x64xf32, #ttg.mma<{versionMajor = 3, warpsPerCTA = [4, 1], instrShape = [64, 64]}>>, !tt.ptr<tensor<64x32xf16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>>>, !tt.ptr<tensor<4x64xi16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>>>, !tt.ptr<tensor<64x64xf16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>>>) : i32 {
      %a_values = tt.load %pa_i_values {boundaryCheck = array<i32: 0, 1>, padding = 1 : i32} : !tt.ptr<tensor<64x32xf16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>>>
      %a_meta = tt.load %pa_i_meta {boundaryCheck = array<i32: 0, 1>, padding = 1 : i32} : !tt.ptr<tensor<4x64xi16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>>>
      %b = tt.load %pb_i {boundaryCheck = array<i32: 0, 1>, padding = 1 : i32} : !tt.ptr<tensor<64x64xf16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>>>
      %10 = ttg.local_alloc %a_values : (tensor<64x32xf16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>>) -> !ttg.memdesc<64x32xf16, #ttg.shared<{vec = 8, perPhase = 2, maxPhase = 4, order = [1, 0]}>>
      %11 = ttg.local_load %10 : !ttg.memdesc<64x32xf16, #ttg.shared<{vec = 8, perPhase = 2, maxPhase = 4, order = [1, 0]}>> -> tensor<64x32xf16, #ttg.dot_op<{opIdx = 0, parent = #ttg.mma<{versionMajor = 3, warpsPerCTA = [4, 1], instrShape = [64, 64]}>, kWidth = 2, meta = 0}>>
      %12 = ttg.local_alloc %b : (tensor<64x64xf16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>>) -> !ttg.memdesc<64x64xf16, #ttg.shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [1, 0], colBlock = 64}>>
      %13 = ttg.local_load %12 : !ttg.memdesc<64x64xf16, #ttg.shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [1, 0], colBlock = 64}>> -> tensor<64x64xf16, #ttg.dot_op<{opIdx = 1, parent = #ttg.mma<{versionMajor = 3, warpsPerCTA = [4, 1], instrShape = [64, 64]}>, kWidth = 2}>>
      %14 = ttg.local_alloc %a_meta : (tensor<4x64xi16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>>) -> !ttg.memdesc<4x64xi16, #ttg.shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [1, 0], metaPack = 1}>>
      %15 = ttg.local_load %14 : !ttg.memdesc<4x64xi16, #ttg.shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [1, 0], metaPack = 1}>> -> tensor<4x64xi16, #ttg.dot_op<{opIdx = 0, parent = #ttg.mma<{versionMajor = 3, warpsPerCTA = [4, 1], instrShape = [64, 64]}>, kWidth = 2, meta = 1}>>
      %d = tt.dot %11, %13, %15, %acc_i, sparseIndex = 0 : tensor<64x32xf16, #ttg.dot_op<{opIdx = 0, parent = #ttg.mma<{versionMajor = 3, warpsPerCTA = [4, 1], instrShape = [64, 64]}>, kWidth = 2, meta = 0}>>, tensor<4x64xi16, #ttg.dot_op<{opIdx = 0, parent = #ttg.mma<{versionMajor = 3, warpsPerCTA = [4, 1], instrShape = [64, 64]}>, kWidth = 2, meta = 1}>> * tensor<64x64xf16, #ttg.dot_op<{opIdx = 1, parent = #ttg.mma<{versionMajor = 3, warpsPerCTA = [4, 1], instrShape = [64, 64]}>, kWidth = 2}>> -> tensor<64x64xf32, #ttg.mma<{versionMajor = 3, warpsPerCTA = [4, 1], instrShape = [64, 64]}>>
      %pa_n_values = tt.advance %pa_i_values, [%c0, %9] : !tt.ptr<tensor<64x32xf16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>>>
      %pa_n_meta = tt.advance %pa_i_meta, [%c0, %c64] : !tt.ptr<tensor<4x64xi16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>>>
      %pb_n = tt.advance %pb_i, [%c64, %c0] : !tt.ptr<tensor<64x64xf16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>>>
      scf.yield %d, %pa_n_values, %pa_n_meta, %pb_n : tensor<64x64xf32, #ttg.mma<{versionMajor = 3, warpsPerCTA = [4, 1], instrShape = [64, 64]}>>, !tt.ptr<tensor<64x32xf16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>>>, !tt.ptr<tensor<4x64xi16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>>>, !tt.ptr<tensor<64x64xf16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>>>
    }
    %pd = tt.make_tensor_ptr %D, shape=[%m, %n], strides=[%n, %one], offsets=[%om, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<64x64xf16, #ttg.mma<{versionMajor = 3, warpsPerCTA = [4, 1], instrShape = [64, 64]}>>>
    %h = arith.truncf %acc : tensor<64x64xf32, #ttg.mma<{versionMajor = 3, warpsPerCTA = [4, 1], instrShape = [64, 64]}>> to tensor<64x64xf16, #ttg.mma<{versionMajor = 3, warpsPerCTA = [4, 1], instrShape = [64, 64]}>>
    tt.store %pd, %h {boundaryCheck = array<i32: 0, 1>} : !tt.ptr<tensor<64x64xf16, #ttg.mma<{versionMajor = 3, warpsPerCTA = [4, 1], instrShape = [64, 64]}>>>
    tt.return
  }
}

// -----

builtin.module attributes {"ttg.num-warps" = 4 : i32, "ttg.threads-per-warp" = 32 : i32, ttg.target = "sm_90a"} {
  tt.func public @gemm(%D: !tt.ptr<f16>, %A_values: !tt.ptr<f16>, %A_meta: !tt.ptr<i16>, %B: !tt.ptr<f16>, %m: i64, %n: i64, %k: i64, %sm: i64, %om: i32, %niter: i32) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %one = arith.constant 1 : i64
    %0 = arith.constant 2 : i64
    %1 = arith.divsi %k, %0 : i64
    %2 = arith.divsi %sm, %0 : i64
    %3 = arith.constant 15 : i64
    %4 = arith.addi %m, %3 : i64
    %5 = arith.constant 16 : i64
    %6 = arith.divsi %4, %5 : i64
    %7 = arith.constant 16 : i32
    %8 = arith.divsi %om, %7 : i32
    %pa_values = tt.make_tensor_ptr %A_values, shape=[%m, %1], strides=[%2, %one], offsets=[%om, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<64x32xf16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>>>
    %pa_meta = tt.make_tensor_ptr %A_meta, shape=[%6, %k], strides=[%sm, %one], offsets=[%8, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<4x64xi16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>>>
    %pb = tt.make_tensor_ptr %B, shape=[%k, %n], strides=[%n, %one], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<64x64xf16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>>>
    %zero = arith.constant dense<0.000000e+00> : tensor<64x64xf32, #ttg.mma<{versionMajor = 3, warpsPerCTA = [4, 1], instrShape = [64, 64]}>>
    %c64 = arith.constant 64 : i32
    %9 = arith.constant 32 : i32
    %acc, %a_end_values, %a_end_meta, %b_end = scf.for %i = %c0 to %niter step %c1 iter_args(%acc_i = %zero, %pa_i_values = %pa_values, %pa_i_meta = %pa_meta, %pb_i = %pb) -> (tensor<64x64xf32, #ttg.mma<{versionMajor = 3, warpsPerCTA = [4, 1], instrShape = [64, 64]}>>, !tt.ptr<tensor<64x32xf16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>>>, !tt.ptr<tensor<4x64xi16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>>>, !tt.ptr<tensor<64x64xf16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>>>) : i32 {
      %a_values = tt.load %pa_i_values {boundaryCheck = array<i32: 0, 1>, padding = 1 : i32} : !tt.ptr<tensor<64x32xf16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>>>
      %a_meta = tt.load %pa_i_meta {boundaryCheck = array<i32: 0, 1>, padding = 1 : i32} : !tt.ptr<tensor<4x64xi16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>>>
      %b = tt.load %pb_i {boundaryCheck = array<i32: 0, 1>, padding = 1 : i32} : !tt.ptr<tensor<64x64xf16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>>>
      ttg.async_wait {num = 0 : i32}
      %10 = ttg.local_alloc %a_values : (tensor<64x32xf16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>>) -> !ttg.memdesc<64x32xf16, #ttg.shared<{vec = 8, perPhase = 2, maxPhase = 4, order = [1, 0]}>>
      %11 = ttg.local_load %10 : !ttg.memdesc<64x32xf16, #ttg.shared<{vec = 8, perPhase = 2, maxPhase = 4, order = [1, 0]}>> -> tensor<64x32xf16, #ttg.dot_op<{opIdx = 0, parent = #ttg.mma<{versionMajor = 3, warpsPerCTA = [4, 1], instrShape = [64, 64]}>, kWidth = 2, meta = 0}>>
      %12 = ttg.local_alloc %b : (tensor<64x64xf16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>>) -> !ttg.memdesc<64x64xf16, #ttg.shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [1, 0], colBlock = 64}>>
      %13 = ttg.local_load %12 : !ttg.memdesc<64x64xf16, #ttg.shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [1, 0], colBlock = 64}>> -> tensor<64x64xf16, #ttg.dot_op<{opIdx = 1, parent = #ttg.mma<{versionMajor = 3, warpsPerCTA = [4, 1], instrShape = [64, 64]}>, kWidth = 2}>>
      %14 = ttg.local_alloc %a_meta : (tensor<4x64xi16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>>) -> !ttg.memdesc<4x64xi16, #ttg.shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [1, 0], metaPack = 1}>>
      %15 = ttg.local_load %14 : !ttg.memdesc<4x64xi16, #ttg.shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [1, 0], metaPack = 1}>> -> tensor<4x64xi16, #ttg.dot_op<{opIdx = 0, parent = #ttg.mma<{versionMajor = 3, warpsPerCTA = [4, 1], instrShape = [64, 64]}>, kWidth = 2, meta = 1}>>
      %d = tt.dot %11, %13, %15, %acc_i, sparseIndex = 0 : tensor<64x32xf16, #ttg.dot_op<{opIdx = 0, parent = #ttg.mma<{versionMajor = 3, warpsPerCTA = [4, 1], instrShape = [64, 64]}>, kWidth = 2, meta = 0}>>, tensor<4x64xi16, #ttg.dot_op<{opIdx = 0, parent = #ttg.mma<{versionMajor = 3, warpsPerCTA = [4, 1], instrShape = [64, 64]}>, kWidth = 2, meta = 1}>> * tensor<64x64xf16, #ttg.dot_op<{opIdx = 1, parent = #ttg.mma<{versionMajor = 3, warpsPerCTA = [4, 1], instrShape = [64, 64]}>, kWidth = 2}>> -> tensor<64x64xf32, #ttg.mma<{versionMajor = 3, warpsPerCTA = [4, 1], instrShape = [64, 64]}>>
      %pa_n_values = tt.advance %pa_i_values, [%c0, %9] : !tt.ptr<tensor<64x32xf16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>>>
      %pa_n_meta = tt.advance %pa_i_meta, [%c0, %c64] : !tt.ptr<tensor<4x64xi16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>>>
      %pb_n = tt.advance %pb_i, [%c64, %c0] : !tt.ptr<tensor<64x64xf16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>>>
      scf.yield %d, %pa_n_values, %pa_n_meta, %pb_n : tensor<64x64xf32, #ttg.mma<{versionMajor = 3, warpsPerCTA = [4, 1], instrShape = [64, 64]}>>, !tt.ptr<tensor<64x32xf16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>>>, !tt.ptr<tensor<4x64xi16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>>>, !tt.ptr<tensor<64x64xf16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>>>
    }
    %pd = tt.make_tensor_ptr %D, shape=[%m, %n], strides=[%n, %one], offsets=[%om, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<64x64xf16, #ttg.mma<{versionMajor = 3, warpsPerCTA = [4, 1], instrShape = [64, 64]}>>>
    %h = arith.truncf %acc : tensor<64x64xf32, #ttg.mma<{versionMajor = 3, warpsPerCTA = [4, 1], instrShape = [64, 64]}>> to tensor<64x64xf16, #ttg.mma<{versionMajor = 3, warpsPerCTA = [4, 1], instrShape = [64, 64]}>>
    tt.store %pd, %h {boundaryCheck = array<i32: 0, 1>} : !tt.ptr<tensor<64x64xf16, #ttg.mma<{versionMajor = 3, warpsPerCTA = [4, 1], instrShape = [64, 64]}>>>
    tt.return
  }
}
