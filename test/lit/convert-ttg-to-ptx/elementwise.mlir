// RUN: sparsecc-opt %s -p convert-ttg-to-ptx | filecheck %s
// Scalar and elementwise ops (covers handlers/elementwise.py): program ids are special
// registers, integer arithmetic folds through the emitter (the + 0 disappears), math.exp is
// ex2 of x * log2(e), and a scalar store is thread 0's (covers the scalar path of
// handlers/memory.py).

// CHECK:      [[TID:%.*]] = "ptx.sreg"() <{reg = "tid.x"}> : () -> i32
// CHECK:      [[PID:%.*]] = "ptx.sreg"() <{reg = "ctaid.x"}> : () -> i32
// CHECK-NEXT: [[NP:%.*]] = "ptx.sreg"() <{reg = "nctaid.y"}> : () -> i32
// CHECK:      [[A:%.*]] = arith.muli [[PID]], %{{.*}} : i32
// CHECK-NEXT: [[LT:%.*]] = arith.cmpi slt, [[A]], %arg2 : i32
// CHECK-NEXT: [[F:%.*]] = arith.sitofp [[NP]] : i32 to f32
// CHECK-NEXT: [[LOG2E:%.*]] = arith.constant 1.44269502 : f32
// CHECK-NEXT: [[SC:%.*]] = arith.mulf %arg1, [[LOG2E]] : f32
// CHECK-NEXT: [[E:%.*]] = math.exp2 [[SC]] : f32
// CHECK-NEXT: [[S:%.*]] = arith.addf [[E]], [[F]] : f32
// CHECK-NEXT: [[Y:%.*]] = arith.select [[LT]], [[S]], %arg1 : f32
// CHECK:      [[ADDR:%.*]] = arith.addi %arg0, %{{.*}} : i64
// CHECK:      [[T0:%.*]] = arith.cmpi eq, [[TID]], %{{.*}} : i32
// CHECK-NEXT: "ptx.st.global"([[ADDR]], [[Y]], [[T0]])
builtin.module attributes {"ttg.num-warps" = 1 : i32, "ttg.threads-per-warp" = 32 : i32, ttg.target = "sm_80"} {
  tt.func public @scalars(%out: !tt.ptr<f32>, %x: f32, %n: i32) {
    %pid = tt.get_program_id x : i32
    %np = tt.get_num_programs y : i32
    %c0 = arith.constant 0 : i32
    %c4 = arith.constant 4 : i32
    %a = arith.muli %pid, %c4 : i32
    %b = arith.addi %a, %c0 : i32
    %lt = arith.cmpi slt, %b, %n : i32
    %f = arith.sitofp %np : i32 to f32
    %e = math.exp %x : f32
    %s = arith.addf %e, %f : f32
    %y = arith.select %lt, %s, %x : f32
    %p = tt.addptr %out, %b : !tt.ptr<f32>, i32
    tt.store %p, %y : !tt.ptr<f32>
    tt.return
  }
}
