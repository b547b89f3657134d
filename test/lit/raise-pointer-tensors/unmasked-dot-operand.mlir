// RUN: sparsecc-opt %s -p raise-pointer-tensors | filecheck %s
// A grouped GEMM's K loop (bench/moe.py): the 2:4 weight tile is loaded without any mask (its N
// and K tile exactly), the K-major x tile is masked on its token dim only. Both become block
// pointers: an unmasked dim gets the extent 2**40 (UNBOUNDED: too large for a TMA tensor map)
// and no boundary check, the masked dim keeps its bound (T) and check. An unmasked load that
// feeds no dot (the row sums `tot`) stays a tensor of pointers.

// CHECK-LABEL: tt.func public @grouped_rows_kernel
// CHECK: %[[U1:.*]] = arith.constant 1099511627776 : i64
// CHECK: %[[U2:.*]] = arith.constant 1099511627776 : i64
// CHECK: %[[W:.*]] = tt.make_tensor_ptr %w_ptr, shape=[%[[U1]], %[[U2]]], strides=[%{{.*}}, %{{.*}}], offsets=[%{{.*}}, %{{.*}}] {order = array<i32: 1, 0>} : !tt.ptr<tensor<32x32xf16, #tt.sparse<"NV24">>>
// CHECK: %[[U3:.*]] = arith.constant 1099511627776 : i64
// CHECK: %[[T:.*]] = arith.extsi %T : i32 to i64
// CHECK: %[[X:.*]] = tt.make_tensor_ptr %x_ptr, shape=[%[[U3]], %[[T]]], strides=[%{{.*}}, %{{.*}}], offsets=[%{{.*}}, %{{.*}}] {order = array<i32: 0, 1>} : !tt.ptr<tensor<32x16xf16>>
// CHECK: scf.for {{.*}} iter_args({{.*}}, %[[WP:.*]] = %[[W]], %[[XP:.*]] = %[[X]], %[[SP:.*]] = %s_ptrs)
// CHECK: %w = tt.load %[[WP]] {padding = 1 : i32} : !tt.ptr<tensor<32x32xf16, #tt.sparse<"NV24">>>
// CHECK: %xt = tt.load %[[XP]] {boundaryCheck = array<i32: 1>, padding = 1 : i32} : !tt.ptr<tensor<32x16xf16>>
// CHECK: tt.load %[[SP]] : tensor<32x32x!tt.ptr<f16>>
// CHECK: tt.addptr %[[SP]]
// CHECK: tt.advance %[[WP]]
// CHECK: tt.advance %[[XP]]

