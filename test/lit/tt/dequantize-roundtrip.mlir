// RUN: sparsecc-opt %s | filecheck %s
// RUN: sparsecc-opt %s --print-op-generic | sparsecc-opt | filecheck %s
// RUN: sparsecc-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// tt.dequantize in its custom form, with and without zero points, and a quantized sparse type:
// the printer reproduces them, and the generic form parses back to the same.

// CHECK:      tt.func @f(%p: !tt.ptr<f16, #tt.sparse<"NV24.w4g128z">>, %c: tensor<32x64xi8>, %s: tensor<32x1xf16>, %z: tensor<32x1xf16>) {
// CHECK-NEXT:   %w = tt.dequantize %c, %s {bits = 4 : i32} : tensor<32x64xi8>, tensor<32x1xf16> -> tensor<32x128xf16>
// CHECK-NEXT:   %w2 = tt.dequantize %c, %s, %z {bits = 8 : i32} : tensor<32x64xi8>, tensor<32x1xf16>, tensor<32x1xf16> -> tensor<32x64xf16>
// GENERIC: "tt.dequantize"(%{{.*}}, %{{.*}}) <{bits = 4 : i32}>
builtin.module {
  tt.func @f(%p: !tt.ptr<f16, #tt.sparse<"NV24.w4g128z">>, %c: tensor<32x64xi8>, %s: tensor<32x1xf16>, %z: tensor<32x1xf16>) {
    %w = tt.dequantize %c, %s {bits = 4 : i32} : tensor<32x64xi8>, tensor<32x1xf16> -> tensor<32x128xf16>
    %w2 = tt.dequantize %c, %s, %z {bits = 8 : i32} : tensor<32x64xi8>, tensor<32x1xf16>, tensor<32x1xf16> -> tensor<32x64xf16>
    tt.return
  }
}
