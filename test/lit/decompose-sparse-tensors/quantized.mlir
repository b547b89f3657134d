// RUN: sparsecc-opt %s -p decompose-sparse-tensors | filecheck %s
// A K loop over a 4-bit, group-64, asymmetric 2:4 operand (NV24.w4g64z): the pointer becomes four
// arrays (values: two codes a byte, K/4 columns; meta: NV24's; scales and zeros: K/64 columns),
// each advanced by its share of BK, and the dot takes tt.dequantize of the loaded codes.

// CHECK-NOT: tt.sparse
// CHECK-LABEL: tt.func public @gemm
// CHECK-SAME: %A_values: !tt.ptr<i8>, %A_meta: !tt.ptr<i16>, %A_scales: !tt.ptr<f16>, %A_zeros: !tt.ptr<f16>, %B: !tt.ptr<f16>
// CHECK: %[[PV:.*]] = tt.make_tensor_ptr %A_values, {{.*}} : !tt.ptr<tensor<64x32xi8>>
// CHECK: %[[PM:.*]] = tt.make_tensor_ptr %A_meta, {{.*}} : !tt.ptr<tensor<4x128xi16>>
// CHECK: %[[PS:.*]] = tt.make_tensor_ptr %A_scales, {{.*}} : !tt.ptr<tensor<64x2xf16>>
// CHECK: %[[PZ:.*]] = tt.make_tensor_ptr %A_zeros, {{.*}} : !tt.ptr<tensor<64x2xf16>>
// CHECK: scf.for {{.*}} iter_args(%[[ACC:.*]] = %{{.*}}, %[[IV:.*]] = %[[PV]], %[[IM:.*]] = %[[PM]], %[[IS:.*]] = %[[PS]], %[[IZ:.*]] = %[[PZ]], %{{.*}} = %{{.*}})
// CHECK: %[[V:.*]] = tt.load %[[IV]] {{.*}} : !tt.ptr<tensor<64x32xi8>>
// CHECK: %[[E:.*]] = tt.load %[[IM]] {{.*}} : !tt.ptr<tensor<4x128xi16>>
// CHECK: %[[S:.*]] = tt.load %[[IS]] {{.*}} : !tt.ptr<tensor<64x2xf16>>
// CHECK: %[[Z:.*]] = tt.load %[[IZ]] {{.*}} : !tt.ptr<tensor<64x2xf16>>
// CHECK: %[[W:.*]] = tt.dequantize %[[V]], %[[S]], %[[Z]] {bits = 4 : i32} : tensor<64x32xi8>, tensor<64x2xf16>, tensor<64x2xf16> -> tensor<64x64xf16>
// CHECK: tt.dot %[[W]], %{{.*}}, %[[E]], %[[ACC]], sparseIndex = 0 : tensor<64x64xf16>, tensor<4x128xi16> * tensor<128x64xf16> -> tensor<64x64xf32>
// CHECK-DAG: %[[C2:.*]] = arith.constant 2 : i32
// CHECK-DAG: %[[C32:.*]] = arith.constant 32 : i32
// CHECK: tt.advance %[[IV]], [%{{.*}}, %[[C32]]] : !tt.ptr<tensor<64x32xi8>>
// CHECK: tt.advance %[[IM]], [%{{.*}}, %{{.*}}] : !tt.ptr<tensor<4x128xi16>>
// CHECK: tt.advance %[[IS]], [%{{.*}}, %[[C2]]] : !tt.ptr<tensor<64x2xf16>>
// CHECK: tt.advance %[[IZ]], [%{{.*}}, %{{.*}}] : !tt.ptr<tensor<64x2xf16>>

builtin.module {
  tt.func public @gemm(%D: !tt.ptr<f16>, %A: !tt.ptr<f16, #tt.sparse<"NV24.w4g64z">>, %B: !tt.ptr<f16>, %m: i64, %n: i64, %k: i64, %sm: i64, %om: i32, %niter: i32) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %one = arith.constant 1 : i64
    %pa = tt.make_tensor_ptr %A, shape=[%m, %k], strides=[%sm, %one], offsets=[%om, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<64x128xf16, #tt.sparse<"NV24.w4g64z">>>
    %pb = tt.make_tensor_ptr %B, shape=[%k, %n], strides=[%n, %one], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<128x64xf16>>
    %zero = arith.constant dense<0.000000e+00> : tensor<64x64xf32>
    %acc, %a_end, %b_end = scf.for %i = %c0 to %niter step %c1 iter_args(%acc_i = %zero, %pa_i = %pa, %pb_i = %pb) -> (tensor<64x64xf32>, !tt.ptr<tensor<64x128xf16, #tt.sparse<"NV24.w4g64z">>>, !tt.ptr<tensor<128x64xf16>>) : i32 {
      %a = tt.load %pa_i {boundaryCheck = array<i32: 0, 1>, padding = 1 : i32} : !tt.ptr<tensor<64x128xf16, #tt.sparse<"NV24.w4g64z">>>
      %b = tt.load %pb_i {boundaryCheck = array<i32: 0, 1>, padding = 1 : i32} : !tt.ptr<tensor<128x64xf16>>
      %d = tt.dot %a, %b, %acc_i : tensor<64x128xf16, #tt.sparse<"NV24.w4g64z">> * tensor<128x64xf16> -> tensor<64x64xf32>
      %c128 = arith.constant 128 : i32
      %pa_n = tt.advance %pa_i, [%c0, %c128] : !tt.ptr<tensor<64x128xf16, #tt.sparse<"NV24.w4g64z">>>
      %pb_n = tt.advance %pb_i, [%c128, %c0] : !tt.ptr<tensor<128x64xf16>>
      scf.yield %d, %pa_n, %pb_n : tensor<64x64xf32>, !tt.ptr<tensor<64x128xf16, #tt.sparse<"NV24.w4g64z">>>, !tt.ptr<tensor<128x64xf16>>
    }
    %pd = tt.make_tensor_ptr %D, shape=[%m, %n], strides=[%n, %one], offsets=[%om, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<64x64xf16>>
    %h = arith.truncf %acc : tensor<64x64xf32> to tensor<64x64xf16>
    tt.store %pd, %h {boundaryCheck = array<i32: 0, 1>} : !tt.ptr<tensor<64x64xf16>>
    tt.return
  }
}
