// RUN: sparsecc-opt %s -p convert-ttg-to-ptx | filecheck %s
// tl.split(tl.join(x, 2 * x)) (covers handlers/shapes.py's free path): the join's result
// layout keeps the new dim in each thread's registers (sizePerThread [4, 2], what
// convert-tt-to-ttg derives), so join and split only rename registers: a - b subtracts the
// very registers x and 2 * x are in, with no shared memory (0 bytes, no st/ld.shared, no barrier).

// CHECK:      shared_bytes = 0
// CHECK:      [[X0:%.*]] = arith.sitofp
// CHECK-NEXT: [[X1:%.*]] = arith.sitofp
// CHECK:      [[Y0:%.*]] = arith.mulf [[X0]], [[TWO:%.*]] : f32
// CHECK-NEXT: [[Y1:%.*]] = arith.mulf [[X1]], [[TWO]] : f32
// CHECK:      arith.subf [[X0]], [[Y0]] : f32
// CHECK-NEXT: arith.subf [[X1]], [[Y1]] : f32
// CHECK-NOT:  ptx.st.shared
// CHECK-NOT:  ptx.ld.shared
// CHECK-NOT:  ptx.bar.sync
builtin.module attributes {"ttg.num-warps" = 1 : i32, "ttg.threads-per-warp" = 32 : i32, ttg.target = "sm_80"} {
  tt.func public @join_split(%X: !tt.ptr<f32>) {
    %r = tt.make_range {start = 0 : i32, end = 32 : i32} : tensor<32xi32, #ttg.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [1], order = [0]}>>
    %x = arith.sitofp %r : tensor<32xi32, #ttg.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [1], order = [0]}>> to tensor<32xf32, #ttg.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [1], order = [0]}>>
    %0 = arith.constant dense<2.000000e+00> : tensor<32xf32, #ttg.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [1], order = [0]}>>
    %1 = arith.mulf %x, %0 : tensor<32xf32, #ttg.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [1], order = [0]}>>
    %2 = tt.join %x, %1 : tensor<32xf32, #ttg.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [1], order = [0]}>> -> tensor<32x2xf32, #ttg.blocked<{sizePerThread = [4, 2], threadsPerWarp = [32, 1], warpsPerCTA = [1, 1], order = [1, 0]}>>
    %a, %b = tt.split %2 : tensor<32x2xf32, #ttg.blocked<{sizePerThread = [4, 2], threadsPerWarp = [32, 1], warpsPerCTA = [1, 1], order = [1, 0]}>> -> tensor<32xf32, #ttg.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [1], order = [0]}>>
    %3 = tt.splat %X : !tt.ptr<f32> -> tensor<32x!tt.ptr<f32>, #ttg.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [1], order = [0]}>>
    %4 = tt.addptr %3, %r : tensor<32x!tt.ptr<f32>, #ttg.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [1], order = [0]}>>, tensor<32xi32, #ttg.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [1], order = [0]}>>
    %5 = arith.subf %a, %b : tensor<32xf32, #ttg.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [1], order = [0]}>>
    tt.store %4, %5 : tensor<32x!tt.ptr<f32>, #ttg.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [1], order = [0]}>>
    tt.return
  }
}

