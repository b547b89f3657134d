// RUN: sparsecc-opt %s -p ptx-strength-reduce | filecheck %s
// RUN: sparsecc-opt %s -p ptx-strength-reduce --emit ptx | filecheck %s --check-prefix=PTX
// An address rebuilt every iteration from a carried i32 offset (sext, multiply by the stride
// and the element size, add the base) becomes a carried i64 advanced by its step, both
// computed in front of the loop; an address a constant away from it is derived from it (one
// add). The slow path of a cold else keeps its own address (and so the offset stays carried);
// without it (second loop) the offset only feeds itself and is no longer carried, and neither
// is a value nothing reads (%dead). A value only a compare reads is not an address: not carried.
// A loop that loads registers from global memory (third loop) keeps its addresses as they are.

// CHECK-LABEL: "ptx.kernel"
// entry value: the same ops on the offset's initial value %o0
// CHECK:      %[[E0:.*]] = arith.extsi %o0 : i32 to i64
// CHECK-NEXT: %[[E1:.*]] = arith.muli %[[E0]], %stride : i64
// CHECK-NEXT: %[[E2:.*]] = arith.muli %[[E1]], %c2 : i64
// CHECK-NEXT: %[[E3:.*]] = arith.addi %p, %[[E2]] : i64
// step: the same ops on the offset's step %s (no base: it does not vary)
// CHECK-NEXT: %[[S0:.*]] = arith.extsi %s : i32 to i64
// CHECK-NEXT: %[[S1:.*]] = arith.muli %[[S0]], %stride : i64
// CHECK-NEXT: %[[S2:.*]] = arith.muli %[[S1]], %c2 : i64
// CHECK-NEXT: %{{.*}}, %{{.*}} = scf.for %i = %c0 to %n step %c1 iter_args(%off = %o0, %[[A:.*]] = %[[E3]]) -> (i32, i64) : i32 {
// CHECK-NEXT:   %cond = arith.cmpi slt, %i, %n : i32
// CHECK-NEXT:   scf.if %cond {
// CHECK-NEXT:     "ptx.st.global"(%[[A]], %i)
// CHECK-NEXT:     %next16 = arith.addi %[[A]], %c16 : i64
// CHECK-NEXT:     "ptx.st.global"(%next16, %i)
// CHECK-NEXT:   } else {
// CHECK-NEXT:     %cold_x = arith.extsi %off : i32 to i64
// CHECK-NEXT:     %cold_addr = arith.addi %p, %cold_x : i64
// CHECK-NEXT:     "ptx.st.global"(%cold_addr, %i)
// CHECK-NEXT:   }{sparsecc.cold_else}
// CHECK-NEXT:   %off_next = arith.addi %off, %s : i32
// CHECK-NEXT:   %[[N:.*]] = arith.addi %[[A]], %[[S2]] : i64
// CHECK-NEXT:   scf.yield %off_next, %[[N]] : i32, i64
// CHECK-NEXT: }

// The second loop: the counter %j is the induction variable (entry %c0, step %c1).
// CHECK:      %[[F0:.*]] = arith.extsi %c0 : i32 to i64
// CHECK-NEXT: %[[F1:.*]] = arith.shli %[[F0]], %c3 : i64
// CHECK-NEXT: %[[F2:.*]] = arith.addi %p, %[[F1]] : i64
// CHECK-NEXT: %[[T0:.*]] = arith.extsi %c1 : i32 to i64
// CHECK-NEXT: %[[T1:.*]] = arith.shli %[[T0]], %c3 : i64
// CHECK-NEXT: scf.for %j = %c0 to %n step %c1 iter_args(%[[B:.*]] = %[[F2]]) -> (i64) : i32 {
// CHECK-NEXT:   %wide = arith.extsi %j : i32 to i64
// CHECK-NEXT:   %big = arith.muli %wide, %stride : i64
// CHECK-NEXT:   %in = arith.cmpi slt, %big, %stride : i64
// CHECK-NEXT:   %inw = arith.extui %in : i1 to i32
// CHECK-NEXT:   "ptx.st.global"(%[[B]], %inw)
// CHECK-NEXT:   %[[M:.*]] = arith.addi %[[B]], %[[T1]] : i64
// CHECK-NEXT:   scf.yield %[[M]] : i64
// CHECK-NEXT: }

