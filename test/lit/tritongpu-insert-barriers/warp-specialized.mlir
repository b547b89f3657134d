// RUN: sparsecc-opt %s -p tritongpu-insert-barriers | filecheck %s
// RUN: sparsecc-opt %s -p tritongpu-insert-barriers,tritongpu-insert-barriers | filecheck %s
// A warp-specialized function: the store before the producer run executes in every thread;
// after it, the producer warp lowers the run without its shared reads (local_load), the
// consumer warps lower the run and the rest. Each side's barriers come from its own ops:
// the consumer's first read waits for the store (RAW), its convert_layout for that read
// (WAR), the producer sees no read before its convert_layout; both sides' stores wait for
// their convert_layout's read back (WAR, one barrier per side); the read after the run is
// the consumer's alone. The barriers inside the run are marked ttg.producer (the run stays
// contiguous; the consumer also lowers it); running the pass twice changes nothing.

// CHECK:      tt.func public @sides(%x: f32) attributes {"ttg.producer-warps" = 1 : i32, ttg.explicit_barriers} {
// CHECK:      ttg.local_store %v, %buf :
// CHECK-NEXT: ttg.barrier {side = "consumer", ttg.producer}
// CHECK-NEXT: %r = ttg.local_load %buf {ttg.producer}
// CHECK-NEXT: ttg.barrier {side = "consumer", ttg.producer}
// CHECK-NEXT: %t = ttg.convert_layout %v {ttg.producer}
// CHECK-NEXT: ttg.barrier {side = "producer", ttg.producer}
// CHECK-NEXT: ttg.barrier {side = "consumer", ttg.producer}
// CHECK-NEXT: ttg.local_store %v, %buf {ttg.producer}
// CHECK-NEXT: ttg.barrier {side = "consumer"}
// CHECK-NEXT: %r2 = ttg.local_load %buf :
// CHECK-NEXT: tt.return
// CHECK-NOT:  ttg.barrier
#b = #ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 1], order = [1, 0]}>
#c = #ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [8, 4], warpsPerCTA = [1, 1], order = [0, 1]}>
#s = #ttg.shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [1, 0]}>
builtin.module attributes {"ttg.num-warps" = 1 : i32, "ttg.threads-per-warp" = 32 : i32, ttg.target = "sm_80"} {
  tt.func public @sides(%x: f32) attributes {"ttg.producer-warps" = 1 : i32} {
    %v = tt.splat %x : f32 -> tensor<4x8xf32, #b>
    %buf = ttg.local_alloc : () -> !ttg.memdesc<4x8xf32, #s, mutable>
    ttg.local_store %v, %buf : tensor<4x8xf32, #b> -> !ttg.memdesc<4x8xf32, #s, mutable>
    %r = ttg.local_load %buf {ttg.producer} : !ttg.memdesc<4x8xf32, #s, mutable> -> tensor<4x8xf32, #b>
    %t = ttg.convert_layout %v {ttg.producer} : tensor<4x8xf32, #b> -> tensor<4x8xf32, #c>
    ttg.local_store %v, %buf {ttg.producer} : tensor<4x8xf32, #b> -> !ttg.memdesc<4x8xf32, #s, mutable>
    %r2 = ttg.local_load %buf : !ttg.memdesc<4x8xf32, #s, mutable> -> tensor<4x8xf32, #b>
    tt.return
  }
}
