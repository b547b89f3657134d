// RUN: sparsecc-opt %s | filecheck %s
// RUN: sparsecc-opt %s --print-op-generic | sparsecc-opt | filecheck %s
// RUN: sparsecc-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC
// RUN: sparsecc-opt %s -p decompose-sparse-tensors | filecheck %s --check-prefix=DECOMPOSED

// Every tt op and type in its custom form: the printer reproduces the input exactly, and the
// generic form parses back to the same custom text. Types: scalar pointers, a #tt.sparse
// pointer, tensors of (sparse) pointers, block pointers to dense and sparse tiles.

// CHECK: builtin.module {
// CHECK-NEXT:   tt.func public @all_ops(%p: !tt.ptr<f16>, %sp: !tt.ptr<f16, #tt.sparse<"NV24">>, %vals: !tt.ptr<f16>, %mp: !tt.ptr<i16>, %n: i32, %m64: i64) {
// CHECK-NEXT:     %pid = tt.get_program_id x : i32
// CHECK-NEXT:     %nprog = tt.get_num_programs y : i32
// CHECK-NEXT:     %r = tt.make_range {start = 0 : i32, end = 16 : i32} : tensor<16xi32>
// CHECK-NEXT:     %ns = tt.splat %n : i32 -> tensor<16xi32>
// CHECK-NEXT:     %mask1 = arith.cmpi slt, %r, %ns : tensor<16xi32>
// CHECK-NEXT:     %row = tt.expand_dims %r {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
// CHECK-NEXT:     %col = tt.expand_dims %r {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
// CHECK-NEXT:     %rowb = tt.broadcast %row : tensor<16x1xi32> -> tensor<16x16xi32>
// CHECK-NEXT:     %colb = tt.broadcast %col : tensor<1x16xi32> -> tensor<16x16xi32>
// CHECK-NEXT:     %off = arith.addi %rowb, %colb : tensor<16x16xi32>
// CHECK-NEXT:     %flat = tt.reshape %off : tensor<16x16xi32> -> tensor<256xi32>
// CHECK-NEXT:     %ps = tt.splat %p : !tt.ptr<f16> -> tensor<16x16x!tt.ptr<f16>>
// CHECK-NEXT:     %ptrs = tt.addptr %ps, %off : tensor<16x16x!tt.ptr<f16>>, tensor<16x16xi32>
// CHECK-NEXT:     %sps = tt.splat %sp : !tt.ptr<f16, #tt.sparse<"NV24">> -> tensor<16x16x!tt.ptr<f16, #tt.sparse<"NV24">>>
// CHECK-NEXT:     %sptrs = tt.addptr %sps, %off : tensor<16x16x!tt.ptr<f16, #tt.sparse<"NV24">>>, tensor<16x16xi32>
// CHECK-NEXT:     %m2 = arith.cmpi slt, %off, %rowb : tensor<16x16xi32>
// CHECK-NEXT:     %zero = arith.constant dense<0.000000e+00> : tensor<16x16xf16>
// CHECK-NEXT:     %x = tt.load %ptrs, %m2, %zero : tensor<16x16x!tt.ptr<f16>>
// CHECK-NEXT:     %sx = tt.load %sptrs : tensor<16x16x!tt.ptr<f16, #tt.sparse<"NV24">>>
// CHECK-NEXT:     %c0 = arith.constant 0 : i32
// CHECK-NEXT:     %c1 = arith.constant 1 : i64
// CHECK-NEXT:     %pa = tt.make_tensor_ptr %sp, shape=[%m64, %m64], strides=[%m64, %c1], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<32x64xf16, #tt.sparse<"NV24">>>
// CHECK-NEXT:     %pb = tt.make_tensor_ptr %p, shape=[%m64, %m64], strides=[%m64, %c1], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<64x16xf16>>
// CHECK-NEXT:     %pv = tt.make_tensor_ptr %vals, shape=[%m64, %m64], strides=[%m64, %c1], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<32x32xf16>>
// CHECK-NEXT:     %pm = tt.make_tensor_ptr %mp, shape=[%m64, %m64], strides=[%m64, %c1], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<2x64xi16>>
// CHECK-NEXT:     %a = tt.load %pa {boundaryCheck = array<i32: 0, 1>, padding = 1 : i32} : !tt.ptr<tensor<32x64xf16, #tt.sparse<"NV24">>>
// CHECK-NEXT:     %b = tt.load %pb : !tt.ptr<tensor<64x16xf16>>
// CHECK-NEXT:     %v = tt.load %pv : !tt.ptr<tensor<32x32xf16>>
// CHECK-NEXT:     %e = tt.load %pm : !tt.ptr<tensor<2x64xi16>>
// CHECK-NEXT:     %acc = arith.constant dense<0.000000e+00> : tensor<32x16xf32>
// CHECK-NEXT:     %d = tt.dot %a, %b, %acc : tensor<32x64xf16, #tt.sparse<"NV24">> * tensor<64x16xf16> -> tensor<32x16xf32>
// CHECK-NEXT:     %d2 = tt.dot %v, %b, %e, %d, sparseIndex = 0 : tensor<32x32xf16>, tensor<2x64xi16> * tensor<64x16xf16> -> tensor<32x16xf32>
// CHECK-NEXT:     %d3 = tt.dot %x, %x, %x : tensor<16x16xf16> * tensor<16x16xf16> -> tensor<16x16xf16>
// CHECK-NEXT:     %s = tt.reduce sum %d2 {axis = 1 : i32} : tensor<32x16xf32> -> tensor<32xf32>
// CHECK-NEXT:     %mx = tt.reduce max %d2 {axis = 0 : i32} : tensor<32x16xf32> -> tensor<16xf32>
// CHECK-NEXT:     %c64 = arith.constant 64 : i32
// CHECK-NEXT:     %pa2 = tt.advance %pa, [%c0, %c64] : !tt.ptr<tensor<32x64xf16, #tt.sparse<"NV24">>>
// CHECK-NEXT:     tt.store %ptrs, %x, %m2 : tensor<16x16x!tt.ptr<f16>>
// CHECK-NEXT:     tt.store %pb, %b {boundaryCheck = array<i32: 0, 1>} : !tt.ptr<tensor<64x16xf16>>
// CHECK-NEXT:     tt.return
// CHECK-NEXT:   }
// CHECK-NEXT: }

