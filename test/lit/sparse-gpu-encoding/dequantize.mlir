// RUN: sparsecc-opt %s --split-input-file -p sparse-gpu-encoding | filecheck %s

// A quantized tile's codes and scales, loaded for tt.dequantize alone, are staged through
// shared memory like the dot's operands, so the pipeline can stream them: the codes (32-byte
// rows of i8) with the ldmatrix-row swizzle (vec 16 / perPhase 4 / maxPhase 2: a warp reads
// 16-byte chunks of several rows at once), the scales plain row-major. An f16 dequantize takes
// the dot's meta = 0 operand encoding itself (its lowering builds the fragments from the codes)
// and the convert goes; the metadata and B are staged as always.

// CHECK: %[[C:.*]] = ttg.local_alloc %a_values : ({{.*}}) -> !ttg.memdesc<32x32xi8, #ttg.shared<{vec = 16, perPhase = 4, maxPhase = 2, order = [1, 0]}>>
// CHECK-NEXT: %[[CL:.*]] = ttg.local_load %[[C]] : {{.*}} -> tensor<32x32xi8, #ttg.blocked<{{.*}}>>
// CHECK-NEXT: %[[S:.*]] = ttg.local_alloc %a_scales : ({{.*}}) -> !ttg.memdesc<32x2xf16, #ttg.shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [1, 0]}>>
// CHECK-NEXT: %[[SL:.*]] = ttg.local_load %[[S]] : {{.*}} -> tensor<32x2xf16, #ttg.blocked<{{.*}}>>
// CHECK-NEXT: %[[W:.*]] = tt.dequantize %[[CL]], %[[SL]] {bits = 4 : i32} : {{.*}} -> tensor<32x64xf16, #ttg.dot_op<{opIdx = 0, {{.*}}, meta = 0}>>
// CHECK-NOT: ttg.convert_layout %[[W]]
// CHECK: ttg.local_alloc %a_meta : {{.*}}metaPack = 1
// CHECK: tt.dot %[[W]],
builtin.module attributes {"ttg.num-warps" = 4 : i32, "ttg.threads-per-warp" = 32 : i32, ttg.target = "sm_80"} {
  tt.func public @dot_kernel(%D: !tt.ptr<f16>, %A_values: !tt.ptr<i8>, %A_meta: !tt.ptr<i16>, %A_scales: !tt.ptr<f16>, %B: !tt.ptr<f16>) {
    %0 = arith.constant 32 : i64
    %1 = arith.constant 128 : i64
    %2 = arith.constant 1 : i64
    %3 = arith.constant 0 : i32
    %4 = arith.constant 2 : i64
    %a_ptrs_values = tt.make_tensor_ptr %A_values, shape=[%0, %0], strides=[%0, %2], offsets=[%3, %3] {order = array<i32: 1, 0>} : !tt.ptr<tensor<32x32xi8, #ttg.blocked<{sizePerThread = [1, 16], threadsPerWarp = [16, 2], warpsPerCTA = [4, 1], order = [1, 0]}>>>
    %a_ptrs_meta = tt.make_tensor_ptr %A_meta, shape=[%4, %1], strides=[%1, %2], offsets=[%3, %3] {order = array<i32: 1, 0>} : !tt.ptr<tensor<2x128xi16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [2, 16], warpsPerCTA = [4, 1], order = [1, 0]}>>>
    %a_ptrs_scales = tt.make_tensor_ptr %A_scales, shape=[%0, %4], strides=[%4, %2], offsets=[%3, %3] {order = array<i32: 1, 0>} : !tt.ptr<tensor<32x2xf16, #ttg.blocked<{sizePerThread = [1, 2], threadsPerWarp = [32, 1], warpsPerCTA = [4, 1], order = [1, 0]}>>>
    %5 = arith.constant 16 : i64
    %b_ptrs = tt.make_tensor_ptr %B, shape=[%1, %5], strides=[%5, %2], offsets=[%3, %3] {order = array<i32: 1, 0>} : !tt.ptr<tensor<128x16xf16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [16, 2], warpsPerCTA = [4, 1], order = [1, 0]}>>>
    %d_ptrs = tt.make_tensor_ptr %D, shape=[%0, %5], strides=[%5, %2], offsets=[%3, %3] {order = array<i32: 1, 0>} : !tt.ptr<tensor<32x16xf16, #ttg.mma<{versionMajor = 2, warpsPerCTA = [2, 2], instrShape = [16, 8]}>>>
    %a_values = tt.load %a_ptrs_values : !tt.ptr<tensor<32x32xi8, #ttg.blocked<{sizePerThread = [1, 16], threadsPerWarp = [16, 2], warpsPerCTA = [4, 1], order = [1, 0]}>>>
    %a_meta = tt.load %a_ptrs_meta : !tt.ptr<tensor<2x128xi16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [2, 16], warpsPerCTA = [4, 1], order = [1, 0]}>>>
    %a_scales = tt.load %a_ptrs_scales : !tt.ptr<tensor<32x2xf16, #ttg.blocked<{sizePerThread = [1, 2], threadsPerWarp = [32, 1], warpsPerCTA = [4, 1], order = [1, 0]}>>>
    %b = tt.load %b_ptrs : !tt.ptr<tensor<128x16xf16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [16, 2], warpsPerCTA = [4, 1], order = [1, 0]}>>>
    %6 = arith.constant dense<0.000000e+00> : tensor<32x16xf32, #ttg.mma<{versionMajor = 2, warpsPerCTA = [2, 2], instrShape = [16, 8]}>>
    %a_dequant = tt.dequantize %a_values, %a_scales {bits = 4 : i32} : tensor<32x32xi8, #ttg.blocked<{sizePerThread = [1, 16], threadsPerWarp = [16, 2], warpsPerCTA = [4, 1], order = [1, 0]}>>, tensor<32x2xf16, #ttg.blocked<{sizePerThread = [1, 2], threadsPerWarp = [32, 1], warpsPerCTA = [4, 1], order = [1, 0]}>> -> tensor<32x64xf16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>>
    %7 = ttg.convert_layout %a_dequant : tensor<32x64xf16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>> -> tensor<32x64xf16, #ttg.dot_op<{opIdx = 0, parent = #ttg.mma<{versionMajor = 2, warpsPerCTA = [2, 2], instrShape = [16, 8]}>, kWidth = 2, meta = 0}>>
    %8 = ttg.convert_layout %b : tensor<128x16xf16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [16, 2], warpsPerCTA = [4, 1], order = [1, 0]}>> -> tensor<128x16xf16, #ttg.dot_op<{opIdx = 1, parent = #ttg.mma<{versionMajor = 2, warpsPerCTA = [2, 2], instrShape = [16, 8]}>, kWidth = 2}>>
    %9 = ttg.convert_layout %a_meta : tensor<2x128xi16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [2, 16], warpsPerCTA = [4, 1], order = [1, 0]}>> -> tensor<2x128xi16, #ttg.dot_op<{opIdx = 0, parent = #ttg.mma<{versionMajor = 2, warpsPerCTA = [2, 2], instrShape = [16, 8]}>, kWidth = 2, meta = 1}>>
    %10 = tt.dot %7, %8, %9, %6, sparseIndex = 0 : tensor<32x64xf16, #ttg.dot_op<{opIdx = 0, parent = #ttg.mma<{versionMajor = 2, warpsPerCTA = [2, 2], instrShape = [16, 8]}>, kWidth = 2, meta = 0}>>, tensor<2x128xi16, #ttg.dot_op<{opIdx = 0, parent = #ttg.mma<{versionMajor = 2, warpsPerCTA = [2, 2], instrShape = [16, 8]}>, kWidth = 2, meta = 1}>> * tensor<128x16xf16, #ttg.dot_op<{opIdx = 1, parent = #ttg.mma<{versionMajor = 2, warpsPerCTA = [2, 2], instrShape = [16, 8]}>, kWidth = 2}>> -> tensor<32x16xf32, #ttg.mma<{versionMajor = 2, warpsPerCTA = [2, 2], instrShape = [16, 8]}>>
    %d = arith.truncf %10 : tensor<32x16xf32, #ttg.mma<{versionMajor = 2, warpsPerCTA = [2, 2], instrShape = [16, 8]}>> to tensor<32x16xf16, #ttg.mma<{versionMajor = 2, warpsPerCTA = [2, 2], instrShape = [16, 8]}>>
    tt.store %d_ptrs, %d : !tt.ptr<tensor<32x16xf16, #ttg.mma<{versionMajor = 2, warpsPerCTA = [2, 2], instrShape = [16, 8]}>>>
    tt.return
  }
}


