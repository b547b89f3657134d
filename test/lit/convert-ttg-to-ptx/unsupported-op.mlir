// RUN: not sparsecc-opt %s --split-input-file -p convert-ttg-to-ptx 2>&1 | filecheck %s
// An op without a handler in convert-ttg-to-ptx's table (sparsecc/codegen/handlers/) is one
// error naming the op and its line, for arith and math ops (looked up by name) as for others.

// CHECK: unsupported-op.mlir:[[# @LINE + 6]]:5: error: pass 'convert-ttg-to-ptx' failed: arith.ceildivsi: not supported by the PTX lowering
// CHECK: unsupported-op.mlir:[[# @LINE + 15]]:5: error: pass 'convert-ttg-to-ptx' failed: math.atan: not supported by the PTX lowering
// CHECK-NOT: Traceback
builtin.module attributes {"ttg.num-warps" = 1 : i32, "ttg.threads-per-warp" = 32 : i32, ttg.target = "sm_80"} {
  tt.func public @bad(%out: !tt.ptr<i32>, %n: i32) {
    %c3 = arith.constant 3 : i32
    %q = arith.ceildivsi %n, %c3 : i32
    tt.store %out, %q : !tt.ptr<i32>
    tt.return
  }
}

// -----

builtin.module attributes {"ttg.num-warps" = 1 : i32, "ttg.threads-per-warp" = 32 : i32, ttg.target = "sm_80"} {
  tt.func public @bad_math(%out: !tt.ptr<f32>, %x: f32) {
    %y = math.atan %x : f32
    tt.store %out, %y : !tt.ptr<f32>
    tt.return
  }
}
