// RUN: sparsecc-opt %s -p 'convert-tt-to-ttg{num-warps=4 target=sm_90a}' | filecheck %s
// RUN: sparsecc-opt %s -p 'convert-tt-to-ttg{num-warps=4 target=sm_90a},sparse-gpu-encoding' | filecheck %s --check-prefix=ENC
// RUN: sparsecc-opt %s -p 'convert-tt-to-ttg{num-warps=4 target=sm_90}' | filecheck %s --check-prefix=V2

// On sm_90a a sparse dot whose tile fits whole warpgroups along M (64 rows per 4 warps) gets the
// wgmma accumulator layout #ttg.mma version 3 (warpsPerCTA [4, 1], instrShape [64, N]); its B
// operand is staged MN-major in the wgmma 128-byte-swizzle layout (colBlock = 64 f16), while the
// values and metadata keep their ldmatrix layouts. On sm_90 the same loop stays on mma.sp.

// CHECK: ttg.target = "sm_90a"
// CHECK: %acc_n = tt.dot {{.*}} -> tensor<64x64xf32, #ttg.mma<{versionMajor = 3, warpsPerCTA = [4, 1], instrShape = [64, 64]}>>

// ENC: ttg.local_alloc %a : {{.*}} -> !ttg.memdesc<64x32xf16, #ttg.shared<{vec = 8, perPhase = 2, maxPhase = 4, order = [1, 0]}>>
// ENC: ttg.local_alloc %bt : {{.*}} -> !ttg.memdesc<64x64xf16, #ttg.shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [1, 0], colBlock = 64}>>
// ENC: ttg.local_load {{.*}} -> tensor<64x64xf16, #ttg.dot_op<{opIdx = 1, parent = #ttg.mma<{versionMajor = 3, warpsPerCTA = [4, 1], instrShape = [64, 64]}>, kWidth = 2}>>
// ENC: ttg.local_alloc %e : {{.*}} metaPack = 1

// V2-NOT: versionMajor = 3
// V2: versionMajor = 2


builtin.module {
  tt.func public @sparse_gemm(%vals: !tt.ptr<f16>, %meta: !tt.ptr<i16>, %b: !tt.ptr<f16>, %d: !tt.ptr<f16>, %M: i32, %N: i32, %K: i32) {
    %c0 = arith.constant 0 : i32
    %ckh = arith.constant 32 : i32
    %cbk = arith.constant 64 : i32
    %one = arith.constant 1 : i64
    %M64 = arith.extsi %M : i32 to i64
    %N64 = arith.extsi %N : i32 to i64
    %K64 = arith.extsi %K : i32 to i64
    %two = arith.constant 2 : i64
    %sixteen = arith.constant 16 : i64
    %Kh = arith.divsi %K64, %two : i64
    %Mm = arith.divsi %M64, %sixteen : i64
    %pa = tt.make_tensor_ptr %vals, shape=[%M64, %Kh], strides=[%Kh, %one], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<64x32xf16>>
    %pe = tt.make_tensor_ptr %meta, shape=[%Mm, %K64], strides=[%K64, %one], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<4x64xi16>>
    %pb = tt.make_tensor_ptr %b, shape=[%K64, %N64], strides=[%N64, %one], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<64x64xf16>>
    %pd = tt.make_tensor_ptr %d, shape=[%M64, %N64], strides=[%N64, %one], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<64x64xf16>>
    %zero = arith.constant dense<0.000000e+00> : tensor<64x64xf32>
    %acc, %a_out, %e_out, %b_out = scf.for %k = %c0 to %K step %cbk iter_args(%acc_i = %zero, %pa_i = %pa, %pe_i = %pe, %pb_i = %pb) -> (tensor<64x64xf32>, !tt.ptr<tensor<64x32xf16>>, !tt.ptr<tensor<4x64xi16>>, !tt.ptr<tensor<64x64xf16>>) : i32 {
      %a = tt.load %pa_i {boundaryCheck = array<i32: 0, 1>, padding = 1 : i32} : !tt.ptr<tensor<64x32xf16>>
      %e = tt.load %pe_i {boundaryCheck = array<i32: 0, 1>, padding = 1 : i32} : !tt.ptr<tensor<4x64xi16>>
      %bt = tt.load %pb_i {boundaryCheck = array<i32: 0, 1>, padding = 1 : i32} : !tt.ptr<tensor<64x64xf16>>
      %acc_n = tt.dot %a, %bt, %e, %acc_i, sparseIndex = 0 : tensor<64x32xf16>, tensor<4x64xi16> * tensor<64x64xf16> -> tensor<64x64xf32>
      %pa_n = tt.advance %pa_i, [%c0, %ckh] : !tt.ptr<tensor<64x32xf16>>
      %pe_n = tt.advance %pe_i, [%c0, %cbk] : !tt.ptr<tensor<4x64xi16>>
      %pb_n = tt.advance %pb_i, [%cbk, %c0] : !tt.ptr<tensor<64x64xf16>>
      scf.yield %acc_n, %pa_n, %pe_n, %pb_n : tensor<64x64xf32>, !tt.ptr<tensor<64x32xf16>>, !tt.ptr<tensor<4x64xi16>>, !tt.ptr<tensor<64x64xf16>>
    }
    %out = arith.truncf %acc : tensor<64x64xf32> to tensor<64x64xf16>
    tt.store %pd, %out {boundaryCheck = array<i32: 0, 1>} : !tt.ptr<tensor<64x64xf16>>
    tt.return
  }
}
