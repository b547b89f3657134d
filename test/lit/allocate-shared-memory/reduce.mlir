// RUN: sparsecc-opt %s -p "convert-tt-to-ttg{num-warps=4 target=sm_80},allocate-shared-memory" | filecheck %s
// The scratch of a tt.reduce is its cross-warp exchange: the 8x64 f32 tile's layout puts the
// 4 warps along the rows, so a column sum (axis 0) exchanges one word per warp per column
// (64 x 4 x 4 B = 1 KiB, not the 2 KiB of the source), and a row sum (axis 1) none at all (no
// offset). The tt.reshape to 512 elements only renames registers (no scratch); the tt.trans
// goes through a scratch the size of its source (2 KiB); then the word a scalar-result
// tt.atomic_rmw broadcasts thread 0's old value through (4 B, padded to 128).
// (The input is tt: ttgir's tt.reduce does not parse back with its result's encoding.)

// CHECK: ttg.shared = 3200 : i32
// CHECK: tt.reduce sum %{{.*}} {axis = 0 : i32, ttg.shared_offset = 0 : i32}
// CHECK: tt.reduce sum %{{.*}} {axis = 1 : i32} :
// CHECK: tt.reshape %{{.*}} : tensor
// CHECK: tt.trans %{{.*}} {ttg.shared_offset = 1024 : i32}
// CHECK: tt.atomic_rmw {{.*}}ttg.shared_offset = 3072 : i32
builtin.module {
  tt.func public @sums(%X: !tt.ptr<f32>, %Y: !tt.ptr<f32>, %Z: !tt.ptr<f32>, %C: !tt.ptr<i32>) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %one = arith.constant 1 : i64
    %s8 = arith.constant 8 : i64
    %s64 = arith.constant 64 : i64
    %s512 = arith.constant 512 : i64
    %px = tt.make_tensor_ptr %X, shape=[%s8, %s64], strides=[%s64, %one], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<8x64xf32>>
    %x = tt.load %px : !tt.ptr<tensor<8x64xf32>>
    %cols = tt.reduce sum %x {axis = 0 : i32} : tensor<8x64xf32> -> tensor<64xf32>
    %pc = tt.make_tensor_ptr %Y, shape=[%s64], strides=[%one], offsets=[%c0] {order = array<i32: 0>} : !tt.ptr<tensor<64xf32>>
    tt.store %pc, %cols : !tt.ptr<tensor<64xf32>>
    %rows = tt.reduce sum %x {axis = 1 : i32} : tensor<8x64xf32> -> tensor<8xf32>
    %pr = tt.make_tensor_ptr %Y, shape=[%s8], strides=[%one], offsets=[%c0] {order = array<i32: 0>} : !tt.ptr<tensor<8xf32>>
    tt.store %pr, %rows : !tt.ptr<tensor<8xf32>>
    %f = tt.reshape %x : tensor<8x64xf32> -> tensor<512xf32>
    %pz = tt.make_tensor_ptr %Z, shape=[%s512], strides=[%one], offsets=[%c0] {order = array<i32: 0>} : !tt.ptr<tensor<512xf32>>
    tt.store %pz, %f : !tt.ptr<tensor<512xf32>>
    %t = tt.trans %x : tensor<8x64xf32> -> tensor<64x8xf32>
    %pt = tt.make_tensor_ptr %Z, shape=[%s64, %s8], strides=[%s8, %one], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<64x8xf32>>
    tt.store %pt, %t : !tt.ptr<tensor<64x8xf32>>
    %old = tt.atomic_rmw "add", %C, %c1 : !tt.ptr<i32>, i32 -> i32
    tt.store %C, %old : !tt.ptr<i32>
    tt.return
  }
}
