// RUN: sparsecc-opt %s -p tritongpu-pipeline{num-stages=3} | filecheck %s
// RUN: sparsecc-opt %s -p tritongpu-pipeline{num-stages=1} | filecheck %s --check-prefix=ONE

// num-stages=3: 3-slot rings, a prologue of 2 guarded copies + commits, in the loop
// wait(num=1) -> local_load of the current slot -> guarded prefetch of iteration i+2 -> commit.
// The read and write slots advance by one and wrap to 0 at S.

// CHECK: %[[RA:.*]] = ttg.local_alloc : () -> !ttg.memdesc<3x64x32xf16, #ttg.shared<{vec = 8, perPhase = 2, maxPhase = 4, order = [1, 0]}>, mutable>
// CHECK-NEXT: %[[RE:.*]] = ttg.local_alloc : () -> !ttg.memdesc<3x4x64xi16, #ttg.shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [1, 0], metaPack = 1}>, mutable>
// CHECK-NEXT: %[[RB:.*]] = ttg.local_alloc : () -> !ttg.memdesc<3x64x64xf16, #ttg.shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [1, 0]}>, mutable>
// CHECK: %[[P0:.*]] = arith.cmpi slt, %{{.*}}, %K : i32
// CHECK: ttg.memdesc_subview %[[RA]][%{{.*}}, %{{.*}}, %{{.*}}] : !ttg.memdesc<3x64x32xf16, {{.*}}, mutable> -> !ttg.memdesc<64x32xf16, {{.*}}, mutable>
// CHECK: scf.if %[[P0]] {
// CHECK-NEXT: ttg.async_copy_global_to_local %pa, %{{.*}} {boundaryCheck = array<i32: 0, 1>, padding = 1 : i32}
// CHECK: ttg.async_commit_group
// CHECK: tt.advance %pa
// CHECK: ttg.async_commit_group
// CHECK-NOT: ttg.async_commit_group
// CHECK: scf.for %k = %c0 to %K step %cbk iter_args({{.*}}, %[[RD:[0-9]+]] = %{{.*}}, %[[WR:[0-9]+]] = %{{.*}}) -> ({{.*}}, i32, i32) : i32 {
// CHECK-NEXT: ttg.async_wait {num = 1 : i32}
// CHECK: ttg.memdesc_subview %[[RA]][%[[RD]],
// CHECK-NEXT: ttg.local_load {{.*}} -> tensor<64x32xf16, #ttg.dot_op<{opIdx = 0, {{.*}}, meta = 0}>>
// CHECK: ttg.memdesc_subview %[[RE]][%[[RD]],
// CHECK: ttg.memdesc_subview %[[RB]][%[[RD]],
// CHECK: arith.addi %k,
// CHECK: ttg.memdesc_subview %[[RA]][%[[WR]],
// CHECK: scf.if
// CHECK-NEXT: ttg.async_copy_global_to_local
// CHECK: ttg.async_commit_group
// CHECK-NEXT: tt.dot
// The slots rotate with a compare and a select (x + 1, or 0 at S), not a remainder:
// CHECK: %[[S:.*]] = arith.constant 3 : i32
// CHECK: %[[INC:.*]] = arith.addi %[[RD]], %{{.*}} : i32
// CHECK-NEXT: %[[LT:.*]] = arith.cmpi slt, %[[INC]], %[[S]] : i32
// CHECK-NEXT: %[[NRD:.*]] = arith.select %[[LT]], %[[INC]], %{{.*}} : i32
// CHECK-NOT: arith.remui
// CHECK: scf.yield {{.*}}, %[[NRD]], %{{.*}} :
// CHECK: ttg.async_wait {num = 0 : i32}
// CHECK-NEXT: arith.truncf

