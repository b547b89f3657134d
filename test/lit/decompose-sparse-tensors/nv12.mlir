// RUN: sparsecc-opt %s -p decompose-sparse-tensors | filecheck %s
// NV12 (tf32 1:2) through the same pass: the values keep f32 and half of K, the metadata is
// NV24's geometry with an i32 element (pairs of 16-bit words), and the dot takes them.

// CHECK-NOT: tt.sparse
// CHECK-LABEL: tt.func public @tf32_dot
// CHECK-SAME: (%arg0: !tt.ptr<f32>, %arg1_values: !tt.ptr<f32>, %arg1_meta: !tt.ptr<i32>, %arg2: !tt.ptr<f32>)
// CHECK: tt.make_tensor_ptr %arg1_values, {{.*}} : !tt.ptr<tensor<32x32xf32>>
// CHECK: tt.make_tensor_ptr %arg1_meta, {{.*}} : !tt.ptr<tensor<2x64xi32>>
// CHECK: tt.dot %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, sparseIndex = 0 : tensor<32x32xf32>, tensor<2x64xi32> * tensor<64x16xf32> -> tensor<32x16xf32>

module {
  tt.func public @tf32_dot(%arg0: !tt.ptr<f32>, %arg1: !tt.ptr<f32, #tt.sparse<"NV12">>, %arg2: !tt.ptr<f32>) {
    %c32 = arith.constant 32 : i64
    %c64 = arith.constant 64 : i64
    %c16 = arith.constant 16 : i64
    %c1 = arith.constant 1 : i64
    %c0 = arith.constant 0 : i32
    %A_ptrs = tt.make_tensor_ptr %arg1, shape=[%c32, %c64], strides=[%c64, %c1], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<32x64xf32, #tt.sparse<"NV12">>>
    %B_ptrs = tt.make_tensor_ptr %arg2, shape=[%c64, %c16], strides=[%c16, %c1], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<64x16xf32>>
    %D_ptrs = tt.make_tensor_ptr %arg0, shape=[%c32, %c16], strides=[%c16, %c1], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<32x16xf32>>
    %A = tt.load %A_ptrs : !tt.ptr<tensor<32x64xf32, #tt.sparse<"NV12">>>
    %B = tt.load %B_ptrs : !tt.ptr<tensor<64x16xf32>>
    %cst = arith.constant dense<0.000000e+00> : tensor<32x16xf32>
    %D = tt.dot %A, %B, %cst : tensor<32x64xf32, #tt.sparse<"NV12">> * tensor<64x16xf32> -> tensor<32x16xf32>
    tt.store %D_ptrs, %D : !tt.ptr<tensor<32x16xf32>>
    tt.return
  }
}
