// RUN: not sparsecc-opt %s 2>&1 | filecheck %s
// A malformed shape op is one located verifier error.

// CHECK: invalid-shape-split-last.mlir:[[# @LINE + 4]]:{{[0-9]+}}: error: {{.*}}tt.split needs a last dim of 2
// CHECK-NOT: Traceback
builtin.module {
  tt.func @f(%a: tensor<4x8xf32>) {
    %l, %r = tt.split %a : tensor<4x8xf32> -> tensor<4xf32>
    tt.return
  }
}
