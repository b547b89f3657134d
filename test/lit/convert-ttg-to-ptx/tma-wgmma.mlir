// RUN: sparsecc-opt %s -p "tritongpu-sink-local-loads,tritongpu-warp-specialize,convert-ttg-to-ptx" | filecheck %s
// RUN: sparsecc-opt %s -p "tritongpu-sink-local-loads,tritongpu-warp-specialize,convert-ttg-to-ptx,ptx-hoist-loop-invariants,ptx-strength-reduce" -o %t.mlir
// RUN: sparsecc-opt %t.mlir --emit ptx -o %t.roundtrip.ptx
// RUN: sparsecc-opt %s -p "tritongpu-sink-local-loads,tritongpu-warp-specialize" --emit ptx -o %t.direct.ptx
// RUN: diff %t.direct.ptx %t.roundtrip.ptx
// A warp-specialized TMA + wgmma kernel (4 compute warps + 1 producer warp) in the ptx dialect:
// one ptx.kernel with the three tensor maps as parameters after the function's own, and the
// launch contract as the module's sparsecc.launch attribute (no ttg.* attributes left). The
// printed ptx dialect parses back (wgmma and mbarrier ops included) and prints the same PTX as
// the direct path. Input: as tritongpu-warp-specialize/tma.mlir. Covers the mbarrier and TMA
// ops of handlers/async_ops.py (ttg.init_barrier, ttg.async_tma_copy, ttg.wait_barrier,
// ttg.arrive_barrier) and the wgmma path of handlers/dot.py (tt.dot).