// CHECK:      scf.for %k = %c0 to %n step %c1 iter_args(%off3 = %o0) -> (i32) : i32 {
// CHECK-NEXT:   %x3 = arith.extsi %off3 : i32 to i64
// CHECK-NEXT:   %xs3 = arith.muli %x3, %stride : i64
// CHECK-NEXT:   %a3 = arith.addi %p, %xs3 : i64
// CHECK-NEXT:   %v3 = "ptx.ld.global"(%a3)

// In PTX the first loop's body stores through the carried register and adds the step to it:
// PTX: // scf.for {{.*}} carried: %r{{[0-9]+}}, [[ADDR:%rd[0-9]+]]{{$}}
// PTX: $L__loop{{[0-9]+}}:
// PTX-NOT: mul.lo.s64
// PTX: st.global.b32 {{\[}}[[ADDR]]{{\]}}
// PTX-NOT: mul.lo.s64
// PTX: $L__endif{{[0-9]+}}:
// PTX-NEXT: add.s32
// PTX-NEXT: add.s64 [[NEXT:%rd[0-9]+]], [[ADDR]], %rd{{[0-9]+}};
// PTX-NEXT: mov.b32
// PTX-NEXT: mov.b64 [[ADDR]], [[NEXT]];
builtin.module {
  "ptx.kernel"() <{sym_name = "k", target = "sm_80", param_kinds = ["ptr", "i32", "i64", "i32", "i32"], shared_bytes = 0 : i64}> ({
  ^bb0(%p: i64, %n: i32, %stride: i64, %o0: i32, %s: i32):
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c2 = arith.constant 2 : i64
    %c3 = arith.constant 3 : i64
    %c16 = arith.constant 16 : i64
    %r = scf.for %i = %c0 to %n step %c1 iter_args(%off = %o0) -> (i32) : i32 {
      %cond = arith.cmpi slt, %i, %n : i32
      scf.if %cond {
        %x = arith.extsi %off : i32 to i64
        %xs = arith.muli %x, %stride : i64
        %xb = arith.muli %xs, %c2 : i64
        %addr = arith.addi %p, %xb : i64
        "ptx.st.global"(%addr, %i) <{offset = 0 : i64, operandSegmentSizes = array<i32: 1, 1, 0>}> : (i64, i32) -> ()
        %next16 = arith.addi %addr, %c16 : i64
        "ptx.st.global"(%next16, %i) <{offset = 0 : i64, operandSegmentSizes = array<i32: 1, 1, 0>}> : (i64, i32) -> ()
        scf.yield
      } else {
        %cold_x = arith.extsi %off : i32 to i64
        %cold_addr = arith.addi %p, %cold_x : i64
        "ptx.st.global"(%cold_addr, %i) <{offset = 0 : i64, operandSegmentSizes = array<i32: 1, 1, 0>}> : (i64, i32) -> ()
        scf.yield
      } {sparsecc.cold_else}
      %off_next = arith.addi %off, %s : i32
      scf.yield %off_next : i32
    }
    %r2, %dead = scf.for %j = %c0 to %n step %c1 iter_args(%off2 = %o0, %d = %c0) -> (i32, i32) : i32 {
      %wide = arith.extsi %j : i32 to i64
      %big = arith.muli %wide, %stride : i64
      %in = arith.cmpi slt, %big, %stride : i64
      %sh = arith.shli %wide, %c3 : i64
      %a2 = arith.addi %p, %sh : i64
      %inw = arith.extui %in : i1 to i32
      "ptx.st.global"(%a2, %inw) <{offset = 0 : i64, operandSegmentSizes = array<i32: 1, 1, 0>}> : (i64, i32) -> ()
      %off2_next = arith.addi %off2, %s : i32
      %d2 = arith.muli %d, %n : i32
      scf.yield %off2_next, %d2 : i32, i32
    }
    %r3 = scf.for %k = %c0 to %n step %c1 iter_args(%off3 = %o0) -> (i32) : i32 {
      %x3 = arith.extsi %off3 : i32 to i64
      %xs3 = arith.muli %x3, %stride : i64
      %a3 = arith.addi %p, %xs3 : i64
      %v3 = "ptx.ld.global"(%a3) <{offset = 0 : i64, operandSegmentSizes = array<i32: 1, 0, 0>}> : (i64) -> i32
      "ptx.st.global"(%a3, %v3) <{offset = 0 : i64, operandSegmentSizes = array<i32: 1, 1, 0>}> : (i64, i32) -> ()
      %off3_next = arith.addi %off3, %s : i32
      scf.yield %off3_next : i32
    }
  }) : () -> ()
}
