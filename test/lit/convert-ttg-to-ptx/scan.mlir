// RUN: sparsecc-opt %s -p "convert-tt-to-ttg{num-warps=4 target=sm_80},convert-ttg-to-ptx" | filecheck %s
// tl.cumsum (handlers/scan.py) of 1024 floats over 4 warps: the default layout gives each thread two runs of 4
// (the 512-element tile repeats twice). Each thread adds its runs in order, the lanes scan the
// runs' totals with shfl.sync.up (1, 2, 4, 8, 16 lanes back) and take the inclusive value of
// the lane before them (one more shfl.sync.up by 1); the last lane of each warp stores its
// tile totals to the exchange (2 repetitions x 4 warps words), a barrier, and every thread
// reads the 8 totals (two vectors of 4) to combine those before its own tile.

// CHECK:      "ptx.asm"({{.*}}) <{template = "shfl.sync.up.b32 $0, $1, 1, 0, -1;"}> : (f32) -> f32
// CHECK:      "ptx.asm"({{.*}}) <{template = "shfl.sync.up.b32 $0, $1, 2, 0, -1;"}> : (f32) -> f32
// CHECK:      "ptx.asm"({{.*}}) <{template = "shfl.sync.up.b32 $0, $1, 16, 0, -1;"}> : (f32) -> f32
// CHECK:      arith.cmpi uge
// CHECK:      "ptx.asm"({{.*}}) <{template = "shfl.sync.up.b32 $0, $1, 1, 0, -1;"}> : (f32) -> f32
// CHECK:      "ptx.st.shared"
// CHECK:      "ptx.st.shared"
// CHECK-NEXT: "ptx.bar.sync"() <{barrier = 0 : i32}> : () -> ()
// CHECK:      = "ptx.ld.shared"({{.*}}) <{offset = 0 : i64, {{.*}}}> : (i32) -> (f32, f32, f32, f32)
// CHECK-NEXT: = "ptx.ld.shared"({{.*}}) <{offset = 16 : i64, {{.*}}}> : (i32) -> (f32, f32, f32, f32)
// CHECK:      "ptx.st.global"

builtin.module {
  tt.func public @cumsum(%X: !tt.ptr<f32>, %Y: !tt.ptr<f32>) {
    %c0 = arith.constant 0 : i32
    %one = arith.constant 1 : i64
    %s1024 = arith.constant 1024 : i64
    %px = tt.make_tensor_ptr %X, shape=[%s1024], strides=[%one], offsets=[%c0] {order = array<i32: 0>} : !tt.ptr<tensor<1024xf32>>
    %py = tt.make_tensor_ptr %Y, shape=[%s1024], strides=[%one], offsets=[%c0] {order = array<i32: 0>} : !tt.ptr<tensor<1024xf32>>
    %x = tt.load %px : !tt.ptr<tensor<1024xf32>>
    %c = tt.scan %x {axis = 0 : i32, reverse = false} : tensor<1024xf32> ({
    ^bb0(%a: f32, %b: f32):
      %s = arith.addf %a, %b : f32
      tt.reduce.return %s : f32
    })
    tt.store %py, %c : !tt.ptr<tensor<1024xf32>>
    tt.return
  }
}
