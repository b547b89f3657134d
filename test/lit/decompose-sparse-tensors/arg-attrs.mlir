// RUN: sparsecc-opt %s -p decompose-sparse-tensors | filecheck %s

// Argument attributes (the frontend's `tt.divisibility = 16` for "i32:16" parameters) stay on
// their arguments when a sparse pointer becomes two (values, metadata): those two get none.

// CHECK: tt.func public @k(%D: !tt.ptr<f16>, %A_values: !tt.ptr<f16>, %A_meta: !tt.ptr<i16>, %K: i32 {tt.divisibility = 16 : i32}, %s: i32) {
builtin.module {
  tt.func public @k(%D: !tt.ptr<f16>, %A: !tt.ptr<f16, #tt.sparse<"NV24">>, %K: i32 {tt.divisibility = 16 : i32}, %s: i32) {
    %c16 = arith.constant 16 : i64
    %c1 = arith.constant 1 : i64
    %c0 = arith.constant 0 : i32
    %pa = tt.make_tensor_ptr %A, shape=[%c16, %c16], strides=[%c16, %c1], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<16x16xf16, #tt.sparse<"NV24">>>
    tt.return
  }
}
