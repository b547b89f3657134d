// RUN: not sparsecc-opt %s 2>&1 | filecheck %s

// CHECK: ttg.convert_layout: element types differ
#blocked = #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
#mma = #ttg.mma<{versionMajor = 2, warpsPerCTA = [2, 2], instrShape = [16, 8]}>
builtin.module {
  tt.func public @bad(%x: tensor<64x32xf16, #blocked>) {
    %y = ttg.convert_layout %x : tensor<64x32xf16, #blocked> -> tensor<64x32xf32, #mma>
    tt.return
  }
}
