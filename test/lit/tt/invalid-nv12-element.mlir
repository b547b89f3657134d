// RUN: not sparsecc-opt %s 2>&1 | filecheck %s
// NV12 holds 32-bit floats only (tf32 tensor cores), and says so where the type is written.

// CHECK: invalid-nv12-element.mlir:[[# @LINE + 2]]:30: error: {{.*}}#tt.sparse<"NV12"> cannot hold f16 elements: NV12 sparsity needs a 32-bit float element type (read as tf32) (fp32)
builtin.module {
  tt.func public @scalar(%a: !tt.ptr<f16, #tt.sparse<"NV12">>) {
    tt.return
  }
}
