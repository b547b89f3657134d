// RUN: not sparsecc-opt %s -p decompose-sparse-tensors 2>&1 | filecheck %s
// An elementwise op on a sparse tensor has no values/metadata meaning.

// CHECK: error: {{.*}}'arith.addf'{{.*}}cannot use a sparse
builtin.module {
  tt.func public @k(%A: !tt.ptr<f16, #tt.sparse<"NV24">>) {
    %c16 = arith.constant 16 : i64
    %c1 = arith.constant 1 : i64
    %c0 = arith.constant 0 : i32
    %pa = tt.make_tensor_ptr %A, shape=[%c16, %c16], strides=[%c16, %c1], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<16x16xf16, #tt.sparse<"NV24">>>
    %a = tt.load %pa : !tt.ptr<tensor<16x16xf16, #tt.sparse<"NV24">>>
    %b = arith.addf %a, %a : tensor<16x16xf16, #tt.sparse<"NV24">>
    tt.return
  }
}
