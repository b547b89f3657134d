// RUN: sparsecc-opt %s | filecheck %s
// RUN: sparsecc-opt %s | sparsecc-opt | filecheck %s
// RUN: sparsecc-opt %s --print-op-generic | sparsecc-opt | filecheck %s

// arith.cmpi / arith.cmpf keep the attributes a pass puts on them (tritongpu-warp-specialize's
// ttg.producer) in their custom form, after the operands and fastmath flags and before the
// type, as MLIR prints them; the ttgir stage's text then lowers like the module it came from.

// CHECK:      %p = arith.cmpi slt, %a, %b {ttg.producer} : i32
// CHECK-NEXT: %q = arith.cmpi eq, %a, %b : i32
// CHECK-NEXT: %r = arith.cmpf olt, %x, %y fastmath<nnan> {ttg.producer} : f32
// CHECK-NEXT: %s = arith.cmpf olt, %x, %y : f32
builtin.module {
  tt.func @f(%a: i32, %b: i32, %x: f32, %y: f32) {
    %p = arith.cmpi slt, %a, %b {ttg.producer} : i32
    %q = arith.cmpi eq, %a, %b : i32
    %r = arith.cmpf olt, %x, %y fastmath<nnan> {ttg.producer} : f32
    %s = arith.cmpf olt, %x, %y : f32
    tt.return
  }
}
