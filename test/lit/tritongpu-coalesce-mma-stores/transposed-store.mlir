// RUN: sparsecc-opt %s --split-input-file -p tritongpu-coalesce-mma-stores | filecheck %s
// RUN: sparsecc-opt %s --split-input-file -p tritongpu-coalesce-mma-stores,convert-ttg-to-ptx | filecheck %s --check-prefix=PTX
// An MMA tile stored into memory contiguous along its rows (order [0, 1]: the MoE GEMM's
// W x^T into y) is converted to 16-byte vectors along the rows first; on sm_90a the 16 KiB
// scratch is written by stmatrix.trans, read by ld.shared.v4, and the stores are 16-byte
// vectors (behind the run-time alignment test: nothing here proves the strides' divisibility;
// the else branch is the per-element fallback). The second module stores into row-major
// memory (a GEMM's C): left as it was, no scratch.

// CHECK-LABEL: tt.func public @transposed
// CHECK:      %[[CVT:.*]] = ttg.convert_layout %{{.*}} : tensor<128x64xf16, #ttg.mma<{{.*}}>> -> tensor<128x64xf16, #ttg.blocked<{sizePerThread = [8, 1], threadsPerWarp = [16, 2], warpsPerCTA = [1, 4], order = [0, 1]}>>
// CHECK-NEXT: tt.store %{{.*}}, %[[CVT]] {boundaryCheck = array<i32: 1>} : !tt.ptr<tensor<128x64xf16, #ttg.blocked<{sizePerThread = [8, 1]
// PTX-LABEL: sym_name = "transposed"
// PTX-SAME:  shared_bytes = 16384
// PTX-COUNT-8: template = "stmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// PTX-COUNT-8: "ptx.ld.shared"{{.*}} -> (i32, i32, i32, i32)
// PTX:       scf.if
// PTX-COUNT-8: "ptx.st.global"{{.*}}operandSegmentSizes = array<i32: 1, 4, 1>
// PTX:       } else {
// PTX:       "ptx.st.global"{{.*}} : (i64, f16, i1) -> ()
builtin.module attributes {"ttg.num-warps" = 4 : i32, "ttg.threads-per-warp" = 32 : i32, ttg.target = "sm_90a"} {
  tt.func public @transposed(%Y: !tt.ptr<f16>, %x: f32, %n: i64, %t: i64, %s: i64) {
    %c0 = arith.constant 0 : i32
    %one = arith.constant 1 : i64
    %w = tt.splat %x : f32 -> tensor<128x64xf32, #ttg.mma<{versionMajor = 3, warpsPerCTA = [4, 1], instrShape = [64, 64]}>>
    %v = arith.truncf %w : tensor<128x64xf32, #ttg.mma<{versionMajor = 3, warpsPerCTA = [4, 1], instrShape = [64, 64]}>> to tensor<128x64xf16, #ttg.mma<{versionMajor = 3, warpsPerCTA = [4, 1], instrShape = [64, 64]}>>
    %p = tt.make_tensor_ptr %Y, shape=[%n, %t], strides=[%one, %s], offsets=[%c0, %c0] {order = array<i32: 0, 1>} : !tt.ptr<tensor<128x64xf16, #ttg.mma<{versionMajor = 3, warpsPerCTA = [4, 1], instrShape = [64, 64]}>>>
    tt.store %p, %v {boundaryCheck = array<i32: 1>} : !tt.ptr<tensor<128x64xf16, #ttg.mma<{versionMajor = 3, warpsPerCTA = [4, 1], instrShape = [64, 64]}>>>
    tt.return
  }
}

// -----

// CHECK-LABEL: tt.func public @row_major
// CHECK-NOT:  ttg.convert_layout
// CHECK:      tt.store %{{.*}}, %{{.*}} {boundaryCheck = array<i32: 1>} : !tt.ptr<tensor<128x64xf16, #ttg.mma<
// PTX-LABEL: sym_name = "row_major"
// PTX-SAME:  shared_bytes = 0
// PTX-NOT:   stmatrix
builtin.module attributes {"ttg.num-warps" = 4 : i32, "ttg.threads-per-warp" = 32 : i32, ttg.target = "sm_90a"} {
  tt.func public @row_major(%Y: !tt.ptr<f16>, %x: f32, %n: i64, %t: i64, %s: i64) {
    %c0 = arith.constant 0 : i32
    %one = arith.constant 1 : i64
    %w = tt.splat %x : f32 -> tensor<128x64xf32, #ttg.mma<{versionMajor = 3, warpsPerCTA = [4, 1], instrShape = [64, 64]}>>
    %v = arith.truncf %w : tensor<128x64xf32, #ttg.mma<{versionMajor = 3, warpsPerCTA = [4, 1], instrShape = [64, 64]}>> to tensor<128x64xf16, #ttg.mma<{versionMajor = 3, warpsPerCTA = [4, 1], instrShape = [64, 64]}>>
    %p = tt.make_tensor_ptr %Y, shape=[%n, %t], strides=[%s, %one], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<128x64xf16, #ttg.mma<{versionMajor = 3, warpsPerCTA = [4, 1], instrShape = [64, 64]}>>>
    tt.store %p, %v {boundaryCheck = array<i32: 1>} : !tt.ptr<tensor<128x64xf16, #ttg.mma<{versionMajor = 3, warpsPerCTA = [4, 1], instrShape = [64, 64]}>>>
    tt.return
  }
}