// GENERIC: "builtin.module"() ({
// GENERIC: "tt.func"() <{sym_name = "all_ops", function_type = (!tt.ptr<f16>, !tt.ptr<f16, #tt.sparse<"NV24">>, {{.*}}
// GENERIC: %pid = "tt.get_program_id"() <{axis = 0 : i32}> : () -> i32
// GENERIC: "tt.make_tensor_ptr"(%sp, %m64, %m64, %m64, %c1, %c0, %c0)
// GENERIC-SAME: -> !tt.ptr<tensor<32x64xf16, #tt.sparse<"NV24">>>
// GENERIC: %d2 = "tt.dot"(%v, %b, %d, %e) <{sparseIndex = 0 : i32}> : (tensor<32x32xf16>, tensor<64x16xf16>, tensor<32x16xf32>, tensor<2x64xi16>) -> tensor<32x16xf32>
// GENERIC: "tt.return"() : () -> ()

// The same ops decompose (the load of %sptrs, sparse on its pointers only, once stopped the pass
// with an internal AssertionError).
// DECOMPOSED-NOT: tt.sparse
// DECOMPOSED: %sx_values = tt.load %sptrs_values : tensor<16x8x!tt.ptr<f16>>
// DECOMPOSED: %sx_meta = tt.load %sptrs_meta : tensor<1x16x!tt.ptr<i16>>
// DECOMPOSED: tt.dot %a_values, %b, %a_meta, %acc, sparseIndex = 0
// DECOMPOSED-NOT: tt.sparse

