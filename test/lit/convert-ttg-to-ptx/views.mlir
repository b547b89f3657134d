// RUN: sparsecc-opt %s -p convert-ttg-to-ptx | filecheck %s
// View and shape ops (covers handlers/views.py) on a 4x8 tile with one element per thread:
// make_range + expand_dims + broadcast give each thread its (row, col) = (lane / 8 % 4,
// lane % 8) with no data movement, splat reuses the scalar; the pointer tensor is one 64-bit
// address per register (one mul.wide.s32 per offset, shared by both pointers), loaded and
// stored per element (covers handlers/memory.py's pointer tensors), and the mulf is one
// scalar op per register.

// CHECK:      [[TID:%.*]] = "ptx.sreg"() <{reg = "tid.x"}> : () -> i32
// CHECK:      [[LANE:%.*]] = arith.andi [[TID]], %{{.*}} : i32
// CHECK:      [[ROW8:%.*]] = arith.shrui [[LANE]], %{{.*}} : i32
// CHECK-NEXT: [[ROW:%.*]] = arith.andi [[ROW8]], %{{.*}} : i32
// CHECK:      [[COL:%.*]] = arith.andi [[LANE]], %{{.*}} : i32
// CHECK:      [[RO:%.*]] = arith.muli [[ROW]], %{{.*}} : i32
// CHECK-NEXT: [[OFF:%.*]] = arith.addi [[RO]], [[COL]] : i32
// CHECK-NEXT: [[BYTES:%.*]] = "ptx.asm"([[OFF]]) <{template = "mul.wide.s32 $0, $1, 4;", pure}> : (i32) -> i64
// CHECK-NEXT: [[P:%.*]] = arith.addi %arg0, [[BYTES]] : i64
// CHECK-NEXT: [[V:%.*]] = "ptx.ld.global"([[P]])
// CHECK-NEXT: [[W:%.*]] = arith.mulf [[V]], %arg2 : f32
// CHECK:      [[Q:%.*]] = arith.addi %arg1, [[BYTES]] : i64
// CHECK-NEXT: "ptx.st.global"([[Q]], [[W]])
// CHECK-NOT:  ptx.st.global
builtin.module attributes {"ttg.num-warps" = 1 : i32, "ttg.threads-per-warp" = 32 : i32, ttg.target = "sm_80"} {
  tt.func public @views(%src: !tt.ptr<f32>, %dst: !tt.ptr<f32>, %x: f32) {
    %r = tt.make_range {end = 4 : i32, start = 0 : i32} : tensor<4xi32, #ttg.slice<{dim = 1, parent = #ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 1], order = [1, 0]}>}>>
    %c = tt.make_range {end = 8 : i32, start = 0 : i32} : tensor<8xi32, #ttg.slice<{dim = 0, parent = #ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 1], order = [1, 0]}>}>>
    %r2 = tt.expand_dims %r {axis = 1 : i32} : tensor<4xi32, #ttg.slice<{dim = 1, parent = #ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 1], order = [1, 0]}>}>> -> tensor<4x1xi32, #ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 1], order = [1, 0]}>>
    %c2 = tt.expand_dims %c {axis = 0 : i32} : tensor<8xi32, #ttg.slice<{dim = 0, parent = #ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 1], order = [1, 0]}>}>> -> tensor<1x8xi32, #ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 1], order = [1, 0]}>>
    %s = arith.constant dense<8> : tensor<4x1xi32, #ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 1], order = [1, 0]}>>
    %ro = arith.muli %r2, %s : tensor<4x1xi32, #ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 1], order = [1, 0]}>>
    %rb = tt.broadcast %ro : tensor<4x1xi32, #ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 1], order = [1, 0]}>> -> tensor<4x8xi32, #ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 1], order = [1, 0]}>>
    %cb = tt.broadcast %c2 : tensor<1x8xi32, #ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 1], order = [1, 0]}>> -> tensor<4x8xi32, #ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 1], order = [1, 0]}>>
    %off = arith.addi %rb, %cb : tensor<4x8xi32, #ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 1], order = [1, 0]}>>
    %ps = tt.splat %src : !tt.ptr<f32> -> tensor<4x8x!tt.ptr<f32>, #ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 1], order = [1, 0]}>>
    %p = tt.addptr %ps, %off : tensor<4x8x!tt.ptr<f32>, #ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 1], order = [1, 0]}>>, tensor<4x8xi32, #ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 1], order = [1, 0]}>>
    %v = tt.load %p : tensor<4x8x!tt.ptr<f32>, #ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 1], order = [1, 0]}>>
    %xs = tt.splat %x : f32 -> tensor<4x8xf32, #ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 1], order = [1, 0]}>>
    %w = arith.mulf %v, %xs : tensor<4x8xf32, #ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 1], order = [1, 0]}>>
    %pd = tt.splat %dst : !tt.ptr<f32> -> tensor<4x8x!tt.ptr<f32>, #ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 1], order = [1, 0]}>>
    %q = tt.addptr %pd, %off : tensor<4x8x!tt.ptr<f32>, #ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 1], order = [1, 0]}>>, tensor<4x8xi32, #ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 1], order = [1, 0]}>>
    tt.store %q, %w : tensor<4x8x!tt.ptr<f32>, #ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 1], order = [1, 0]}>>
    tt.return
  }
}
