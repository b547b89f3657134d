// RUN: sparsecc-opt %s -p "convert-tt-to-ttg{num-warps=4 target=sm_80},convert-ttg-to-ptx" | filecheck %s
// tl.gather(x, idx, 0) of 256 floats: the source is stored to a 1 KiB scratch, a barrier, then
// each result register loads the element its index names.

// CHECK:      shared = 1024 : i64
// CHECK:      "ptx.st.shared"
// CHECK:      "ptx.bar.sync"() <{barrier = 0 : i32}> : () -> ()
// CHECK:      = "ptx.ld.shared"({{.*}}) {{.*}} : (i32) -> f32
// CHECK:      "ptx.st.global"

builtin.module {
  tt.func public @gather(%X: !tt.ptr<f32>, %I: !tt.ptr<i32>, %Y: !tt.ptr<f32>) {
    %c0 = arith.constant 0 : i32
    %one = arith.constant 1 : i64
    %s256 = arith.constant 256 : i64
    %px = tt.make_tensor_ptr %X, shape=[%s256], strides=[%one], offsets=[%c0] {order = array<i32: 0>} : !tt.ptr<tensor<256xf32>>
    %pi = tt.make_tensor_ptr %I, shape=[%s256], strides=[%one], offsets=[%c0] {order = array<i32: 0>} : !tt.ptr<tensor<256xi32>>
    %py = tt.make_tensor_ptr %Y, shape=[%s256], strides=[%one], offsets=[%c0] {order = array<i32: 0>} : !tt.ptr<tensor<256xf32>>
    %x = tt.load %px : !tt.ptr<tensor<256xf32>>
    %i = tt.load %pi : !tt.ptr<tensor<256xi32>>
    %g = tt.gather %x[%i] {axis = 0 : i32} : (tensor<256xf32>, tensor<256xi32>) -> tensor<256xf32>
    tt.store %py, %g : !tt.ptr<tensor<256xf32>>
    tt.return
  }
}
