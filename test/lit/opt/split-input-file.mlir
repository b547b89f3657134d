// RUN: not sparsecc-opt %s --split-input-file 2>&1 | filecheck %s
// RUN: sparsecc-opt %s --split-input-file --verify-diagnostics | filecheck %s --check-prefix=OK
// Each `// -----` chunk is parsed, verified and reported on its own; diagnostics keep the
// line numbers of the whole file. Nothing is printed unless every chunk succeeded (or, with
// --verify-diagnostics, failed exactly as expected).

// CHECK-NOT: tt.func public @ok
// CHECK: split-input-file.mlir:23:5: error: 'tt.dot' op dot reduction dims differ
// CHECK: split-input-file.mlir:31:29: error: {{.*}}unknown sparse format "NV99"
// OK: tt.func public @ok()
// OK-NOT: // -----
builtin.module {
  tt.func public @ok() {
    tt.return
  }
}

// -----

builtin.module {
  tt.func public @bad(%a: tensor<16x32xf16>, %b: tensor<16x16xf16>, %c: tensor<16x16xf32>) {
    // expected-error@+1 {{dot reduction dims differ}}
    %d = tt.dot %a, %b, %c : tensor<16x32xf16> * tensor<16x16xf16> -> tensor<16x16xf32>
    tt.return
  }
}

// -----

// expected-error@+1 {{unknown sparse format "NV99"}}
tt.func @x(%A: !tt.ptr<f16, #tt.sparse<"NV99">>) {
  tt.return
}
