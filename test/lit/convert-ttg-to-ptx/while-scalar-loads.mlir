// RUN: sparsecc-opt %s -p convert-ttg-to-ptx | filecheck %s
// RUN: sparsecc-opt %s -p convert-ttg-to-ptx --emit ptx | filecheck %s --check-prefix=PTX
// Scalar-pointer loads and scf.while (covers load_scalar of handlers/memory.py and the while
// handlers of handlers/control.py and the PTX printer): every thread loads a scalar (a masked
// one under its mask, `other` moved in first); a while carries its values through registers,
// its before block tests the condition and leaves the loop, its after block branches back.

// CHECK:      [[PID:%.*]] = "ptx.sreg"() <{reg = "ctaid.x"}> : () -> i32
// CHECK:      [[ONE:%.*]] = arith.constant 1.000000e+00 : f32
// CHECK:      [[LT:%.*]] = arith.cmpi slt, [[PID]], %arg2 : i32
// CHECK:      [[A0:%.*]] = arith.addi %arg0, %{{.*}} : i64
// CHECK-NEXT: [[FIRST:%.*]] = "ptx.ld.global"([[A0]], [[LT]], [[ONE]]) {{.*}} : (i64, i1, f32) -> f32
// CHECK-NEXT: %{{.*}}, [[ACC:%.*]] = scf.while ([[I0:%.*]] = [[PID]], [[S0:%.*]] = [[FIRST]]) : (i32, f32) -> (i32, f32) {
// CHECK-NEXT:   [[GO:%.*]] = arith.cmpi slt, [[I0]], %arg2 : i32
// CHECK-NEXT:   scf.condition([[GO]]) [[I0]], [[S0]] : i32, f32
// CHECK-NEXT: } do {
// CHECK-NEXT: ^bb0([[I1:%.*]]: i32, [[S1:%.*]]: f32):
// CHECK:        [[V:%.*]] = "ptx.ld.global"(%{{.*}}) {{.*}} : (i64) -> f32
// CHECK-NEXT:   [[S2:%.*]] = arith.addf [[S1]], [[V]] : f32
// CHECK-NEXT:   [[I2:%.*]] = arith.addi [[I1]], %{{.*}} : i32
// CHECK-NEXT:   scf.yield [[I2]], [[S2]] : i32, f32
// CHECK:      "ptx.st.global"(%{{.*}}, [[ACC]], %{{.*}})

// PTX:      @[[P:%p[0-9]+]] ld.global.b32 [[FIRST:%f[0-9]+]], [%rd{{[0-9]+}}];
// PTX:      mov.b32 [[CI:%r[0-9]+]], %r{{[0-9]+}};
// PTX-NEXT: mov.b32 [[CS:%f[0-9]+]], [[FIRST]];
// PTX-NEXT: [[LOOP:\$L__while[0-9]+]]:
// PTX-NEXT: setp.lt.s32 [[GO:%p[0-9]+]], [[CI]], %r1;
// PTX-NEXT: mov.b32 [[AI:%r[0-9]+]], [[CI]];
// PTX-NEXT: mov.b32 [[AS:%f[0-9]+]], [[CS]];
// PTX-NEXT: @![[GO]] bra [[END:\$L__while_end[0-9]+]];
// PTX:      add.f32 [[NS:%f[0-9]+]], [[AS]], %f{{[0-9]+}};
// PTX-NEXT: add.s32 [[NI:%r[0-9]+]], [[AI]], %r{{[0-9]+}};
// PTX-NEXT: mov.b32 [[CI]], [[NI]];
// PTX-NEXT: mov.b32 [[CS]], [[NS]];
// PTX-NEXT: bra [[LOOP]];
// PTX-NEXT: [[END]]:
// PTX:      st.global.b32 [%rd{{[0-9]+}}], [[AS]];
builtin.module attributes {"ttg.num-warps" = 1 : i32, "ttg.threads-per-warp" = 32 : i32, ttg.target = "sm_80"} {
  tt.func public @while_sum(%x: !tt.ptr<f32>, %out: !tt.ptr<f32>, %n: i32) {
    %pid = tt.get_program_id x : i32
    %c1 = arith.constant 1 : i32
    %zero = arith.constant 0.000000e+00 : f32
    %one = arith.constant 1.000000e+00 : f32
    %lt = arith.cmpi slt, %pid, %n : i32
    %p0 = tt.addptr %x, %pid : !tt.ptr<f32>, i32
    %first = tt.load %p0, %lt, %one : !tt.ptr<f32>
    %i, %acc = scf.while (%i0 = %pid, %a0 = %first) : (i32, f32) -> (i32, f32) {
      %go = arith.cmpi slt, %i0, %n : i32
      scf.condition(%go) %i0, %a0 : i32, f32
    } do {
    ^bb0(%i1: i32, %a1: f32):
      %p = tt.addptr %x, %i1 : !tt.ptr<f32>, i32
      %v = tt.load %p : !tt.ptr<f32>
      %a2 = arith.addf %a1, %v : f32
      %i2 = arith.addi %i1, %c1 : i32
      scf.yield %i2, %a2 : i32, f32
    }
    %q = tt.addptr %out, %pid : !tt.ptr<f32>, i32
    tt.store %q, %acc : !tt.ptr<f32>
    tt.return
  }
}
