// RUN: sparsecc-opt %s --split-input-file -p convert-ttg-to-ptx 2>&1 | filecheck %s
// convert-ttg-to-ptx takes the offsets and the total from the IR and plans nothing itself:
// here they were written by hand (the buffer at 1024, 2048 bytes in all, where the allocation
// would say 0 and 128), and the kernel adds 1024 to the shared base and declares 2048 bytes.
// The second module has no `ttg.shared`: the conversion allocates it first (offset 0, 128 B).

// CHECK:      builtin.module attributes {sparsecc.launch = {{{.*}}shared = 2048 : i64
// CHECK-NEXT: "ptx.kernel"() <{{.*}}shared_bytes = 2048 : i64
// CHECK:      [[BASE:%.*]] = "ptx.shared_base"() : () -> i32
// CHECK:      [[OFF:%.*]] = arith.constant 1024 : i32
// CHECK-NEXT: arith.addi [[BASE]], [[OFF]] : i32
#b = #ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 1], order = [1, 0]}>
#s = #ttg.shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [1, 0]}>
builtin.module attributes {"ttg.num-warps" = 1 : i32, "ttg.threads-per-warp" = 32 : i32, ttg.target = "sm_80", ttg.shared = 2048 : i32} {
  tt.func public @placed(%x: f32) {
    %v = tt.splat %x : f32 -> tensor<4x8xf32, #b>
    %buf = ttg.local_alloc %v {ttg.shared_offset = 1024 : i32} : (tensor<4x8xf32, #b>) -> !ttg.memdesc<4x8xf32, #s>
    %w = ttg.local_load %buf : !ttg.memdesc<4x8xf32, #s> -> tensor<4x8xf32, #b>
    tt.return
  }
}

// -----

// CHECK:      builtin.module attributes {sparsecc.launch = {{{.*}}shared = 128 : i64
// CHECK-NEXT: "ptx.kernel"() <{{.*}}shared_bytes = 128 : i64
#b = #ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 1], order = [1, 0]}>
#s = #ttg.shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [1, 0]}>
builtin.module attributes {"ttg.num-warps" = 1 : i32, "ttg.threads-per-warp" = 32 : i32, ttg.target = "sm_80"} {
  tt.func public @unplanned(%x: f32) {
    %v = tt.splat %x : f32 -> tensor<4x8xf32, #b>
    %buf = ttg.local_alloc %v : (tensor<4x8xf32, #b>) -> !ttg.memdesc<4x8xf32, #s>
    %w = ttg.local_load %buf : !ttg.memdesc<4x8xf32, #s> -> tensor<4x8xf32, #b>
    tt.return
  }
}
