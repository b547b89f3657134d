// RUN: not sparsecc-opt %s 2>&1 | filecheck %s
// An op of no loaded dialect is a located error, not a crash.

// CHECK: unknown-op.mlir:[[# @LINE + 4]]:5: error: {{.*}}tt.frobnicate{{.*}}not registered
// CHECK-NOT: Traceback
builtin.module {
  tt.func public @k() {
    tt.frobnicate
    tt.return
  }
}
