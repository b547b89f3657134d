// RUN: sparsecc-opt %S/../convert-tt-to-ttg/quant-wgmma.mlir -p "decompose-sparse-tensors,convert-tt-to-ttg{num-warps=4 target=sm_90a quant-wgmma=true},sparse-gpu-encoding,tritongpu-pipeline{num-stages=3 mbarriers=true}" | filecheck %s
// RUN: sparsecc-opt %S/../convert-tt-to-ttg/quant-wgmma.mlir -p "decompose-sparse-tensors,convert-tt-to-ttg{num-warps=4 target=sm_90a quant-wgmma=true register-scales=false},sparse-gpu-encoding,tritongpu-pipeline{num-stages=3 mbarriers=true}" | filecheck %s --check-prefix=OFF
// RUN: sed 's/array<i32: 0, 1>, padding = 1 : i32} : !tt.ptr<tensor<64x128xf16, #tt.sparse/array<i32: 0>, padding = 1 : i32} : !tt.ptr<tensor<64x128xf16, #tt.sparse/' %S/../convert-tt-to-ttg/quant-wgmma.mlir | sparsecc-opt - -p "decompose-sparse-tensors,convert-tt-to-ttg{num-warps=4 target=sm_90a quant-wgmma=true},sparse-gpu-encoding,tritongpu-pipeline{num-stages=3 mbarriers=true}" | filecheck %s --check-prefix=UNCHECKED

// A wgmma K loop whose A is dequantized into its fragments (quant-wgmma): convert-tt-to-ttg puts
// the scales' block pointer in the dot's accumulator layout (register-scales, the default), so
// they get no shared-memory ring; tritongpu-pipeline loads them one K step ahead instead
// (passes/register_prefetch.py): step 0's tile before the loop, carried in, and each iteration
// loads the next step's right after advancing the pointer, then yields it. With
// register-scales=false the scales are a 64x1 ring like the codes. A weight load whose boundary
// check leaves out K (UNCHECKED) would read past the end on the last step's prefetch: its scales
// stay in registers but are loaded where they are used, in the loop.

// CHECK: %pw_scales = tt.make_tensor_ptr {{.*}} !tt.ptr<tensor<64x1xf16, #ttg.mma<{versionMajor = 3
// CHECK: %[[FIRST:.*]] = tt.load %pw_scales {boundaryCheck = array<i32: 0, 1>, padding = 1 : i32}
// CHECK-NOT: memdesc<3x64x1xf16
// CHECK: scf.for {{.*}} iter_args({{.*}}%pw_i_scales = %pw_scales, {{.*}}%w_scales = %[[FIRST]]
// CHECK: tt.dequantize %{{.*}}, %w_scales {bits = 4 : i32}
// CHECK: %pw_n_scales = tt.advance %pw_i_scales
// CHECK-NEXT: %[[NEXT:.*]] = tt.load %pw_n_scales {boundaryCheck = array<i32: 0, 1>, padding = 1 : i32}
// CHECK: scf.yield {{.*}}%pw_n_scales, {{.*}}%[[NEXT]],

// OFF: ttg.local_alloc : () -> !ttg.memdesc<3x64x1xf16
// OFF: scf.for
// OFF: tt.dequantize %{{.*}}, %{{.*}} {bits = 4 : i32} : {{.*}}, tensor<64x1xf16, #ttg.blocked

// UNCHECKED: scf.for {{.*}} iter_args(%acc_i = %zero, %pw_i_values = %pw_values, %pw_i_meta = %pw_meta, %pw_i_scales = %pw_scales, %px_i = %px, %{{[0-9]+}} =
// UNCHECKED: %w_scales = tt.load %pw_i_scales {boundaryCheck = array<i32: 0>, padding = 1 : i32} : !tt.ptr<tensor<64x1xf16, #ttg.mma
// UNCHECKED: tt.dequantize %{{.*}}, %w_scales {bits = 4 : i32}
