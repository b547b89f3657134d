// RUN: not sparsecc-opt %s -p decompose-sparse-tensors 2>&1 | filecheck %s
// A sparse tile whose rows are not a multiple of 16 has no whole metadata rows.

// CHECK: error: {{.*}}'tt.make_tensor_ptr'{{.*}}multiples of 16{{.*}}got 8x32
builtin.module {
  tt.func public @k(%A: !tt.ptr<f16, #tt.sparse<"NV24">>) {
    %c16 = arith.constant 16 : i64
    %c1 = arith.constant 1 : i64
    %c0 = arith.constant 0 : i32
    %pa = tt.make_tensor_ptr %A, shape=[%c16, %c16], strides=[%c16, %c1], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<8x32xf16, #tt.sparse<"NV24">>>
    tt.return
  }
}
