// RUN: not sparsecc-opt %s -p decompose-sparse-tensors 2>&1 | filecheck %s
// A mask that is not `rows[:, None] & cols[None, :]` cannot be split per half: the error
// names the load and points at its line.

// CHECK: invalid-mask.mlir:15:5: error: {{.*}}'tt.load'{{.*}}mask of a sparse load must be rows[:, None] & cols[None, :]
// CHECK-NOT: Traceback
builtin.module {
  tt.func public @k(%A: !tt.ptr<f16, #tt.sparse<"NV24">>, %mask: tensor<16x16xi1>) {
    %r = tt.make_range {start = 0 : i32, end = 16 : i32} : tensor<16xi32>
    %c = tt.expand_dims %r {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
    %cb = tt.broadcast %c : tensor<1x16xi32> -> tensor<16x16xi32>
    %base = tt.splat %A : !tt.ptr<f16, #tt.sparse<"NV24">> -> tensor<16x16x!tt.ptr<f16, #tt.sparse<"NV24">>, #tt.sparse<"NV24">>
    %p = tt.addptr %base, %cb : tensor<16x16x!tt.ptr<f16, #tt.sparse<"NV24">>, #tt.sparse<"NV24">>, tensor<16x16xi32>
    %zero = arith.constant dense<0.000000e+00> : tensor<16x16xf16>
    %a = tt.load %p, %mask, %zero : tensor<16x16x!tt.ptr<f16, #tt.sparse<"NV24">>, #tt.sparse<"NV24">>
    tt.return
  }
}
