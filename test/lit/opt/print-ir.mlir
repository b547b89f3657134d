// RUN: sparsecc-opt %s -p cse,canonicalize --print-ir-after-all --print-ir-before-all 2>&1 >/dev/null | filecheck %s
// The per-pass dumps go to stderr: before cse the duplicate add is there, after it it is gone.

// CHECK: // -----// IR Dump Before cse //----- //
// CHECK: %a = arith.addi %x, %x : i32
// CHECK-NEXT: %b = arith.addi %x, %x : i32
// CHECK: // -----// IR Dump After cse //----- //
// CHECK: %a = arith.addi %x, %x : i32
// CHECK-NOT: %b = arith.addi
// CHECK: // -----// IR Dump Before canonicalize //----- //
// CHECK: // -----// IR Dump After canonicalize //----- //
builtin.module {
  tt.func public @k(%x: i32) -> i32 {
    %a = arith.addi %x, %x : i32
    %b = arith.addi %x, %x : i32
    %c = arith.muli %a, %b : i32
    tt.return %c : i32
  }
}
