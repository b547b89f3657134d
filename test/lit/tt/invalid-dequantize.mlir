// RUN: not sparsecc-opt %s 2>&1 | filecheck %s
// tt.dequantize checks that the codes hold exactly the result's values (two 4-bit codes a byte).

// CHECK: invalid-dequantize.mlir:[[# @LINE + 4]]:{{[0-9]+}}: error: {{.*}}4-bit codes [32, 16] hold [32, 32] values, not [32, 64]
// CHECK-NOT: Traceback
builtin.module {
  tt.func @f(%codes: tensor<32x16xi8>, %scales: tensor<32x1xf16>) {
    %w = tt.dequantize %codes, %scales {bits = 4 : i32} : tensor<32x16xi8>, tensor<32x1xf16> -> tensor<32x64xf16>
    tt.return
  }
}
