// RUN: not sparsecc-opt %s -p convert-ttg-to-ptx 2>&1 | filecheck %s
// tt IR (no ttg.target) handed to convert-ttg-to-ptx: the error points at the module that lacks
// the attribute (it once had no place).

// CHECK: invalid-no-target.mlir:[[# @LINE + 1]]:1: error: pass 'convert-ttg-to-ptx' failed: convert-ttg-to-ptx needs a target
builtin.module {
  tt.func public @k(%p: !tt.ptr<f32>) {
    tt.return
  }
}
