// RUN: not sparsecc-opt %s --split-input-file 2>&1 | filecheck %s
// A TMA store's shared tile must have its block pointer's shape; its wait a count of 0 or more.

// CHECK: ttg.async_tma_store: shapes differ
#shared = #ttg.shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [1, 0]}>
#blocked = #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
builtin.module {
  tt.func public @bad(%bp: !tt.ptr<tensor<64x32xf16, #blocked>>, %m: !ttg.memdesc<64x16xf16, #shared>) {
    ttg.async_tma_store %bp, %m : !tt.ptr<tensor<64x32xf16, #blocked>>, !ttg.memdesc<64x16xf16, #shared>
    tt.return
  }
}

// -----

// CHECK: ttg.async_tma_store_wait: pendings must be >= 0
builtin.module {
  tt.func public @bad_wait() {
    ttg.async_tma_store_wait {pendings = -1 : i32}
    tt.return
  }
}
