// RUN: sparsecc-opt %s -p "convert-tt-to-ttg{num-warps=4 target=sm_80},convert-ttg-to-ptx" | filecheck %s
// A row sum of an 8x64 tile with 4 warps: the layout (sizePerThread [1, 4], threadsPerWarp
// [2, 16], warpsPerCTA [4, 1]) puts the warps along the rows and 16 lanes along each row, so
// the reduction is 4 register adds and 4 butterflies (lane masks 1, 2, 4, 8; lane bit 16 moves
// to the next row and takes no part), with no shared memory and no barrier.

// CHECK:      shared = 0 : i64
// CHECK-NOT:  bar.sync
// CHECK:      "ptx.asm"({{.*}}) <{template = "shfl.sync.bfly.b32 $0, $1, 1, 0x1f, -1;"}> : (f32) -> f32
// CHECK:      "ptx.asm"({{.*}}) <{template = "shfl.sync.bfly.b32 $0, $1, 2, 0x1f, -1;"}> : (f32) -> f32
// CHECK:      "ptx.asm"({{.*}}) <{template = "shfl.sync.bfly.b32 $0, $1, 4, 0x1f, -1;"}> : (f32) -> f32
// CHECK:      "ptx.asm"({{.*}}) <{template = "shfl.sync.bfly.b32 $0, $1, 8, 0x1f, -1;"}> : (f32) -> f32
// CHECK-NOT:  shfl.sync
// CHECK-NOT:  ptx.st.shared
// CHECK-NOT:  bar.sync
// CHECK:      "ptx.st.global"

builtin.module {
  tt.func public @rowsum(%X: !tt.ptr<f32>, %Y: !tt.ptr<f32>) {
    %c0 = arith.constant 0 : i32
    %one = arith.constant 1 : i64
    %s8 = arith.constant 8 : i64
    %s64 = arith.constant 64 : i64
    %px = tt.make_tensor_ptr %X, shape=[%s8, %s64], strides=[%s64, %one], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<8x64xf32>>
    %x = tt.load %px : !tt.ptr<tensor<8x64xf32>>
    %r = tt.reduce sum %x {axis = 1 : i32} : tensor<8x64xf32> -> tensor<8xf32>
    %py = tt.make_tensor_ptr %Y, shape=[%s8], strides=[%one], offsets=[%c0] {order = array<i32: 0>} : !tt.ptr<tensor<8xf32>>
    tt.store %py, %r : !tt.ptr<tensor<8xf32>>
    tt.return
  }
}
