// RUN: sparsecc-opt %s -p 'convert-ttg-to-ptx{maxnreg=128}' --emit ptx | filecheck %s
// RUN: sparsecc-opt %s -p convert-ttg-to-ptx --emit ptx | filecheck %s --check-prefix=NONE
// RUN: not sparsecc-opt %s -p 'convert-ttg-to-ptx{maxnreg=8}' 2>&1 | filecheck %s --check-prefix=BAD
// maxnreg: the kernel's .maxnreg (the registers a thread may use), right after its .maxntid; a
// kernel without the option has none; a cap outside 24..255 is refused with the options.

// CHECK:      .maxntid 32, 1, 1
// CHECK-NEXT: .maxnreg 128
// CHECK-NEXT: {{^}}{{{$}}
// NONE-NOT:   .maxnreg
// BAD: error: invalid options for pass 'convert-ttg-to-ptx': convert-ttg-to-ptx: maxnreg must be 0 (none) or 24 to 255, got 8
builtin.module attributes {"ttg.num-warps" = 1 : i32, "ttg.threads-per-warp" = 32 : i32, ttg.target = "sm_80"} {
  tt.func public @k(%p: !tt.ptr<f32>) {
    tt.return
  }
}
