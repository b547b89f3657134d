// RUN: sparsecc-opt %s -p raise-pointer-tensors | filecheck %s
// A K loop written with tensors of pointers (masked rows and K columns, `a_ptrs += BLOCK_K *
// stride_ak`, `for k in range(0, K, BLOCK_K)`, `rk[None, :] + k < K`) becomes block pointers:
// shape = the mask bounds (M, K) and (K, N), offsets = the starts, order = the unit-stride dim
// first; the masked epilogue store becomes a block-pointer store with boundary checks.

// CHECK-LABEL: tt.func public @masked_matmul_kernel
// CHECK: %[[AM:.*]] = arith.extsi %M : i32 to i64
// CHECK: %[[AK:.*]] = arith.extsi %K : i32 to i64
// CHECK: %[[SAM:.*]] = arith.extsi %stride_am : i32 to i64
// CHECK: %[[ONE:.*]] = arith.constant 1 : i64
// CHECK: %[[ROW0:.*]] = arith.muli %pid_m, %{{.*}} : i32
// CHECK: %[[A:.*]] = tt.make_tensor_ptr %a_ptr, shape=[%[[AM]], %[[AK]]], strides=[%[[SAM]], %[[ONE]]], offsets=[%[[ROW0]], %{{.*}}] {order = array<i32: 1, 0>} : !tt.ptr<tensor<32x32xf16, #tt.sparse<"NV24">>>
// CHECK: %[[B:.*]] = tt.make_tensor_ptr %b_ptr, shape=[%{{.*}}, %{{.*}}], strides=[%{{.*}}, %{{.*}}], offsets=[%{{.*}}, %{{.*}}] {order = array<i32: 1, 0>} : !tt.ptr<tensor<32x16xf16>>
// CHECK: scf.for %k = %{{.*}} to %K step %{{.*}} iter_args(%{{.*}} = %{{.*}}, %[[AP:.*]] = %[[A]], %[[BP:.*]] = %[[B]])
// CHECK-NOT: tt.addptr
// CHECK: %a = tt.load %[[AP]] {boundaryCheck = array<i32: 0, 1>, padding = 1 : i32}
// CHECK: %b = tt.load %[[BP]] {boundaryCheck = array<i32: 0, 1>, padding = 1 : i32}
// CHECK: tt.advance %[[AP]], [%{{.*}}, %{{.*}}]
// CHECK: tt.advance %[[BP]], [%{{.*}}, %{{.*}}]
// CHECK: %[[C:.*]] = tt.make_tensor_ptr %c_ptr
// CHECK: tt.store %[[C]], %{{.*}} {boundaryCheck = array<i32: 0, 1>}
// CHECK-NOT: tt.addptr

