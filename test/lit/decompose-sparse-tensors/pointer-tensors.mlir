// RUN: sparsecc-opt %s -p decompose-sparse-tensors | filecheck %s
// The tensor-of-pointers idiom `A + rows[:, None] * stride_am + cols[None, :]`, a K step
// (`a_ptrs += 32`) and a masked load with `other`. Each index term is a function of one
// tl.arange, so each array takes it at the first row (column) of its groups by re-emitting the
// function over a strided range (no reshape, no reduction):
//   values pointers 32x16: row term / 2, column term at even columns (arange(16) * 2) / 2, K step 16;
//   metadata pointers 2x32: row term at rows 0 and 16 (arange(2) * 16) / 16, column term as is, K step 32;
//   masks: values take the row mask and the column mask at even columns, metadata the row mask
//   at each 16-row group's first row and the column mask.

// CHECK-NOT: tt.sparse
// CHECK-NOT: tt.reshape
// CHECK-NOT: tt.reduce
// CHECK-LABEL: tt.func public @ptrs(%A_values: !tt.ptr<f16>, %A_meta: !tt.ptr<i16>, %M: i32, %K: i32, %stride_am: i32)
// CHECK: %base_values = tt.splat %A_values : !tt.ptr<f16> -> tensor<32x1x!tt.ptr<f16>>
// CHECK: %base_meta = tt.splat %A_meta : !tt.ptr<i16> -> tensor<2x1x!tt.ptr<i16>>
// CHECK: %[[RV:.*]] = arith.divsi %roff, %{{.*}} : tensor<32x1xi32>
// CHECK: %[[R2:.*]] = tt.make_range {start = 0 : i32, end = 2 : i32} : tensor<2xi32>
// CHECK: %[[R16:.*]] = arith.muli %[[R2]], %{{.*}} : tensor<2xi32>
// CHECK: %[[RE:.*]] = tt.expand_dims %[[R16]] {axis = 1 : i32} : tensor<2xi32> -> tensor<2x1xi32>
// CHECK: %[[RS:.*]] = arith.muli %[[RE]], %{{.*}} : tensor<2x1xi32>
// CHECK: %[[RM:.*]] = arith.divsi %[[RS]], %{{.*}} : tensor<2x1xi32>
// CHECK: %prow_values = tt.addptr %base_values, %[[RV]] : tensor<32x1x!tt.ptr<f16>>, tensor<32x1xi32>
// CHECK: %prow_meta = tt.addptr %base_meta, %[[RM]] : tensor<2x1x!tt.ptr<i16>>, tensor<2x1xi32>
// CHECK: %[[C16:.*]] = tt.make_range {start = 0 : i32, end = 16 : i32} : tensor<16xi32>
// CHECK: %[[CEVEN:.*]] = arith.muli %[[C16]], %{{.*}} : tensor<16xi32>
// CHECK: tt.expand_dims %[[CEVEN]] {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
// CHECK: %a_ptrs_values = tt.addptr %pb_values, %{{.*}} : tensor<32x16x!tt.ptr<f16>>, tensor<32x16xi32>
// CHECK: %a_ptrs_meta = tt.addptr %pb_meta, %{{.*}} : tensor<2x32x!tt.ptr<i16>>, tensor<2x32xi32>
// CHECK-DAG: %[[K32:.*]] = arith.constant 32 : i32
// CHECK-DAG: %[[K16:.*]] = arith.constant 16 : i32
// CHECK: %[[SV:.*]] = tt.splat %[[K16]] : i32 -> tensor<32x16xi32>
// CHECK: %[[SM:.*]] = tt.splat %[[K32]] : i32 -> tensor<2x32xi32>
// CHECK: %next_values = tt.addptr %a_ptrs_values, %[[SV]]
// CHECK: %next_meta = tt.addptr %a_ptrs_meta, %[[SM]]
// CHECK: arith.cmpi slt, %{{.*}}, %{{.*}} : tensor<2x1xi32>
// CHECK: arith.cmpi slt, %{{.*}}, %{{.*}} : tensor<1x16xi32>
// CHECK: %[[VM:.*]] = arith.andi %{{.*}}, %{{.*}} : tensor<32x16xi1>
// CHECK: %[[MM:.*]] = arith.andi %{{.*}}, %{{.*}} : tensor<2x32xi1>
// CHECK: %[[VO:.*]] = arith.constant dense<0.000000e+00> : tensor<32x16xf16>
// CHECK: %[[MO:.*]] = arith.constant dense<0> : tensor<2x32xi16>
// CHECK: %a_values = tt.load %next_values, %[[VM]], %[[VO]] : tensor<32x16x!tt.ptr<f16>>
// CHECK: %a_meta = tt.load %next_meta, %[[MM]], %[[MO]] : tensor<2x32x!tt.ptr<i16>>
// CHECK: tt.dot %a_values, %b, %a_meta, %c, sparseIndex = 0 : tensor<32x16xf16>, tensor<2x32xi16> * tensor<32x16xf16> -> tensor<32x16xf32>
// CHECK-NOT: tt.sparse

