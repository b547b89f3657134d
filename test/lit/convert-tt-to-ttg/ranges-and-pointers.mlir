// RUN: sparsecc-opt %s -p convert-tt-to-ttg{num-warps=4} | filecheck %s

// Tensors of pointers: one #blocked for the whole 2-D web (vectorised for the f16 pointees),
// the ranges feeding expand_dims get #ttg.slice of it, so no convert is needed.

// CHECK: %r = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32, #ttg.slice<{dim = 1, parent = #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>}>>
// CHECK: %c = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #ttg.slice<{dim = 0, parent = #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>}>>
// CHECK: tt.expand_dims %r {axis = 1 : i32} : tensor<32xi32, #ttg.slice<{{.*}}>> -> tensor<32x1xi32, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>>
// CHECK: tt.broadcast %ro : tensor<32x1xi32, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>> -> tensor<32x64xi32, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>>
// CHECK: %x = tt.load %p : tensor<32x64x!tt.ptr<f16>, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>>
// CHECK-NOT: ttg.convert_layout

builtin.module {
  tt.func public @copy(%src: !tt.ptr<f16>, %dst: !tt.ptr<f16>) {
    %r = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
    %c = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %r2 = tt.expand_dims %r {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
    %c2 = tt.expand_dims %c {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
    %s = arith.constant dense<64> : tensor<32x1xi32>
    %ro = arith.muli %r2, %s : tensor<32x1xi32>
    %rb = tt.broadcast %ro : tensor<32x1xi32> -> tensor<32x64xi32>
    %cb = tt.broadcast %c2 : tensor<1x64xi32> -> tensor<32x64xi32>
    %off = arith.addi %rb, %cb : tensor<32x64xi32>
    %ps = tt.splat %src : !tt.ptr<f16> -> tensor<32x64x!tt.ptr<f16>>
    %p = tt.addptr %ps, %off : tensor<32x64x!tt.ptr<f16>>, tensor<32x64xi32>
    %x = tt.load %p : tensor<32x64x!tt.ptr<f16>>
    %pd = tt.splat %dst : !tt.ptr<f16> -> tensor<32x64x!tt.ptr<f16>>
    %q = tt.addptr %pd, %off : tensor<32x64x!tt.ptr<f16>>, tensor<32x64xi32>
    tt.store %q, %x : tensor<32x64x!tt.ptr<f16>>
    tt.return
  }
}
