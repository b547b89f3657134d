// RUN: not sparsecc-opt %s --split-input-file -p convert-ttg-to-ptx 2>&1 | filecheck %s
// RUN: not sparsecc-opt %s --split-input-file --emit ptx 2>&1 | filecheck %s --check-prefix=EMIT
// convert-ttg-to-ptx refuses ttgir its target cannot run, at the op that needs more, instead
// of printing PTX that ptxas rejects: a wgmma dot (#ttg.mma version 3) for sm_80; a CTA pair
// for sm_86; an unknown target; more shared memory than a block of sm_86 has; num-warps 0
// (which divided by zero in the lowering). --emit ptx (the compiler's ptx stage) says the same.

// CHECK: invalid-target.mlir:[[# @LINE + 20]]:5: error: pass 'convert-ttg-to-ptx' failed: a wgmma dot (#ttg.mma version 3) needs sm_90a, but the target is sm_80
// EMIT: invalid-target.mlir:[[# @LINE + 19]]:5: error: cannot lower to PTX: a wgmma dot (#ttg.mma version 3) needs sm_90a, but the target is sm_80
#blocked = #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#blocked1 = #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
#mma = #ttg.mma<{versionMajor = 3, warpsPerCTA = [4, 1], instrShape = [64, 64]}>
#sa = #ttg.shared<{vec = 8, perPhase = 2, maxPhase = 4, order = [1, 0]}>
#sb = #ttg.shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [1, 0], colBlock = 64}>
#se = #ttg.shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [1, 0], metaPack = 1}>
builtin.module attributes {"ttg.num-warps" = 4 : i32, "ttg.threads-per-warp" = 32 : i32, ttg.target = "sm_80"} {
  tt.func public @wgmma(%pa: !tt.ptr<tensor<64x32xf16, #blocked>>, %pe: !tt.ptr<tensor<4x64xi16, #blocked1>>, %pb: !tt.ptr<tensor<64x64xf16, #blocked1>>, %pd: !tt.ptr<tensor<64x64xf16, #mma>>) {
    %zero = arith.constant dense<0.000000e+00> : tensor<64x64xf32, #mma>
    %a = tt.load %pa {boundaryCheck = array<i32: 0, 1>, padding = 1 : i32} : !tt.ptr<tensor<64x32xf16, #blocked>>
    %e = tt.load %pe {boundaryCheck = array<i32: 0, 1>, padding = 1 : i32} : !tt.ptr<tensor<4x64xi16, #blocked1>>
    %b = tt.load %pb {boundaryCheck = array<i32: 0, 1>, padding = 1 : i32} : !tt.ptr<tensor<64x64xf16, #blocked1>>
    %0 = ttg.local_alloc %a : (tensor<64x32xf16, #blocked>) -> !ttg.memdesc<64x32xf16, #sa>
    %1 = ttg.local_load %0 : !ttg.memdesc<64x32xf16, #sa> -> tensor<64x32xf16, #ttg.dot_op<{opIdx = 0, parent = #mma, kWidth = 2, meta = 0}>>
    %2 = ttg.local_alloc %b : (tensor<64x64xf16, #blocked1>) -> !ttg.memdesc<64x64xf16, #sb>
    %3 = ttg.local_load %2 : !ttg.memdesc<64x64xf16, #sb> -> tensor<64x64xf16, #ttg.dot_op<{opIdx = 1, parent = #mma, kWidth = 2}>>
    %4 = ttg.local_alloc %e : (tensor<4x64xi16, #blocked1>) -> !ttg.memdesc<4x64xi16, #se>
    %5 = ttg.local_load %4 : !ttg.memdesc<4x64xi16, #se> -> tensor<4x64xi16, #ttg.dot_op<{opIdx = 0, parent = #mma, kWidth = 2, meta = 1}>>
    %d = tt.dot %1, %3, %5, %zero, sparseIndex = 0 : tensor<64x32xf16, #ttg.dot_op<{opIdx = 0, parent = #mma, kWidth = 2, meta = 0}>>, tensor<4x64xi16, #ttg.dot_op<{opIdx = 0, parent = #mma, kWidth = 2, meta = 1}>> * tensor<64x64xf16, #ttg.dot_op<{opIdx = 1, parent = #mma, kWidth = 2}>> -> tensor<64x64xf32, #mma>
    %out = arith.truncf %d : tensor<64x64xf32, #mma> to tensor<64x64xf16, #mma>
    tt.store %pd, %out {boundaryCheck = array<i32: 0, 1>} : !tt.ptr<tensor<64x64xf16, #mma>>
    tt.return
  }
}

// -----

// CHECK: invalid-target.mlir:[[# @LINE + 2]]:1: error: pass 'convert-ttg-to-ptx' failed: a CTA cluster ("ttg.num-ctas" = 2) needs sm_90 or newer, but the target is sm_86
// EMIT: invalid-target.mlir:[[# @LINE + 1]]:1: error: cannot lower to PTX: a CTA cluster
builtin.module attributes {"ttg.num-warps" = 4 : i32, "ttg.num-ctas" = 2 : i32, ttg.target = "sm_86"} {
  tt.func public @pair() {
    tt.return
  }
}

// -----

// CHECK: invalid-target.mlir:[[# @LINE + 2]]:1: error: pass 'convert-ttg-to-ptx' failed: "ttg.target": unknown target 'sm_1000' (supported: sm_80, sm_86, sm_89, sm_90, sm_90a)
// EMIT: invalid-target.mlir:[[# @LINE + 1]]:1: error: cannot lower to PTX: "ttg.target": unknown target 'sm_1000'
builtin.module attributes {"ttg.num-warps" = 4 : i32, ttg.target = "sm_1000"} {
  tt.func public @future() {
    tt.return
  }
}

// -----

// 2 x 256 x 128 f16 = 131072 bytes: more than the 99 KiB of an sm_86 block
// CHECK: invalid-target.mlir:[[# @LINE + 5]]:5: error: pass 'convert-ttg-to-ptx' failed: tt.func @big: 131072 bytes of shared memory exceed the 101376 bytes (99 KiB) one block may use on sm_86; the largest buffer is this 2x256x128 ttg.local_alloc of 131072 bytes (fewer pipeline stages or smaller tiles need less)
// EMIT: invalid-target.mlir:[[# @LINE + 4]]:5: error: cannot lower to PTX: tt.func @big: 131072 bytes of shared memory exceed
#s = #ttg.shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [1, 0]}>
builtin.module attributes {"ttg.num-warps" = 4 : i32, ttg.target = "sm_86"} {
  tt.func public @big() {
    %buf = ttg.local_alloc : () -> !ttg.memdesc<2x256x128xf16, #s, mutable>
    tt.return
  }
}

// -----

// CHECK: invalid-target.mlir:[[# @LINE + 2]]:1: error: pass 'convert-ttg-to-ptx' failed: "ttg.num-warps" = 0 is not supported: it must be one of 1, 2, 4, 8, 16, 32
// EMIT: invalid-target.mlir:[[# @LINE + 1]]:1: error: cannot lower to PTX: "ttg.num-warps" = 0 is not supported
builtin.module attributes {"ttg.num-warps" = 0 : i32, ttg.target = "sm_90a"} {
  tt.func public @no_warps() {
    tt.return
  }
}