// ONE-NOT: ttg.async
// ONE: ttg.local_alloc %a
// ONE-NOT: ttg.async
#mma = #ttg.mma<{versionMajor = 2, warpsPerCTA = [2, 2], instrShape = [16, 8]}>
#blocked = #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>
#blocked1 = #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
#shared = #ttg.shared<{vec = 8, perPhase = 2, maxPhase = 4, order = [1, 0]}>
#shared1 = #ttg.shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [1, 0]}>
#shared2 = #ttg.shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [1, 0], metaPack = 1}>
#dot = #ttg.dot_op<{opIdx = 0, parent = #mma, kWidth = 2, meta = 0}>
#dot1 = #ttg.dot_op<{opIdx = 1, parent = #mma, kWidth = 2}>
#dot2 = #ttg.dot_op<{opIdx = 0, parent = #mma, kWidth = 2, meta = 1}>
builtin.module attributes {"ttg.num-warps" = 4 : i32, "ttg.threads-per-warp" = 32 : i32, ttg.target = "sm_90"} {
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
    %pa = tt.make_tensor_ptr %vals, shape=[%M64, %Kh], strides=[%Kh, %one], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<64x32xf16, #blocked>>
    %pe = tt.make_tensor_ptr %meta, shape=[%Mm, %K64], strides=[%K64, %one], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<4x64xi16, #blocked1>>
    %pb = tt.make_tensor_ptr %b, shape=[%K64, %N64], strides=[%N64, %one], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<64x64xf16, #blocked1>>
    %pd = tt.make_tensor_ptr %d, shape=[%M64, %N64], strides=[%N64, %one], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<64x64xf16, #mma>>
    %zero = arith.constant dense<0.000000e+00> : tensor<64x64xf32, #mma>
    %acc, %a_out, %e_out, %b_out = scf.for %k = %c0 to %K step %cbk iter_args(%acc_i = %zero, %pa_i = %pa, %pe_i = %pe, %pb_i = %pb) -> (tensor<64x64xf32, #mma>, !tt.ptr<tensor<64x32xf16, #blocked>>, !tt.ptr<tensor<4x64xi16, #blocked1>>, !tt.ptr<tensor<64x64xf16, #blocked1>>) : i32 {
      %a = tt.load %pa_i {boundaryCheck = array<i32: 0, 1>, padding = 1 : i32} : !tt.ptr<tensor<64x32xf16, #blocked>>
      %e = tt.load %pe_i {boundaryCheck = array<i32: 0, 1>, padding = 1 : i32} : !tt.ptr<tensor<4x64xi16, #blocked1>>
      %bt = tt.load %pb_i {boundaryCheck = array<i32: 0, 1>, padding = 1 : i32} : !tt.ptr<tensor<64x64xf16, #blocked1>>
      %0 = ttg.local_alloc %a : (tensor<64x32xf16, #blocked>) -> !ttg.memdesc<64x32xf16, #shared>
      %1 = ttg.local_load %0 : !ttg.memdesc<64x32xf16, #shared> -> tensor<64x32xf16, #dot>
      %2 = ttg.local_alloc %bt : (tensor<64x64xf16, #blocked1>) -> !ttg.memdesc<64x64xf16, #shared1>
      %3 = ttg.local_load %2 : !ttg.memdesc<64x64xf16, #shared1> -> tensor<64x64xf16, #dot1>
      %4 = ttg.local_alloc %e : (tensor<4x64xi16, #blocked1>) -> !ttg.memdesc<4x64xi16, #shared2>
      %5 = ttg.local_load %4 : !ttg.memdesc<4x64xi16, #shared2> -> tensor<4x64xi16, #dot2>
      %acc_n = tt.dot %1, %3, %5, %acc_i, sparseIndex = 0 : tensor<64x32xf16, #dot>, tensor<4x64xi16, #dot2> * tensor<64x64xf16, #dot1> -> tensor<64x64xf32, #mma>
      %pa_n = tt.advance %pa_i, [%c0, %ckh] : !tt.ptr<tensor<64x32xf16, #blocked>>
      %pe_n = tt.advance %pe_i, [%c0, %cbk] : !tt.ptr<tensor<4x64xi16, #blocked1>>
      %pb_n = tt.advance %pb_i, [%cbk, %c0] : !tt.ptr<tensor<64x64xf16, #blocked1>>
      scf.yield %acc_n, %pa_n, %pe_n, %pb_n : tensor<64x64xf32, #mma>, !tt.ptr<tensor<64x32xf16, #blocked>>, !tt.ptr<tensor<4x64xi16, #blocked1>>, !tt.ptr<tensor<64x64xf16, #blocked1>>
    }
    %out = arith.truncf %acc : tensor<64x64xf32, #mma> to tensor<64x64xf16, #mma>
    tt.store %pd, %out {boundaryCheck = array<i32: 0, 1>} : !tt.ptr<tensor<64x64xf16, #mma>>
    tt.return
  }
}
