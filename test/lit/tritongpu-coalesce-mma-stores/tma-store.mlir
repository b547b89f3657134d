// RUN: sparsecc-opt %s --split-input-file -p 'tritongpu-coalesce-mma-stores{tma-stores=true}' | filecheck %s
// RUN: sparsecc-opt %s --split-input-file -p 'tritongpu-coalesce-mma-stores{tma-stores=true},tritongpu-insert-barriers' | filecheck %s --check-prefix=BAR
// RUN: sparsecc-opt %s --split-input-file -p tritongpu-coalesce-mma-stores | filecheck %s --check-prefix=OFF
// RUN: sparsecc-opt %s --split-input-file -p 'tritongpu-coalesce-mma-stores{tma-stores=true box-staging=true},allocate-shared-memory' | filecheck %s --check-prefix=BOX
// With tma-stores, a wgmma kernel's transposed 16-bit tile store (W x^T into y, as sparse_linear
// stores) whose row stride and contiguous extent are known multiples of 16 bytes goes out by TMA: a wait for earlier
// stores of the tile, the value written into a shared tile of 64-column boxes under the
// 128-byte swizzle, the TMA store, and one more wait before the return. Both waits and the
// store are CTA barriers of their own: tritongpu-insert-barriers adds none around them. The
// second module's row stride has no divisibility (no tensor map may take it), the third's
// contiguous extent none (a TMA store clips it to whole 16-byte chunks only): the 16-byte
// vector path. The fourth module has no wgmma (its shared memory is not 1 KiB aligned): the
// vector path too. Without the option every store takes the vector path.

// CHECK-LABEL: tt.func public @tma
// CHECK:      %[[V:.*]] = arith.truncf
// CHECK-NEXT: %[[P:.*]] = tt.make_tensor_ptr
// CHECK-NEXT: ttg.async_tma_store_wait {pendings = 0 : i32}
// CHECK-NEXT: %[[T:.*]] = ttg.local_alloc %[[V]] : (tensor<128x64xf16, #ttg.mma<{{.*}}>>) -> !ttg.memdesc<128x64xf16, #ttg.shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [0, 1], colBlock = 64}>>
// CHECK-NEXT: ttg.async_tma_store %[[P]], %[[T]] : !tt.ptr<tensor<128x64xf16, #ttg.mma<{{.*}}>>>, !ttg.memdesc<128x64xf16
// CHECK-NEXT: ttg.async_tma_store_wait {pendings = 0 : i32}
// CHECK-NEXT: tt.return
// CHECK-NOT:  tt.store
// BAR-LABEL:  tt.func public @tma
// BAR:        ttg.async_tma_store_wait
// BAR-NEXT:   ttg.local_alloc
// BAR-NEXT:   ttg.async_tma_store
// BAR-NEXT:   ttg.async_tma_store_wait
// With box-staging the first module's tile (two 64-column boxes, each warp holding rows of both)
// is marked to go one box of all 64 rows at a time, the most rows that fit (the lowering writes
// a box, stores it, waits until the TMA has read it, then the next: test_coalesce_mma_stores.py):
// its buffer holds one box, 8 KiB, and the module's total is one KiB more (for aligning the base).
// BOX:        ttg.shared = 9216 : i32
// BOX:        ttg.local_alloc %{{.*}} {ttg.box_staged = 64 : i32, ttg.shared_offset = 0 : i32}
// OFF-LABEL:  tt.func public @tma
// OFF:        ttg.convert_layout
// OFF-NOT:    ttg.async_tma_store
#mma = #ttg.mma<{versionMajor = 3, warpsPerCTA = [4, 1], instrShape = [64, 64]}>
builtin.module attributes {"ttg.num-warps" = 4 : i32, "ttg.threads-per-warp" = 32 : i32, ttg.target = "sm_90a"} {
  tt.func public @tma(%Y: !tt.ptr<f16> {tt.divisibility = 16 : i32}, %x: f16, %n: i64 {tt.divisibility = 16 : i32}, %t: i64, %s: i64 {tt.divisibility = 16 : i32}) {
    %c0 = arith.constant 0 : i32
    %one = arith.constant 1 : i64
    %a = tt.splat %x : f16 -> tensor<128x32xf16, #ttg.dot_op<{opIdx = 0, parent = #mma, kWidth = 2, meta = 0}>>
    %m = arith.constant dense<0> : tensor<8x64xi16, #ttg.dot_op<{opIdx = 0, parent = #mma, kWidth = 2, meta = 1}>>
    %b = tt.splat %x : f16 -> tensor<64x64xf16, #ttg.dot_op<{opIdx = 1, parent = #mma, kWidth = 2}>>
    %zero = arith.constant dense<0.000000e+00> : tensor<128x64xf32, #mma>
    %d = tt.dot %a, %b, %m, %zero, sparseIndex = 0 : tensor<128x32xf16, #ttg.dot_op<{opIdx = 0, parent = #mma, kWidth = 2, meta = 0}>>, tensor<8x64xi16, #ttg.dot_op<{opIdx = 0, parent = #mma, kWidth = 2, meta = 1}>> * tensor<64x64xf16, #ttg.dot_op<{opIdx = 1, parent = #mma, kWidth = 2}>> -> tensor<128x64xf32, #mma>
    %v = arith.truncf %d : tensor<128x64xf32, #mma> to tensor<128x64xf16, #mma>
    %p = tt.make_tensor_ptr %Y, shape=[%n, %t], strides=[%one, %s], offsets=[%c0, %c0] {order = array<i32: 0, 1>} : !tt.ptr<tensor<128x64xf16, #mma>>
    tt.store %p, %v {boundaryCheck = array<i32: 0, 1>} : !tt.ptr<tensor<128x64xf16, #mma>>
    tt.return
  }
}

