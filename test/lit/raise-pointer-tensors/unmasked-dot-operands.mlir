// RUN: sparsecc-opt %s -p raise-pointer-tensors | filecheck %s
// Unmasked loads whose one use is a tl.dot operand (attention's K and V tiles) become block
// pointers with no boundary check: their dims no mask bounds get the shape 2**31 - 1, never read
// (no check on them, and no TMA tensor map is built from it). An unmasked load with another
// use (x, added to the sum) stays a tensor of pointers; the unmasked store of the dot's
// epilogue tile becomes a block-pointer store without boundary checks (16-byte stores).

// CHECK-LABEL: tt.func public @unmasked_dot_loop
// CHECK: %[[BIG:.*]] = arith.constant 1099511627776 : i64
// CHECK: %[[A:.*]] = tt.make_tensor_ptr %a_ptr, shape=[%[[BIG]], %{{.*}}], {{.*}} {order = array<i32: 1, 0>} : !tt.ptr<tensor<64x32xf16>>
// CHECK: %[[B:.*]] = tt.make_tensor_ptr %b_ptr, {{.*}} : !tt.ptr<tensor<32x64xf16>>
// CHECK: scf.for
// CHECK: %a = tt.load %{{.*}} {padding = 1 : i32} : !tt.ptr<tensor<64x32xf16>>
// CHECK: %b = tt.load %{{.*}} {padding = 1 : i32} : !tt.ptr<tensor<32x64xf16>>
// CHECK: tt.load %{{.*}} : tensor<64x64x!tt.ptr<f32>>
// CHECK: tt.advance
// CHECK: tt.advance
// CHECK: %[[C:.*]] = tt.make_tensor_ptr %c_ptr
// CHECK: tt.store %[[C]], %{{.*}} : !tt.ptr<tensor<64x64xf16>>
// CHECK-NOT: boundaryCheck

