// RUN: not sparsecc-opt %s 2>&1 | filecheck %s
// A load's mask must be i1 with the pointer tensor's shape. In custom form the parser rejects
// the i32 mask at its use (invalid-load-mask-generic.mlir reaches the verifier).

// CHECK: invalid-load-mask.mlir:[[# @LINE + 4]]:22: error: operand is used with type tensor<16xi1>, but has been previously used or defined with type tensor<16xi32>
// CHECK-NOT: Traceback
builtin.module {
  tt.func public @bad(%p: tensor<16x!tt.ptr<f16>>, %m: tensor<16xi32>) {
    %x = tt.load %p, %m : tensor<16x!tt.ptr<f16>>
    tt.return
  }
}
