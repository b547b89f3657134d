// RUN: not sparsecc-opt %s 2>&1 | filecheck %s

// CHECK: ttg.local_load: shapes differ
#shared = #ttg.shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [1, 0]}>
#blocked = #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
builtin.module {
  tt.func public @bad(%m: !ttg.memdesc<64x32xf16, #shared>) {
    %t = ttg.local_load %m : !ttg.memdesc<64x32xf16, #shared> -> tensor<64x16xf16, #blocked>
    tt.return
  }
}
