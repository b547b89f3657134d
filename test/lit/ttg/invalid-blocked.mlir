// RUN: not sparsecc-opt %s 2>&1 | filecheck %s

// CHECK: product of threadsPerWarp must be 32, got 16
builtin.module {
  tt.func public @bad() {
    %x = arith.constant dense<0> : tensor<32x64xi16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 4], warpsPerCTA = [4, 1], order = [1, 0]}>>
    tt.return
  }
}
