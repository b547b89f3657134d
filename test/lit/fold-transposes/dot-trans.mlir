// RUN: sparsecc-opt %s -p fold-transposes | filecheck %s
// tl.dot(x, tl.trans(w)) with w an N x K tile of a dense weight: the transpose is folded into
// w's block pointer (now K x N with order [0, 1]) and its advance; no tt.trans is left.

// CHECK-NOT: tt.trans
// CHECK: %w_ptr = tt.make_tensor_ptr %W, {{.*}} {order = array<i32: 0, 1>} : !tt.ptr<tensor<32x32xf16>>
// CHECK: tt.dot %x, %w, %{{.*}} : tensor<16x32xf16> * tensor<32x32xf16> -> tensor<16x32xf32>
// CHECK-NOT: tt.trans

builtin.module {
  tt.func public @linear_trans(%Y: !tt.ptr<f16>, %X: !tt.ptr<f16>, %W: !tt.ptr<f16>, %M: i32, %N: i32, %K: i32, %stride_xm: i32, %stride_wn: i32, %stride_ym: i32) {
    %pid_m = tt.get_program_id x : i32
    %pid_n = tt.get_program_id y : i32
    %0 = arith.constant 16 : i32
    %1 = arith.muli %pid_m, %0 : i32
    %2 = arith.extsi %M : i32 to i64
    %3 = arith.extsi %K : i32 to i64
    %4 = arith.extsi %stride_xm : i32 to i64
    %5 = arith.constant 1 : i64
    %6 = arith.constant 0 : i32
    %x_ptr = tt.make_tensor_ptr %X, shape=[%2, %3], strides=[%4, %5], offsets=[%1, %6] {order = array<i32: 1, 0>} : !tt.ptr<tensor<16x32xf16>>
    %7 = arith.constant 32 : i32
    %8 = arith.muli %pid_n, %7 : i32
    %9 = arith.extsi %N : i32 to i64
    %10 = arith.extsi %K : i32 to i64
    %11 = arith.extsi %stride_wn : i32 to i64
    %w_ptr = tt.make_tensor_ptr %W, shape=[%9, %10], strides=[%11, %5], offsets=[%8, %6] {order = array<i32: 1, 0>} : !tt.ptr<tensor<32x32xf16>>
    %acc = arith.constant dense<0.000000e+00> : tensor<16x32xf32>
    %12 = arith.addi %K, %7 : i32
    %13 = arith.constant 1 : i32
    %14 = arith.subi %12, %13 : i32
    %15 = arith.divsi %14, %7 : i32
    %acc_1, %x_ptr_1, %w_ptr_1 = scf.for %_ = %6 to %15 step %13 iter_args(%acc_2 = %acc, %x_ptr_2 = %x_ptr, %w_ptr_2 = %w_ptr) -> (tensor<16x32xf32>, !tt.ptr<tensor<16x32xf16>>, !tt.ptr<tensor<32x32xf16>>) : i32 {
      %x = tt.load %x_ptr_2 {boundaryCheck = array<i32: 0, 1>, padding = 1 : i32} : !tt.ptr<tensor<16x32xf16>>
      %w = tt.load %w_ptr_2 {boundaryCheck = array<i32: 0, 1>, padding = 1 : i32} : !tt.ptr<tensor<32x32xf16>>
      %16 = tt.trans %w : tensor<32x32xf16> -> tensor<32x32xf16>
      %acc_3 = tt.dot %x, %16, %acc_2 : tensor<16x32xf16> * tensor<32x32xf16> -> tensor<16x32xf32>
      %17 = arith.constant 0 : i32
      %18 = arith.constant 32 : i32
      %x_ptr_3 = tt.advance %x_ptr_2, [%17, %18] : !tt.ptr<tensor<16x32xf16>>
      %w_ptr_3 = tt.advance %w_ptr_2, [%17, %18] : !tt.ptr<tensor<32x32xf16>>
      scf.yield %acc_3, %x_ptr_3, %w_ptr_3 : tensor<16x32xf32>, !tt.ptr<tensor<16x32xf16>>, !tt.ptr<tensor<32x32xf16>>
    }
    %19 = arith.muli %pid_m, %0 : i32
    %20 = arith.muli %pid_n, %7 : i32
    %21 = arith.extsi %M : i32 to i64
    %22 = arith.extsi %N : i32 to i64
    %23 = arith.extsi %stride_ym : i32 to i64
    %y_ptr = tt.make_tensor_ptr %Y, shape=[%21, %22], strides=[%23, %5], offsets=[%19, %20] {order = array<i32: 1, 0>} : !tt.ptr<tensor<16x32xf16>>
    %24 = arith.truncf %acc_1 : tensor<16x32xf32> to tensor<16x32xf16>
    tt.store %y_ptr, %24 {boundaryCheck = array<i32: 0, 1>} : !tt.ptr<tensor<16x32xf16>>
    tt.return
  }
}
