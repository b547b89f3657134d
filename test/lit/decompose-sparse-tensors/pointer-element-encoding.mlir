// RUN: sparsecc-opt %s -p decompose-sparse-tensors | filecheck %s
// RUN: sparsecc-opt %s --print-op-generic | sparsecc-opt -p decompose-sparse-tensors | filecheck %s
// A tensor of sparse pointers may carry #tt.sparse on its pointers only (as test/lit/tt/roundtrip.mlir
// writes it); its load is sparse all the same (`tt.loaded_type`) and splits like one whose tensor
// carries the encoding too. This load once stopped the pass with an internal AssertionError.

// CHECK-NOT: tt.sparse
// CHECK-LABEL: tt.func public @elem(%A_values: !tt.ptr<f16>, %A_meta: !tt.ptr<i16>, %n: i32)
// CHECK: %a_values = tt.load %p_values : tensor<16x16x!tt.ptr<f16>>
// CHECK: %a_meta = tt.load %p_meta : tensor<1x32x!tt.ptr<i16>>
// CHECK: tt.dot %a_values, %b, %a_meta, %c, sparseIndex = 0 : tensor<16x16xf16>, tensor<1x32xi16> * tensor<32x16xf16> -> tensor<16x16xf32>
// CHECK-NOT: tt.sparse

builtin.module {
  tt.func public @elem(%A: !tt.ptr<f16, #tt.sparse<"NV24">>, %n: i32) {
    %r = tt.make_range {start = 0 : i32, end = 16 : i32} : tensor<16xi32>
    %k = tt.make_range {start = 0 : i32, end = 32 : i32} : tensor<32xi32>
    %row = tt.expand_dims %r {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
    %col = tt.expand_dims %k {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
    %c32 = tt.splat %n : i32 -> tensor<16x1xi32>
    %roff = arith.muli %row, %c32 : tensor<16x1xi32>
    %rowb = tt.broadcast %roff : tensor<16x1xi32> -> tensor<16x32xi32>
    %colb = tt.broadcast %col : tensor<1x32xi32> -> tensor<16x32xi32>
    %off = arith.addi %rowb, %colb : tensor<16x32xi32>
    %s = tt.splat %A : !tt.ptr<f16, #tt.sparse<"NV24">> -> tensor<16x32x!tt.ptr<f16, #tt.sparse<"NV24">>>
    %p = tt.addptr %s, %off : tensor<16x32x!tt.ptr<f16, #tt.sparse<"NV24">>>, tensor<16x32xi32>
    %a = tt.load %p : tensor<16x32x!tt.ptr<f16, #tt.sparse<"NV24">>>
    %b = arith.constant dense<1.000000e+00> : tensor<32x16xf16>
    %c = arith.constant dense<0.000000e+00> : tensor<16x16xf32>
    %d = tt.dot %a, %b, %c : tensor<16x32xf16, #tt.sparse<"NV24">> * tensor<32x16xf16> -> tensor<16x16xf32>
    tt.return
  }
}
