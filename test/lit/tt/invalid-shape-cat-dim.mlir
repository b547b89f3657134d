// RUN: not sparsecc-opt %s 2>&1 | filecheck %s
// A malformed shape op is one located verifier error.

// CHECK: invalid-shape-cat-dim.mlir:[[# @LINE + 4]]:{{[0-9]+}}: error: {{.*}}tt.cat dim 2 out of range for rank 2
// CHECK-NOT: Traceback
builtin.module {
  tt.func @f(%a: tensor<4x8xf32>) {
    %c = tt.cat %a, %a {dim = 2 : i32} : tensor<4x8xf32> -> tensor<4x8xf32>
    tt.return
  }
}
