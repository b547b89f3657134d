// RUN: not sparsecc-opt %s -p convert-tt-to-ttg 2>&1 | filecheck %s
// A #tt.sparse type left for convert-tt-to-ttg is reported at the op that holds it (it was once
// an error without a place).

// CHECK: invalid-sparse.mlir:[[# @LINE + 5]]:5: error: pass 'convert-tt-to-ttg' failed: convert-tt-to-ttg: tt.splat still has a #tt.sparse type; run decompose-sparse-tensors first
builtin.module {
  tt.func public @k(%A: !tt.ptr<f16, #tt.sparse<"NV24">>) {
    %r = tt.make_range {start = 0 : i32, end = 16 : i32} : tensor<16xi32>
    %e = tt.expand_dims %r {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
    %s = tt.splat %A : !tt.ptr<f16, #tt.sparse<"NV24">> -> tensor<16x16x!tt.ptr<f16, #tt.sparse<"NV24">>, #tt.sparse<"NV24">>
    tt.return
  }
}