builtin.module {
  tt.func public @all_ops(%p: !tt.ptr<f16>, %sp: !tt.ptr<f16, #tt.sparse<"NV24">>, %vals: !tt.ptr<f16>, %mp: !tt.ptr<i16>, %n: i32, %m64: i64) {
    %pid = tt.get_program_id x : i32
    %nprog = tt.get_num_programs y : i32
    %r = tt.make_range {start = 0 : i32, end = 16 : i32} : tensor<16xi32>
    %ns = tt.splat %n : i32 -> tensor<16xi32>
    %mask1 = arith.cmpi slt, %r, %ns : tensor<16xi32>
    %row = tt.expand_dims %r {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>
    %col = tt.expand_dims %r {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
    %rowb = tt.broadcast %row : tensor<16x1xi32> -> tensor<16x16xi32>
    %colb = tt.broadcast %col : tensor<1x16xi32> -> tensor<16x16xi32>
    %off = arith.addi %rowb, %colb : tensor<16x16xi32>
    %flat = tt.reshape %off : tensor<16x16xi32> -> tensor<256xi32>
    %ps = tt.splat %p : !tt.ptr<f16> -> tensor<16x16x!tt.ptr<f16>>
    %ptrs = tt.addptr %ps, %off : tensor<16x16x!tt.ptr<f16>>, tensor<16x16xi32>
    %sps = tt.splat %sp : !tt.ptr<f16, #tt.sparse<"NV24">> -> tensor<16x16x!tt.ptr<f16, #tt.sparse<"NV24">>>
    %sptrs = tt.addptr %sps, %off : tensor<16x16x!tt.ptr<f16, #tt.sparse<"NV24">>>, tensor<16x16xi32>
    %m2 = arith.cmpi slt, %off, %rowb : tensor<16x16xi32>
    %zero = arith.constant dense<0.000000e+00> : tensor<16x16xf16>
    %x = tt.load %ptrs, %m2, %zero : tensor<16x16x!tt.ptr<f16>>
    %sx = tt.load %sptrs : tensor<16x16x!tt.ptr<f16, #tt.sparse<"NV24">>>
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i64
    %pa = tt.make_tensor_ptr %sp, shape=[%m64, %m64], strides=[%m64, %c1], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<32x64xf16, #tt.sparse<"NV24">>>
    %pb = tt.make_tensor_ptr %p, shape=[%m64, %m64], strides=[%m64, %c1], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<64x16xf16>>
    %pv = tt.make_tensor_ptr %vals, shape=[%m64, %m64], strides=[%m64, %c1], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<32x32xf16>>
    %pm = tt.make_tensor_ptr %mp, shape=[%m64, %m64], strides=[%m64, %c1], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<2x64xi16>>
    %a = tt.load %pa {boundaryCheck = array<i32: 0, 1>, padding = 1 : i32} : !tt.ptr<tensor<32x64xf16, #tt.sparse<"NV24">>>
    %b = tt.load %pb : !tt.ptr<tensor<64x16xf16>>
    %v = tt.load %pv : !tt.ptr<tensor<32x32xf16>>
    %e = tt.load %pm : !tt.ptr<tensor<2x64xi16>>
    %acc = arith.constant dense<0.000000e+00> : tensor<32x16xf32>
    %d = tt.dot %a, %b, %acc : tensor<32x64xf16, #tt.sparse<"NV24">> * tensor<64x16xf16> -> tensor<32x16xf32>
    %d2 = tt.dot %v, %b, %e, %d, sparseIndex = 0 : tensor<32x32xf16>, tensor<2x64xi16> * tensor<64x16xf16> -> tensor<32x16xf32>
    %d3 = tt.dot %x, %x, %x : tensor<16x16xf16> * tensor<16x16xf16> -> tensor<16x16xf16>
    %s = tt.reduce sum %d2 {axis = 1 : i32} : tensor<32x16xf32> -> tensor<32xf32>
    %mx = tt.reduce max %d2 {axis = 0 : i32} : tensor<32x16xf32> -> tensor<16xf32>
    %c64 = arith.constant 64 : i32
    %pa2 = tt.advance %pa, [%c0, %c64] : !tt.ptr<tensor<32x64xf16, #tt.sparse<"NV24">>>
    tt.store %ptrs, %x, %m2 : tensor<16x16x!tt.ptr<f16>>
    tt.store %pb, %b {boundaryCheck = array<i32: 0, 1>} : !tt.ptr<tensor<64x16xf16>>
    tt.return
  }
}
