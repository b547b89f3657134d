// RUN: sparsecc-opt %s -p tritongpu-insert-barriers | filecheck %s
// Where the shared accesses of an if, two layout conversions and a loop need CTA barriers.
// The store before the if leaves a write pending: the branch that reads gets a barrier (RAW),
// the other none. After the if a read may have happened (the branches merge with "or"): the
// store gets one (WAR). The first convert_layout writes its own scratch and reads it back with
// its own barrier in between (no ttg.barrier: that one is the op's); the second writes its own
// scratch, which nothing read since: no barrier (reads of a private scratch are tracked per
// buffer). A loop body starts conservatively (both pending: the other iterations are unseen),
// so its read gets one, and so does its store after that read; after the loop, both are
// pending again. The lowering turns exactly these into bar.sync: the PTX is that of its own
// lazy placement less the barrier between the conversions (test_shared_passes.py).

// CHECK:      tt.func public @branches(%x: f32, %n: i32) attributes {ttg.explicit_barriers} {
// CHECK:      ttg.local_store %v, %buf
// CHECK-NEXT: %big = arith.cmpi
// CHECK-NEXT: %w = scf.if %big
// CHECK-NEXT:   ttg.barrier
// CHECK-NEXT:   %r = ttg.local_load %buf
// CHECK-NEXT:   scf.yield %r
// CHECK-NEXT: } else {
// CHECK-NEXT:   scf.yield %v
// CHECK-NEXT: }
// CHECK-NEXT: ttg.barrier
// CHECK-NEXT: ttg.local_store %w, %buf
// CHECK-NEXT: %t = ttg.convert_layout %w
// CHECK-NEXT: %u = ttg.convert_layout %t
// CHECK-NEXT: %acc = scf.for
// CHECK-NEXT:   ttg.barrier
// CHECK-NEXT:   %r2 = ttg.local_load %buf
// CHECK-NEXT:   %s2 = arith.addf
// CHECK-NEXT:   ttg.barrier
// CHECK-NEXT:   ttg.local_store %s2, %buf
// CHECK-NEXT:   scf.yield %s2
// CHECK-NEXT: }
// CHECK-NEXT: ttg.barrier
// CHECK-NEXT: ttg.local_store %acc, %buf
// CHECK-NEXT: tt.return
#b = #ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 1], order = [1, 0]}>
#c = #ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [8, 4], warpsPerCTA = [1, 1], order = [0, 1]}>
#s = #ttg.shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [1, 0]}>
builtin.module attributes {"ttg.num-warps" = 1 : i32, "ttg.threads-per-warp" = 32 : i32, ttg.target = "sm_80"} {
  tt.func public @branches(%x: f32, %n: i32) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %v = tt.splat %x : f32 -> tensor<4x8xf32, #b>
    %buf = ttg.local_alloc : () -> !ttg.memdesc<4x8xf32, #s, mutable>
    ttg.local_store %v, %buf : tensor<4x8xf32, #b> -> !ttg.memdesc<4x8xf32, #s, mutable>
    %big = arith.cmpi sgt, %n, %c0 : i32
    %w = scf.if %big -> (tensor<4x8xf32, #b>) {
      %r = ttg.local_load %buf : !ttg.memdesc<4x8xf32, #s, mutable> -> tensor<4x8xf32, #b>
      scf.yield %r : tensor<4x8xf32, #b>
    } else {
      scf.yield %v : tensor<4x8xf32, #b>
    }
    ttg.local_store %w, %buf : tensor<4x8xf32, #b> -> !ttg.memdesc<4x8xf32, #s, mutable>
    %t = ttg.convert_layout %w : tensor<4x8xf32, #b> -> tensor<4x8xf32, #c>
    %u = ttg.convert_layout %t : tensor<4x8xf32, #c> -> tensor<4x8xf32, #b>
    %acc = scf.for %i = %c0 to %n step %c1 iter_args(%a = %u) -> (tensor<4x8xf32, #b>) : i32 {
      %r2 = ttg.local_load %buf : !ttg.memdesc<4x8xf32, #s, mutable> -> tensor<4x8xf32, #b>
      %s2 = arith.addf %a, %r2 : tensor<4x8xf32, #b>
      ttg.local_store %s2, %buf : tensor<4x8xf32, #b> -> !ttg.memdesc<4x8xf32, #s, mutable>
      scf.yield %s2 : tensor<4x8xf32, #b>
    }
    ttg.local_store %acc, %buf : tensor<4x8xf32, #b> -> !ttg.memdesc<4x8xf32, #s, mutable>
    tt.return
  }
}
