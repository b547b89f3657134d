builtin.module attributes {"ttg.num-warps" = 4 : i32, "ttg.threads-per-warp" = 32 : i32, ttg.target = "sm_90a"} {
  tt.func public @dot_kernel(%D: !tt.ptr<f16>, %A_values: !tt.ptr<f16>, %A_meta: !tt.ptr<i16>, %B: !tt.ptr<f16>) {
    %0 = arith.constant 32 : i64
    %1 = arith.constant 64 : i64
    %2 = arith.constant 1 : i64
    %3 = arith.constant 0 : i32
    %4 = arith.constant 2 : i64
    %a_ptrs_values = tt.make_tensor_ptr %A_values, shape=[%0, %0], strides=[%0, %2], offsets=[%3, %3] {order = array<i32: 1, 0>} : !tt.ptr<tensor<32x32xf16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>>>
    %a_ptrs_meta = tt.make_tensor_ptr %A_meta, shape=[%4, %1], strides=[%1, %2], offsets=[%3, %3] {order = array<i32: 1, 0>} : !tt.ptr<tensor<2x64xi16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>>>
    %5 = arith.constant 16 : i64
    %b_ptrs = tt.make_tensor_ptr %B, shape=[%1, %5], strides=[%5, %2], offsets=[%3, %3] {order = array<i32: 1, 0>} : !tt.ptr<tensor<64x16xf16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [16, 2], warpsPerCTA = [4, 1], order = [1, 0]}>>>
    %d_ptrs = tt.make_tensor_ptr %D, shape=[%0, %5], strides=[%5, %2], offsets=[%3, %3] {order = array<i32: 1, 0>} : !tt.ptr<tensor<32x16xf16, #ttg.mma<{versionMajor = 2, warpsPerCTA = [2, 2], instrShape = [16, 8]}>>>
    %6 = tt.load %a_ptrs_values : !tt.ptr<tensor<32x32xf16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>>>
    %7 = tt.load %a_ptrs_meta : !tt.ptr<tensor<2x64xi16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>>>
    %8 = tt.load %b_ptrs : !tt.ptr<tensor<64x16xf16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [16, 2], warpsPerCTA = [4, 1], order = [1, 0]}>>>
    %9 = arith.constant dense<0.000000e+00> : tensor<32x16xf32, #ttg.mma<{versionMajor = 2, warpsPerCTA = [2, 2], instrShape = [16, 8]}>>
    %10 = ttg.local_alloc %6 : (tensor<32x32xf16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>>) -> !ttg.memdesc<32x32xf16, #ttg.shared<{vec = 8, perPhase = 2, maxPhase = 4, order = [1, 0]}>>
    %11 = ttg.local_alloc %8 : (tensor<64x16xf16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [16, 2], warpsPerCTA = [4, 1], order = [1, 0]}>>) -> !ttg.memdesc<64x16xf16, #ttg.shared<{vec = 8, perPhase = 4, maxPhase = 2, order = [1, 0]}>>
    %12 = ttg.local_alloc %7 : (tensor<2x64xi16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>>) -> !ttg.memdesc<2x64xi16, #ttg.shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [1, 0], metaPack = 1}>>
    %13 = ttg.local_load %10 : !ttg.memdesc<32x32xf16, #ttg.shared<{vec = 8, perPhase = 2, maxPhase = 4, order = [1, 0]}>> -> tensor<32x32xf16, #ttg.dot_op<{opIdx = 0, parent = #ttg.mma<{versionMajor = 2, warpsPerCTA = [2, 2], instrShape = [16, 8]}>, kWidth = 2, meta = 0}>>
    %14 = ttg.local_load %11 : !ttg.memdesc<64x16xf16, #ttg.shared<{vec = 8, perPhase = 4, maxPhase = 2, order = [1, 0]}>> -> tensor<64x16xf16, #ttg.dot_op<{opIdx = 1, parent = #ttg.mma<{versionMajor = 2, warpsPerCTA = [2, 2], instrShape = [16, 8]}>, kWidth = 2}>>
    %15 = ttg.local_load %12 : !ttg.memdesc<2x64xi16, #ttg.shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [1, 0], metaPack = 1}>> -> tensor<2x64xi16, #ttg.dot_op<{opIdx = 0, parent = #ttg.mma<{versionMajor = 2, warpsPerCTA = [2, 2], instrShape = [16, 8]}>, kWidth = 2, meta = 1}>>
    %16 = tt.dot %13, %14, %15, %9, sparseIndex = 0 : tensor<32x32xf16, #ttg.dot_op<{opIdx = 0, parent = #ttg.mma<{versionMajor = 2, warpsPerCTA = [2, 2], instrShape = [16, 8]}>, kWidth = 2, meta = 0}>>, tensor<2x64xi16, #ttg.dot_op<{opIdx = 0, parent = #ttg.mma<{versionMajor = 2, warpsPerCTA = [2, 2], instrShape = [16, 8]}>, kWidth = 2, meta = 1}>> * tensor<64x16xf16, #ttg.dot_op<{opIdx = 1, parent = #ttg.mma<{versionMajor = 2, warpsPerCTA = [2, 2], instrShape = [16, 8]}>, kWidth = 2}>> -> tensor<32x16xf32, #ttg.mma<{versionMajor = 2, warpsPerCTA = [2, 2], instrShape = [16, 8]}>>
    %d = arith.truncf %16 : tensor<32x16xf32, #ttg.mma<{versionMajor = 2, warpsPerCTA = [2, 2], instrShape = [16, 8]}>> to tensor<32x16xf16, #ttg.mma<{versionMajor = 2, warpsPerCTA = [2, 2], instrShape = [16, 8]}>>
    tt.store %d_ptrs, %d : !tt.ptr<tensor<32x16xf16, #ttg.mma<{versionMajor = 2, warpsPerCTA = [2, 2], instrShape = [16, 8]}>>>
    tt.return
  }
}
