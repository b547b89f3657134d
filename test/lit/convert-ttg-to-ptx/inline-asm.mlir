// RUN: sparsecc-opt %s -p convert-ttg-to-ptx | filecheck %s
// tl.inline_asm_elementwise (handlers/inline_asm.py): the user's PTX as a ptx.asm per element,
// results first; an f32 operand of an "r" constraint is bitcast to i32 and an f32 result of
// "=r" comes back by a bitcast; pack=2 takes two elements per asm (two results, two inputs).

// CHECK-LABEL: "ptx.kernel"
// CHECK:      [[B:%.*]] = arith.bitcast %arg1 : f32 to i32
// CHECK-NEXT: [[R:%.*]] = "ptx.asm"([[B]], %arg2) <{template = "add.s32 $0, $1, $2;", pure}> : (i32, i32) -> i32
// CHECK-NEXT: arith.bitcast [[R]] : i32 to f32
// CHECK:      "ptx.asm"(%{{.*}}, %{{.*}}) <{template = "shl.b32 $0, $2, 1;\0Ashl.b32 $1, $3, 1;"}> : (i32, i32) -> (i32, i32)
builtin.module attributes {"ttg.num-warps" = 1 : i32, "ttg.threads-per-warp" = 32 : i32, ttg.target = "sm_80"} {
  tt.func public @asm(%out: !tt.ptr<f32>, %x: f32, %i: i32, %io: !tt.ptr<i32>) {
    %y = tt.elementwise_inline_asm "add.s32 $0, $1, $2;" {constraints = "=r,r,r", pure = 1 : i32, packed_element = 1 : i32} %x, %i : f32, i32 -> f32
    tt.store %out, %y : !tt.ptr<f32>
    %offs = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #ttg.blocked<{sizePerThread = [2], threadsPerWarp = [32], warpsPerCTA = [1], order = [0]}>>
    %two = tt.elementwise_inline_asm "shl.b32 $0, $2, 1;\0Ashl.b32 $1, $3, 1;" {constraints = "=r,=r,r,r", pure = 0 : i32, packed_element = 2 : i32} %offs : tensor<64xi32, #ttg.blocked<{sizePerThread = [2], threadsPerWarp = [32], warpsPerCTA = [1], order = [0]}>> -> tensor<64xi32, #ttg.blocked<{sizePerThread = [2], threadsPerWarp = [32], warpsPerCTA = [1], order = [0]}>>
    %p = tt.splat %io : !tt.ptr<i32> -> tensor<64x!tt.ptr<i32>, #ttg.blocked<{sizePerThread = [2], threadsPerWarp = [32], warpsPerCTA = [1], order = [0]}>>
    %q = tt.addptr %p, %offs : tensor<64x!tt.ptr<i32>, #ttg.blocked<{sizePerThread = [2], threadsPerWarp = [32], warpsPerCTA = [1], order = [0]}>>, tensor<64xi32, #ttg.blocked<{sizePerThread = [2], threadsPerWarp = [32], warpsPerCTA = [1], order = [0]}>>
    tt.store %q, %two : tensor<64x!tt.ptr<i32>, #ttg.blocked<{sizePerThread = [2], threadsPerWarp = [32], warpsPerCTA = [1], order = [0]}>>
    tt.return
  }
}
