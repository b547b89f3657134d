// RUN: not sparsecc-opt %s 2>&1 | filecheck %s
// A ttg.barrier belongs to the producer or the consumer warps, or (no side) to every thread:
// any other side is one error at the op.

// CHECK: invalid-side.mlir:9:5: error: ttg.barrier: side must be "producer" or "consumer", got "both"
// CHECK-NOT: Traceback
builtin.module {
  tt.func public @f() {
    ttg.barrier {side = "both"}
    tt.return
  }
}
