// RUN: sparsecc-opt %s -p "convert-tt-to-ttg{num-warps=4 target=sm_80},convert-ttg-to-ptx" | filecheck %s
// tt.reduce in registers (handlers/reduce.py), as softmax reduces one row twice (max, then
// sum) with 4 warps: each thread folds its 8 registers (maxnumf: NaN is ignored, as Triton's
// tl.max), then 5 butterflies over the lanes (shfl.sync.bfly 1..16), then the 4 warps'
// partials go through a 16-byte exchange: the lane-0 thread of each warp stores its word, a
// bar.sync, and every thread reads the 4 words as one vector. The second reduction has its own
// 16 bytes (at 128); a barrier comes before its store (the first one's reads), one between
// its store and its read. 256 bytes of shared memory in all, not the 4 KiB of the source.

// CHECK:      shared = 256 : i64
// CHECK:      arith.maxnumf
// CHECK:      "ptx.asm"({{.*}}) <{template = "shfl.sync.bfly.b32 $0, $1, 1, 0x1f, -1;"}> : (f32) -> f32
// CHECK:      "ptx.asm"({{.*}}) <{template = "shfl.sync.bfly.b32 $0, $1, 2, 0x1f, -1;"}> : (f32) -> f32
// CHECK:      "ptx.asm"({{.*}}) <{template = "shfl.sync.bfly.b32 $0, $1, 4, 0x1f, -1;"}> : (f32) -> f32
// CHECK:      "ptx.asm"({{.*}}) <{template = "shfl.sync.bfly.b32 $0, $1, 8, 0x1f, -1;"}> : (f32) -> f32
// CHECK:      "ptx.asm"({{.*}}) <{template = "shfl.sync.bfly.b32 $0, $1, 16, 0x1f, -1;"}> : (f32) -> f32
// CHECK:      "ptx.st.shared"({{.*}}) <{offset = 0 : i64, operandSegmentSizes = array<i32: 1, 1, 1>}> : (i32, f32, i1) -> ()
// CHECK-NEXT: "ptx.bar.sync"() <{barrier = 0 : i32}> : () -> ()
// CHECK:      %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} = "ptx.ld.shared"
// CHECK:      arith.maxnumf
// CHECK:      arith.maxnumf
// CHECK:      arith.maxnumf
// CHECK:      "ptx.asm"({{.*}}) <{template = "shfl.sync.bfly.b32 $0, $1, 16, 0x1f, -1;"}> : (f32) -> f32
// CHECK:      "ptx.bar.sync"() <{barrier = 0 : i32}> : () -> ()
// CHECK:      "ptx.st.shared"
// CHECK-NEXT: "ptx.bar.sync"() <{barrier = 0 : i32}> : () -> ()
// CHECK:      %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} = "ptx.ld.shared"
// CHECK:      "ptx.st.global"

builtin.module {
  tt.func public @softmax_like(%X: !tt.ptr<f32>, %Y: !tt.ptr<f32>) {
    %c0 = arith.constant 0 : i32
    %one = arith.constant 1 : i64
    %s1024 = arith.constant 1024 : i64
    %px = tt.make_tensor_ptr %X, shape=[%s1024], strides=[%one], offsets=[%c0] {order = array<i32: 0>} : !tt.ptr<tensor<1024xf32>>
    %x = tt.load %px : !tt.ptr<tensor<1024xf32>>
    %m = tt.reduce max %x {axis = 0 : i32} : tensor<1024xf32> -> f32
    %s = tt.reduce sum %x {axis = 0 : i32} : tensor<1024xf32> -> f32
    %r = arith.addf %m, %s : f32
    tt.store %Y, %r : !tt.ptr<f32>
    tt.return
  }
}
