// RUN: sparsecc-opt %s | filecheck %s
// RUN: sparsecc-opt %s | sparsecc-opt | filecheck %s

#blocked = #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
#mma = #ttg.mma<{versionMajor = 2, warpsPerCTA = [2, 2], instrShape = [16, 8]}>
#shared = #ttg.shared<{vec = 8, perPhase = 2, maxPhase = 4, order = [1, 0]}>
#meta = #ttg.shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [1, 0], metaPack = 1}>
builtin.module attributes {"ttg.num-warps" = 4 : i32, "ttg.threads-per-warp" = 32 : i32, "ttg.target" = "sm_90"} {
  tt.func public @ops(%p: !tt.ptr<f16>, %x: tensor<64x32xf16, #blocked>, %i: i32) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i64
    %c64 = arith.constant 64 : i64
// CHECK: ttg.convert_layout %x : tensor<64x32xf16, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>> -> tensor<64x32xf16, #ttg.dot_op<{opIdx = 0, parent = #ttg.mma<{versionMajor = 2, warpsPerCTA = [2, 2], instrShape = [16, 8]}>, kWidth = 2, meta = 0}>>
    %y = ttg.convert_layout %x : tensor<64x32xf16, #blocked> -> tensor<64x32xf16, #ttg.dot_op<{opIdx = 0, parent = #mma, kWidth = 2, meta = 0}>>
// CHECK: ttg.local_alloc %x : (tensor<64x32xf16, #ttg.blocked<{{.*}}>>) -> !ttg.memdesc<64x32xf16, #ttg.shared<{vec = 8, perPhase = 2, maxPhase = 4, order = [1, 0]}>>
    %m = ttg.local_alloc %x : (tensor<64x32xf16, #blocked>) -> !ttg.memdesc<64x32xf16, #shared>
// CHECK: ttg.local_alloc : () -> !ttg.memdesc<3x64x32xf16, #ttg.shared<{{.*}}>, mutable>
    %r = ttg.local_alloc : () -> !ttg.memdesc<3x64x32xf16, #shared, mutable>
// CHECK: ttg.local_load %m : !ttg.memdesc<64x32xf16, {{.*}}> -> tensor<64x32xf16, #ttg.dot_op<{opIdx = 1, parent = #ttg.mma<{{.*}}>, kWidth = 2}>>
    %t = ttg.local_load %m : !ttg.memdesc<64x32xf16, #shared> -> tensor<64x32xf16, #ttg.dot_op<{opIdx = 1, parent = #mma, kWidth = 2}>>
// CHECK: ttg.memdesc_subview %r[%i, %c0, %c0] : !ttg.memdesc<3x64x32xf16, {{.*}}, mutable> -> !ttg.memdesc<64x32xf16, {{.*}}, mutable>
    %s = ttg.memdesc_subview %r[%i, %c0, %c0] : !ttg.memdesc<3x64x32xf16, #shared, mutable> -> !ttg.memdesc<64x32xf16, #shared, mutable>
// CHECK: ttg.local_store %x, %s : tensor<64x32xf16, {{.*}}> -> !ttg.memdesc<64x32xf16, {{.*}}, mutable>
    ttg.local_store %x, %s : tensor<64x32xf16, #blocked> -> !ttg.memdesc<64x32xf16, #shared, mutable>
    %bp = tt.make_tensor_ptr %p, shape=[%c64, %c64], strides=[%c64, %c1], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<64x32xf16, #blocked>>
// CHECK: %tok = ttg.async_copy_global_to_local %bp, %s {boundaryCheck = array<i32: 0, 1>, padding = 1 : i32} : !tt.ptr<tensor<64x32xf16, #ttg.blocked<{{.*}}>>> -> !ttg.memdesc<64x32xf16, {{.*}}, mutable>
    %tok = ttg.async_copy_global_to_local %bp, %s {boundaryCheck = array<i32: 0, 1>, padding = 1 : i32} : !tt.ptr<tensor<64x32xf16, #blocked>> -> !ttg.memdesc<64x32xf16, #shared, mutable>
// CHECK: %bars = ttg.local_alloc : () -> !ttg.memdesc<3xi64, #ttg.shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [0]}>, mutable>
// CHECK-NEXT: ttg.init_barrier %bars {count = 1 : i32} : !ttg.memdesc<3xi64
// CHECK-NEXT: ttg.arrive_barrier %bars[%c0] {kind = "tma", bytes = 4096 : i32} : !ttg.memdesc<3xi64
// CHECK-NEXT: ttg.async_tma_copy %bp, %s, %bars[%c0] : !tt.ptr<tensor<64x32xf16, #ttg.blocked<{{.*}}>>> -> !ttg.memdesc<64x32xf16, {{.*}}, mutable>, !ttg.memdesc<3xi64
// CHECK-NEXT: ttg.wait_barrier %bars[%c0], %c0 : !ttg.memdesc<3xi64
// CHECK-NEXT: ttg.arrive_barrier %bars[%c0] {kind = "warps"} : !ttg.memdesc<3xi64
// CHECK-NEXT: ttg.dot_wait {pendings = 1 : i32}
    %bars = ttg.local_alloc : () -> !ttg.memdesc<3xi64, #ttg.shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [0]}>, mutable>
    ttg.init_barrier %bars {count = 1 : i32} : !ttg.memdesc<3xi64, #ttg.shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [0]}>, mutable>
    ttg.arrive_barrier %bars[%c0] {kind = "tma", bytes = 4096 : i32} : !ttg.memdesc<3xi64, #ttg.shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [0]}>, mutable>
    ttg.async_tma_copy %bp, %s, %bars[%c0] : !tt.ptr<tensor<64x32xf16, #blocked>> -> !ttg.memdesc<64x32xf16, #shared, mutable>, !ttg.memdesc<3xi64, #ttg.shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [0]}>, mutable>
    ttg.wait_barrier %bars[%c0], %c0 : !ttg.memdesc<3xi64, #ttg.shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [0]}>, mutable>
    ttg.arrive_barrier %bars[%c0] {kind = "warps"} : !ttg.memdesc<3xi64, #ttg.shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [0]}>, mutable>
    ttg.dot_wait {pendings = 1 : i32}
// CHECK: ttg.async_tma_store %bp, %s : !tt.ptr<tensor<64x32xf16, #ttg.blocked<{{.*}}>>>, !ttg.memdesc<64x32xf16, {{.*}}, mutable>
// CHECK-NEXT: ttg.async_tma_store_wait {pendings = 0 : i32}
    ttg.async_tma_store %bp, %s : !tt.ptr<tensor<64x32xf16, #blocked>>, !ttg.memdesc<64x32xf16, #shared, mutable>
    ttg.async_tma_store_wait {pendings = 0 : i32}
// CHECK: %g = ttg.async_commit_group %tok
// CHECK-NEXT: %e = ttg.async_commit_group
// CHECK-NEXT: ttg.async_wait %g, %e {num = 1 : i32}
    %g = ttg.async_commit_group %tok
    %e = ttg.async_commit_group
    ttg.async_wait %g, %e {num = 1 : i32}
// CHECK: arith.constant dense<0> : tensor<2x64xi16, #ttg.dot_op<{opIdx = 0, parent = #ttg.mma<{{.*}}>, kWidth = 2, meta = 1}>>
    %z = arith.constant dense<0> : tensor<2x64xi16, #ttg.dot_op<{opIdx = 0, parent = #mma, kWidth = 2, meta = 1}>>
// CHECK: ttg.local_alloc : () -> !ttg.memdesc<2x4x64xi16, #ttg.shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [1, 0], metaPack = 1}>, mutable>
    %mr = ttg.local_alloc : () -> !ttg.memdesc<2x4x64xi16, #meta, mutable>
// CHECK: tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #ttg.slice<{dim = 1, parent = #ttg.blocked<{{.*}}>}>>
    %sl = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #ttg.slice<{dim = 1, parent = #blocked}>>
    tt.return
  }
}
