builtin.module {
  tt.func public @dot_kernel(%D: !tt.ptr<f16>, %A_values: !tt.ptr<f16>, %A_meta: !tt.ptr<i16>, %B: !tt.ptr<f16>) {
    %0 = arith.constant 32 : i64
    %1 = arith.constant 64 : i64
    %2 = arith.constant 1 : i64
    %3 = arith.constant 0 : i32
    %4 = arith.constant 32 : i64
    %5 = arith.constant 32 : i64
    %6 = arith.constant 0 : i32
    %7 = arith.constant 2 : i64
    %8 = arith.constant 0 : i32
    %a_ptrs_values = tt.make_tensor_ptr %A_values, shape=[%0, %4], strides=[%5, %2], offsets=[%3, %6] {order = array<i32: 1, 0>} : !tt.ptr<tensor<32x32xf16>>
    %a_ptrs_meta = tt.make_tensor_ptr %A_meta, shape=[%7, %1], strides=[%1, %2], offsets=[%8, %3] {order = array<i32: 1, 0>} : !tt.ptr<tensor<2x64xi16>>
    %9 = arith.constant 16 : i64
    %b_ptrs = tt.make_tensor_ptr %B, shape=[%1, %9], strides=[%9, %2], offsets=[%3, %3] {order = array<i32: 1, 0>} : !tt.ptr<tensor<64x16xf16>>
    %d_ptrs = tt.make_tensor_ptr %D, shape=[%0, %9], strides=[%9, %2], offsets=[%3, %3] {order = array<i32: 1, 0>} : !tt.ptr<tensor<32x16xf16>>
    %10 = tt.load %a_ptrs_values : !tt.ptr<tensor<32x32xf16>>
    %11 = tt.load %a_ptrs_meta : !tt.ptr<tensor<2x64xi16>>
    %12 = tt.load %b_ptrs : !tt.ptr<tensor<64x16xf16>>
    %13 = arith.constant dense<0.000000e+00> : tensor<32x16xf32>
    %14 = tt.dot %10, %12, %11, %13, sparseIndex = 0 : tensor<32x32xf16>, tensor<2x64xi16> * tensor<64x16xf16> -> tensor<32x16xf32>
    %d = arith.truncf %14 : tensor<32x16xf32> to tensor<32x16xf16>
    tt.store %d_ptrs, %d : !tt.ptr<tensor<32x16xf16>>
    tt.return
  }
}