// -----

// CHECK-LABEL: tt.func public @any_stride
// CHECK:       ttg.convert_layout
// CHECK-NOT:   ttg.async_tma_store
#mma = #ttg.mma<{versionMajor = 3, warpsPerCTA = [4, 1], instrShape = [64, 64]}>
builtin.module attributes {"ttg.num-warps" = 4 : i32, "ttg.threads-per-warp" = 32 : i32, ttg.target = "sm_90a"} {
  tt.func public @any_stride(%Y: !tt.ptr<f16> {tt.divisibility = 16 : i32}, %x: f16, %n: i64 {tt.divisibility = 16 : i32}, %t: i64, %s: i64) {
    %c0 = arith.constant 0 : i32
    %one = arith.constant 1 : i64
    %a = tt.splat %x : f16 -> tensor<128x32xf16, #ttg.dot_op<{opIdx = 0, parent = #mma, kWidth = 2, meta = 0}>>
    %m = arith.constant dense<0> : tensor<8x64xi16, #ttg.dot_op<{opIdx = 0, parent = #mma, kWidth = 2, meta = 1}>>
    %b = tt.splat %x : f16 -> tensor<64x64xf16, #ttg.dot_op<{opIdx = 1, parent = #mma, kWidth = 2}>>
    %zero = arith.constant dense<0.000000e+00> : tensor<128x64xf32, #mma>
    %d = tt.dot %a, %b, %m, %zero, sparseIndex = 0 : tensor<128x32xf16, #ttg.dot_op<{opIdx = 0, parent = #mma, kWidth = 2, meta = 0}>>, tensor<8x64xi16, #ttg.dot_op<{opIdx = 0, parent = #mma, kWidth = 2, meta = 1}>> * tensor<64x64xf16, #ttg.dot_op<{opIdx = 1, parent = #mma, kWidth = 2}>> -> tensor<128x64xf32, #mma>
    %v = arith.truncf %d : tensor<128x64xf32, #mma> to tensor<128x64xf16, #mma>
    %p = tt.make_tensor_ptr %Y, shape=[%n, %t], strides=[%one, %s], offsets=[%c0, %c0] {order = array<i32: 0, 1>} : !tt.ptr<tensor<128x64xf16, #mma>>
    tt.store %p, %v {boundaryCheck = array<i32: 0, 1>} : !tt.ptr<tensor<128x64xf16, #mma>>
    tt.return
  }
}

// -----

