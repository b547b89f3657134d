// RUN: not sparsecc-opt %s 2>&1 | filecheck %s
// tt.atomic_rmw's sem is one of relaxed, acquire, release, acq_rel.

// CHECK: invalid-atomic-sem.mlir:[[# @LINE + 4]]:{{[0-9]+}}: error: {{.*}}sem must be one of {{.*}}got 'seq_cst'
// CHECK-NOT: Traceback
builtin.module {
  tt.func @f(%c: !tt.ptr<i32>, %one: i32) {
    %x = tt.atomic_rmw "add", %c, %one {sem = "seq_cst"} : !tt.ptr<i32>, i32 -> i32
    tt.return
  }
}
