// RUN: sparsecc-opt %s -p "convert-tt-to-ttg{num-warps=4 target=sm_90a},sparse-gpu-encoding,tritongpu-pipeline{num-stages=3 tma=true tma-extents=true continue-rings=true},canonicalize,cse,tritongpu-warp-specialize{pingpong=true}" | filecheck %s
// RUN: sparsecc-opt %s -p "convert-tt-to-ttg{num-warps=4 target=sm_90a},sparse-gpu-encoding,tritongpu-pipeline{num-stages=3 tma=true tma-extents=true continue-rings=true},canonicalize,cse,tritongpu-warp-specialize{pingpong=true}" | sparsecc-opt -p "tritongpu-insert-barriers,allocate-shared-memory,convert-ttg-to-ptx{target=sm_90a}" --emit ptx | filecheck %s --check-prefix=PTX
// RUN: sparsecc-opt %s -p "convert-tt-to-ttg{num-warps=8 target=sm_90a},sparse-gpu-encoding,tritongpu-pipeline{num-stages=3 tma=true tma-extents=true continue-rings=true},canonicalize,cse,tritongpu-warp-specialize{pingpong=true}" | filecheck %s --check-prefix=EIGHT

// Ping-pong (the input: outer-ring-loop.mlir's grouped GEMM, a `while` over token tiles around a
// TMA K loop whose ring lives outside it). At 4 warps the function gets two compute groups and
// a producer warpgroup. The kernel has 384 threads; the ring's mbarriers, then the two ordering
// mbarriers (4 warps each) before the split; the producer warpgroup hands its registers over
// and issues every trip's copies; each compute group's `while` carries whose turn it is and its
// own trips, waits on its ordering mbarrier before its K loop (group 0's first trip excepted),
// releases the ring's slots, arrives on the other group's after it, and stores its tile. At 8
// warps the switch changes nothing: ping-pong needs one warpgroup's tile.

// CHECK:       tt.func public @moe_gemm_kernel
// CHECK-SAME:  attributes {"ttg.consumer-groups" = 2 : i32, "ttg.producer-warps" = 4 : i32}
// CHECK:       scf.while
// CHECK:       } attributes {ttg.producer}

// PTX:         .maxntid 384, 1, 1
// PTX-COUNT-6: mbarrier.init.shared::cta.b64 [%r{{[0-9]+}}], {{1|4}};
// PTX:         bar.sync 0;
// PTX:         shfl.sync.idx.b32
// PTX:         mbarrier.init.shared::cta.b64 [%r{{[0-9]+}}], 4;
// PTX-NEXT:    add.s32
// PTX-NEXT:    mbarrier.init.shared::cta.b64 [%r{{[0-9]+}}], 4;
// PTX-NEXT:    fence.mbarrier_init.release.cluster;
// PTX-NEXT:    bar.sync 0;
// PTX:         setmaxnreg.dec.sync.aligned.u32 40;
// PTX:         $L__while{{[0-9]+}}:
// PTX:         cp.async.bulk.tensor.2d
// PTX:         $L__while_end{{[0-9]+}}:
// PTX:         setmaxnreg.inc.sync.aligned.u32 232;
// PTX:         $L__while{{[0-9]+}}:
// PTX-NOT:     cp.async.bulk.tensor
// PTX:         mbarrier.try_wait.parity
// PTX:         wgmma.mma_async.sp
// PTX:         mbarrier.arrive.shared::cta.b64
// PTX:         st.global
// PTX:         xor.b32
// PTX:         $L__while_end{{[0-9]+}}:

// EIGHT-NOT:   ttg.consumer-groups
// EIGHT:       tt.func public @moe_gemm_kernel
// EIGHT-NOT:   ttg.consumer-groups

