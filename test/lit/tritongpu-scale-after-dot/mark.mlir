// RUN: sparsecc-opt %s --split-input-file -p sparse-gpu-encoding,tritongpu-scale-after-dot | filecheck %s
// RUN: sparsecc-opt %s --split-input-file -p sparse-gpu-encoding,tritongpu-scale-after-dot,convert-ttg-to-ptx | filecheck %s --check-prefix=PTX

// An f16 dequantization that builds an mma.sp dot's A fragments, with one scale per 32 kept
// columns (two m16n8k32 steps), is marked. Lowered, its fragments hold `code - zero` (one
// sub.f16x2 a pair, no multiply) and the dot sums each group's two steps into zeroed fp32
// registers, then adds scale * sum with one fma.rn.f32 a register: 2 groups x 4 registers of the
// warp's one m16n8 tile (32 x 16 over 2 x 2 warps) = 8 FMAs, each scale converted once.
// CHECK-LABEL: @dot_kernel
// CHECK: tt.dequantize {{.*}} {ttg.scale_after_dot, bits = 4 : i32}
// CHECK: tt.dot
// PTX-LABEL: "ptx.kernel"() <{sym_name = "dot_kernel"
// PTX-NOT: mul.rn.f16x2
// PTX: template = "sub.f16x2 $0, $1, $2;"
// PTX-COUNT-8: template = "fma.rn.f32 $0, $1, $2, $3;"
// PTX-NOT: fma.rn.f32
// PTX-NOT: mul.rn.f16x2
// PTX: "ptx.kernel"() <{sym_name = "bf16_kernel"
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

// A bf16 dequantization keeps its register convert (no fragment path): not marked.
// CHECK-LABEL: @bf16_kernel
// CHECK-NOT: ttg.scale_after_dot
// CHECK: tt.return
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
