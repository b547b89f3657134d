// RUN: not sparsecc-opt %s -p decompose-sparse-tensors 2>&1 | filecheck %s
// Storing a sparse tensor cannot be decomposed: one diagnostic naming the op, exit code 1.

// CHECK: error: {{.*}}'tt.store'{{.*}}cannot store a sparse
// CHECK-NOT: Traceback
builtin.module {
  tt.func public @k(%A: !tt.ptr<f16, #tt.sparse<"NV24">>, %D: !tt.ptr<f16, #tt.sparse<"NV24">>) {
    %c16 = arith.constant 16 : i64
    %c1 = arith.constant 1 : i64
    %c0 = arith.constant 0 : i32
    %pa = tt.make_tensor_ptr %A, shape=[%c16, %c16], strides=[%c16, %c1], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<16x16xf16, #tt.sparse<"NV24">>>
    %pd = tt.make_tensor_ptr %D, shape=[%c16, %c16], strides=[%c16, %c1], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<16x16xf16, #tt.sparse<"NV24">>>
    %a = tt.load %pa : !tt.ptr<tensor<16x16xf16, #tt.sparse<"NV24">>>
    tt.store %pd, %a : !tt.ptr<tensor<16x16xf16, #tt.sparse<"NV24">>>
    tt.return
  }
}
