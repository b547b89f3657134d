// RUN: sparsecc-opt %s -p ptx-hoist-loop-invariants | filecheck %s
// Pure ops of a loop body (arith, ptx.sreg) whose operands are all defined outside the loop
// move in front of it, also out of an scf.if's then region; an op that depends on the
// induction variable stays, and so does the slow path of an else region marked
// sparsecc.cold_else (not worth a register for the whole loop).

// CHECK-LABEL: "ptx.kernel"
// CHECK:      %tid = "ptx.sreg"() <{reg = "tid.x"}> : () -> i32
// CHECK-NEXT: %inv = arith.muli %tid, %c4 : i32
// CHECK-NEXT: %fast = arith.shli %tid, %c1 : i32
// CHECK-NEXT: %lane = "ptx.sreg"() <{reg = "laneid"}> : () -> i32
// CHECK-NEXT: %s = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %c0) -> (i32) : i32 {
// CHECK-NEXT:   %var = arith.addi %i, %inv : i32
// CHECK-NEXT:   %cond = arith.cmpi slt, %var, %n : i32
// CHECK-NEXT:   %r = scf.if %cond -> (i32) {
// CHECK-NEXT:     scf.yield %fast : i32
// CHECK-NEXT:   } else {
// CHECK-NEXT:     %slow = arith.muli %n, %n : i32
// CHECK-NEXT:     scf.yield %slow : i32
// CHECK-NEXT:   }{sparsecc.cold_else}
// CHECK-NEXT:   %next = arith.addi %acc, %r : i32
builtin.module {
  "ptx.kernel"() <{sym_name = "k", target = "sm_80", param_kinds = ["ptr", "i32"], shared_bytes = 0 : i64}> ({
  ^bb0(%p: i64, %n: i32):
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c4 = arith.constant 4 : i32
    %tid = "ptx.sreg"() <{reg = "tid.x"}> : () -> i32
    %s = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %c0) -> (i32) : i32 {
      %inv = arith.muli %tid, %c4 : i32
      %var = arith.addi %i, %inv : i32
      %cond = arith.cmpi slt, %var, %n : i32
      %r = scf.if %cond -> (i32) {
        %fast = arith.shli %tid, %c1 : i32
        scf.yield %fast : i32
      } else {
        %slow = arith.muli %n, %n : i32
        scf.yield %slow : i32
      } {sparsecc.cold_else}
      %lane = "ptx.sreg"() <{reg = "laneid"}> : () -> i32
      %next = arith.addi %acc, %r : i32
      %sum = arith.addi %next, %lane : i32
      scf.yield %sum : i32
    }
    "ptx.st.global"(%p, %s) <{offset = 0 : i64, operandSegmentSizes = array<i32: 1, 1, 0>}> : (i64, i32) -> ()
  }) : () -> ()
}
