// RUN: sparsecc-opt < %s | filecheck %s
// RUN: sparsecc-opt - < %s | filecheck %s
// RUN: sparsecc-opt -p canonicalize < %s | filecheck %s --check-prefix=CANON
// With no file (or '-') the input is read from stdin.

// CHECK: tt.func public @k(%x: i32) -> i32 {
// CHECK-NEXT: %y = arith.addi %x, %x : i32
// CANON: tt.func public @k
builtin.module {
  tt.func public @k(%x: i32) -> i32 {
    %y = arith.addi %x, %x : i32
    tt.return %y : i32
  }
}
