// RUN: not sparsecc-opt %s 2>&1 | filecheck %s
// A 2-D tile needs two shape entries; one is a rank mismatch.

// CHECK: invalid-make-tensor-ptr.mlir:10:5: error: {{.*}}make_tensor_ptr needs 2 shape (one per tile dim), got 1
builtin.module {
  tt.func public @bad(%p: !tt.ptr<f16>) {
    %c0 = arith.constant 0 : i32
    %n = arith.constant 64 : i64
    %one = arith.constant 1 : i64
    %pa = tt.make_tensor_ptr %p, shape=[%n], strides=[%n, %one], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<32x64xf16>>
    tt.return
  }
}
