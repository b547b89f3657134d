// RUN: not sparsecc-opt %s --split-input-file -p tritongpu-warp-specialize 2>&1 | filecheck %s
// RUN: not sparsecc-opt %s --split-input-file -p "tritongpu-pipeline{num-stages=3}" 2>&1 | filecheck %s
// The passes that read the module's "ttg.num-warps" check it once, where they read it, at the
// module: 0 warps divided by zero in the lowering; 3 or 64 warps have no layouts (the warps a
// CTA has must be a power of two, at most 32 in 1024 threads; a producer warp is added only
// to 16 or fewer).

// CHECK: invalid-num-warps.mlir:[[# @LINE + 1]]:1: error: pass '{{.*}}' failed: "ttg.num-warps" = 0 is not supported: it must be one of 1, 2, 4, 8, 16, 32
builtin.module attributes {"ttg.num-warps" = 0 : i32, "ttg.threads-per-warp" = 32 : i32, ttg.target = "sm_90a"} {
  tt.func public @k() {
    tt.return
  }
}

// -----

// CHECK: invalid-num-warps.mlir:[[# @LINE + 1]]:1: error: pass '{{.*}}' failed: "ttg.num-warps" = 3 is not supported
builtin.module attributes {"ttg.num-warps" = 3 : i32, ttg.target = "sm_90a"} {
  tt.func public @k() {
    tt.return
  }
}

// -----

// CHECK: invalid-num-warps.mlir:[[# @LINE + 1]]:1: error: pass '{{.*}}' failed: "ttg.num-warps" = 64 is not supported
builtin.module attributes {"ttg.num-warps" = 64 : i32, ttg.target = "sm_90a"} {
  tt.func public @k() {
    tt.return
  }
}
