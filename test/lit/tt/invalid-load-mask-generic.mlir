// RUN: not sparsecc-opt %s 2>&1 | filecheck %s
// The same wrong mask written generically reaches tt.load's verifier.

// CHECK: invalid-load-mask-generic.mlir:[[# @LINE + 4]]:5: error: 'tt.load' op load mask must be i1 with the pointer's shape
// CHECK-NOT: Traceback
builtin.module {
  tt.func public @bad(%p: tensor<16x!tt.ptr<f16>>, %m: tensor<16xi32>) {
    %x = "tt.load"(%p, %m) <{operandSegmentSizes = array<i32: 1, 1, 0>}> : (tensor<16x!tt.ptr<f16>>, tensor<16xi32>) -> tensor<16xf16>
    tt.return
  }
}
