// RUN: not sparsecc-opt %s --split-input-file 2>&1 | filecheck %s
// A quantized 2:4 format holds fp16 or bf16 (the type its kernels compute with; the codes are its
// values array), and its scheme must be one sparsecc can store: both located where written.

// CHECK: invalid-quant-format.mlir:[[# @LINE + 2]]:27: error: {{.*}}#tt.sparse<"NV24.w4g128"> cannot hold i8 elements: NV24.w4g128 sparsity needs a 16-bit floating-point element type (fp16, bf16)
builtin.module {
  tt.func public @bad(%a: !tt.ptr<i8, #tt.sparse<"NV24.w4g128">>) {
    tt.return
  }
}

// -----

// CHECK: invalid-quant-format.mlir:[[# @LINE + 2]]:{{[0-9]+}}: error: {{.*}}sparse format "NV24.w4g96": quantization scheme "w4g96": the group size must be a power of two >= 16
builtin.module {
  tt.func public @group(%a: !tt.ptr<f16, #tt.sparse<"NV24.w4g96">>) {
    tt.return
  }
}