// CHECK-LABEL: tt.func public @any_extent
// CHECK:       ttg.convert_layout
// CHECK-NOT:   ttg.async_tma_store
#mma = #ttg.mma<{versionMajor = 3, warpsPerCTA = [4, 1], instrShape = [64, 64]}>
builtin.module attributes {"ttg.num-warps" = 4 : i32, "ttg.threads-per-warp" = 32 : i32, ttg.target = "sm_90a"} {
  tt.func public @any_extent(%Y: !tt.ptr<f16> {tt.divisibility = 16 : i32}, %x: f16, %n: i64, %t: i64, %s: i64 {tt.divisibility = 16 : i32}) {
    %c0 = arith.constant 0 : i32
    %one = arith.constant 1 : i64
    %a = tt.splat %x : f16 -> tensor<128x32xf16, #ttg.dot_op<{opIdx = 0, parent = #mma, kWidth = 2, meta = 0}>>
    %m = arith.constant dense<0> : tensor<8x64xi16, #ttg.dot_op<{opIdx = 0, parent = #mma, kWidth = 2, meta = 1}>>
    %b = tt.splat %x : f16 -> tensor<64x64xf16, #ttg.dot_op<{opIdx = 1, parent = #mma, kWidth = 2}>>
    %zero = arith.constant dense<0.000000e+00> : tensor<128x64xf32, #mma>
    %d = tt.dot %a, %b, %m, %zero, sparseIndex = 0 : tensor<128x32xf16, #ttg.dot_op<{opIdx = 0, parent = #mma, kWidth = 2, meta = 0}>>, tensor<8x64xi16, #ttg.dot_op<{opIdx = 0, parent = #mma, kWidth = 2, meta = 1}>> * tensor<64x64xf16, #ttg.dot_op<{opIdx = 1, parent = #mma, kWidth = 2}>> -> tensor<128x64xf32, #mma>
    %v = arith.truncf %d : tensor<128x64xf32, #mma> to tensor<128x64xf16, #mma>
    %p = tt.make_tensor_ptr %Y, shape=[%n, %t], strides=[%one, %s], offsets=[%c0, %c0] {order = array<i32: 0, 1>} : !tt.ptr<tensor<128x64xf16, #mma>>
    tt.store %p, %v {boundaryCheck = array<i32: 0, 1>} : !tt.ptr<tensor<128x64xf16, #mma>>
    tt.return
  }
}

// -----

// CHECK-LABEL: tt.func public @no_wgmma
// CHECK:       ttg.convert_layout
// CHECK-NOT:   ttg.async_tma_store
builtin.module attributes {"ttg.num-warps" = 4 : i32, "ttg.threads-per-warp" = 32 : i32, ttg.target = "sm_90a"} {
  tt.func public @no_wgmma(%Y: !tt.ptr<f16> {tt.divisibility = 16 : i32}, %x: f32, %n: i64, %t: i64, %s: i64 {tt.divisibility = 16 : i32}) {
    %c0 = arith.constant 0 : i32
    %one = arith.constant 1 : i64
    %w = tt.splat %x : f32 -> tensor<128x64xf32, #ttg.mma<{versionMajor = 3, warpsPerCTA = [4, 1], instrShape = [64, 64]}>>
    %v = arith.truncf %w : tensor<128x64xf32, #ttg.mma<{versionMajor = 3, warpsPerCTA = [4, 1], instrShape = [64, 64]}>> to tensor<128x64xf16, #ttg.mma<{versionMajor = 3, warpsPerCTA = [4, 1], instrShape = [64, 64]}>>
    %p = tt.make_tensor_ptr %Y, shape=[%n, %t], strides=[%one, %s], offsets=[%c0, %c0] {order = array<i32: 0, 1>} : !tt.ptr<tensor<128x64xf16, #ttg.mma<{versionMajor = 3, warpsPerCTA = [4, 1], instrShape = [64, 64]}>>>
    tt.store %p, %v {boundaryCheck = array<i32: 0, 1>} : !tt.ptr<tensor<128x64xf16, #ttg.mma<{versionMajor = 3, warpsPerCTA = [4, 1], instrShape = [64, 64]}>>>
    tt.return
  }
}
