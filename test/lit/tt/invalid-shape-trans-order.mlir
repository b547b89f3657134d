// RUN: not sparsecc-opt %s 2>&1 | filecheck %s
// A malformed shape op is one located verifier error.

// CHECK: invalid-shape-trans-order.mlir:[[# @LINE + 4]]:{{[0-9]+}}: error: {{.*}}tt.trans order [0, 0] must be a permutation of 0..1
// CHECK-NOT: Traceback
builtin.module {
  tt.func @f(%a: tensor<4x8xf32>) {
    %t = tt.trans %a {order = array<i32: 0, 0>} : tensor<4x8xf32> -> tensor<4x4xf32>
    tt.return
  }
}
