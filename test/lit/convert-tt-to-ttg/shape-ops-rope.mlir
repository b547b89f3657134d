// RUN: sparsecc-opt %s -p "convert-tt-to-ttg{num-warps=1 target=sm_80}" | filecheck %s
// The interleaved RoPE of test/python/conformance/shape_kernels.py (rope_kernel, HALF = 32):
// the loaded row keeps its default layout (4 contiguous f32 per thread); the reshape to
// (32, 2) that feeds tt.split gets the layout in which each thread holds the same 4 elements
// as 2 pairs, the split halves drop the pair dim, the join puts it back and the reshape to
// 64 returns to the store's layout: every shape op renames registers, with no convert.

// CHECK:      tt.reshape %x : tensor<64xf32, #ttg.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [1], order = [0]}>> -> tensor<32x2xf32, #ttg.blocked<{sizePerThread = [2, 2], threadsPerWarp = [32, 1], warpsPerCTA = [1, 1], order = [1, 0]}>>
// CHECK:      tt.split %{{.*}} : tensor<32x2xf32, #ttg.blocked<{sizePerThread = [2, 2], threadsPerWarp = [32, 1], warpsPerCTA = [1, 1], order = [1, 0]}>> -> tensor<32xf32, #ttg.blocked<{sizePerThread = [2], threadsPerWarp = [32], warpsPerCTA = [1], order = [0]}>>
// CHECK:      tt.join %{{.*}}, %{{.*}} : tensor<32xf32, #ttg.blocked<{sizePerThread = [2], threadsPerWarp = [32], warpsPerCTA = [1], order = [0]}>> -> tensor<32x2xf32, #ttg.blocked<{sizePerThread = [2, 2], threadsPerWarp = [32, 1], warpsPerCTA = [1, 1], order = [1, 0]}>>
// CHECK:      tt.reshape %{{.*}} : tensor<32x2xf32, #ttg.blocked<{sizePerThread = [2, 2], threadsPerWarp = [32, 1], warpsPerCTA = [1, 1], order = [1, 0]}>> -> tensor<64xf32, #ttg.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [1], order = [0]}>>
// CHECK:      tt.store %{{.*}}, %out : tensor<64x!tt.ptr<f32>, #ttg.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [1], order = [0]}>>
// CHECK-NOT:  ttg.convert_layout
builtin.module {
  tt.func public @rope_kernel(%X: !tt.ptr<f32>, %COS: !tt.ptr<f32>, %SIN: !tt.ptr<f32>, %OUT: !tt.ptr<f32>, %seq_len: i32, %stride_row: i32) {
    %row = tt.get_program_id x : i32
    %cols = tt.make_range {start = 0 : i32, end = 64 : i32} : tensor<64xi32>
    %0 = arith.muli %row, %stride_row : i32
    %1 = tt.addptr %X, %0 : !tt.ptr<f32>, i32
    %2 = tt.splat %1 : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %3 = tt.addptr %2, %cols : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    %x = tt.load %3 : tensor<64x!tt.ptr<f32>>
    %4 = tt.reshape %x : tensor<64xf32> -> tensor<32x2xf32>
    %x0, %x1 = tt.split %4 : tensor<32x2xf32> -> tensor<32xf32>
    %h = tt.make_range {start = 0 : i32, end = 32 : i32} : tensor<32xi32>
    %5 = arith.constant 32 : i32
    %6 = arith.muli %row, %5 : i32
    %7 = tt.addptr %COS, %6 : !tt.ptr<f32>, i32
    %8 = tt.splat %7 : !tt.ptr<f32> -> tensor<32x!tt.ptr<f32>>
    %9 = tt.addptr %8, %h : tensor<32x!tt.ptr<f32>>, tensor<32xi32>
    %c = tt.load %9 : tensor<32x!tt.ptr<f32>>
    %10 = arith.muli %row, %5 : i32
    %11 = tt.addptr %SIN, %10 : !tt.ptr<f32>, i32
    %12 = tt.splat %11 : !tt.ptr<f32> -> tensor<32x!tt.ptr<f32>>
    %13 = tt.addptr %12, %h : tensor<32x!tt.ptr<f32>>, tensor<32xi32>
    %s = tt.load %13 : tensor<32x!tt.ptr<f32>>
    %14 = arith.mulf %x0, %c : tensor<32xf32>
    %15 = arith.mulf %x1, %s : tensor<32xf32>
    %16 = arith.subf %14, %15 : tensor<32xf32>
    %17 = arith.mulf %x0, %s : tensor<32xf32>
    %18 = arith.mulf %x1, %c : tensor<32xf32>
    %19 = arith.addf %17, %18 : tensor<32xf32>
    %20 = tt.join %16, %19 : tensor<32xf32> -> tensor<32x2xf32>
    %out = tt.reshape %20 : tensor<32x2xf32> -> tensor<64xf32>
    %21 = arith.muli %row, %stride_row : i32
    %22 = tt.addptr %OUT, %21 : !tt.ptr<f32>, i32
    %23 = tt.splat %22 : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>
    %24 = tt.addptr %23, %cols : tensor<64x!tt.ptr<f32>>, tensor<64xi32>
    tt.store %24, %out : tensor<64x!tt.ptr<f32>>
    tt.return
  }
}