// CHECK:      builtin.module attributes {sparsecc.launch = {name = "sgemm", num_warps = 4 : i64, threads = 160 : i64,
// CHECK-SAME: shared = 41984 : i64, params = {{\[}}["D", "ptr"], ["AV", "ptr"], ["AE", "ptr"], ["B", "ptr"], ["M", "i32"], ["N", "i32"], ["K", "i32"], ["arg7", "tmap"], ["arg8", "tmap"], ["arg9", "tmap"]],
// CHECK-SAME: target = "sm_90a", tensor_maps = [{arg = 1 : i64, dtype = "fp16",
// CHECK-NOT:  ttg.
// CHECK:      "ptx.kernel"() <{sym_name = "sgemm", target = "sm_90a", param_kinds = ["ptr", "ptr", "ptr", "ptr", "i32", "i32", "i32", "tmap", "tmap", "tmap"], shared_bytes = 41984 : i64, maxntid = [160 : i32, 1 : i32, 1 : i32]}>
// CHECK:      "ptx.mbarrier.init"
// CHECK:      "ptx.cp.async.bulk.tensor"
// CHECK:      scf.for
// CHECK:      "ptx.mbarrier.wait"
// CHECK:      "ptx.wgmma.mma_async.sp"
// CHECK:      "ptx.mbarrier.arrive"
// CHECK:      "ptx.st.global"
// CHECK-NOT:  tt.
builtin.module attributes {"ttg.num-warps" = 4 : i32, "ttg.threads-per-warp" = 32 : i32, ttg.target = "sm_90a"} {
  tt.func public @sgemm(%D: !tt.ptr<f16>, %AV: !tt.ptr<f16>, %AE: !tt.ptr<i16>, %B: !tt.ptr<f16>, %M: i32, %N: i32 {tt.divisibility = 16 : i32}, %K: i32 {tt.divisibility = 16 : i32}) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c2 = arith.constant 2 : i32
    %c15 = arith.constant 15 : i32
    %c16 = arith.constant 16 : i32
    %cbm = arith.constant 64 : i32
    %cbkh = arith.constant 32 : i32
    %cbk1 = arith.constant 63 : i32
    %one = arith.constant 1 : i64
    %pid_m = tt.get_program_id x : i32
    %pid_n = tt.get_program_id y : i32
    %om = arith.muli %pid_m, %cbm : i32
    %on = arith.muli %pid_n, %cbm : i32
    %omb = arith.divsi %om, %c16 : i32
    %kh = arith.divsi %K, %c2 : i32
    %mp = arith.addi %M, %c15 : i32
    %mb = arith.divsi %mp, %c16 : i32
    %M64 = arith.extsi %M : i32 to i64
    %N64 = arith.extsi %N : i32 to i64
    %K64 = arith.extsi %K : i32 to i64
    %kh64 = arith.extsi %kh : i32 to i64
    %mb64 = arith.extsi %mb : i32 to i64
    %pa0 = tt.make_tensor_ptr %AV, shape=[%M64, %kh64], strides=[%kh64, %one], offsets=[%om, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<64x32xf16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>>>
    %pe0 = tt.make_tensor_ptr %AE, shape=[%mb64, %K64], strides=[%K64, %one], offsets=[%omb, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<4x64xi16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>>>
    %pb0 = tt.make_tensor_ptr %B, shape=[%K64, %N64], strides=[%N64, %one], offsets=[%c0, %on] {order = array<i32: 1, 0>} : !tt.ptr<tensor<64x64xf16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>>>
    %acc0 = arith.constant dense<0.000000e+00> : tensor<64x64xf32, #ttg.mma<{versionMajor = 3, warpsPerCTA = [4, 1], instrShape = [64, 64]}>>
    %kp = arith.addi %K, %cbk1 : i32
    %nk = arith.divsi %kp, %cbm : i32
    %0 = ttg.local_alloc : () -> !ttg.memdesc<3x64x32xf16, #ttg.shared<{vec = 8, perPhase = 2, maxPhase = 4, order = [1, 0]}>, mutable>
    %1 = ttg.local_alloc : () -> !ttg.memdesc<3x4x64xi16, #ttg.shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [1, 0], metaPack = 1}>, mutable>
    %2 = ttg.local_alloc : () -> !ttg.memdesc<3x64x64xf16, #ttg.shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [1, 0], colBlock = 64}>, mutable>
    %3 = ttg.local_alloc : () -> !ttg.memdesc<3xi64, #ttg.shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [0]}>, mutable>
    ttg.init_barrier %3 {count = 1 : i32} : !ttg.memdesc<3xi64, #ttg.shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [0]}>, mutable>
    %4 = ttg.local_alloc : () -> !ttg.memdesc<3xi64, #ttg.shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [0]}>, mutable>
    ttg.init_barrier %4 {count = 4 : i32} : !ttg.memdesc<3xi64, #ttg.shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [0]}>, mutable>
    %5 = arith.cmpi slt, %c0, %nk : i32
    scf.if %5 {
      ttg.arrive_barrier %3[%c0] {kind = "tma", bytes = 12800 : i32} : !ttg.memdesc<3xi64, #ttg.shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [0]}>, mutable>
      %6 = ttg.memdesc_subview %0[%c0, %c0, %c0] : !ttg.memdesc<3x64x32xf16, #ttg.shared<{vec = 8, perPhase = 2, maxPhase = 4, order = [1, 0]}>, mutable> -> !ttg.memdesc<64x32xf16, #ttg.shared<{vec = 8, perPhase = 2, maxPhase = 4, order = [1, 0]}>, mutable>
      ttg.async_tma_copy %pa0, %6, %3[%c0] : !tt.ptr<tensor<64x32xf16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>>> -> !ttg.memdesc<64x32xf16, #ttg.shared<{vec = 8, perPhase = 2, maxPhase = 4, order = [1, 0]}>, mutable>, !ttg.memdesc<3xi64, #ttg.shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [0]}>, mutable>
      %7 = ttg.memdesc_subview %1[%c0, %c0, %c0] : !ttg.memdesc<3x4x64xi16, #ttg.shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [1, 0], metaPack = 1}>, mutable> -> !ttg.memdesc<4x64xi16, #ttg.shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [1, 0], metaPack = 1}>, mutable>
      ttg.async_tma_copy %pe0, %7, %3[%c0] : !tt.ptr<tensor<4x64xi16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>>> -> !ttg.memdesc<4x64xi16, #ttg.shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [1, 0], metaPack = 1}>, mutable>, !ttg.memdesc<3xi64, #ttg.shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [0]}>, mutable>
      %8 = ttg.memdesc_subview %2[%c0, %c0, %c0] : !ttg.memdesc<3x64x64xf16, #ttg.shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [1, 0], colBlock = 64}>, mutable> -> !ttg.memdesc<64x64xf16, #ttg.shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [1, 0], colBlock = 64}>, mutable>
      ttg.async_tma_copy %pb0, %8, %3[%c0] : !tt.ptr<tensor<64x64xf16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>>> -> !ttg.memdesc<64x64xf16, #ttg.shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [1, 0], colBlock = 64}>, mutable>, !ttg.memdesc<3xi64, #ttg.shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [0]}>, mutable>
    }
    %9 = tt.advance %pa0, [%c0, %cbkh] : !tt.ptr<tensor<64x32xf16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>>>
    %10 = tt.advance %pe0, [%c0, %cbm] : !tt.ptr<tensor<4x64xi16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>>>
    %11 = tt.advance %pb0, [%cbm, %c0] : !tt.ptr<tensor<64x64xf16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>>>
    %12 = arith.cmpi slt, %c1, %nk : i32
    scf.if %12 {
      ttg.arrive_barrier %3[%c1] {kind = "tma", bytes = 12800 : i32} : !ttg.memdesc<3xi64, #ttg.shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [0]}>, mutable>
      %13 = ttg.memdesc_subview %0[%c1, %c0, %c0] : !ttg.memdesc<3x64x32xf16, #ttg.shared<{vec = 8, perPhase = 2, maxPhase = 4, order = [1, 0]}>, mutable> -> !ttg.memdesc<64x32xf16, #ttg.shared<{vec = 8, perPhase = 2, maxPhase = 4, order = [1, 0]}>, mutable>
      ttg.async_tma_copy %9, %13, %3[%c1] : !tt.ptr<tensor<64x32xf16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>>> -> !ttg.memdesc<64x32xf16, #ttg.shared<{vec = 8, perPhase = 2, maxPhase = 4, order = [1, 0]}>, mutable>, !ttg.memdesc<3xi64, #ttg.shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [0]}>, mutable>
      %14 = ttg.memdesc_subview %1[%c1, %c0, %c0] : !ttg.memdesc<3x4x64xi16, #ttg.shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [1, 0], metaPack = 1}>, mutable> -> !ttg.memdesc<4x64xi16, #ttg.shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [1, 0], metaPack = 1}>, mutable>
      ttg.async_tma_copy %10, %14, %3[%c1] : !tt.ptr<tensor<4x64xi16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>>> -> !ttg.memdesc<4x64xi16, #ttg.shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [1, 0], metaPack = 1}>, mutable>, !ttg.memdesc<3xi64, #ttg.shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [0]}>, mutable>
      %15 = ttg.memdesc_subview %2[%c1, %c0, %c0] : !ttg.memdesc<3x64x64xf16, #ttg.shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [1, 0], colBlock = 64}>, mutable> -> !ttg.memdesc<64x64xf16, #ttg.shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [1, 0], colBlock = 64}>, mutable>
      ttg.async_tma_copy %11, %15, %3[%c1] : !tt.ptr<tensor<64x64xf16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>>> -> !ttg.memdesc<64x64xf16, #ttg.shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [1, 0], colBlock = 64}>, mutable>, !ttg.memdesc<3xi64, #ttg.shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [0]}>, mutable>
    }
    %16 = tt.advance %9, [%c0, %cbkh] : !tt.ptr<tensor<64x32xf16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>>>
    %17 = tt.advance %10, [%c0, %cbm] : !tt.ptr<tensor<4x64xi16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>>>
    %18 = tt.advance %11, [%cbm, %c0] : !tt.ptr<tensor<64x64xf16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>>>
    %19 = arith.constant 3 : i32
    %r, %r_1, %r_2, %r_3, %20, %21, %22, %23, %24 = scf.for %i = %c0 to %nk step %c1 iter_args(%acc = %acc0, %pa = %pa0, %pe = %pe0, %pb = %pb0, %25 = %16, %26 = %17, %27 = %18, %28 = %c0, %29 = %c2) -> (tensor<64x64xf32, #ttg.mma<{versionMajor = 3, warpsPerCTA = [4, 1], instrShape = [64, 64]}>>, !tt.ptr<tensor<64x32xf16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>>>, !tt.ptr<tensor<4x64xi16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>>>, !tt.ptr<tensor<64x64xf16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>>>, !tt.ptr<tensor<64x32xf16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>>>, !tt.ptr<tensor<4x64xi16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>>>, !tt.ptr<tensor<64x64xf16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>>>, i32, i32) : i32 {
      %30 = arith.divui %i, %19 : i32
      %31 = arith.andi %30, %c1 : i32
      ttg.wait_barrier %3[%28], %31 : !ttg.memdesc<3xi64, #ttg.shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [0]}>, mutable>
      %32 = ttg.memdesc_subview %0[%28, %c0, %c0] : !ttg.memdesc<3x64x32xf16, #ttg.shared<{vec = 8, perPhase = 2, maxPhase = 4, order = [1, 0]}>, mutable> -> !ttg.memdesc<64x32xf16, #ttg.shared<{vec = 8, perPhase = 2, maxPhase = 4, order = [1, 0]}>, mutable>
      %33 = ttg.local_load %32 : !ttg.memdesc<64x32xf16, #ttg.shared<{vec = 8, perPhase = 2, maxPhase = 4, order = [1, 0]}>, mutable> -> tensor<64x32xf16, #ttg.dot_op<{opIdx = 0, parent = #ttg.mma<{versionMajor = 3, warpsPerCTA = [4, 1], instrShape = [64, 64]}>, kWidth = 2, meta = 0}>>
      %34 = ttg.memdesc_subview %1[%28, %c0, %c0] : !ttg.memdesc<3x4x64xi16, #ttg.shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [1, 0], metaPack = 1}>, mutable> -> !ttg.memdesc<4x64xi16, #ttg.shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [1, 0], metaPack = 1}>, mutable>
      %35 = ttg.local_load %34 : !ttg.memdesc<4x64xi16, #ttg.shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [1, 0], metaPack = 1}>, mutable> -> tensor<4x64xi16, #ttg.dot_op<{opIdx = 0, parent = #ttg.mma<{versionMajor = 3, warpsPerCTA = [4, 1], instrShape = [64, 64]}>, kWidth = 2, meta = 1}>>
      %36 = ttg.memdesc_subview %2[%28, %c0, %c0] : !ttg.memdesc<3x64x64xf16, #ttg.shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [1, 0], colBlock = 64}>, mutable> -> !ttg.memdesc<64x64xf16, #ttg.shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [1, 0], colBlock = 64}>, mutable>
      %37 = ttg.local_load %36 : !ttg.memdesc<64x64xf16, #ttg.shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [1, 0], colBlock = 64}>, mutable> -> tensor<64x64xf16, #ttg.dot_op<{opIdx = 1, parent = #ttg.mma<{versionMajor = 3, warpsPerCTA = [4, 1], instrShape = [64, 64]}>, kWidth = 2}>>
      %d = tt.dot %33, %37, %35, %acc, sparseIndex = 0 : tensor<64x32xf16, #ttg.dot_op<{opIdx = 0, parent = #ttg.mma<{versionMajor = 3, warpsPerCTA = [4, 1], instrShape = [64, 64]}>, kWidth = 2, meta = 0}>>, tensor<4x64xi16, #ttg.dot_op<{opIdx = 0, parent = #ttg.mma<{versionMajor = 3, warpsPerCTA = [4, 1], instrShape = [64, 64]}>, kWidth = 2, meta = 1}>> * tensor<64x64xf16, #ttg.dot_op<{opIdx = 1, parent = #ttg.mma<{versionMajor = 3, warpsPerCTA = [4, 1], instrShape = [64, 64]}>, kWidth = 2}>> -> tensor<64x64xf32, #ttg.mma<{versionMajor = 3, warpsPerCTA = [4, 1], instrShape = [64, 64]}>>
      %pa1 = tt.advance %pa, [%c0, %cbkh] : !tt.ptr<tensor<64x32xf16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>>>
      %pe1 = tt.advance %pe, [%c0, %cbm] : !tt.ptr<tensor<4x64xi16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>>>
      %pb1 = tt.advance %pb, [%cbm, %c0] : !tt.ptr<tensor<64x64xf16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>>>
      ttg.dot_wait {pendings = 1 : i32}
      %38 = arith.cmpi sgt, %i, %c0 : i32
      scf.if %38 {
        ttg.arrive_barrier %4[%29] {kind = "warps"} : !ttg.memdesc<3xi64, #ttg.shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [0]}>, mutable>
      }
      %39 = arith.addi %i, %c2 : i32
      %40 = arith.cmpi slt, %39, %nk : i32
      %41 = arith.divui %39, %19 : i32
      %42 = arith.andi %41, %c1 : i32
      %43 = arith.xori %42, %c1 : i32
      scf.if %40 {
        ttg.wait_barrier %4[%29], %43 : !ttg.memdesc<3xi64, #ttg.shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [0]}>, mutable>
        ttg.arrive_barrier %3[%29] {kind = "tma", bytes = 12800 : i32} : !ttg.memdesc<3xi64, #ttg.shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [0]}>, mutable>
        %44 = ttg.memdesc_subview %0[%29, %c0, %c0] : !ttg.memdesc<3x64x32xf16, #ttg.shared<{vec = 8, perPhase = 2, maxPhase = 4, order = [1, 0]}>, mutable> -> !ttg.memdesc<64x32xf16, #ttg.shared<{vec = 8, perPhase = 2, maxPhase = 4, order = [1, 0]}>, mutable>
        ttg.async_tma_copy %25, %44, %3[%29] : !tt.ptr<tensor<64x32xf16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>>> -> !ttg.memdesc<64x32xf16, #ttg.shared<{vec = 8, perPhase = 2, maxPhase = 4, order = [1, 0]}>, mutable>, !ttg.memdesc<3xi64, #ttg.shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [0]}>, mutable>
        %45 = ttg.memdesc_subview %1[%29, %c0, %c0] : !ttg.memdesc<3x4x64xi16, #ttg.shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [1, 0], metaPack = 1}>, mutable> -> !ttg.memdesc<4x64xi16, #ttg.shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [1, 0], metaPack = 1}>, mutable>
        ttg.async_tma_copy %26, %45, %3[%29] : !tt.ptr<tensor<4x64xi16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>>> -> !ttg.memdesc<4x64xi16, #ttg.shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [1, 0], metaPack = 1}>, mutable>, !ttg.memdesc<3xi64, #ttg.shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [0]}>, mutable>
        %46 = ttg.memdesc_subview %2[%29, %c0, %c0] : !ttg.memdesc<3x64x64xf16, #ttg.shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [1, 0], colBlock = 64}>, mutable> -> !ttg.memdesc<64x64xf16, #ttg.shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [1, 0], colBlock = 64}>, mutable>
        ttg.async_tma_copy %27, %46, %3[%29] : !tt.ptr<tensor<64x64xf16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>>> -> !ttg.memdesc<64x64xf16, #ttg.shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [1, 0], colBlock = 64}>, mutable>, !ttg.memdesc<3xi64, #ttg.shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [0]}>, mutable>
      }
      %47 = tt.advance %25, [%c0, %cbkh] : !tt.ptr<tensor<64x32xf16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>>>
      %48 = tt.advance %26, [%c0, %cbm] : !tt.ptr<tensor<4x64xi16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>>>
      %49 = tt.advance %27, [%cbm, %c0] : !tt.ptr<tensor<64x64xf16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>>>
      %50 = arith.addi %28, %c1 : i32
      %51 = arith.remui %50, %19 : i32
      %52 = arith.addi %29, %c1 : i32
      %53 = arith.remui %52, %19 : i32
      scf.yield %d, %pa1, %pe1, %pb1, %47, %48, %49, %51, %53 : tensor<64x64xf32, #ttg.mma<{versionMajor = 3, warpsPerCTA = [4, 1], instrShape = [64, 64]}>>, !tt.ptr<tensor<64x32xf16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>>>, !tt.ptr<tensor<4x64xi16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>>>, !tt.ptr<tensor<64x64xf16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>>>, !tt.ptr<tensor<64x32xf16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>>>, !tt.ptr<tensor<4x64xi16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>>>, !tt.ptr<tensor<64x64xf16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>>>, i32, i32
    }
    %out = arith.truncf %r : tensor<64x64xf32, #ttg.mma<{versionMajor = 3, warpsPerCTA = [4, 1], instrShape = [64, 64]}>> to tensor<64x64xf16, #ttg.mma<{versionMajor = 3, warpsPerCTA = [4, 1], instrShape = [64, 64]}>>
    %pd = tt.make_tensor_ptr %D, shape=[%M64, %N64], strides=[%N64, %one], offsets=[%om, %on] {order = array<i32: 1, 0>} : !tt.ptr<tensor<64x64xf16, #ttg.mma<{versionMajor = 3, warpsPerCTA = [4, 1], instrShape = [64, 64]}>>>
    tt.store %pd, %out {boundaryCheck = array<i32: 0, 1>} : !tt.ptr<tensor<64x64xf16, #ttg.mma<{versionMajor = 3, warpsPerCTA = [4, 1], instrShape = [64, 64]}>>>
    tt.return
  }
}
