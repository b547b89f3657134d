// RUN: not sparsecc-opt %s -p convert-ttg-to-ptx 2>&1 | filecheck %s
// A module that has a shared-memory plan (`ttg.shared`) but an op without its offset (a pass
// added it after allocate-shared-memory) gets one error at that op, not a guessed offset.

// CHECK: stale-plan.mlir:[[# @LINE + 8]]:5: error: pass 'convert-ttg-to-ptx' failed: ttg.local_alloc needs shared memory but has no "ttg.shared_offset": run allocate-shared-memory after the passes that add ops
#b = #ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 1], order = [1, 0]}>
#s = #ttg.shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [1, 0]}>
builtin.module attributes {"ttg.num-warps" = 1 : i32, "ttg.threads-per-warp" = 32 : i32, ttg.target = "sm_80", ttg.shared = 128 : i32} {
  tt.func public @stale(%x: f32) {
    %v = tt.splat %x : f32 -> tensor<4x8xf32, #b>
    %buf = ttg.local_alloc %v {ttg.shared_offset = 0 : i32} : (tensor<4x8xf32, #b>) -> !ttg.memdesc<4x8xf32, #s>
    %w = ttg.local_load %buf : !ttg.memdesc<4x8xf32, #s> -> tensor<4x8xf32, #b>
    %late = ttg.local_alloc %w : (tensor<4x8xf32, #b>) -> !ttg.memdesc<4x8xf32, #s>
    tt.return
  }
}
