// RUN: not sparsecc-opt %s -p decompose-sparse-tensors 2>&1 | filecheck %s
// One element of a 2:4 matrix has no values/metadata address: a located error naming the load
// (this once stopped the pass with an internal AssertionError).

// CHECK: invalid-scalar-load.mlir:[[# @LINE + 5]]:5: error: pass 'decompose-sparse-tensors' failed: 'tt.load' (defining %x): cannot load one element through a sparse (#tt.sparse<"NV24">) pointer
// CHECK-NOT: internal error
// CHECK-NOT: Traceback
builtin.module {
  tt.func public @k(%A: !tt.ptr<f16, #tt.sparse<"NV24">>) {
    %x = tt.load %A : !tt.ptr<f16, #tt.sparse<"NV24">>
    tt.return
  }
}
