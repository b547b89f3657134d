// RUN: sparsecc-opt %s -p "convert-tt-to-ttg{num-warps=1 target=sm_80},allocate-shared-memory" | filecheck %s
// The scratch of tt.reduce and tt.trans (256 B each, the size of their 8x8 f32 source) and
// the word a scalar-result tt.atomic_rmw broadcasts thread 0's old value through (4 B, padded
// to 128). The tt.reshape to 64 elements only renames registers: it has none. (The input is tt: ttgir's tt.reduce does not parse back with its result's encoding.)

// CHECK: ttg.shared = 640 : i32
// CHECK: tt.reduce sum %{{.*}} {axis = 1 : i32, ttg.shared_offset = 0 : i32}
// CHECK: tt.reshape %{{.*}} : tensor
// CHECK: tt.trans %{{.*}} {ttg.shared_offset = 256 : i32}
// CHECK: tt.atomic_rmw {{.*}}ttg.shared_offset = 512 : i32
builtin.module {
  tt.func public @rowsum(%X: !tt.ptr<f32>, %Y: !tt.ptr<f32>, %Z: !tt.ptr<f32>, %C: !tt.ptr<i32>) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
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
    %t = tt.trans %x : tensor<8x8xf32> -> tensor<8x8xf32>
    tt.store %px, %t : !tt.ptr<tensor<8x8xf32>>
    %old = tt.atomic_rmw "add", %C, %c1 : !tt.ptr<i32>, i32 -> i32
    tt.store %C, %old : !tt.ptr<i32>
    tt.return
  }
}
