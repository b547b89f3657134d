// RUN: sparsecc-opt %s -p allocate-shared-memory,convert-ttg-to-ptx | filecheck %s
// A mask (i1 tensor) changing layout: predicates have no memory form, so the round trip stores
// each one as an i16 0/1 (a select), reads the i16 back in the other layout and compares it
// with 0. The scratch is sized for i16 (4x8x2 = 64 bytes, 128 once aligned); an i1 scratch of 0 bytes was
// never allocated, and the lowering failed (an internal error).

// CHECK:      "ptx.kernel"() <{{.*}}shared_bytes = 128 : i64
// CHECK:      arith.select %{{.*}}, %{{.*}}, %{{.*}} : i16
// CHECK:      "ptx.st.shared"
// CHECK:      "ptx.bar.sync"() <{barrier = 0 : i32}> : () -> ()
// CHECK:      "ptx.ld.shared"
// CHECK:      arith.cmpi ne, %{{.*}}, %{{.*}} : i16
builtin.module attributes {"ttg.num-warps" = 1 : i32, "ttg.threads-per-warp" = 32 : i32, ttg.target = "sm_80"} {
  tt.func public @mask_layouts(%X: !tt.ptr<f32>, %x: f32) {
    %v = tt.splat %x : f32 -> tensor<4x8xf32, #ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 1], order = [1, 0]}>>
    %z = arith.constant dense<0.000000e+00> : tensor<4x8xf32, #ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 1], order = [1, 0]}>>
    %m = arith.cmpf olt, %v, %z : tensor<4x8xf32, #ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 1], order = [1, 0]}>>
    %w = ttg.convert_layout %m : tensor<4x8xi1, #ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 1], order = [1, 0]}>> -> tensor<4x8xi1, #ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [8, 4], warpsPerCTA = [1, 1], order = [0, 1]}>>
    tt.return
  }
}
