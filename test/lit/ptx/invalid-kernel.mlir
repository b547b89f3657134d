// RUN: not sparsecc-opt %s --split-input-file --emit ptx 2>&1 | filecheck %s
// The ptx.kernel verifier and the PTX printer refuse what ptxas or the launch would: an unknown
// target, more shared memory than a block of the target has, an instruction the target lacks
// (wgmma on sm_80), a statement PTX has on no target (8-bit arithmetic); each at its op.

// CHECK: invalid-kernel.mlir:[[# @LINE + 2]]:3: error: ptx.kernel k: unknown target 'sm_1000' (supported: sm_80, sm_86, sm_89, sm_90, sm_90a)
builtin.module {
  "ptx.kernel"() <{sym_name = "k", target = "sm_1000", param_kinds = [], shared_bytes = 0 : i64}> ({
  ^bb0:
  }) : () -> ()
}

// -----

// CHECK: invalid-kernel.mlir:[[# @LINE + 2]]:3: error: ptx.kernel k: 99999999999 bytes of shared memory exceed the 232448 bytes (227 KiB) one block may use on sm_90
builtin.module {
  "ptx.kernel"() <{sym_name = "k", target = "sm_90", param_kinds = [], shared_bytes = 99999999999 : i64}> ({
  ^bb0:
  }) : () -> ()
}

// -----

// 163 KiB + 1 byte on sm_80
// CHECK: invalid-kernel.mlir:[[# @LINE + 2]]:3: error: ptx.kernel k: 166913 bytes of shared memory exceed the 166912 bytes (163 KiB) one block may use on sm_80
builtin.module {
  "ptx.kernel"() <{sym_name = "k", target = "sm_80", param_kinds = [], shared_bytes = 166913 : i64}> ({
  ^bb0:
  }) : () -> ()
}

// -----

// CHECK: invalid-kernel.mlir:[[# @LINE + 4]]:5: error: cannot lower to PTX: kernel k: 'ptx.wgmma.fence' needs sm_90a for 'wgmma.fence', but the kernel's target is sm_80
builtin.module {
  "ptx.kernel"() <{sym_name = "k", target = "sm_80", param_kinds = ["ptr"], shared_bytes = 0 : i64, maxntid = [128 : i32, 1 : i32, 1 : i32]}> ({
  ^bb0(%D: i64):
    "ptx.wgmma.fence"() : () -> ()
  }) : () -> ()
}

// -----

// CHECK: invalid-kernel.mlir:[[# @LINE + 5]]:5: error: cannot lower to PTX: kernel k: 'ptx.asm' prints 'add.s8', which is not a PTX instruction on any target (PTX has no 8-bit arithmetic: widen to 16 bits first)
builtin.module {
  "ptx.kernel"() <{sym_name = "k", target = "sm_90a", param_kinds = [], shared_bytes = 0 : i64}> ({
  ^bb0:
    %a = "arith.constant"() <{value = 1 : i8}> : () -> i8
    %b = "ptx.asm"(%a, %a) <{template = "add.s8 $0, $1, $2;"}> : (i8, i8) -> i8
  }) : () -> ()
}
