// RUN: sparsecc-opt %s -p convert-ttg-to-ptx | filecheck %s
// tl.map_elementwise (handlers/map_elementwise.py): the scalar region is lowered once per register
// (2 per thread here), each with its own branch on its own loaded value, and each result stored.

// CHECK-LABEL: "ptx.kernel"
// CHECK:      [[V0:%.*]] = "ptx.ld.global"
// CHECK-NEXT: [[V1:%.*]] = "ptx.ld.global"
// CHECK-NEXT: [[C0:%.*]] = arith.cmpi slt, [[V0]], [[I0:%.*]] : i32
// CHECK-NEXT: [[R0:%.*]] = scf.if [[C0]] -> (i32) {
// CHECK-NEXT:   scf.yield [[I0]] : i32
// CHECK-NEXT: } else {
// CHECK-NEXT:   scf.yield [[V0]] : i32
// CHECK:      [[C1:%.*]] = arith.cmpi slt, [[V1]], [[I1:%.*]] : i32
// CHECK-NEXT: [[R1:%.*]] = scf.if [[C1]] -> (i32) {
// CHECK:      "ptx.st.global"(%{{.*}}, [[R0]])
// CHECK-NEXT: "ptx.st.global"(%{{.*}}, [[R1]])
// CHECK-NOT:  tt.
builtin.module attributes {"ttg.num-warps" = 1 : i32, "ttg.threads-per-warp" = 32 : i32, ttg.target = "sm_80"} {
  tt.func public @map(%x: !tt.ptr<i32>, %out: !tt.ptr<i32>) {
    %offs = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #ttg.blocked<{sizePerThread = [2], threadsPerWarp = [32], warpsPerCTA = [1], order = [0]}>>
    %p = tt.splat %x : !tt.ptr<i32> -> tensor<64x!tt.ptr<i32>, #ttg.blocked<{sizePerThread = [2], threadsPerWarp = [32], warpsPerCTA = [1], order = [0]}>>
    %q = tt.addptr %p, %offs : tensor<64x!tt.ptr<i32>, #ttg.blocked<{sizePerThread = [2], threadsPerWarp = [32], warpsPerCTA = [1], order = [0]}>>, tensor<64xi32, #ttg.blocked<{sizePerThread = [2], threadsPerWarp = [32], warpsPerCTA = [1], order = [0]}>>
    %v = tt.load %q : tensor<64x!tt.ptr<i32>, #ttg.blocked<{sizePerThread = [2], threadsPerWarp = [32], warpsPerCTA = [1], order = [0]}>>
    %r = "tt.map_elementwise"(%v, %offs) <{pack = 1 : i32}> ({
    ^bb0(%a: i32, %b: i32):
      %lt = arith.cmpi slt, %a, %b : i32
      %m = scf.if %lt -> (i32) {
        scf.yield %b : i32
      } else {
        scf.yield %a : i32
      }
      tt.reduce.return %m : i32
    }) : (tensor<64xi32, #ttg.blocked<{sizePerThread = [2], threadsPerWarp = [32], warpsPerCTA = [1], order = [0]}>>, tensor<64xi32, #ttg.blocked<{sizePerThread = [2], threadsPerWarp = [32], warpsPerCTA = [1], order = [0]}>>) -> tensor<64xi32, #ttg.blocked<{sizePerThread = [2], threadsPerWarp = [32], warpsPerCTA = [1], order = [0]}>>
    %o = tt.splat %out : !tt.ptr<i32> -> tensor<64x!tt.ptr<i32>, #ttg.blocked<{sizePerThread = [2], threadsPerWarp = [32], warpsPerCTA = [1], order = [0]}>>
    %oq = tt.addptr %o, %offs : tensor<64x!tt.ptr<i32>, #ttg.blocked<{sizePerThread = [2], threadsPerWarp = [32], warpsPerCTA = [1], order = [0]}>>, tensor<64xi32, #ttg.blocked<{sizePerThread = [2], threadsPerWarp = [32], warpsPerCTA = [1], order = [0]}>>
    tt.store %oq, %r : tensor<64x!tt.ptr<i32>, #ttg.blocked<{sizePerThread = [2], threadsPerWarp = [32], warpsPerCTA = [1], order = [0]}>>
    tt.return
  }
}