builtin.module {
  tt.func public @masked_matmul_kernel(%a_ptr: !tt.ptr<f16, #tt.sparse<"NV24">>, %b_ptr: !tt.ptr<f16>, %c_ptr: !tt.ptr<f16>, %M: i32, %N: i32, %K: i32, %stride_am: i32, %stride_ak: i32, %stride_bk: i32, %stride_bn: i32, %stride_cm: i32, %stride_cn: i32) {
    %stride_ak_1 = arith.constant 1 : i32
    %stride_bn_1 = arith.constant 1 : i32
    %stride_cn_1 = arith.constant 1 : i32
    %pid_m = tt.get_program_id x : i32
    %pid_n = tt.get_program_id y : i32
    %0 = arith.constant 32 : i32
    %1 = arith.muli %pid_m, %0 : i32
    %2 = tt.make_range {start = 0 : i32, end = 32 : i32} : tensor<32xi32>
    %3 = tt.splat %1 : i32 -> tensor<32xi32>
    %rm = arith.addi %3, %2 : tensor<32xi32>
    %4 = arith.constant 16 : i32
    %5 = arith.muli %pid_n, %4 : i32
    %6 = tt.make_range {start = 0 : i32, end = 16 : i32} : tensor<16xi32>
    %7 = tt.splat %5 : i32 -> tensor<16xi32>
    %rn = arith.addi %7, %6 : tensor<16xi32>
    %rk = tt.make_range {start = 0 : i32, end = 32 : i32} : tensor<32xi32>
    %8 = tt.expand_dims %rk {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
    %9 = arith.constant dense<1> : tensor<1x32xi32>
    %10 = arith.muli %8, %9 : tensor<1x32xi32>
    %11 = tt.splat %a_ptr : !tt.ptr<f16, #tt.sparse<"NV24">> -> tensor<1x32x!tt.ptr<f16, #tt.sparse<"NV24">>, #tt.sparse<"NV24">>
    %12 = tt.addptr %11, %10 : tensor<1x32x!tt.ptr<f16, #tt.sparse<"NV24">>, #tt.sparse<"NV24">>, tensor<1x32xi32>
    %13 = tt.expand_dims %rm {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
    %14 = tt.splat %stride_am : i32 -> tensor<32x1xi32>
    %15 = arith.muli %13, %14 : tensor<32x1xi32>
    %16 = tt.broadcast %12 : tensor<1x32x!tt.ptr<f16, #tt.sparse<"NV24">>, #tt.sparse<"NV24">> -> tensor<32x32x!tt.ptr<f16, #tt.sparse<"NV24">>, #tt.sparse<"NV24">>
    %17 = tt.broadcast %15 : tensor<32x1xi32> -> tensor<32x32xi32>
    %a_ptrs = tt.addptr %16, %17 : tensor<32x32x!tt.ptr<f16, #tt.sparse<"NV24">>, #tt.sparse<"NV24">>, tensor<32x32xi32>
    %18 = tt.expand_dims %rk {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
    %19 = tt.splat %stride_bk : i32 -> tensor<32x1xi32>
    %20 = arith.muli %18, %19 : tensor<32x1xi32>
    %21 = tt.splat %b_ptr : !tt.ptr<f16> -> tensor<32x1x!tt.ptr<f16>>
    %22 = tt.addptr %21, %20 : tensor<32x1x!tt.ptr<f16>>, tensor<32x1xi32>
    %23 = tt.expand_dims %rn {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
    %24 = arith.constant dense<1> : tensor<1x16xi32>
    %25 = arith.muli %23, %24 : tensor<1x16xi32>
    %26 = tt.broadcast %22 : tensor<32x1x!tt.ptr<f16>> -> tensor<32x16x!tt.ptr<f16>>
    %27 = tt.broadcast %25 : tensor<1x16xi32> -> tensor<32x16xi32>
    %b_ptrs = tt.addptr %26, %27 : tensor<32x16x!tt.ptr<f16>>, tensor<32x16xi32>
    %acc = arith.constant dense<0.000000e+00> : tensor<32x16xf32>
    %28 = arith.constant 0 : i32
    %acc_1, %a_ptrs_1, %b_ptrs_1 = scf.for %k = %28 to %K step %0 iter_args(%acc_2 = %acc, %a_ptrs_2 = %a_ptrs, %b_ptrs_2 = %b_ptrs) -> (tensor<32x16xf32>, tensor<32x32x!tt.ptr<f16, #tt.sparse<"NV24">>, #tt.sparse<"NV24">>, tensor<32x16x!tt.ptr<f16>>) : i32 {
      %29 = tt.expand_dims %rm {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
      %30 = tt.splat %M : i32 -> tensor<32x1xi32>
      %31 = arith.cmpi slt, %29, %30 : tensor<32x1xi32>
      %32 = tt.expand_dims %rk {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
      %33 = tt.splat %k : i32 -> tensor<1x32xi32>
      %34 = arith.addi %32, %33 : tensor<1x32xi32>
      %35 = tt.splat %K : i32 -> tensor<1x32xi32>
      %36 = arith.cmpi slt, %34, %35 : tensor<1x32xi32>
      %37 = tt.broadcast %31 : tensor<32x1xi1> -> tensor<32x32xi1>
      %38 = tt.broadcast %36 : tensor<1x32xi1> -> tensor<32x32xi1>
      %39 = arith.andi %37, %38 : tensor<32x32xi1>
      %40 = arith.constant dense<0.000000e+00> : tensor<32x32xf16>
      %a = tt.load %a_ptrs_2, %39, %40 : tensor<32x32x!tt.ptr<f16, #tt.sparse<"NV24">>, #tt.sparse<"NV24">>
      %41 = tt.expand_dims %rk {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
      %42 = tt.splat %k : i32 -> tensor<32x1xi32>
      %43 = arith.addi %41, %42 : tensor<32x1xi32>
      %44 = tt.splat %K : i32 -> tensor<32x1xi32>
      %45 = arith.cmpi slt, %43, %44 : tensor<32x1xi32>
      %46 = tt.expand_dims %rn {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
      %47 = tt.splat %N : i32 -> tensor<1x16xi32>
      %48 = arith.cmpi slt, %46, %47 : tensor<1x16xi32>
      %49 = tt.broadcast %45 : tensor<32x1xi1> -> tensor<32x16xi1>
      %50 = tt.broadcast %48 : tensor<1x16xi1> -> tensor<32x16xi1>
      %51 = arith.andi %49, %50 : tensor<32x16xi1>
      %52 = arith.constant dense<0.000000e+00> : tensor<32x16xf16>
      %b = tt.load %b_ptrs_2, %51, %52 : tensor<32x16x!tt.ptr<f16>>
      %53 = arith.constant dense<0.000000e+00> : tensor<32x16xf32>
      %54 = tt.dot %a, %b, %53 : tensor<32x32xf16, #tt.sparse<"NV24">> * tensor<32x16xf16> -> tensor<32x16xf32>
      %acc_3 = arith.addf %acc_2, %54 : tensor<32x16xf32>
      %55 = arith.constant 32 : i32
      %56 = arith.muli %55, %stride_ak_1 : i32
      %57 = tt.splat %56 : i32 -> tensor<32x32xi32>
      %a_ptrs_3 = tt.addptr %a_ptrs_2, %57 : tensor<32x32x!tt.ptr<f16, #tt.sparse<"NV24">>, #tt.sparse<"NV24">>, tensor<32x32xi32>
      %58 = arith.muli %55, %stride_bk : i32
      %59 = tt.splat %58 : i32 -> tensor<32x16xi32>
      %b_ptrs_3 = tt.addptr %b_ptrs_2, %59 : tensor<32x16x!tt.ptr<f16>>, tensor<32x16xi32>
      scf.yield %acc_3, %a_ptrs_3, %b_ptrs_3 : tensor<32x16xf32>, tensor<32x32x!tt.ptr<f16, #tt.sparse<"NV24">>, #tt.sparse<"NV24">>, tensor<32x16x!tt.ptr<f16>>
    }
    %60 = tt.expand_dims %rm {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
    %61 = tt.splat %stride_cm : i32 -> tensor<32x1xi32>
    %62 = arith.muli %60, %61 : tensor<32x1xi32>
    %63 = tt.splat %c_ptr : !tt.ptr<f16> -> tensor<32x1x!tt.ptr<f16>>
    %64 = tt.addptr %63, %62 : tensor<32x1x!tt.ptr<f16>>, tensor<32x1xi32>
    %65 = tt.expand_dims %rn {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
    %66 = arith.constant dense<1> : tensor<1x16xi32>
    %67 = arith.muli %65, %66 : tensor<1x16xi32>
    %68 = tt.broadcast %64 : tensor<32x1x!tt.ptr<f16>> -> tensor<32x16x!tt.ptr<f16>>
    %69 = tt.broadcast %67 : tensor<1x16xi32> -> tensor<32x16xi32>
    %c_ptrs = tt.addptr %68, %69 : tensor<32x16x!tt.ptr<f16>>, tensor<32x16xi32>
    %70 = arith.truncf %acc_1 : tensor<32x16xf32> to tensor<32x16xf16>
    %71 = tt.expand_dims %rm {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
    %72 = tt.splat %M : i32 -> tensor<32x1xi32>
    %73 = arith.cmpi slt, %71, %72 : tensor<32x1xi32>
    %74 = tt.expand_dims %rn {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
    %75 = tt.splat %N : i32 -> tensor<1x16xi32>
    %76 = arith.cmpi slt, %74, %75 : tensor<1x16xi32>
    %77 = tt.broadcast %73 : tensor<32x1xi1> -> tensor<32x16xi1>
    %78 = tt.broadcast %76 : tensor<1x16xi1> -> tensor<32x16xi1>
    %79 = arith.andi %77, %78 : tensor<32x16xi1>
    tt.store %c_ptrs, %70, %79 : tensor<32x16x!tt.ptr<f16>>
    tt.return
  }
}
