// RUN: sparsecc-opt %s -p "convert-tt-to-ttg{num-warps=1 target=sm_80},convert-ttg-to-ptx" | filecheck %s
// tt.reduce (covers handlers/reduce.py) and tt.reshape (covers handlers/views.py's scratch
// path) go through shared scratch buffers (8x8 f32: 256 bytes each, planned in program order):
// the tile is stored row-major, a bar.sync, then each thread folds the 8 entries of each of
// its rows with addf. The reshape's store comes after a bar.sync (the barrier bookkeeping
// is per CTA, not per buffer: reads happened since the last one), then one more before
// reading it back. (The input is tt: ttgir's tt.reduce does not parse back with its
// result's encoding.)

// CHECK:      shared = 512 : i64
// CHECK:      "ptx.st.shared"
// CHECK-NEXT: "ptx.bar.sync"() <{barrier = 0 : i32}> : () -> ()
// CHECK:      [[A:%.*]] = "ptx.ld.shared"
// CHECK:      [[B:%.*]] = "ptx.ld.shared"
// CHECK-NEXT: arith.addf [[A]], [[B]] : f32
// CHECK:      "ptx.st.global"
// CHECK:      "ptx.bar.sync"() <{barrier = 0 : i32}> : () -> ()
// CHECK:      "ptx.st.shared"
// CHECK:      "ptx.bar.sync"() <{barrier = 0 : i32}> : () -> ()
// CHECK:      %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} = "ptx.ld.shared"
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
