// RUN: not sparsecc-opt %s --split-input-file 2>&1 | filecheck %s
// RUN: sparsecc-opt %s --split-input-file --verify-diagnostics
// A token that starts neither an operation nor a block inside a region: the error says what was
// expected and what came (xDSL's message was only " in block definition").

// CHECK: block-expected.mlir:[[# @LINE + 4]]:3: error: expected an operation, a block label (^bb0:) or '}' here, got ':'
builtin.module {
  %c = arith.constant 1 : i32
  // expected-error@+1 {{expected an operation, a block label (^bb0:) or '}' here, got ':'}}
  : i32
}

// -----

// A bare name is an operation name: the error is at that name, not at the first `i32` above it
// (each enclosing op moved it there once).
// CHECK: block-expected.mlir:[[# @LINE + 4]]:3: error: Operation i32 is not registered
builtin.module {
  %c = arith.constant 1 : i32
  // expected-error@+1 {{Operation i32 is not registered}}
  i32
}
