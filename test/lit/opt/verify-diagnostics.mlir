// RUN: sparsecc-opt %s --verify-diagnostics
// RUN: not sparsecc-opt %S/../tt/invalid-dot-shape.mlir --verify-diagnostics 2>&1 | filecheck %s --check-prefix=UNEXPECTED
// Expected errors are matched by line: this file's single error is expected, so exit code 0.
// A file whose error is not expected fails, naming the unexpected error.

// UNEXPECTED: invalid-dot-shape.mlir:9:5: error: unexpected error: {{.*}}dot shapes do not agree
builtin.module {
  tt.func public @bad(%a: tensor<32x64xf16>, %b: tensor<64x16xf16>, %c: tensor<32x32xf32>) {
    // expected-error@+1 {{dot shapes do not agree: [32, 64] * [64, 16] -> [32, 32]}}
    %d = tt.dot %a, %b, %c : tensor<32x64xf16> * tensor<64x16xf16> -> tensor<32x32xf32>
    tt.return
  }
}
