// RUN: sparsecc-opt %s -p "decompose-sparse-tensors,convert-tt-to-ttg{num-warps=4 target=sm_80},sparse-gpu-encoding,convert-ttg-to-ptx" | filecheck %s
// An NV12 (tf32 1:2) dot's fragments as the format's instruction states them
// (formats.base.META_16BIT): two m16n8k16 mma.sp share one metadata register, the sparsity
// selector telling them apart (0: threads 0-1 of a quad, 1: threads 2-3). The register comes
// from an ldmatrix.trans of the tile's one 64-word group (32 columns of K), row r at word 8 r,
// that is i32 element 4 r (NV12 stores its 16-bit words in int32 pairs).

// CHECK:      "ptx.kernel"() <{sym_name = "tf32_dot", target = "sm_80"
// CHECK:      %[[C7:[0-9]+]] = arith.constant 7 : i32
// CHECK-COUNT-4: "ptx.ldmatrix"(%{{[0-9]+}}) : (i32) -> (i32, i32, i32, i32)
// CHECK:      "ptx.st.shared"
// CHECK-NEXT: "ptx.bar.sync"
// CHECK:      %[[R:[0-9]+]] = arith.andi %{{[0-9]+}}, %[[C7]] : i32
// CHECK-NEXT: %[[W:[0-9]+]] = arith.muli %[[R]], %{{[0-9]+}} : i32
// CHECK-NEXT: %{{[0-9]+}} = arith.shrui %[[W]], %{{[0-9]+}} : i32
// CHECK:      %[[M:[0-9]+]] = "ptx.ldmatrix"(%{{[0-9]+}}) <{trans}> : (i32) -> i32
// CHECK-NEXT: "ptx.mma.sp"({{.*}}, %[[M]]) <{ab_type = "tf32", selector = 0 : i32
// CHECK-NEXT: "ptx.mma.sp"({{.*}}, %[[M]]) <{ab_type = "tf32", selector = 1 : i32
// CHECK-NOT:  "ptx.mma.sp"
module {
  tt.func public @tf32_dot(%arg0: !tt.ptr<f32>, %arg1: !tt.ptr<f32, #tt.sparse<"NV12">>, %arg2: !tt.ptr<f32>) {
    %c32 = arith.constant 32 : i64
    %c16 = arith.constant 16 : i64
    %c1 = arith.constant 1 : i64
    %c0 = arith.constant 0 : i32
    %A_ptrs = tt.make_tensor_ptr %arg1, shape=[%c32, %c32], strides=[%c32, %c1], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<32x32xf32, #tt.sparse<"NV12">>>
    %B_ptrs = tt.make_tensor_ptr %arg2, shape=[%c32, %c16], strides=[%c1, %c32], offsets=[%c0, %c0] {order = array<i32: 0, 1>} : !tt.ptr<tensor<32x16xf32>>
    %D_ptrs = tt.make_tensor_ptr %arg0, shape=[%c32, %c16], strides=[%c16, %c1], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<32x16xf32>>
    %A = tt.load %A_ptrs : !tt.ptr<tensor<32x32xf32, #tt.sparse<"NV12">>>
    %B = tt.load %B_ptrs : !tt.ptr<tensor<32x16xf32>>
    %cst = arith.constant dense<0.000000e+00> : tensor<32x16xf32>
    %D = tt.dot %A, %B, %cst : tensor<32x32xf32, #tt.sparse<"NV12">> * tensor<32x16xf32> -> tensor<32x16xf32>
    tt.store %D_ptrs, %D : !tt.ptr<tensor<32x16xf32>>
    tt.return
  }
}
