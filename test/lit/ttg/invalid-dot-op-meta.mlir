// RUN: not sparsecc-opt %s 2>&1 | filecheck %s

// CHECK: meta = 1 (metadata) needs opIdx = 0: only A may be sparse
builtin.module {
  tt.func public @bad() {
    %x = arith.constant dense<0> : tensor<2x64xi16, #ttg.dot_op<{opIdx = 1, parent = #ttg.mma<{versionMajor = 2, warpsPerCTA = [2, 2], instrShape = [16, 8]}>, kWidth = 2, meta = 1}>>
    tt.return
  }
}
