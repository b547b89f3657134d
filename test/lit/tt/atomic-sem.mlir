// RUN: sparsecc-opt %s | filecheck %s
// RUN: sparsecc-opt %s --print-op-generic | sparsecc-opt | filecheck %s

// tt.atomic_rmw's memory order: relaxed when absent (not printed), acq_rel / acquire / release
// in its attribute dictionary; the generic form parses back to the same.

// CHECK:      %old = tt.atomic_rmw "add", %c, %one : !tt.ptr<i32>, i32 -> i32
// CHECK-NEXT: %ticket = tt.atomic_rmw "add", %c, %one {sem = "acq_rel"} : !tt.ptr<i32>, i32 -> i32
// CHECK-NEXT: %seen = tt.atomic_rmw "add", %c, %one {sem = "acquire"} : !tt.ptr<i32>, i32 -> i32
builtin.module {
  tt.func @f(%c: !tt.ptr<i32>, %one: i32) {
    %old = tt.atomic_rmw "add", %c, %one : !tt.ptr<i32>, i32 -> i32
    %ticket = tt.atomic_rmw "add", %c, %one {sem = "acq_rel"} : !tt.ptr<i32>, i32 -> i32
    %seen = tt.atomic_rmw "add", %c, %one {sem = "acquire"} : !tt.ptr<i32>, i32 -> i32
    tt.return
  }
}
