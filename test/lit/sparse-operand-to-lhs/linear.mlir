// RUN: sparsecc-opt %s -p sparse-operand-to-lhs | filecheck %s
// y = x @ W.T with W (N x K, 2:4 along K) the right operand of tt.dot: the dot's component is
// transposed in place. W's block pointer becomes N x K with K contiguous (order [1, 0]), x's
// becomes K x M (order [0, 1]), the accumulator runs N x M, the dot takes W on the left, the
// bias broadcast flips its axis and the store goes through the transposed Y pointer.

// CHECK-LABEL: tt.func public @linear_block_ptr
// CHECK: %x_ptr = tt.make_tensor_ptr %X, shape=[%{{.*}}, %{{.*}}], strides=[%{{.*}}, %{{.*}}], offsets=[%{{.*}}, %{{.*}}] {order = array<i32: 0, 1>} : !tt.ptr<tensor<32x16xf16>>
// CHECK: %w_ptr = tt.make_tensor_ptr %W, {{.*}} {order = array<i32: 1, 0>} : !tt.ptr<tensor<32x32xf16, #tt.sparse<"NV24">>>
// CHECK: %acc = arith.constant dense<0.000000e+00> : tensor<32x16xf32>
// CHECK: scf.for {{.*}} -> (tensor<32x16xf32>, !tt.ptr<tensor<32x16xf16>>, !tt.ptr<tensor<32x32xf16, #tt.sparse<"NV24">>>)
// CHECK: tt.dot %w, %x, %{{.*}} : tensor<32x32xf16, #tt.sparse<"NV24">> * tensor<32x16xf16> -> tensor<32x16xf32>
// CHECK: tt.expand_dims %{{.*}} {axis = 1 : i32} : tensor<32xf32> -> tensor<32x1xf32>
// CHECK: %y_ptr = tt.make_tensor_ptr %Y, {{.*}} {order = array<i32: 0, 1>} : !tt.ptr<tensor<32x16xf16>>
// CHECK: tt.store %y_ptr, %{{.*}} {boundaryCheck = array<i32: 0, 1>} : !tt.ptr<tensor<32x16xf16>>

builtin.module {
  tt.func public @linear_block_ptr(%Y: !tt.ptr<f16>, %X: !tt.ptr<f16>, %W: !tt.ptr<f16, #tt.sparse<"NV24">>, %BIAS: !tt.ptr<f16>, %M: i32, %N: i32, %K: i32, %stride_xm: i32, %stride_wn: i32, %stride_ym: i32) {
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
    %9 = arith.extsi %K : i32 to i64
    %10 = arith.extsi %N : i32 to i64
    %11 = arith.extsi %stride_wn : i32 to i64
    %w_ptr = tt.make_tensor_ptr %W, shape=[%9, %10], strides=[%5, %11], offsets=[%6, %8] {order = array<i32: 0, 1>} : !tt.ptr<tensor<32x32xf16, #tt.sparse<"NV24">>>
    %acc = arith.constant dense<0.000000e+00> : tensor<16x32xf32>
    %12 = arith.addi %K, %7 : i32
    %13 = arith.constant 1 : i32
    %14 = arith.subi %12, %13 : i32
    %15 = arith.divsi %14, %7 : i32
    %acc_1, %x_ptr_1, %w_ptr_1 = scf.for %_ = %6 to %15 step %13 iter_args(%acc_2 = %acc, %x_ptr_2 = %x_ptr, %w_ptr_2 = %w_ptr) -> (tensor<16x32xf32>, !tt.ptr<tensor<16x32xf16>>, !tt.ptr<tensor<32x32xf16, #tt.sparse<"NV24">>>) : i32 {
      %x = tt.load %x_ptr_2 {boundaryCheck = array<i32: 0, 1>, padding = 1 : i32} : !tt.ptr<tensor<16x32xf16>>
      %w = tt.load %w_ptr_2 {boundaryCheck = array<i32: 0, 1>, padding = 1 : i32} : !tt.ptr<tensor<32x32xf16, #tt.sparse<"NV24">>>
      %acc_3 = tt.dot %x, %w, %acc_2 : tensor<16x32xf16> * tensor<32x32xf16, #tt.sparse<"NV24">> -> tensor<16x32xf32>
      %16 = arith.constant 0 : i32
      %17 = arith.constant 32 : i32
      %x_ptr_3 = tt.advance %x_ptr_2, [%16, %17] : !tt.ptr<tensor<16x32xf16>>
      %w_ptr_3 = tt.advance %w_ptr_2, [%17, %16] : !tt.ptr<tensor<32x32xf16, #tt.sparse<"NV24">>>
      scf.yield %acc_3, %x_ptr_3, %w_ptr_3 : tensor<16x32xf32>, !tt.ptr<tensor<16x32xf16>>, !tt.ptr<tensor<32x32xf16, #tt.sparse<"NV24">>>
    }
    %18 = arith.muli %pid_n, %7 : i32
    %19 = tt.make_range {start = 0 : i32, end = 32 : i32} : tensor<32xi32>
    %20 = tt.splat %18 : i32 -> tensor<32xi32>
    %rn = arith.addi %20, %19 : tensor<32xi32>
    %21 = tt.splat %BIAS : !tt.ptr<f16> -> tensor<32x!tt.ptr<f16>>
    %22 = tt.addptr %21, %rn : tensor<32x!tt.ptr<f16>>, tensor<32xi32>
    %23 = tt.splat %N : i32 -> tensor<32xi32>
    %24 = arith.cmpi slt, %rn, %23 : tensor<32xi32>
    %25 = arith.constant dense<0.000000e+00> : tensor<32xf16>
    %26 = tt.load %22, %24, %25 : tensor<32x!tt.ptr<f16>>
    %27 = arith.extf %26 : tensor<32xf16> to tensor<32xf32>
    %28 = tt.expand_dims %27 {axis = 0 : i32} : tensor<32xf32> -> tensor<1x32xf32>
    %29 = tt.broadcast %28 : tensor<1x32xf32> -> tensor<16x32xf32>
    %acc_4 = arith.addf %acc_1, %29 : tensor<16x32xf32>
    %30 = arith.muli %pid_m, %0 : i32
    %31 = arith.muli %pid_n, %7 : i32
    %32 = arith.extsi %M : i32 to i64
    %33 = arith.extsi %N : i32 to i64
    %34 = arith.extsi %stride_ym : i32 to i64
    %y_ptr = tt.make_tensor_ptr %Y, shape=[%32, %33], strides=[%34, %5], offsets=[%30, %31] {order = array<i32: 1, 0>} : !tt.ptr<tensor<16x32xf16>>
    %35 = arith.truncf %acc_4 : tensor<16x32xf32> to tensor<16x32xf16>
    tt.store %y_ptr, %35 {boundaryCheck = array<i32: 0, 1>} : !tt.ptr<tensor<16x32xf16>>
    tt.return
  }
}
