// RUN: sparsecc-opt %s -p 'convert-tt-to-ttg{num-warps=4 target=sm_90a},sparse-gpu-encoding' | filecheck %s
// RUN: sparsecc-opt %s -p 'convert-tt-to-ttg{num-warps=4 target=sm_90a},sparse-gpu-encoding,tritongpu-pipeline{num-stages=2 tma=true},canonicalize,cse,tritongpu-sink-local-loads,tritongpu-insert-barriers,allocate-shared-memory,convert-ttg-to-ptx{target=sm_90a}' --emit ptx | filecheck %s --check-prefix=PTX

// A dense f16 dot whose K is 128 (rows of 256 bytes, longer than one 128-byte swizzle atom),
// with a K-major B (block pointer order [0, 1]: the x^T of y = x @ W.T, attention's K^T): both
// operands are staged in wgmma's canonical K-major layout cut into 128-byte column blocks
// (colBlock = 64 f16; B stored as N rows of K, order [0, 1]) and read through descriptors,
// A as well (Q at head dim 128); TMA fills each column block as one box. Eight k16 steps,
// each one wgmma.mma_async m64n64k16 with A and B descriptors and no transpose (0, 0).

// CHECK: ttg.local_alloc %a : {{.*}} -> !ttg.memdesc<64x128xf16, #ttg.shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [1, 0], colBlock = 64}>>
// CHECK: ttg.local_alloc %b : {{.*}} -> !ttg.memdesc<128x64xf16, #ttg.shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [0, 1], colBlock = 64}>>
// CHECK: %acc_n = tt.dot {{.*}} -> tensor<64x64xf32, #ttg.mma<{versionMajor = 3, warpsPerCTA = [4, 1], instrShape = [64, 64]}>>

// PTX: cp.async.bulk.tensor.2d
// PTX: wgmma.fence.sync.aligned;
// PTX-COUNT-8: wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {{{.*}}}, %rd{{[0-9]+}}, %rd{{[0-9]+}}, {{.*}}, 1, 1, 0, 0;
// PTX-NEXT: wgmma.commit_group.sync.aligned;
// PTX-NOT: mma.sync
// PTX-NOT: ldmatrix

builtin.module {
  tt.func public @dense_gemm_kmajor(%pa0: !tt.ptr<f16> {tt.divisibility = 16 : i32}, %pb0: !tt.ptr<f16> {tt.divisibility = 16 : i32}, %pd0: !tt.ptr<f16> {tt.divisibility = 16 : i32}, %M: i32 {tt.divisibility = 16 : i32}, %N: i32 {tt.divisibility = 16 : i32}, %K: i32 {tt.divisibility = 16 : i32}) {
    %c0 = arith.constant 0 : i32
    %cbk = arith.constant 128 : i32
    %one = arith.constant 1 : i64
    %M64 = arith.extsi %M : i32 to i64
    %N64 = arith.extsi %N : i32 to i64
    %K64 = arith.extsi %K : i32 to i64
    %pa = tt.make_tensor_ptr %pa0, shape=[%M64, %K64], strides=[%K64, %one], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<64x128xf16>>
    %pb = tt.make_tensor_ptr %pb0, shape=[%K64, %N64], strides=[%one, %K64], offsets=[%c0, %c0] {order = array<i32: 0, 1>} : !tt.ptr<tensor<128x64xf16>>
    %pd = tt.make_tensor_ptr %pd0, shape=[%M64, %N64], strides=[%N64, %one], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<64x64xf16>>
    %zero = arith.constant dense<0.000000e+00> : tensor<64x64xf32>
    %acc, %a_out, %b_out = scf.for %k = %c0 to %K step %cbk iter_args(%acc_i = %zero, %pa_i = %pa, %pb_i = %pb) -> (tensor<64x64xf32>, !tt.ptr<tensor<64x128xf16>>, !tt.ptr<tensor<128x64xf16>>) : i32 {
      %a = tt.load %pa_i {boundaryCheck = array<i32: 0, 1>, padding = 1 : i32} : !tt.ptr<tensor<64x128xf16>>
      %b = tt.load %pb_i {boundaryCheck = array<i32: 0, 1>, padding = 1 : i32} : !tt.ptr<tensor<128x64xf16>>
      %acc_n = tt.dot %a, %b, %acc_i : tensor<64x128xf16> * tensor<128x64xf16> -> tensor<64x64xf32>
      %pa_n = tt.advance %pa_i, [%c0, %cbk] : !tt.ptr<tensor<64x128xf16>>
      %pb_n = tt.advance %pb_i, [%cbk, %c0] : !tt.ptr<tensor<128x64xf16>>
      scf.yield %acc_n, %pa_n, %pb_n : tensor<64x64xf32>, !tt.ptr<tensor<64x128xf16>>, !tt.ptr<tensor<128x64xf16>>
    }
    %out = arith.truncf %acc : tensor<64x64xf32> to tensor<64x64xf16>
    tt.store %pd, %out {boundaryCheck = array<i32: 0, 1>} : !tt.ptr<tensor<64x64xf16>>
    tt.return
  }
}
