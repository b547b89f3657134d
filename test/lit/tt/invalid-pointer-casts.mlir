// RUN: not sparsecc-opt %s 2>&1 | filecheck %s
// tt.int_to_ptr takes an i64 address (an i32 cannot hold one).

// CHECK: tt.int_to_ptr: i32 must be i64
builtin.module {
  tt.func public @bad(%a: i32) {
    %p = tt.int_to_ptr %a : i32 -> !tt.ptr<f16>
    tt.return
  }
}