builtin.module {
  tt.func public @unmasked_dot_loop(%a_ptr: !tt.ptr<f16>, %b_ptr: !tt.ptr<f16>, %x_ptr: !tt.ptr<f32>, %c_ptr: !tt.ptr<f16>, %stride: i32, %K: i32) {
    %offs_m = tt.make_range {start = 0 : i32, end = 64 : i32} : tensor<64xi32>
    %offs_n = tt.make_range {start = 0 : i32, end = 64 : i32} : tensor<64xi32>
    %offs_k = tt.make_range {start = 0 : i32, end = 32 : i32} : tensor<32xi32>
    %0 = tt.expand_dims %offs_m {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
    %1 = tt.splat %stride : i32 -> tensor<64x1xi32>
    %2 = arith.muli %0, %1 : tensor<64x1xi32>
    %3 = tt.splat %a_ptr : !tt.ptr<f16> -> tensor<64x1x!tt.ptr<f16>>
    %4 = tt.addptr %3, %2 : tensor<64x1x!tt.ptr<f16>>, tensor<64x1xi32>
    %5 = tt.expand_dims %offs_k {axis = 0 : i32} : tensor<32xi32> -> tensor<1x32xi32>
    %6 = tt.broadcast %4 : tensor<64x1x!tt.ptr<f16>> -> tensor<64x32x!tt.ptr<f16>>
    %7 = tt.broadcast %5 : tensor<1x32xi32> -> tensor<64x32xi32>
    %a_ptrs = tt.addptr %6, %7 : tensor<64x32x!tt.ptr<f16>>, tensor<64x32xi32>
    %8 = tt.expand_dims %offs_k {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
    %9 = tt.splat %stride : i32 -> tensor<32x1xi32>
    %10 = arith.muli %8, %9 : tensor<32x1xi32>
    %11 = tt.splat %b_ptr : !tt.ptr<f16> -> tensor<32x1x!tt.ptr<f16>>
    %12 = tt.addptr %11, %10 : tensor<32x1x!tt.ptr<f16>>, tensor<32x1xi32>
    %13 = tt.expand_dims %offs_n {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
    %14 = tt.broadcast %12 : tensor<32x1x!tt.ptr<f16>> -> tensor<32x64x!tt.ptr<f16>>
    %15 = tt.broadcast %13 : tensor<1x64xi32> -> tensor<32x64xi32>
    %b_ptrs = tt.addptr %14, %15 : tensor<32x64x!tt.ptr<f16>>, tensor<32x64xi32>
    %16 = tt.expand_dims %offs_m {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
    %17 = tt.splat %stride : i32 -> tensor<64x1xi32>
    %18 = arith.muli %16, %17 : tensor<64x1xi32>
    %19 = tt.splat %x_ptr : !tt.ptr<f32> -> tensor<64x1x!tt.ptr<f32>>
    %20 = tt.addptr %19, %18 : tensor<64x1x!tt.ptr<f32>>, tensor<64x1xi32>
    %21 = tt.expand_dims %offs_n {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
    %22 = tt.broadcast %20 : tensor<64x1x!tt.ptr<f32>> -> tensor<64x64x!tt.ptr<f32>>
    %23 = tt.broadcast %21 : tensor<1x64xi32> -> tensor<64x64xi32>
    %x_ptrs = tt.addptr %22, %23 : tensor<64x64x!tt.ptr<f32>>, tensor<64x64xi32>
    %acc = arith.constant dense<0.000000e+00> : tensor<64x64xf32>
    %24 = arith.constant 0 : i32
    %25 = arith.constant 32 : i32
    %acc_1, %a_ptrs_1, %b_ptrs_1, %x_ptrs_1 = scf.for %k = %24 to %K step %25 iter_args(%acc_2 = %acc, %a_ptrs_2 = %a_ptrs, %b_ptrs_2 = %b_ptrs, %x_ptrs_2 = %x_ptrs) -> (tensor<64x64xf32>, tensor<64x32x!tt.ptr<f16>>, tensor<32x64x!tt.ptr<f16>>, tensor<64x64x!tt.ptr<f32>>) : i32 {
      %a = tt.load %a_ptrs_2 : tensor<64x32x!tt.ptr<f16>>
      %b = tt.load %b_ptrs_2 : tensor<32x64x!tt.ptr<f16>>
      %26 = tt.dot %a, %b, %acc_2 : tensor<64x32xf16> * tensor<32x64xf16> -> tensor<64x64xf32>
      %27 = tt.load %x_ptrs_2 : tensor<64x64x!tt.ptr<f32>>
      %acc_3 = arith.addf %26, %27 : tensor<64x64xf32>
      %28 = arith.constant 32 : i32
      %29 = arith.constant dense<32> : tensor<64x32xi32>
      %a_ptrs_3 = tt.addptr %a_ptrs_2, %29 : tensor<64x32x!tt.ptr<f16>>, tensor<64x32xi32>
      %30 = arith.muli %28, %stride : i32
      %31 = tt.splat %30 : i32 -> tensor<32x64xi32>
      %b_ptrs_3 = tt.addptr %b_ptrs_2, %31 : tensor<32x64x!tt.ptr<f16>>, tensor<32x64xi32>
      %32 = arith.constant dense<32> : tensor<64x64xi32>
      %x_ptrs_3 = tt.addptr %x_ptrs_2, %32 : tensor<64x64x!tt.ptr<f32>>, tensor<64x64xi32>
      scf.yield %acc_3, %a_ptrs_3, %b_ptrs_3, %x_ptrs_3 : tensor<64x64xf32>, tensor<64x32x!tt.ptr<f16>>, tensor<32x64x!tt.ptr<f16>>, tensor<64x64x!tt.ptr<f32>>
    }
    %33 = tt.expand_dims %offs_m {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
    %34 = tt.splat %stride : i32 -> tensor<64x1xi32>
    %35 = arith.muli %33, %34 : tensor<64x1xi32>
    %36 = tt.splat %c_ptr : !tt.ptr<f16> -> tensor<64x1x!tt.ptr<f16>>
    %37 = tt.addptr %36, %35 : tensor<64x1x!tt.ptr<f16>>, tensor<64x1xi32>
    %38 = tt.expand_dims %offs_n {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
    %39 = tt.broadcast %37 : tensor<64x1x!tt.ptr<f16>> -> tensor<64x64x!tt.ptr<f16>>
    %40 = tt.broadcast %38 : tensor<1x64xi32> -> tensor<64x64xi32>
    %41 = tt.addptr %39, %40 : tensor<64x64x!tt.ptr<f16>>, tensor<64x64xi32>
    %42 = arith.truncf %acc_1 : tensor<64x64xf32> to tensor<64x64xf16>
    tt.store %41, %42 : tensor<64x64x!tt.ptr<f16>>
    tt.return
  }
}

