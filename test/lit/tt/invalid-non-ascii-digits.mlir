// RUN: not sparsecc-opt %s --split-input-file 2>&1 | filecheck %s
// A format name's digits are ASCII: Python's \d, isdigit() and int() also take other scripts'
// digits, and "NV24.w4g١٢٨" (Arabic-Indic 128) was once accepted as NV24.w4g128 and printed as
// "NV24.w4g\D9\A1\D9\A2\D9\A8", which did not parse back. Both spellings are located errors that
// name the scheme.

// CHECK: invalid-non-ascii-digits.mlir:[[# @LINE + 2]]:{{[0-9]+}}: error: sparse format "NV24.w4g١٢٨": unknown quantization scheme "w4g١٢٨"
builtin.module {
  tt.func public @arabic(%a: !tt.ptr<f16, #tt.sparse<"NV24.w4g١٢٨">>) {
    tt.return
  }
}

// -----

// CHECK: invalid-non-ascii-digits.mlir:[[# @LINE + 2]]:{{[0-9]+}}: error: sparse format "NV24.w4g١٢٨": unknown quantization scheme
builtin.module {
  tt.func public @escaped(%a: !tt.ptr<f16, #tt.sparse<"NV24.w4g\D9\A1\D9\A2\D9\A8">>) {
    tt.return
  }
}

// -----

// CHECK: invalid-non-ascii-digits.mlir:[[# @LINE + 2]]:{{[0-9]+}}: error: sparse format "NV24.w٨c": unknown quantization scheme "w٨c"
builtin.module {
  tt.func public @devanagari(%a: !tt.ptr<f16, #tt.sparse<"NV24.w٨c">>) {
    tt.return
  }
}

// -----

// xDSL's lexer starts a number at any numeric character and reads it with int(): a lone
// `٧` was taken for 7, `١٢` gave " in block definition". Both are errors at the digit.
// CHECK: invalid-non-ascii-digits.mlir:[[# @LINE + 2]]:23: error: non-ASCII digit '٧' (U+0667): numbers are written with the digits 0-9
builtin.module {
  %c = arith.constant ٧ : i32
}

// -----

// CHECK: invalid-non-ascii-digits.mlir:[[# @LINE + 2]]:43: error: non-ASCII digit '١' (U+0661)
builtin.module {
  %c = arith.constant dense<1.0> : tensor<١٢xf32>
}

// -----

// CHECK: invalid-non-ascii-digits.mlir:[[# @LINE + 2]]:46: error: non-ASCII digit '٨' (U+0668)
builtin.module {
  %r = tt.make_range {start = 0 : i32, end = ٨ : i32} : tensor<8xi32>
}
