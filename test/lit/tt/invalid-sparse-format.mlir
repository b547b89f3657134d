// RUN: not sparsecc-opt %s 2>&1 | filecheck %s
// An unknown sparse format is rejected where the attribute is written, with the known ones.

// CHECK: invalid-sparse-format.mlir:[[# @LINE + 3]]:40: error: {{.*}}unknown sparse format "NV99"; known formats: "NV24"
// CHECK-NOT: Traceback
builtin.module {
  tt.func public @bad(%a: !tt.ptr<f16, #tt.sparse<"NV99">>) {
    tt.return
  }
}
