// RUN: sparsecc-opt %s -p decompose-sparse-tensors | filecheck %s
// A sparse block pointer chosen by scf.if: the result splits into values + metadata, each
// branch yields both halves (the advance moves values [16, 0] and metadata [1, 0]).

// CHECK-NOT: tt.sparse
// CHECK-LABEL: tt.func public @k
// CHECK: %pb_values, %pb_meta = scf.if %c -> (!tt.ptr<tensor<16x16xf16>>, !tt.ptr<tensor<1x32xi16>>) {
// CHECK: %q_values = tt.advance %pa_values, [%c16, %{{.*}}] : !tt.ptr<tensor<16x16xf16>>
// CHECK: %q_meta = tt.advance %pa_meta, [%{{.*}}, %c0] : !tt.ptr<tensor<1x32xi16>>
// CHECK: scf.yield %q_values, %q_meta
// CHECK: } else {
// CHECK: scf.yield %pa_values, %pa_meta
// CHECK: tt.load %pb_values : !tt.ptr<tensor<16x16xf16>>
// CHECK: tt.load %pb_meta : !tt.ptr<tensor<1x32xi16>>
// CHECK-NOT: tt.sparse
builtin.module {
  tt.func public @k(%A: !tt.ptr<f16, #tt.sparse<"NV24">>, %c: i1) {
    %c32 = arith.constant 32 : i64
    %c1 = arith.constant 1 : i64
    %c0 = arith.constant 0 : i32
    %c16 = arith.constant 16 : i32
    %pa = tt.make_tensor_ptr %A, shape=[%c32, %c32], strides=[%c32, %c1], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<16x32xf16, #tt.sparse<"NV24">>>
    %pb = scf.if %c -> (!tt.ptr<tensor<16x32xf16, #tt.sparse<"NV24">>>) {
      %q = tt.advance %pa, [%c16, %c0] : !tt.ptr<tensor<16x32xf16, #tt.sparse<"NV24">>>
      scf.yield %q : !tt.ptr<tensor<16x32xf16, #tt.sparse<"NV24">>>
    } else {
      scf.yield %pa : !tt.ptr<tensor<16x32xf16, #tt.sparse<"NV24">>>
    }
    %a = tt.load %pb : !tt.ptr<tensor<16x32xf16, #tt.sparse<"NV24">>>
    tt.return
  }
}
