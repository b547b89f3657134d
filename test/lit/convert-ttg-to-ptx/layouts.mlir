// RUN: sparsecc-opt %s -p convert-ttg-to-ptx | filecheck %s
// A layout conversion (covers handlers/layouts.py) is a round trip through a row-major shared
// scratch buffer: each thread stores its element of the row-major layout, a bar.sync, then it
// reads back the two elements the column-major layout gives it.

// CHECK:      "ptx.kernel"() <{{.*}}shared_bytes = 128 : i64
// CHECK:      [[BASE:%.*]] = "ptx.shared_base"() : () -> i32
// CHECK:      "ptx.st.shared"(%{{.*}}, %arg1)
// CHECK-NEXT: arith.andi
// CHECK:      "ptx.bar.sync"() <{barrier = 0 : i32}> : () -> ()
// CHECK:      "ptx.ld.shared"
// CHECK:      "ptx.ld.shared"
// CHECK-NOT:  "ptx.ld.shared"
builtin.module attributes {"ttg.num-warps" = 1 : i32, "ttg.threads-per-warp" = 32 : i32, ttg.target = "sm_80"} {
  tt.func public @layouts(%X: !tt.ptr<f32>, %x: f32) {
    %v = tt.splat %x : f32 -> tensor<4x8xf32, #ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 1], order = [1, 0]}>>
    %w = ttg.convert_layout %v : tensor<4x8xf32, #ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 1], order = [1, 0]}>> -> tensor<4x8xf32, #ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [8, 4], warpsPerCTA = [1, 1], order = [0, 1]}>>
    tt.return
  }
}
