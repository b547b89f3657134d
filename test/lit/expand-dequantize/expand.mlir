// RUN: sparsecc-opt %s -p expand-dequantize | filecheck %s
// tt.dequantize of 4-bit codes with one scale per 64 kept values (two per 32x128 tile) becomes
// plain tensor ops: codes widened and spread (each byte to its two columns through reshapes),
// shifted by 4 * (column % 2), masked, offset by the zero point 8, scaled, rounded once.

// CHECK-LABEL: tt.func @f
// CHECK-NOT: tt.dequantize
// CHECK: %[[C:.*]] = arith.extui %codes : tensor<32x64xi8> to tensor<32x64xi32>
// CHECK: %[[R:.*]] = tt.reshape %[[C]] : tensor<32x64xi32> -> tensor<2048x1xi32>
// CHECK: %[[B:.*]] = tt.broadcast %[[R]] : tensor<2048x1xi32> -> tensor<2048x2xi32>
// CHECK: %[[S:.*]] = tt.reshape %[[B]] : tensor<2048x2xi32> -> tensor<32x128xi32>
// CHECK: tt.make_range {start = 0 : i32, end = 128 : i32}
// CHECK: arith.remui
// CHECK: %[[SH:.*]] = arith.shrui %[[S]], %{{.*}} : tensor<32x128xi32>
// CHECK: %[[M:.*]] = arith.andi %[[SH]], %{{.*}} : tensor<32x128xi32>
// CHECK: %[[F:.*]] = arith.uitofp %[[M]] : tensor<32x128xi32> to tensor<32x128xf32>
// CHECK: arith.constant dense<8.000000e+00> : tensor<32x128xf32>
// CHECK: arith.extf %scales : tensor<32x2xf16> to tensor<32x2xf32>
// CHECK: tt.reshape %{{.*}} : tensor<32x2xf32> -> tensor<64x1xf32>
// CHECK: tt.broadcast %{{.*}} : tensor<64x1xf32> -> tensor<64x64xf32>
// CHECK: tt.reshape %{{.*}} : tensor<64x64xf32> -> tensor<32x128xf32>
// CHECK: arith.subf
// CHECK: arith.mulf
// CHECK: %w = arith.truncf %{{.*}} : tensor<32x128xf32> to tensor<32x128xf16>
// CHECK: tt.return %w

builtin.module {
  tt.func @f(%codes: tensor<32x64xi8>, %scales: tensor<32x2xf16>) -> tensor<32x128xf16> {
    %w = tt.dequantize %codes, %scales {bits = 4 : i32} : tensor<32x64xi8>, tensor<32x2xf16> -> tensor<32x128xf16>
    tt.return %w : tensor<32x128xf16>
  }
}
