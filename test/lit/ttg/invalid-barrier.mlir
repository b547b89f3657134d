// RUN: not sparsecc-opt %s 2>&1 | filecheck %s

// A TMA arrival must say how many bytes it announces; the error names the op and its place.
// CHECK: invalid-barrier.mlir:[[# @LINE + 6]]:{{[0-9]+}}
// CHECK-SAME: kind "tma" and only it takes {bytes = N : i32}
#bars = #ttg.shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [0]}>
builtin.module {
  tt.func public @bad(%r: !ttg.memdesc<3xi64, #bars, mutable>) {
    %c0 = arith.constant 0 : i32
    ttg.arrive_barrier %r[%c0] {kind = "tma"} : !ttg.memdesc<3xi64, #bars, mutable>
    tt.return
  }
}