// -----

// bf16 results keep the register convert (the fragment path builds f16 pairs only).
// CHECK-LABEL: @bf16_kernel
// CHECK: %[[W:.*]] = tt.dequantize {{.*}} -> tensor<32x64xbf16, #ttg.blocked<{{.*}}>>
// CHECK: ttg.convert_layout %[[W]] : {{.*}} -> tensor<32x64xbf16, #ttg.dot_op<{opIdx = 0, {{.*}}, meta = 0}>>
builtin.module attributes {"ttg.num-warps" = 4 : i32, "ttg.threads-per-warp" = 32 : i32, ttg.target = "sm_80"} {
  tt.func public @bf16_kernel(%D: !tt.ptr<bf16>, %A_values: !tt.ptr<i8>, %A_meta: !tt.ptr<i16>, %A_scales: !tt.ptr<bf16>, %B: !tt.ptr<bf16>) {
    %0 = arith.constant 32 : i64
    %1 = arith.constant 128 : i64
    %2 = arith.constant 1 : i64
    %3 = arith.constant 0 : i32
    %4 = arith.constant 2 : i64
    %a_ptrs_values = tt.make_tensor_ptr %A_values, shape=[%0, %0], strides=[%0, %2], offsets=[%3, %3] {order = array<i32: 1, 0>} : !tt.ptr<tensor<32x32xi8, #ttg.blocked<{sizePerThread = [1, 16], threadsPerWarp = [16, 2], warpsPerCTA = [4, 1], order = [1, 0]}>>>
    %a_ptrs_meta = tt.make_tensor_ptr %A_meta, shape=[%4, %1], strides=[%1, %2], offsets=[%3, %3] {order = array<i32: 1, 0>} : !tt.ptr<tensor<2x128xi16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [2, 16], warpsPerCTA = [4, 1], order = [1, 0]}>>>
    %a_ptrs_scales = tt.make_tensor_ptr %A_scales, shape=[%0, %4], strides=[%4, %2], offsets=[%3, %3] {order = array<i32: 1, 0>} : !tt.ptr<tensor<32x2xbf16, #ttg.blocked<{sizePerThread = [1, 2], threadsPerWarp = [32, 1], warpsPerCTA = [4, 1], order = [1, 0]}>>>
    %5 = arith.constant 16 : i64
    %b_ptrs = tt.make_tensor_ptr %B, shape=[%1, %5], strides=[%5, %2], offsets=[%3, %3] {order = array<i32: 1, 0>} : !tt.ptr<tensor<128x16xbf16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [16, 2], warpsPerCTA = [4, 1], order = [1, 0]}>>>
    %d_ptrs = tt.make_tensor_ptr %D, shape=[%0, %5], strides=[%5, %2], offsets=[%3, %3] {order = array<i32: 1, 0>} : !tt.ptr<tensor<32x16xbf16, #ttg.mma<{versionMajor = 2, warpsPerCTA = [2, 2], instrShape = [16, 8]}>>>
    %a_values = tt.load %a_ptrs_values : !tt.ptr<tensor<32x32xi8, #ttg.blocked<{sizePerThread = [1, 16], threadsPerWarp = [16, 2], warpsPerCTA = [4, 1], order = [1, 0]}>>>
    %a_meta = tt.load %a_ptrs_meta : !tt.ptr<tensor<2x128xi16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [2, 16], warpsPerCTA = [4, 1], order = [1, 0]}>>>
    %a_scales = tt.load %a_ptrs_scales : !tt.ptr<tensor<32x2xbf16, #ttg.blocked<{sizePerThread = [1, 2], threadsPerWarp = [32, 1], warpsPerCTA = [4, 1], order = [1, 0]}>>>
    %b = tt.load %b_ptrs : !tt.ptr<tensor<128x16xbf16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [16, 2], warpsPerCTA = [4, 1], order = [1, 0]}>>>
    %6 = arith.constant dense<0.000000e+00> : tensor<32x16xf32, #ttg.mma<{versionMajor = 2, warpsPerCTA = [2, 2], instrShape = [16, 8]}>>
    %a_dequant = tt.dequantize %a_values, %a_scales {bits = 4 : i32} : tensor<32x32xi8, #ttg.blocked<{sizePerThread = [1, 16], threadsPerWarp = [16, 2], warpsPerCTA = [4, 1], order = [1, 0]}>>, tensor<32x2xbf16, #ttg.blocked<{sizePerThread = [1, 2], threadsPerWarp = [32, 1], warpsPerCTA = [4, 1], order = [1, 0]}>> -> tensor<32x64xbf16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>>
    %7 = ttg.convert_layout %a_dequant : tensor<32x64xbf16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>> -> tensor<32x64xbf16, #ttg.dot_op<{opIdx = 0, parent = #ttg.mma<{versionMajor = 2, warpsPerCTA = [2, 2], instrShape = [16, 8]}>, kWidth = 2, meta = 0}>>
    %8 = ttg.convert_layout %b : tensor<128x16xbf16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [16, 2], warpsPerCTA = [4, 1], order = [1, 0]}>> -> tensor<128x16xbf16, #ttg.dot_op<{opIdx = 1, parent = #ttg.mma<{versionMajor = 2, warpsPerCTA = [2, 2], instrShape = [16, 8]}>, kWidth = 2}>>
    %9 = ttg.convert_layout %a_meta : tensor<2x128xi16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [2, 16], warpsPerCTA = [4, 1], order = [1, 0]}>> -> tensor<2x128xi16, #ttg.dot_op<{opIdx = 0, parent = #ttg.mma<{versionMajor = 2, warpsPerCTA = [2, 2], instrShape = [16, 8]}>, kWidth = 2, meta = 1}>>
    %10 = tt.dot %7, %8, %9, %6, sparseIndex = 0 : tensor<32x64xbf16, #ttg.dot_op<{opIdx = 0, parent = #ttg.mma<{versionMajor = 2, warpsPerCTA = [2, 2], instrShape = [16, 8]}>, kWidth = 2, meta = 0}>>, tensor<2x128xi16, #ttg.dot_op<{opIdx = 0, parent = #ttg.mma<{versionMajor = 2, warpsPerCTA = [2, 2], instrShape = [16, 8]}>, kWidth = 2, meta = 1}>> * tensor<128x16xbf16, #ttg.dot_op<{opIdx = 1, parent = #ttg.mma<{versionMajor = 2, warpsPerCTA = [2, 2], instrShape = [16, 8]}>, kWidth = 2}>> -> tensor<32x16xf32, #ttg.mma<{versionMajor = 2, warpsPerCTA = [2, 2], instrShape = [16, 8]}>>
    %d = arith.truncf %10 : tensor<32x16xf32, #ttg.mma<{versionMajor = 2, warpsPerCTA = [2, 2], instrShape = [16, 8]}>> to tensor<32x16xbf16, #ttg.mma<{versionMajor = 2, warpsPerCTA = [2, 2], instrShape = [16, 8]}>>
    tt.store %d_ptrs, %d : !tt.ptr<tensor<32x16xbf16, #ttg.mma<{versionMajor = 2, warpsPerCTA = [2, 2], instrShape = [16, 8]}>>>
    tt.return
  }
}

