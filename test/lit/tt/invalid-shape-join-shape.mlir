// RUN: not sparsecc-opt %s 2>&1 | filecheck %s
// A malformed shape op is one located verifier error.

// CHECK: invalid-shape-join-shape.mlir:[[# @LINE + 4]]:{{[0-9]+}}: error: {{.*}}tt.join of [4, 8] must give [4, 8, 2]
// CHECK-NOT: Traceback
builtin.module {
  tt.func @f(%a: tensor<4x8xf32>) {
    %j = tt.join %a, %a : tensor<4x8xf32> -> tensor<4x8x4xf32>
    tt.return
  }
}