builtin.module {
  tt.func public @grouped_rows_kernel(%w_ptr: !tt.ptr<f16, #tt.sparse<"NV24">>, %x_ptr: !tt.ptr<f16>, %y_ptr: !tt.ptr<f16>, %s_ptr: !tt.ptr<f16>, %T: i32, %K: i32, %stride_wn: i32, %stride_xm: i32, %stride_ym: i32) {
    %pid = tt.get_program_id x : i32
    %0 = arith.constant 32 : i32
    %1 = arith.muli %pid, %0 : i32
    %2 = tt.make_range {start = 0 : i32, end = 32 : i32} : tensor<32xi32>
    %3 = tt.splat %1 : i32 -> tensor<32xi32>
    %offs_n = arith.addi %3, %2 : tensor<32xi32>
    %offs_t = tt.make_range {start = 0 : i32, end = 16 : i32} : tensor<16xi32>
    %offs_k = tt.make_range {start = 0 : i32, end = 32 : i32} : tensor<32xi32>
    %4 = tt.expand_dims %offs_n {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
    %5 = tt.splat %stride_wn : i32 -> tensor<32x1xi32>
    %6 = arith.muli %4, %5 : tensor<32x1xi32>
    %7 = tt.splat %w_ptr : !tt.ptr<f16, #tt.sparse<"NV24">> -> tensor<32x1x!tt.ptr<f16, #tt.sparse<"NV24">>, #tt.sparse<"NV24">>
    %8 = tt.addptr %7, %6 : tensor<32x1x!tt.ptr<f16, #tt.sparse<"NV24">>, #tt.sparse<"NV24">>, tensor<32x1xi32>
    %9 = tt.expand_dims %offs_k {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
    %10 = tt.broadcast %8 : tensor<32x1x!tt.ptr<f16, #tt.sparse<"NV24">>, #tt.sparse<"NV24">> -> tensor<32x32x!tt.ptr<f16, #tt.sparse<"NV24">>, #tt.sparse<"NV24">>
    %11 = tt.broadcast %9 : tensor<1x32xi32> -> tensor<32x32xi32>
    %w_ptrs = tt.addptr %10, %11 : tensor<32x32x!tt.ptr<f16, #tt.sparse<"NV24">>, #tt.sparse<"NV24">>, tensor<32x32xi32>
    %12 = tt.expand_dims %offs_t {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
    %13 = tt.splat %stride_xm : i32 -> tensor<1x16xi32>
    %14 = arith.muli %12, %13 : tensor<1x16xi32>
    %15 = tt.splat %x_ptr : !tt.ptr<f16> -> tensor<1x16x!tt.ptr<f16>>
    %16 = tt.addptr %15, %14 : tensor<1x16x!tt.ptr<f16>>, tensor<1x16xi32>
    %17 = tt.expand_dims %offs_k {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
    %18 = tt.broadcast %16 : tensor<1x16x!tt.ptr<f16>> -> tensor<32x16x!tt.ptr<f16>>
    %19 = tt.broadcast %17 : tensor<32x1xi32> -> tensor<32x16xi32>
    %x_ptrs = tt.addptr %18, %19 : tensor<32x16x!tt.ptr<f16>>, tensor<32x16xi32>
    %20 = tt.expand_dims %offs_n {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
    %21 = tt.splat %stride_wn : i32 -> tensor<32x1xi32>
    %22 = arith.muli %20, %21 : tensor<32x1xi32>
    %23 = tt.splat %s_ptr : !tt.ptr<f16> -> tensor<32x1x!tt.ptr<f16>>
    %24 = tt.addptr %23, %22 : tensor<32x1x!tt.ptr<f16>>, tensor<32x1xi32>
    %25 = tt.expand_dims %offs_k {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
    %26 = tt.broadcast %24 : tensor<32x1x!tt.ptr<f16>> -> tensor<32x32x!tt.ptr<f16>>
    %27 = tt.broadcast %25 : tensor<1x32xi32> -> tensor<32x32xi32>
    %s_ptrs = tt.addptr %26, %27 : tensor<32x32x!tt.ptr<f16>>, tensor<32x32xi32>
    %acc = arith.constant dense<0.000000e+00> : tensor<32x16xf32>
    %tot = arith.constant dense<0.000000e+00> : tensor<32x32xf32>
    %28 = arith.divsi %K, %0 : i32
    %29 = arith.constant 0 : i32
    %30 = arith.constant 1 : i32
    %acc_1, %tot_1, %w_ptrs_1, %x_ptrs_1, %s_ptrs_1 = scf.for %_ = %29 to %28 step %30 iter_args(%acc_2 = %acc, %tot_2 = %tot, %w_ptrs_2 = %w_ptrs, %x_ptrs_2 = %x_ptrs, %s_ptrs_2 = %s_ptrs) -> (tensor<32x16xf32>, tensor<32x32xf32>, tensor<32x32x!tt.ptr<f16, #tt.sparse<"NV24">>, #tt.sparse<"NV24">>, tensor<32x16x!tt.ptr<f16>>, tensor<32x32x!tt.ptr<f16>>) : i32 {
      %w = tt.load %w_ptrs_2 : tensor<32x32x!tt.ptr<f16, #tt.sparse<"NV24">>, #tt.sparse<"NV24">>
      %31 = tt.expand_dims %offs_t {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
      %32 = tt.splat %T : i32 -> tensor<1x16xi32>
      %33 = arith.cmpi slt, %31, %32 : tensor<1x16xi32>
      %34 = tt.broadcast %33 : tensor<1x16xi1> -> tensor<32x16xi1>
      %35 = arith.constant dense<0.000000e+00> : tensor<32x16xf16>
      %xt = tt.load %x_ptrs_2, %34, %35 : tensor<32x16x!tt.ptr<f16>>
      %acc_3 = tt.dot %w, %xt, %acc_2 : tensor<32x32xf16, #tt.sparse<"NV24">> * tensor<32x16xf16> -> tensor<32x16xf32>
      %36 = tt.load %s_ptrs_2 : tensor<32x32x!tt.ptr<f16>>
      %37 = arith.extf %36 : tensor<32x32xf16> to tensor<32x32xf32>
      %tot_3 = arith.addf %tot_2, %37 : tensor<32x32xf32>
      %38 = arith.constant 32 : i32
      %39 = arith.constant dense<32> : tensor<32x32xi32>
      %w_ptrs_3 = tt.addptr %w_ptrs_2, %39 : tensor<32x32x!tt.ptr<f16, #tt.sparse<"NV24">>, #tt.sparse<"NV24">>, tensor<32x32xi32>
      %40 = arith.constant dense<32> : tensor<32x16xi32>
      %x_ptrs_3 = tt.addptr %x_ptrs_2, %40 : tensor<32x16x!tt.ptr<f16>>, tensor<32x16xi32>
      %41 = arith.constant dense<32> : tensor<32x32xi32>
      %s_ptrs_3 = tt.addptr %s_ptrs_2, %41 : tensor<32x32x!tt.ptr<f16>>, tensor<32x32xi32>
      scf.yield %acc_3, %tot_3, %w_ptrs_3, %x_ptrs_3, %s_ptrs_3 : tensor<32x16xf32>, tensor<32x32xf32>, tensor<32x32x!tt.ptr<f16, #tt.sparse<"NV24">>, #tt.sparse<"NV24">>, tensor<32x16x!tt.ptr<f16>>, tensor<32x32x!tt.ptr<f16>>
    }
    %42 = tt.reduce sum %tot_1 {axis = 1 : i32} : tensor<32x32xf32> -> tensor<32xf32>
    %43 = tt.expand_dims %42 {axis = 1 : i32} : tensor<32xf32> -> tensor<32x1xf32>
    %44 = tt.broadcast %43 : tensor<32x1xf32> -> tensor<32x16xf32>
    %acc_4 = arith.addf %acc_1, %44 : tensor<32x16xf32>
    %45 = tt.expand_dims %offs_t {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
    %46 = tt.splat %stride_ym : i32 -> tensor<1x16xi32>
    %47 = arith.muli %45, %46 : tensor<1x16xi32>
    %48 = tt.splat %y_ptr : !tt.ptr<f16> -> tensor<1x16x!tt.ptr<f16>>
    %49 = tt.addptr %48, %47 : tensor<1x16x!tt.ptr<f16>>, tensor<1x16xi32>
    %50 = tt.expand_dims %offs_n {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
    %51 = tt.broadcast %49 : tensor<1x16x!tt.ptr<f16>> -> tensor<32x16x!tt.ptr<f16>>
    %52 = tt.broadcast %50 : tensor<32x1xi32> -> tensor<32x16xi32>
    %y_ptrs = tt.addptr %51, %52 : tensor<32x16x!tt.ptr<f16>>, tensor<32x16xi32>
    %53 = arith.truncf %acc_4 : tensor<32x16xf32> to tensor<32x16xf16>
    %54 = tt.expand_dims %offs_t {axis = 0 : i32} : tensor<16xi32> -> tensor<1x16xi32>
    %55 = tt.splat %T : i32 -> tensor<1x16xi32>
    %56 = arith.cmpi slt, %54, %55 : tensor<1x16xi32>
    %57 = tt.broadcast %56 : tensor<1x16xi1> -> tensor<32x16xi1>
    tt.store %y_ptrs, %53, %57 : tensor<32x16x!tt.ptr<f16>>
    tt.return
  }
}

