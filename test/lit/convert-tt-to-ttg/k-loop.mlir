// RUN: sparsecc-opt %s -p convert-tt-to-ttg{num-warps=8} | filecheck %s

// A K loop: the accumulator is loop-carried in #mma (8 warps -> warpsPerCTA [4, 2]), the
// block pointers keep their #blocked tile type through iter_args, advance and yield.

// CHECK: "ttg.num-warps" = 8 : i32
// CHECK: %pa = tt.make_tensor_ptr {{.*}} : !tt.ptr<tensor<64x32xf16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [8, 1], order = [1, 0]}>>>
// CHECK: %pd = tt.make_tensor_ptr {{.*}} : !tt.ptr<tensor<64x64xf16, #ttg.mma<{versionMajor = 2, warpsPerCTA = [4, 2], instrShape = [16, 8]}>>>
// CHECK: %zero = arith.constant dense<0.000000e+00> : tensor<64x64xf32, #ttg.mma<{versionMajor = 2, warpsPerCTA = [4, 2], instrShape = [16, 8]}>>
// CHECK: scf.for %k = %c0 to %K step %cbk iter_args(%acc_i = %zero, {{.*}}) -> (tensor<64x64xf32, #ttg.mma<{versionMajor = 2, warpsPerCTA = [4, 2], instrShape = [16, 8]}>>, !tt.ptr<tensor<64x32xf16, #ttg.blocked<{{.*}}>>>, {{.*}}) : i32 {
// CHECK: ttg.convert_layout %a : {{.*}} -> tensor<64x32xf16, #ttg.dot_op<{opIdx = 0, parent = #ttg.mma<{versionMajor = 2, warpsPerCTA = [4, 2], instrShape = [16, 8]}>, kWidth = 2, meta = 0}>>
// CHECK: ttg.convert_layout %bt : {{.*}} -> tensor<64x64xf16, #ttg.dot_op<{opIdx = 1, parent = #ttg.mma<{versionMajor = 2, warpsPerCTA = [4, 2], instrShape = [16, 8]}>, kWidth = 2}>>
// CHECK: ttg.convert_layout %e : {{.*}} -> tensor<4x64xi16, #ttg.dot_op<{opIdx = 0, parent = #ttg.mma<{versionMajor = 2, warpsPerCTA = [4, 2], instrShape = [16, 8]}>, kWidth = 2, meta = 1}>>
// CHECK: %acc_n = tt.dot {{.*}}, %acc_i, sparseIndex = 0 : {{.*}} -> tensor<64x64xf32, #ttg.mma<{versionMajor = 2, warpsPerCTA = [4, 2], instrShape = [16, 8]}>>
// CHECK: %pa_n = tt.advance %pa_i, [%c0, %ckh] : !tt.ptr<tensor<64x32xf16, #ttg.blocked<{{.*}}>>>
// CHECK: scf.yield %acc_n, %pa_n, %pe_n, %pb_n : tensor<64x64xf32, #ttg.mma<{versionMajor = 2, warpsPerCTA = [4, 2], instrShape = [16, 8]}>>
// CHECK: %out = arith.truncf %acc : tensor<64x64xf32, #ttg.mma<{versionMajor = 2, warpsPerCTA = [4, 2], instrShape = [16, 8]}>> to tensor<64x64xf16, #ttg.mma<{versionMajor = 2, warpsPerCTA = [4, 2], instrShape = [16, 8]}>>
// CHECK-NEXT: tt.store %pd, %out {boundaryCheck = array<i32: 0, 1>} : !tt.ptr<tensor<64x64xf16, #ttg.mma<{versionMajor = 2, warpsPerCTA = [4, 2], instrShape = [16, 8]}>>>

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
