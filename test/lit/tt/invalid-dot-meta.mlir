// RUN: not sparsecc-opt %s 2>&1 | filecheck %s
// A 32x64 sparse A needs 2x64 i16 metadata (one row per 16 rows of A); 4x64 is rejected.

// CHECK: invalid-dot-meta.mlir:8:5: error: {{.*}}sparse dot metadata must be tensor<2x64xi16>, got tensor<4x64xi16>
builtin.module {
  tt.func public @bad(%v: tensor<32x32xf16>, %e: tensor<4x64xi16>, %b: tensor<64x16xf16>, %c: tensor<32x16xf32>) {
    %x = arith.constant 0 : i32
    %d = tt.dot %v, %b, %e, %c, sparseIndex = 0 : tensor<32x32xf16>, tensor<4x64xi16> * tensor<64x16xf16> -> tensor<32x16xf32>
    tt.return
  }
}
