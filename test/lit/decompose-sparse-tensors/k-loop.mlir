// RUN: sparsecc-opt %s -p decompose-sparse-tensors | filecheck %s
// A K loop carrying a sparse block pointer: the iter_arg splits into values + metadata, the
// advance moves the values pointer by BK/2 and the metadata pointer by BK, dynamic shapes and
// strides are recomputed with arith ops, boundary checks carry over.

// CHECK-NOT: tt.sparse
// CHECK-LABEL: tt.func public @gemm
// CHECK-SAME: %A_values: !tt.ptr<f16>, %A_meta: !tt.ptr<i16>
// CHECK: %[[KH:.*]] = arith.divsi %{{.*}}, %{{.*}} : i64
// CHECK: %[[SMH:.*]] = arith.divsi %sm, %{{.*}} : i64
// CHECK: %[[MP:.*]] = arith.addi %m, %{{.*}} : i64
// CHECK: %[[MR:.*]] = arith.divsi %[[MP]], %{{.*}} : i64
// CHECK: %[[OMR:.*]] = arith.divsi %om, %{{.*}} : i32
// CHECK: %[[PV:.*]] = tt.make_tensor_ptr %A_values, shape=[%m, %[[KH]]], strides=[%[[SMH]], %{{.*}}], offsets=[%om, %{{.*}}] {{.*}} : !tt.ptr<tensor<64x32xf16>>
// CHECK: %[[PM:.*]] = tt.make_tensor_ptr %A_meta, shape=[%[[MR]], %k], strides=[%sm, %{{.*}}], offsets=[%[[OMR]], %{{.*}}] {{.*}} : !tt.ptr<tensor<4x64xi16>>
// CHECK: scf.for {{.*}} iter_args(%[[ACC:.*]] = %{{.*}}, %[[IV:.*]] = %[[PV]], %[[IM:.*]] = %[[PM]], %[[IB:.*]] = %{{.*}}) -> (tensor<64x64xf32>, !tt.ptr<tensor<64x32xf16>>, !tt.ptr<tensor<4x64xi16>>, !tt.ptr<tensor<64x64xf16>>)
// CHECK: %[[V:.*]] = tt.load %[[IV]] {boundaryCheck = array<i32: 0, 1>, padding = 1 : i32} : !tt.ptr<tensor<64x32xf16>>
// CHECK: %[[E:.*]] = tt.load %[[IM]] {boundaryCheck = array<i32: 0, 1>, padding = 1 : i32} : !tt.ptr<tensor<4x64xi16>>
// CHECK: tt.dot %[[V]], %{{.*}}, %[[E]], %[[ACC]], sparseIndex = 0
// CHECK-DAG: %[[C32:.*]] = arith.constant 32 : i32
// CHECK-DAG: %[[C64:.*]] = arith.constant 64 : i32
// CHECK: tt.advance %[[IV]], [%{{.*}}, %[[C32]]] : !tt.ptr<tensor<64x32xf16>>
// CHECK: tt.advance %[[IM]], [%{{.*}}, %[[C64]]] : !tt.ptr<tensor<4x64xi16>>
// CHECK: scf.yield {{.*}} : tensor<64x64xf32>, !tt.ptr<tensor<64x32xf16>>, !tt.ptr<tensor<4x64xi16>>, !tt.ptr<tensor<64x64xf16>>

builtin.module {
  tt.func public @gemm(%D: !tt.ptr<f16>, %A: !tt.ptr<f16, #tt.sparse<"NV24">>, %B: !tt.ptr<f16>, %m: i64, %n: i64, %k: i64, %sm: i64, %om: i32, %niter: i32) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %one = arith.constant 1 : i64
    %pa = tt.make_tensor_ptr %A, shape=[%m, %k], strides=[%sm, %one], offsets=[%om, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<64x64xf16, #tt.sparse<"NV24">>>
    %pb = tt.make_tensor_ptr %B, shape=[%k, %n], strides=[%n, %one], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<64x64xf16>>
    %zero = arith.constant dense<0.000000e+00> : tensor<64x64xf32>
    %acc, %a_end, %b_end = scf.for %i = %c0 to %niter step %c1 iter_args(%acc_i = %zero, %pa_i = %pa, %pb_i = %pb) -> (tensor<64x64xf32>, !tt.ptr<tensor<64x64xf16, #tt.sparse<"NV24">>>, !tt.ptr<tensor<64x64xf16>>) : i32 {
      %a = tt.load %pa_i {boundaryCheck = array<i32: 0, 1>, padding = 1 : i32} : !tt.ptr<tensor<64x64xf16, #tt.sparse<"NV24">>>
      %b = tt.load %pb_i {boundaryCheck = array<i32: 0, 1>, padding = 1 : i32} : !tt.ptr<tensor<64x64xf16>>
      %d = tt.dot %a, %b, %acc_i : tensor<64x64xf16, #tt.sparse<"NV24">> * tensor<64x64xf16> -> tensor<64x64xf32>
      %c64 = arith.constant 64 : i32
      %pa_n = tt.advance %pa_i, [%c0, %c64] : !tt.ptr<tensor<64x64xf16, #tt.sparse<"NV24">>>
      %pb_n = tt.advance %pb_i, [%c64, %c0] : !tt.ptr<tensor<64x64xf16>>
      scf.yield %d, %pa_n, %pb_n : tensor<64x64xf32>, !tt.ptr<tensor<64x64xf16, #tt.sparse<"NV24">>>, !tt.ptr<tensor<64x64xf16>>
    }
    %pd = tt.make_tensor_ptr %D, shape=[%m, %n], strides=[%n, %one], offsets=[%om, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<64x64xf16>>
    %h = arith.truncf %acc : tensor<64x64xf32> to tensor<64x64xf16>
    tt.store %pd, %h {boundaryCheck = array<i32: 0, 1>} : !tt.ptr<tensor<64x64xf16>>
    tt.return
  }
}
