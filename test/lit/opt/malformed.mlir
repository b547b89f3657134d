// RUN: not sparsecc-opt %s 2>&1 | filecheck %s
// Malformed IR: the error names file:line:col of the bad token and shows it under a caret.

// CHECK: malformed.mlir:[[# @LINE + 6]]:24: error: {{.*}}
// CHECK-NEXT: {{^}}    %y = arith.addi %x %x : i32
// CHECK-NEXT: {{^}}                       ^
// CHECK-NOT: Traceback
builtin.module {
  tt.func public @k(%x: i32) {
    %y = arith.addi %x %x : i32
    tt.return
  }
}
