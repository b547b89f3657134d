// RUN: sparsecc-opt %s -p "decompose-sparse-tensors,convert-tt-to-ttg{num-warps=4 target=sm_80},sparse-gpu-encoding,convert-ttg-to-ptx" | filecheck %s
// An 8-bit (i8) NV24 dot's fragments as the format's 8-bit instruction states them
// (formats.base.META_8BIT): one m16n8k64 mma.sp per 64 columns of K, each with a whole metadata
// register of its own (selector 0). The registers come from one ldmatrix.trans of both 64-word
// groups, whose row r reads the words at 32 (r >> 2) + 16 (r & 1) + 8 ((r >> 1) & 1): thread t
// holds 32 columns of one row (row g + 8 (t % 2)), where 16-bit values take chunk t of rows g
// and g + 8. The values and B (K-major) come as 16-bit pairs, plain ldmatrix.x4.

// CHECK:      "ptx.kernel"() <{sym_name = "i8_dot", target = "sm_80"
// CHECK:      %[[C7:[0-9]+]] = arith.constant 7 : i32
// CHECK-COUNT-4: "ptx.ldmatrix"(%{{[0-9]+}}) : (i32) -> (i32, i32, i32, i32)
// CHECK:      "ptx.st.shared"
// CHECK-NEXT: "ptx.bar.sync"
// CHECK:      %[[R:[0-9]+]] = arith.andi %{{[0-9]+}}, %[[C7]] : i32
// CHECK-NEXT: %{{[0-9]+}} = arith.shrui %[[R]], %{{[0-9]+}} : i32
// CHECK-NEXT: %{{[0-9]+}} = arith.muli
// CHECK-NEXT: %{{[0-9]+}} = arith.andi %[[R]], %{{[0-9]+}} : i32
// CHECK-NEXT: %{{[0-9]+}} = arith.muli
// CHECK-NEXT: %{{[0-9]+}} = arith.addi
// CHECK-NEXT: %{{[0-9]+}} = arith.shrui %[[R]], %{{[0-9]+}} : i32
// CHECK-NEXT: %{{[0-9]+}} = arith.andi
// CHECK-NEXT: %{{[0-9]+}} = arith.muli
// CHECK-NEXT: %{{[0-9]+}} = arith.addi
// CHECK:      %[[M0:[0-9]+]], %[[M1:[0-9]+]] = "ptx.ldmatrix"(%{{[0-9]+}}) <{trans}> : (i32) -> (i32, i32)
// CHECK-NEXT: "ptx.mma.sp"({{.*}}, %[[M0]]) <{ab_type = "s8", selector = 0 : i32
// CHECK-NEXT: "ptx.mma.sp"({{.*}}, %[[M1]]) <{ab_type = "s8", selector = 0 : i32
// CHECK-NOT:  "ptx.mma.sp"
module {
  tt.func public @i8_dot(%arg0: !tt.ptr<i32>, %arg1: !tt.ptr<i8, #tt.sparse<"NV24">>, %arg2: !tt.ptr<i8>) {
    %c32 = arith.constant 32 : i64
    %c128 = arith.constant 128 : i64
    %c16 = arith.constant 16 : i64
    %c1 = arith.constant 1 : i64
    %c0 = arith.constant 0 : i32
    %A_ptrs = tt.make_tensor_ptr %arg1, shape=[%c32, %c128], strides=[%c128, %c1], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<32x128xi8, #tt.sparse<"NV24">>>
    %B_ptrs = tt.make_tensor_ptr %arg2, shape=[%c128, %c16], strides=[%c1, %c128], offsets=[%c0, %c0] {order = array<i32: 0, 1>} : !tt.ptr<tensor<128x16xi8>>
    %D_ptrs = tt.make_tensor_ptr %arg0, shape=[%c32, %c16], strides=[%c16, %c1], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<32x16xi32>>
    %A = tt.load %A_ptrs : !tt.ptr<tensor<32x128xi8, #tt.sparse<"NV24">>>
    %B = tt.load %B_ptrs : !tt.ptr<tensor<128x16xi8>>
    %cst = arith.constant dense<0> : tensor<32x16xi32>
    %D = tt.dot %A, %B, %cst : tensor<32x128xi8, #tt.sparse<"NV24">> * tensor<128x16xi8> -> tensor<32x16xi32>
    tt.store %D_ptrs, %D : !tt.ptr<tensor<32x16xi32>>
    tt.return
  }
}
