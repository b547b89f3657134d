// RUN: sparsecc-opt %s --split-input-file -p convert-ttg-to-ptx | filecheck %s
// ttg.barrier (covers handlers/shared.py's barrier handler) in a function marked
// ttg.explicit_barriers (tritongpu-insert-barriers ran): the lowering issues exactly the
// barriers in the IR, each right before the next op's first shared access (where the lazy
// placement of functions the pass did not see would put it too). First function: one
// ttg.barrier between the store and the load: one bar.sync. Second: the same ops without it:
// none (the pass decided; the lowering adds no barrier of its own between ops). Third: a
// convert_layout still synchronises between writing and reading back its own scratch.

// CHECK-LABEL: "ptx.kernel"() <{sym_name = "one"
// CHECK:       "ptx.st.shared"
// CHECK-NEXT:  "ptx.bar.sync"() <{barrier = 0 : i32}> : () -> ()
// CHECK-NOT:   "ptx.bar.sync"
// CHECK:       "ptx.ld.shared"
// CHECK-NOT:   "ptx.bar.sync"
// CHECK:       }) : () -> ()
#b = #ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 1], order = [1, 0]}>
#s = #ttg.shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [1, 0]}>
builtin.module attributes {"ttg.num-warps" = 1 : i32, "ttg.threads-per-warp" = 32 : i32, ttg.target = "sm_80"} {
  tt.func public @one(%x: f32) attributes {ttg.explicit_barriers} {
    %v = tt.splat %x : f32 -> tensor<4x8xf32, #b>
    %buf = ttg.local_alloc %v : (tensor<4x8xf32, #b>) -> !ttg.memdesc<4x8xf32, #s>
    ttg.barrier
    %w = ttg.local_load %buf : !ttg.memdesc<4x8xf32, #s> -> tensor<4x8xf32, #b>
    tt.return
  }
}

// -----

// CHECK-LABEL: "ptx.kernel"() <{sym_name = "none"
// CHECK:       "ptx.st.shared"
// CHECK-NOT:   "ptx.bar.sync"
// CHECK:       "ptx.ld.shared"
// CHECK-NOT:   "ptx.bar.sync"
// CHECK:       }) : () -> ()
#b = #ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 1], order = [1, 0]}>
#s = #ttg.shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [1, 0]}>
builtin.module attributes {"ttg.num-warps" = 1 : i32, "ttg.threads-per-warp" = 32 : i32, ttg.target = "sm_80"} {
  tt.func public @none(%x: f32) attributes {ttg.explicit_barriers} {
    %v = tt.splat %x : f32 -> tensor<4x8xf32, #b>
    %buf = ttg.local_alloc %v : (tensor<4x8xf32, #b>) -> !ttg.memdesc<4x8xf32, #s>
    %w = ttg.local_load %buf : !ttg.memdesc<4x8xf32, #s> -> tensor<4x8xf32, #b>
    tt.return
  }
}

// -----

// CHECK-LABEL: "ptx.kernel"() <{sym_name = "roundtrip"
// CHECK:       "ptx.st.shared"
// CHECK:       "ptx.bar.sync"() <{barrier = 0 : i32}> : () -> ()
// CHECK-NOT:   "ptx.bar.sync"
// CHECK:       "ptx.ld.shared"
// CHECK-NOT:   "ptx.bar.sync"
// CHECK:       }) : () -> ()
#b = #ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 1], order = [1, 0]}>
#c = #ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [8, 4], warpsPerCTA = [1, 1], order = [0, 1]}>
builtin.module attributes {"ttg.num-warps" = 1 : i32, "ttg.threads-per-warp" = 32 : i32, ttg.target = "sm_80"} {
  tt.func public @roundtrip(%x: f32) attributes {ttg.explicit_barriers} {
    %v = tt.splat %x : f32 -> tensor<4x8xf32, #b>
    %t = ttg.convert_layout %v : tensor<4x8xf32, #b> -> tensor<4x8xf32, #c>
    tt.return
  }
}
