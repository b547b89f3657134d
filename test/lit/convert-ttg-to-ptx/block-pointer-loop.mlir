// RUN: sparsecc-opt %s -p convert-ttg-to-ptx | filecheck %s
// Block pointers, an atomic and structured control flow (covers handlers/memory.py and
// handlers/control.py); the input is convert-tt-to-ttg's output for an 8x8 f32 row-sum loop.
// - scf.for carries the accumulator's four registers per thread and the block pointer's row
//   offset; the pointer's base, shape and strides do not change, so they are not carried.
// - tt.load through the block pointer: one 4-wide ld.global per thread, its rows checked.
// - the scalar acq_rel tt.atomic_rmw is thread 0's, after a bar.sync (release for the whole
//   CTA); its old value reaches every thread through a shared word (planned: 128 bytes).
// - scf.if yields its value as a register; the scalar store is thread 0's.

// CHECK:      shared = 128 : i64
// CHECK:      [[BASE:%.*]] = "ptx.shared_base"() : () -> i32
// CHECK:      %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} = scf.for %{{.*}} = %{{.*}} to %arg4 step %{{.*}} iter_args({{.*}}) -> (f32, f32, f32, f32, i32) : i32 {
// CHECK:        "ptx.ld.global"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {{.*}} -> (f32, f32, f32, f32)
// CHECK:        scf.yield %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : f32, f32, f32, f32, i32
// CHECK-NEXT: }
// CHECK:      "ptx.bar.sync"() <{barrier = 0 : i32}> : () -> ()
// CHECK:      [[OLD:%.*]] = "ptx.atom.global.add"(%arg2, %{{.*}}, [[T0:%.*]]) <{sem = "acq_rel"}>
// CHECK-NEXT: "ptx.st.shared"([[BASE]], [[OLD]], [[T0]])
// CHECK-NEXT: "ptx.bar.sync"() <{barrier = 0 : i32}> : () -> ()
// CHECK-NEXT: %{{.*}} = "ptx.ld.shared"([[BASE]])
// CHECK:      "ptx.st.global"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {{.*}} : (i64, f32, f32, f32, f32, i1) -> ()
// CHECK:      [[FLAG:%.*]] = scf.if %{{.*}} -> (i32) {
// CHECK:      "ptx.st.global"(%arg2, [[FLAG]], %{{.*}})
builtin.module attributes {"ttg.num-warps" = 1 : i32, "ttg.threads-per-warp" = 32 : i32, ttg.target = "sm_80"} {
  tt.func public @rows(%X: !tt.ptr<f32>, %Y: !tt.ptr<f32>, %C: !tt.ptr<i32>, %m: i64, %n: i32) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c8 = arith.constant 8 : i32
    %one = arith.constant 1 : i64
    %s8 = arith.constant 8 : i64
    %px = tt.make_tensor_ptr %X, shape=[%m, %s8], strides=[%s8, %one], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<8x8xf32, #ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [16, 2], warpsPerCTA = [1, 1], order = [1, 0]}>>>
    %z = arith.constant dense<0.000000e+00> : tensor<8x8xf32, #ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [16, 2], warpsPerCTA = [1, 1], order = [1, 0]}>>
    %acc, %p = scf.for %i = %c0 to %n step %c1 iter_args(%a = %z, %pi = %px) -> (tensor<8x8xf32, #ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [16, 2], warpsPerCTA = [1, 1], order = [1, 0]}>>, !tt.ptr<tensor<8x8xf32, #ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [16, 2], warpsPerCTA = [1, 1], order = [1, 0]}>>>) : i32 {
      %x = tt.load %pi {boundaryCheck = array<i32: 0>, padding = 1 : i32} : !tt.ptr<tensor<8x8xf32, #ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [16, 2], warpsPerCTA = [1, 1], order = [1, 0]}>>>
      %s = arith.addf %a, %x : tensor<8x8xf32, #ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [16, 2], warpsPerCTA = [1, 1], order = [1, 0]}>>
      %pn = tt.advance %pi, [%c8, %c0] : !tt.ptr<tensor<8x8xf32, #ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [16, 2], warpsPerCTA = [1, 1], order = [1, 0]}>>>
      scf.yield %s, %pn : tensor<8x8xf32, #ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [16, 2], warpsPerCTA = [1, 1], order = [1, 0]}>>, !tt.ptr<tensor<8x8xf32, #ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [16, 2], warpsPerCTA = [1, 1], order = [1, 0]}>>>
    }
    %t = tt.atomic_rmw "add", %C, %c1 {sem = "acq_rel"} : !tt.ptr<i32>, i32 -> i32
    %first = arith.cmpi eq, %t, %c0 : i32
    %py = tt.make_tensor_ptr %Y, shape=[%m, %s8], strides=[%s8, %one], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<8x8xf32, #ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [16, 2], warpsPerCTA = [1, 1], order = [1, 0]}>>>
    tt.store %py, %acc {boundaryCheck = array<i32: 0>} : !tt.ptr<tensor<8x8xf32, #ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [16, 2], warpsPerCTA = [1, 1], order = [1, 0]}>>>
    %flag = scf.if %first -> (i32) {
      %two = arith.addi %t, %c1 : i32
      scf.yield %two : i32
    } else {
      scf.yield %c0 : i32
    }
    tt.store %C, %flag : !tt.ptr<i32>
    tt.return
  }
}
