builtin.module {
  tt.func public @dot_kernel(%D: !tt.ptr<f16>, %A: !tt.ptr<f16, #tt.sparse<"NV24">>, %B: !tt.ptr<f16>) {
    %0 = arith.constant 32 : i64
    %1 = arith.constant 64 : i64
    %2 = arith.constant 1 : i64
    %3 = arith.constant 0 : i32
    %a_ptrs = tt.make_tensor_ptr %A, shape=[%0, %1], strides=[%1, %2], offsets=[%3, %3] {order = array<i32: 1, 0>} : !tt.ptr<tensor<32x64xf16, #tt.sparse<"NV24">>>
    %4 = arith.constant 16 : i64
    %b_ptrs = tt.make_tensor_ptr %B, shape=[%1, %4], strides=[%4, %2], offsets=[%3, %3] {order = array<i32: 1, 0>} : !tt.ptr<tensor<64x16xf16>>
    %d_ptrs = tt.make_tensor_ptr %D, shape=[%0, %4], strides=[%4, %2], offsets=[%3, %3] {order = array<i32: 1, 0>} : !tt.ptr<tensor<32x16xf16>>
    %5 = tt.load %a_ptrs : !tt.ptr<tensor<32x64xf16, #tt.sparse<"NV24">>>
    %6 = tt.load %b_ptrs : !tt.ptr<tensor<64x16xf16>>
    %7 = arith.constant dense<0.000000e+00> : tensor<32x16xf32>
    %8 = tt.dot %5, %6, %7 : tensor<32x64xf16, #tt.sparse<"NV24">> * tensor<64x16xf16> -> tensor<32x16xf32>
    %d = arith.truncf %8 : tensor<32x16xf32> to tensor<32x16xf16>
    tt.store %d_ptrs, %d : !tt.ptr<tensor<32x16xf16>>
    tt.return
  }
}
