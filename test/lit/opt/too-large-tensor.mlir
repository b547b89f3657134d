// RUN: not sparsecc-opt %s --split-input-file 2>&1 | filecheck %s
// RUN: sparsecc-opt %s --split-input-file --verify-diagnostics
// A tensor past the frontend's 1048576-element limit is refused where its type is written:
// xDSL expands a dense splat element by element, and `dense<1.0> : tensor<1048576x1048576xf32>`
// once ended in an internal MemoryError. A shape at the limit is fine.

// CHECK: too-large-tensor.mlir:[[# @LINE + 3]]:36: error: a shape of 1099511627776 elements: sparsecc handles at most 1048576 per tensor
builtin.module {
  // expected-error@+1 {{a shape of 1099511627776 elements}}
  %c = arith.constant dense<1.0> : tensor<1048576x1048576xf32>
}

// -----

// CHECK: too-large-tensor.mlir:[[# @LINE + 4]]:29: error: a shape of 2097152 elements
builtin.module {
  %x = arith.constant 1.0 : f32
  // expected-error@+1 {{a shape of 2097152 elements}}
  %s = tt.splat %x : f32 -> tensor<2048x1024xf32>
}

// -----

// CHECK: too-large-tensor.mlir:[[# @LINE + 3]]:{{[0-9]+}}: error: a shape of 1099511627776 elements
"builtin.module"() ({
  // expected-error@+1 {{a shape of 1099511627776 elements}}
  %c = "arith.constant"() <{value = dense<"0x0000803F"> : tensor<1048576x1048576xf32>}> : () -> tensor<1048576x1048576xf32>
}) : () -> ()

// -----

// CHECK-NOT: error
builtin.module {
  %c = arith.constant dense<1.0> : tensor<1024x1024xf32>
}
