// RUN: sparsecc-opt %s -p convert-ttg-to-ptx | filecheck %s
// The lowerings of issue 29's language (handlers/math_ext.py, handlers/debug.py, lower_ptrs's
// atomics): erf as a polynomial and ex2, remf as x - trunc(x / y) * y (x when y is infinite),
// umulhi as mul.hi, a float atomic max by the integer trick (max.s32 for a value with the sign
// bit clear, min.u32 for one with it set), cas with its compare value, debug_barrier and an
// assert that traps.

// CHECK-LABEL: "ptx.kernel"
// CHECK:      [[A:%.*]] = math.absf %arg1 : f32
// CHECK:      math.fma
// CHECK:      [[FOUR:%.*]] = arith.constant 4.000000e+00 : f32
// CHECK-NEXT: arith.minimumf [[A]], [[FOUR]] : f32
// CHECK:      math.exp2
// CHECK:      [[Q:%.*]] = arith.divf %arg1, %arg2 : f32
// CHECK-NEXT: [[T:%.*]] = math.trunc [[Q]] : f32
// CHECK-NEXT: [[NT:%.*]] = arith.negf [[T]] : f32
// CHECK-NEXT: [[R:%.*]] = math.fma [[NT]], %arg2, %arg1 : f32
// CHECK:      arith.cmpf oeq
// CHECK-NEXT: arith.select %{{.*}}, %arg1, [[R]] : f32
// CHECK:      arith.muli %arg3, %arg3 : i32
// CHECK-NEXT: "ptx.asm"(%arg3, %arg3) <{template = "mul.hi.u32 $0, $1, $2;", pure}> : (i32, i32) -> i32
// CHECK:      [[BITS:%.*]] = arith.bitcast %arg1 : f32 to i32
// CHECK:      "ptx.atom.global"(%arg0, [[BITS]], %{{.*}}) <{op = "max", operandSegmentSizes = array<i32: 1, 1, 0, 1>}> : (i64, i32, i1) -> i32
// CHECK:      "ptx.atom.global"(%arg0, [[BITS]], %{{.*}}) <{op = "min", signed = "u", operandSegmentSizes = array<i32: 1, 1, 0, 1>}> : (i64, i32, i1) -> i32
// CHECK:      "ptx.atom.global"(%{{.*}}, %arg3, %arg4, %{{.*}}) <{op = "cas", sem = "acquire", operandSegmentSizes = array<i32: 1, 1, 1, 1>}> : (i64, i32, i32, i1) -> i32
// CHECK:      "ptx.bar.sync"() <{barrier = 0 : i32}> : () -> ()
// CHECK:      "ptx.asm"(%{{.*}}) <{template = "{\0A\09.reg .pred %fail;\0A\09not.pred %fail, $0;\0A\09@%fail trap;\0A\09}"}> : (i1) -> ()
builtin.module attributes {"ttg.num-warps" = 1 : i32, "ttg.threads-per-warp" = 32 : i32, ttg.target = "sm_80"} {
  tt.func public @lang(%out: !tt.ptr<f32>, %x: f32, %y: f32, %i: i32, %j: i32, %flags: !tt.ptr<i32>) {
    %e = math.erf %x : f32
    %r = arith.remf %x, %y : f32
    %s = arith.addf %e, %r : f32
    tt.store %out, %s : !tt.ptr<f32>
    %lo, %hi = arith.mului_extended %i, %i : i32
    %old = tt.atomic_rmw "max", %out, %x : !tt.ptr<f32>, f32 -> f32
    %p1 = tt.addptr %flags, %hi : !tt.ptr<i32>, i32
    %got = tt.atomic_rmw "cas", %p1, %i cmp %j {sem = "acquire"} : !tt.ptr<i32>, i32 cmp i32 -> i32
    tt.debug_barrier
    %ok = arith.cmpi eq, %got, %j : i32
    tt.assert %ok, "lock was taken" : i1
    tt.return
  }
}
