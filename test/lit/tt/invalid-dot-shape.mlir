// RUN: not sparsecc-opt %s 2>&1 | filecheck %s
// The dot's M/N do not agree with its operands; the error points at the tt.dot line.

// CHECK: invalid-dot-shape.mlir:9:5: error: {{.*}}dot shapes do not agree: [32, 64] * [64, 16] -> [32, 32]
// CHECK-NEXT: %d = tt.dot
// CHECK-NEXT: ^
builtin.module {
  tt.func public @bad(%a: tensor<32x64xf16>, %b: tensor<64x16xf16>, %c: tensor<32x32xf32>) {
    %d = tt.dot %a, %b, %c : tensor<32x64xf16> * tensor<64x16xf16> -> tensor<32x32xf32>
    tt.return
  }
}