builtin.module {
  tt.func public @moe_gemm_kernel(%w_ptr_values: !tt.ptr<f16>, %w_ptr_meta: !tt.ptr<i16>, %x_ptr: !tt.ptr<f16> {tt.divisibility = 16 : i32}, %y_ptr: !tt.ptr<f16> {tt.divisibility = 16 : i32}, %expert_offs_ptr: !tt.ptr<i32> {tt.divisibility = 16 : i32}, %N: i32 {tt.divisibility = 16 : i32}, %K: i32 {tt.divisibility = 16 : i32}, %stride_wn: i32 {tt.divisibility = 16 : i32}, %stride_xm: i32 {tt.divisibility = 16 : i32}, %stride_ym: i32 {tt.divisibility = 16 : i32}) {
    %pid_n = tt.get_program_id x : i32
    %expert = tt.get_program_id y : i32
    %0 = tt.addptr %expert_offs_ptr, %expert : !tt.ptr<i32>, i32
    %start = tt.load %0 : !tt.ptr<i32>
    %1 = tt.addptr %expert_offs_ptr, %expert : !tt.ptr<i32>, i32
    %2 = arith.constant 1 : i32
    %3 = tt.addptr %1, %2 : !tt.ptr<i32>, i32
    %end = tt.load %3 : !tt.ptr<i32>
    %4 = arith.muli %expert, %N : i32
    %t0 = scf.while (%t0_1 = %start) : (i32) -> i32 {
      %5 = arith.cmpi slt, %t0_1, %end : i32
      scf.condition(%5) %t0_1 : i32
    } do {
    ^bb0(%t0_2: i32):
      %acc = arith.constant dense<0.000000e+00> : tensor<64x64xf32>
      %6 = arith.constant 64 : i32
      %7 = arith.addi %K, %6 : i32
      %8 = arith.constant 1 : i32
      %9 = arith.subi %7, %8 : i32
      %10 = arith.divsi %9, %6 : i32
      %11 = arith.constant 0 : i32
      %12 = arith.constant 1099511627776 : i64
      %13 = arith.constant 1099511627776 : i64
      %14 = arith.extsi %stride_wn : i32 to i64
      %15 = arith.constant 1 : i64
      %16 = arith.constant 64 : i32
      %17 = arith.muli %pid_n, %16 : i32
      %18 = arith.addi %4, %17 : i32
      %19 = arith.constant 0 : i32
      %20 = arith.constant 549755813888 : i64
      %21 = arith.constant 2 : i64
      %22 = arith.divsi %14, %21 : i64
      %23 = arith.constant 0 : i32
      %24 = arith.constant 68719476736 : i64
      %25 = arith.constant 16 : i32
      %26 = arith.divsi %18, %25 : i32
      %27 = tt.make_tensor_ptr %w_ptr_values, shape=[%12, %20], strides=[%22, %15], offsets=[%18, %23] {order = array<i32: 1, 0>} : !tt.ptr<tensor<64x32xf16>>
      %28 = tt.make_tensor_ptr %w_ptr_meta, shape=[%24, %13], strides=[%14, %15], offsets=[%26, %19] {order = array<i32: 1, 0>} : !tt.ptr<tensor<4x64xi16>>
      %29 = arith.constant 1099511627776 : i64
      %30 = arith.extsi %end : i32 to i64
      %31 = arith.constant 1 : i64
      %32 = arith.extsi %stride_xm : i32 to i64
      %33 = arith.constant 0 : i32
      %34 = tt.make_tensor_ptr %x_ptr, shape=[%29, %30], strides=[%31, %32], offsets=[%33, %t0_2] {order = array<i32: 0, 1>} : !tt.ptr<tensor<64x64xf16>>
      %acc_1, %w_ptrs_values, %w_ptrs_meta, %x_ptrs = scf.for %_ = %11 to %10 step %8 iter_args(%acc_2 = %acc, %w_ptrs_values_1 = %27, %w_ptrs_meta_1 = %28, %x_ptrs_1 = %34) -> (tensor<64x64xf32>, !tt.ptr<tensor<64x32xf16>>, !tt.ptr<tensor<4x64xi16>>, !tt.ptr<tensor<64x64xf16>>) : i32 {
        %w_values = tt.load %w_ptrs_values_1 {padding = 1 : i32} : !tt.ptr<tensor<64x32xf16>>
        %w_meta = tt.load %w_ptrs_meta_1 {padding = 1 : i32} : !tt.ptr<tensor<4x64xi16>>
        %xt = tt.load %x_ptrs_1 {boundaryCheck = array<i32: 1>, padding = 1 : i32} : !tt.ptr<tensor<64x64xf16>>
        %acc_3 = tt.dot %w_values, %xt, %w_meta, %acc_2, sparseIndex = 0 : tensor<64x32xf16>, tensor<4x64xi16> * tensor<64x64xf16> -> tensor<64x64xf32>
        %35 = arith.constant 0 : i32
        %36 = arith.constant 64 : i32
        %37 = arith.constant 32 : i32
        %38 = arith.constant 0 : i32
        %w_ptrs_values_2 = tt.advance %w_ptrs_values_1, [%35, %37] : !tt.ptr<tensor<64x32xf16>>
        %w_ptrs_meta_2 = tt.advance %w_ptrs_meta_1, [%38, %36] : !tt.ptr<tensor<4x64xi16>>
        %39 = arith.constant 64 : i32
        %40 = arith.constant 0 : i32
        %x_ptrs_2 = tt.advance %x_ptrs_1, [%39, %40] : !tt.ptr<tensor<64x64xf16>>
        scf.yield %acc_3, %w_ptrs_values_2, %w_ptrs_meta_2, %x_ptrs_2 : tensor<64x64xf32>, !tt.ptr<tensor<64x32xf16>>, !tt.ptr<tensor<4x64xi16>>, !tt.ptr<tensor<64x64xf16>>
      }
      %41 = arith.truncf %acc_1 : tensor<64x64xf32> to tensor<64x64xf16>
      %42 = arith.constant 1099511627776 : i64
      %43 = arith.extsi %end : i32 to i64
      %44 = arith.constant 1 : i64
      %45 = arith.extsi %stride_ym : i32 to i64
      %46 = arith.constant 64 : i32
      %47 = arith.muli %pid_n, %46 : i32
      %48 = tt.make_tensor_ptr %y_ptr, shape=[%42, %43], strides=[%44, %45], offsets=[%47, %t0_2] {order = array<i32: 0, 1>} : !tt.ptr<tensor<64x64xf16>>
      tt.store %48, %41 {boundaryCheck = array<i32: 1>} : !tt.ptr<tensor<64x64xf16>>
      %t0_3 = arith.addi %t0_2, %6 : i32
      scf.yield %t0_3 : i32
    }
    tt.return
  }
}
