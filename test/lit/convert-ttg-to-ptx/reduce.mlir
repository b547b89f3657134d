// RUN: sparsecc-opt %s -p "convert-tt-to-ttg{num-warps=1 target=sm_80},convert-ttg-to-ptx" | filecheck %s
// tt.reduce (covers handlers/reduce.py) goes through a shared scratch buffer (8x8 f32: 256
// bytes): the tile is stored row-major, a bar.sync, then each thread folds the 8 entries of
// each of its rows with addf. The tt.reshape to 64 elements needs none: each thread's four
// contiguous elements of a row are four contiguous elements of the flat tensor in its layout,
// so its registers are renamed and stored as they are (handlers/views.py, analysis/shuffles.py).
// (The input is tt: ttgir's tt.reduce does not parse back with its result's encoding.)

// CHECK:      shared = 256 : i64
// CHECK:      "ptx.st.shared"
// CHECK-NEXT: "ptx.bar.sync"() <{barrier = 0 : i32}> : () -> ()
// CHECK:      [[A:%.*]] = "ptx.ld.shared"
// CHECK:      [[B:%.*]] = "ptx.ld.shared"
// CHECK-NEXT: arith.addf [[A]], [[B]] : f32
// CHECK:      "ptx.st.global"
// CHECK-NOT:  "ptx.st.shared"
// CHECK-NOT:  "ptx.bar.sync"
// CHECK:      "ptx.st.global"

builtin.module {
  tt.func public @rowsum(%X: !tt.ptr<f32>, %Y: !tt.ptr<f32>, %Z: !tt.ptr<f32>) {
    %c0 = arith.constant 0 : i32
    %one = arith.constant 1 : i64
    %s8 = arith.constant 8 : i64
    %s64 = arith.constant 64 : i64
    %px = tt.make_tensor_ptr %X, shape=[%s8, %s8], strides=[%s8, %one], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<8x8xf32>>
    %x = tt.load %px : !tt.ptr<tensor<8x8xf32>>
    %r = tt.reduce sum %x {axis = 1 : i32} : tensor<8x8xf32> -> tensor<8xf32>
    %py = tt.make_tensor_ptr %Y, shape=[%s8], strides=[%one], offsets=[%c0] {order = array<i32: 0>} : !tt.ptr<tensor<8xf32>>
    tt.store %py, %r : !tt.ptr<tensor<8xf32>>
    %f = tt.reshape %x : tensor<8x8xf32> -> tensor<64xf32>
    %pz = tt.make_tensor_ptr %Z, shape=[%s64], strides=[%one], offsets=[%c0] {order = array<i32: 0>} : !tt.ptr<tensor<64xf32>>
    tt.store %pz, %f : !tt.ptr<tensor<64xf32>>
    tt.return
  }
}
