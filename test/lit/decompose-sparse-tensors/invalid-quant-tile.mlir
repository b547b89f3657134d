// RUN: not sparsecc-opt %s -p decompose-sparse-tensors 2>&1 | filecheck %s
// A quantized tile must cover whole scale groups: BK = 64 with one scale per 128 columns cannot
// be dequantized tile by tile.

// CHECK: invalid-quant-tile.mlir:[[# @LINE + 6]]:{{[0-9]+}}: error: {{.*}}BLOCK_K must be a multiple of 128, got 64
// CHECK-NOT: Traceback
builtin.module {
  tt.func public @k(%A: !tt.ptr<f16, #tt.sparse<"NV24.w4g128">>, %m: i64, %k: i64) {
    %c0 = arith.constant 0 : i32
    %one = arith.constant 1 : i64
    %pa = tt.make_tensor_ptr %A, shape=[%m, %k], strides=[%k, %one], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<64x64xf16, #tt.sparse<"NV24.w4g128">>>
    tt.return
  }
}
