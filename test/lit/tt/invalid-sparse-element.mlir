// RUN: not sparsecc-opt %s --split-input-file 2>&1 | filecheck %s
// #tt.sparse rejects an element type its format cannot hold, where the type is written, saying why.

// CHECK: invalid-sparse-element.mlir:[[# @LINE + 2]]:30: error: {{.*}}#tt.sparse<"NV24"> cannot hold f32 elements: NV24 sparsity needs a 16- or 8-bit element type (fp16, bf16, fp8e4nv, fp8e5, i8)
builtin.module {
  tt.func public @scalar(%a: !tt.ptr<f32, #tt.sparse<"NV24">>) {
    tt.return
  }
}

// -----

// The same rule holds for a block pointer's sparse tile.
// CHECK: invalid-sparse-element.mlir:[[# @LINE + 2]]:28: error: {{.*}}#tt.sparse<"NV24"> cannot hold i32 elements
builtin.module {
  tt.func public @tile(%a: !tt.ptr<tensor<16x32xi32, #tt.sparse<"NV24">>>) {
    tt.return
  }
}
