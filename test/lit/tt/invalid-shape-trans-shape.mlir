// RUN: not sparsecc-opt %s 2>&1 | filecheck %s
// A malformed shape op is one located verifier error.

// CHECK: invalid-shape-trans-shape.mlir:[[# @LINE + 4]]:{{[0-9]+}}: error: {{.*}}must give [8, 4]
// CHECK-NOT: Traceback
builtin.module {
  tt.func @f(%a: tensor<4x8xf32>) {
    %t = tt.trans %a {order = array<i32: 1, 0>} : tensor<4x8xf32> -> tensor<4x8xf32>
    tt.return
  }
}