builtin.module {
  tt.func public @ptrs(%A: !tt.ptr<f16, #tt.sparse<"NV24">>, %M: i32, %K: i32, %stride_am: i32) {
    %offs_m = tt.make_range {start = 0 : i32, end = 32 : i32} : tensor<32xi32>
    %offs_k = tt.make_range {start = 0 : i32, end = 32 : i32} : tensor<32xi32>
    %rows = tt.expand_dims %offs_m {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
    %sam = tt.splat %stride_am : i32 -> tensor<32x1xi32>
    %roff = arith.muli %rows, %sam : tensor<32x1xi32>
    %base = tt.splat %A : !tt.ptr<f16, #tt.sparse<"NV24">> -> tensor<32x1x!tt.ptr<f16, #tt.sparse<"NV24">>, #tt.sparse<"NV24">>
    %prow = tt.addptr %base, %roff : tensor<32x1x!tt.ptr<f16, #tt.sparse<"NV24">>, #tt.sparse<"NV24">>, tensor<32x1xi32>
    %cols = tt.expand_dims %offs_k {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
    %pb = tt.broadcast %prow : tensor<32x1x!tt.ptr<f16, #tt.sparse<"NV24">>, #tt.sparse<"NV24">> -> tensor<32x32x!tt.ptr<f16, #tt.sparse<"NV24">>, #tt.sparse<"NV24">>
    %cb = tt.broadcast %cols : tensor<1x32xi32> -> tensor<32x32xi32>
    %a_ptrs = tt.addptr %pb, %cb : tensor<32x32x!tt.ptr<f16, #tt.sparse<"NV24">>, #tt.sparse<"NV24">>, tensor<32x32xi32>
    %step = arith.constant dense<32> : tensor<32x32xi32>
    %next = tt.addptr %a_ptrs, %step : tensor<32x32x!tt.ptr<f16, #tt.sparse<"NV24">>, #tt.sparse<"NV24">>, tensor<32x32xi32>
    %sm = tt.splat %M : i32 -> tensor<32x1xi32>
    %rmask = arith.cmpi slt, %rows, %sm : tensor<32x1xi32>
    %sk = tt.splat %K : i32 -> tensor<1x32xi32>
    %cmask = arith.cmpi slt, %cols, %sk : tensor<1x32xi32>
    %rm = tt.broadcast %rmask : tensor<32x1xi1> -> tensor<32x32xi1>
    %cm = tt.broadcast %cmask : tensor<1x32xi1> -> tensor<32x32xi1>
    %mask = arith.andi %rm, %cm : tensor<32x32xi1>
    %zero = arith.constant dense<0.000000e+00> : tensor<32x32xf16>
    %a = tt.load %next, %mask, %zero : tensor<32x32x!tt.ptr<f16, #tt.sparse<"NV24">>, #tt.sparse<"NV24">>
    %b = arith.constant dense<1.000000e+00> : tensor<32x16xf16>
    %c = arith.constant dense<0.000000e+00> : tensor<32x16xf32>
    %d = tt.dot %a, %b, %c : tensor<32x32xf16, #tt.sparse<"NV24">> * tensor<32x16xf16> -> tensor<32x16xf32>
    tt.return
  }
}
