// RUN: not sparsecc-opt %s --split-input-file 2>&1 | filecheck %s
// RUN: sparsecc-opt %s --split-input-file --verify-diagnostics
// Chunks are parsed on their own, without padding, and report the lines and columns of the
// whole file: a parse error, a verifier error, a pass-free structural error and an error in a
// chunk after a marker followed by blank lines. Each message is followed by its source line.

// CHECK: split-input-file-lines.mlir:[[# @LINE + 4]]:6: error: Expected '=' after operation result list
// CHECK-NEXT: %c arith.constant 1 : i32
builtin.module {
  // expected-error@+1 {{Expected '=' after operation result list}}
  %c arith.constant 1 : i32
}

// -----



// CHECK: split-input-file-lines.mlir:[[# @LINE + 4]]:5: error: 'tt.dot' op dot reduction dims differ
// CHECK-NEXT: %d = tt.dot
builtin.module {
  tt.func public @bad(%a: tensor<16x32xf16>, %b: tensor<16x16xf16>, %c: tensor<16x16xf32>) {
    %d = tt.dot %a, %b, %c : tensor<16x32xf16> * tensor<16x16xf16> -> tensor<16x16xf32> // expected-error {{dot reduction dims differ}}
    tt.return
  }
}

// -----
// CHECK: split-input-file-lines.mlir:[[# @LINE + 4]]:5: error: {{.*}}used before its definition
builtin.module {
  tt.func public @k(%x: i32) {
    // expected-error@+1 {{used before its definition}}
    %y = arith.addi %z, %x : i32
    %z = arith.addi %x, %x : i32
    tt.return
  }
}
// -----
// CHECK: split-input-file-lines.mlir:[[# @LINE + 2]]:{{[0-9]+}}: error: {{.*}}unknown sparse format "NV99"
// expected-error@+1 {{unknown sparse format "NV99"}}
tt.func @x(%A: !tt.ptr<f16, #tt.sparse<"NV99">>) {
  tt.return
}
