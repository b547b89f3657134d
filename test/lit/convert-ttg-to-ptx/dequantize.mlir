// RUN: sparsecc-opt %s -p "sparse-gpu-encoding,convert-ttg-to-ptx" | filecheck %s
// tt.dequantize (covers handlers/dequantize.py) of 4-bit codes straight into mma.sp A
// fragments (input as in sparse-gpu-encoding/dequantize.mlir): each thread reads 16 bytes of
// codes from shared memory, puts each byte's nibbles into an f16 pair (one prmt, then one lop3
// with the 0x00F0000F mask and the exponents 0x54006400: {1024 + lo, 64 + hi}), and scales
// them as f16x2 pairs by its row's scale (sub.f16x2 of the zero point, mul.rn.f16x2);
// those registers are the mma.sp A operands, no ldmatrix for A.

// CHECK:      [[W0:%.*]], [[W1:%.*]], [[W2:%.*]], [[W3:%.*]] = "ptx.ld.shared"(%{{.*}}) {{.*}} -> (i32, i32, i32, i32)
// CHECK-NEXT: [[P0:%.*]], [[P1:%.*]], [[P2:%.*]], [[P3:%.*]] = "ptx.asm"([[W0]], [[W1]], [[W2]], [[W3]], %{{.*}}) <{template = "{{.*}}prmt.b32 %fq0, $4, $4, $8;{{.*}}0x00F0000F, 0x54006400
// CHECK:      [[S:%.*]] = "ptx.ld.shared"(%{{.*}}) {{.*}} -> f16
// CHECK-NEXT: [[S2:%.*]] = "ptx.asm"([[S]]) <{template = "mov.b32 $0, {$1, $1};", pure}>
// CHECK:      [[F0:%.*]] = "ptx.asm"([[P0]], %{{.*}}, [[S2]]) <{template = "sub.f16x2 $0, $1, $2;{{.*}}mul.rn.f16x2
// CHECK:      "ptx.mma.sp"([[F0]], %{{.*}}) <{ab_type = "f16", selector = 0 : i32
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


