// RUN: not sparsecc-opt %s -p convert-ttg-to-ptx 2>&1 | filecheck %s
// RUN: not sparsecc-opt %s -p 'convert-ttg-to-ptx{target=sm_12}' 2>&1 | filecheck %s --check-prefix=OPTION
// The target a ttgir module names (or the option) must be a supported GPU in ASCII digits.

// CHECK: invalid-target-option.mlir:[[# @LINE + 2]]:1: error: pass 'convert-ttg-to-ptx' failed: "ttg.target": unknown target 'sm_٩٠'
// OPTION: error: invalid options for pass 'convert-ttg-to-ptx': target sm_12 has no sparse tensor cores
builtin.module attributes {"ttg.num-warps" = 4 : i32, "ttg.threads-per-warp" = 32 : i32, ttg.target = "sm_٩٠"} {
  tt.func public @k(%p: !tt.ptr<f32>) {
    tt.return
  }
}
