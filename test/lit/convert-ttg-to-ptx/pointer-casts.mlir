// RUN: sparsecc-opt %s -p convert-ttg-to-ptx | filecheck %s
// Pointer casts (handlers/pointer_casts.py): a pointer is its 64-bit address in a register, so
// tt.int_to_ptr, tt.ptr_to_int and tt.bitcast keep the register: the loaded address is loaded
// through, and the address stored is the pointer parameter's own register.

// CHECK-LABEL: "ptx.kernel"
// CHECK:      ^bb0(%[[TABLE:.*]]: i64, %[[OUT:.*]]: i64, %[[ADDR:.*]]: i64):
// CHECK:      [[A:%.*]] = "ptx.ld.global"(%[[TABLE]]) {{.*}} : (i64) -> i64
// CHECK-NEXT: [[X:%.*]] = "ptx.ld.global"([[A]]) {{.*}} : (i64) -> f16
// CHECK:      "ptx.st.global"(%[[OUT]], [[X]], %{{.*}})
// CHECK:      "ptx.st.global"(%[[ADDR]], %[[OUT]], %{{.*}})
// CHECK-NOT:  tt.
builtin.module attributes {"ttg.num-warps" = 1 : i32, "ttg.threads-per-warp" = 32 : i32, ttg.target = "sm_80"} {
  tt.func public @casts(%table: !tt.ptr<i64>, %out: !tt.ptr<f16>, %addr_out: !tt.ptr<i64>) {
    %a = tt.load %table : !tt.ptr<i64>
    %p = tt.int_to_ptr %a : i64 -> !tt.ptr<f16>
    %x = tt.load %p : !tt.ptr<f16>
    tt.store %out, %x : !tt.ptr<f16>
    %q = tt.bitcast %out : !tt.ptr<f16> -> !tt.ptr<i16>
    %i = tt.ptr_to_int %q : !tt.ptr<i16> -> i64
    tt.store %addr_out, %i : !tt.ptr<i64>
    tt.return
  }
}
