// RUN: sparsecc-opt %s -p sparse-operand-to-lhs | filecheck %s --check-prefix=LHS
// RUN: sparsecc-opt %s -p sparse-operand-to-lhs,decompose-sparse-tensors | filecheck %s
// A K loop written as `while k < K` (test/python/conformance/linear_kernels.py, linear_while_k):
// the scf.while carries the sum and W's sparse block pointer. sparse-operand-to-lhs transposes the
// carried sum (inits, both regions' arguments, the condition's values, the yield, the results);
// decompose-sparse-tensors splits the carried pointer into its values and metadata pointers in
// each of those places.

// LHS: scf.while ({{.*}}) : (tensor<32x16xf32>, !tt.ptr<tensor<32x16xf16>>, !tt.ptr<tensor<32x32xf16, #tt.sparse<"NV24">>>, i32) -> (tensor<32x16xf32>,
// LHS: scf.condition({{.*}}) {{.*}} : tensor<32x16xf32>,
// LHS: tt.dot %w, %x, {{.*}} -> tensor<32x16xf32>
// LHS: scf.yield {{.*}} : tensor<32x16xf32>,

// CHECK-LABEL: tt.func public @linear_while_k
// CHECK-SAME: %W_values: !tt.ptr<f16>, %W_meta: !tt.ptr<i16>
// CHECK: scf.while (%acc_2 = %acc, %x_ptr_2 = %x_ptr, %w_ptr_values_2 = %w_ptr_values, %w_ptr_meta_2 = %w_ptr_meta, %k_2 = %k) : (tensor<32x16xf32>, !tt.ptr<tensor<32x16xf16>>, !tt.ptr<tensor<32x16xf16>>, !tt.ptr<tensor<2x32xi16>>, i32) -> (tensor<32x16xf32>, !tt.ptr<tensor<32x16xf16>>, !tt.ptr<tensor<32x16xf16>>, !tt.ptr<tensor<2x32xi16>>, i32)
// CHECK: scf.condition({{.*}}) %acc_2, %x_ptr_2, %w_ptr_values_2, %w_ptr_meta_2, %k_2
// CHECK: ^bb0(%acc_3: tensor<32x16xf32>, %x_ptr_3: !tt.ptr<tensor<32x16xf16>>, %w_ptr_values_3: !tt.ptr<tensor<32x16xf16>>, %w_ptr_meta_3: !tt.ptr<tensor<2x32xi16>>, %k_3: i32):
// CHECK: tt.dot %w_values, %x, %w_meta, %acc_3, sparseIndex = 0
// CHECK: scf.yield %acc_4, %x_ptr_4, %w_ptr_values_4, %w_ptr_meta_4, %k_4
// CHECK-NOT: NV24

builtin.module {
  tt.func public @linear_while_k(%Y: !tt.ptr<f16>, %X: !tt.ptr<f16>, %W: !tt.ptr<f16, #tt.sparse<"NV24">>, %M: i32, %N: i32, %K: i32, %stride_xm: i32, %stride_wn: i32, %stride_ym: i32) {
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
    %k = arith.constant 0 : i32
    %acc_1, %x_ptr_1, %w_ptr_1, %k_1 = scf.while (%acc_2 = %acc, %x_ptr_2 = %x_ptr, %w_ptr_2 = %w_ptr, %k_2 = %k) : (tensor<16x32xf32>, !tt.ptr<tensor<16x32xf16>>, !tt.ptr<tensor<32x32xf16, #tt.sparse<"NV24">>>, i32) -> (tensor<16x32xf32>, !tt.ptr<tensor<16x32xf16>>, !tt.ptr<tensor<32x32xf16, #tt.sparse<"NV24">>>, i32) {
      %12 = arith.cmpi slt, %k_2, %K : i32
      scf.condition(%12) %acc_2, %x_ptr_2, %w_ptr_2, %k_2 : tensor<16x32xf32>, !tt.ptr<tensor<16x32xf16>>, !tt.ptr<tensor<32x32xf16, #tt.sparse<"NV24">>>, i32
    } do {
    ^bb0(%acc_3: tensor<16x32xf32>, %x_ptr_3: !tt.ptr<tensor<16x32xf16>>, %w_ptr_3: !tt.ptr<tensor<32x32xf16, #tt.sparse<"NV24">>>, %k_3: i32):
      %x = tt.load %x_ptr_3 {boundaryCheck = array<i32: 0, 1>, padding = 1 : i32} : !tt.ptr<tensor<16x32xf16>>
      %w = tt.load %w_ptr_3 {boundaryCheck = array<i32: 0, 1>, padding = 1 : i32} : !tt.ptr<tensor<32x32xf16, #tt.sparse<"NV24">>>
      %acc_4 = tt.dot %x, %w, %acc_3 : tensor<16x32xf16> * tensor<32x32xf16, #tt.sparse<"NV24">> -> tensor<16x32xf32>
      %13 = arith.constant 0 : i32
      %14 = arith.constant 32 : i32
      %x_ptr_4 = tt.advance %x_ptr_3, [%13, %14] : !tt.ptr<tensor<16x32xf16>>
      %w_ptr_4 = tt.advance %w_ptr_3, [%14, %13] : !tt.ptr<tensor<32x32xf16, #tt.sparse<"NV24">>>
      %k_4 = arith.addi %k_3, %14 : i32
      scf.yield %acc_4, %x_ptr_4, %w_ptr_4, %k_4 : tensor<16x32xf32>, !tt.ptr<tensor<16x32xf16>>, !tt.ptr<tensor<32x32xf16, #tt.sparse<"NV24">>>, i32
    }
    %15 = arith.muli %pid_m, %0 : i32
    %16 = arith.muli %pid_n, %7 : i32
    %17 = arith.extsi %M : i32 to i64
    %18 = arith.extsi %N : i32 to i64
    %19 = arith.extsi %stride_ym : i32 to i64
    %y_ptr = tt.make_tensor_ptr %Y, shape=[%17, %18], strides=[%19, %5], offsets=[%15, %16] {order = array<i32: 1, 0>} : !tt.ptr<tensor<16x32xf16>>
    %20 = arith.truncf %acc_1 : tensor<16x32xf32> to tensor<16x32xf16>
    tt.store %y_ptr, %20 {boundaryCheck = array<i32: 0, 1>} : !tt.ptr<tensor<16x32xf16>>
    tt.return
  }
}
