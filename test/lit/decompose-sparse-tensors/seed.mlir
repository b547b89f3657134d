// RUN: sparsecc-opt %s -p decompose-sparse-tensors | filecheck %s
// The before/after pair of seed 001: one sparse argument becomes values + metadata, the block
// pointer, the load and the dot are split, and no #tt.sparse is left.

// CHECK-NOT: tt.sparse
// CHECK-LABEL: tt.func public @dot_kernel
// CHECK-SAME: (%arg0: !tt.ptr<f16>, %arg1_values: !tt.ptr<f16>, %arg1_meta: !tt.ptr<i16>, %arg2: !tt.ptr<f16>)
// CHECK-DAG: %[[C32:.*]] = arith.constant 32 : i64
// CHECK-DAG: %[[C2:.*]] = arith.constant 2 : i64
// CHECK-DAG: %[[C64:.*]] = arith.constant 64 : i64
// CHECK: %[[AV:.*]] = tt.make_tensor_ptr %arg1_values, shape=[%{{.*}}, %{{.*}}], strides=[%{{.*}}, %{{.*}}], offsets=[%{{.*}}, %{{.*}}] {order = array<i32: 1, 0>} : !tt.ptr<tensor<32x32xf16>>
// CHECK: %[[AE:.*]] = tt.make_tensor_ptr %arg1_meta, shape=[%[[C2]], %[[C64]]], strides=[%[[C64]], %{{.*}}], offsets=[%{{.*}}, %{{.*}}] {order = array<i32: 1, 0>} : !tt.ptr<tensor<2x64xi16>>
// CHECK: %[[B:.*]] = tt.make_tensor_ptr %arg2
// CHECK: %[[A:.*]] = tt.load %[[AV]] : !tt.ptr<tensor<32x32xf16>>
// CHECK: %[[E:.*]] = tt.load %[[AE]] : !tt.ptr<tensor<2x64xi16>>
// CHECK: %[[BT:.*]] = tt.load %[[B]] : !tt.ptr<tensor<64x16xf16>>
// CHECK: %[[D:.*]] = tt.dot %[[A]], %[[BT]], %[[E]], %{{.*}}, sparseIndex = 0 : tensor<32x32xf16>, tensor<2x64xi16> * tensor<64x16xf16> -> tensor<32x16xf32>
// CHECK: arith.truncf %[[D]] : tensor<32x16xf32> to tensor<32x16xf16>
// CHECK: tt.store
// CHECK-NOT: tt.sparse

module {
  tt.func public @dot_kernel(%arg0: !tt.ptr<f16>, %arg1: !tt.ptr<f16, #tt.sparse<"NV24">>, %arg2: !tt.ptr<f16>) {
    %c32 = arith.constant 32 : i64
    %c64 = arith.constant 64 : i64
    %c16 = arith.constant 16 : i64
    %c1 = arith.constant 1 : i64
    %c0 = arith.constant 0 : i32
    %A_ptrs = tt.make_tensor_ptr %arg1, shape=[%c32, %c64], strides=[%c64, %c1], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<32x64xf16, #tt.sparse<"NV24">>>
    %B_ptrs = tt.make_tensor_ptr %arg2, shape=[%c64, %c16], strides=[%c16, %c1], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<64x16xf16>>
    %D_ptrs = tt.make_tensor_ptr %arg0, shape=[%c32, %c16], strides=[%c16, %c1], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<32x16xf16>>
    %A = tt.load %A_ptrs : !tt.ptr<tensor<32x64xf16, #tt.sparse<"NV24">>>
    %B = tt.load %B_ptrs : !tt.ptr<tensor<64x16xf16>>
    %cst = arith.constant dense<0.000000e+00> : tensor<32x16xf32>
    %D = tt.dot %A, %B, %cst : tensor<32x64xf16, #tt.sparse<"NV24">> * tensor<64x16xf16> -> tensor<32x16xf32>
    %D_trunc = arith.truncf %D : tensor<32x16xf32> to tensor<32x16xf16>
    tt.store %D_ptrs, %D_trunc : !tt.ptr<tensor<32x16xf16>>
    tt.return
  }
}
