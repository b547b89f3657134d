// RUN: sparsecc-opt %s -p convert-ttg-to-ptx | filecheck %s
// Shared-memory buffers (covers handlers/shared.py): the two-slot ring sits at offset 0 of the
// dynamic shared array, the second buffer at 256; memdesc_subview's slot index scales by a
// slot's 32 elements x 4 bytes. The local_store is a shared write, so the local_load after it
// waits for a bar.sync (RAW); the store into the second buffer after that read waits for
// another one (WAR).

// CHECK:      "ptx.kernel"() <{sym_name = "shared", target = "sm_80", param_kinds = ["f32", "i32"], shared_bytes = 384 : i64
// CHECK:      [[BASE:%.*]] = "ptx.shared_base"() : () -> i32
// CHECK:      [[SLOT:%.*]] = arith.muli %arg1, %{{.*}} : i32
// CHECK:      [[BYTES:%.*]] = arith.muli [[SLOT]], %{{.*}} : i32
// CHECK-NEXT: [[BUF:%.*]] = arith.addi [[BASE]], [[BYTES]] : i32
// CHECK:      [[A:%.*]] = arith.addi [[BUF]], %{{.*}} : i32
// CHECK-NEXT: "ptx.st.shared"([[A]], %arg0)
// CHECK-NEXT: "ptx.bar.sync"() <{barrier = 0 : i32}> : () -> ()
// CHECK:      [[W:%.*]] = "ptx.ld.shared"
// CHECK-NEXT: [[C256:%.*]] = arith.constant 256 : i32
// CHECK-NEXT: [[ONE:%.*]] = arith.addi [[BASE]], [[C256]] : i32
// CHECK-NEXT: "ptx.bar.sync"() <{barrier = 0 : i32}> : () -> ()
// CHECK:      [[B:%.*]] = arith.addi [[ONE]], %{{.*}} : i32
// CHECK-NEXT: "ptx.st.shared"([[B]], [[W]])
builtin.module attributes {"ttg.num-warps" = 1 : i32, "ttg.threads-per-warp" = 32 : i32, ttg.target = "sm_80"} {
  tt.func public @shared(%x: f32, %slot: i32) {
    %c0 = arith.constant 0 : i32
    %v = tt.splat %x : f32 -> tensor<4x8xf32, #ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 1], order = [1, 0]}>>
    %ring = ttg.local_alloc : () -> !ttg.memdesc<2x4x8xf32, #ttg.shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [1, 0]}>, mutable>
    %buf = ttg.memdesc_subview %ring[%slot, %c0, %c0] : !ttg.memdesc<2x4x8xf32, #ttg.shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [1, 0]}>, mutable> -> !ttg.memdesc<4x8xf32, #ttg.shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [1, 0]}>, mutable>
    ttg.local_store %v, %buf : tensor<4x8xf32, #ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 1], order = [1, 0]}>> -> !ttg.memdesc<4x8xf32, #ttg.shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [1, 0]}>, mutable>
    %w = ttg.local_load %buf : !ttg.memdesc<4x8xf32, #ttg.shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [1, 0]}>, mutable> -> tensor<4x8xf32, #ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 1], order = [1, 0]}>>
    %one = ttg.local_alloc %w : (tensor<4x8xf32, #ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 1], order = [1, 0]}>>) -> !ttg.memdesc<4x8xf32, #ttg.shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [1, 0]}>>
    tt.return
  }
}
