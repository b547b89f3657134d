// RUN: rm -f %t.out
// RUN: echo START > %t.stdout
// RUN: sparsecc-opt %s -o %t.out >> %t.stdout
// RUN: echo END >> %t.stdout
// RUN: filecheck %s --check-prefix=EMPTY < %t.stdout
// RUN: filecheck %s < %t.out
// On failure -o leaves an existing output untouched (nothing half-written):
// RUN: echo "previous contents" > %t.keep
// RUN: not sparsecc-opt %s -p no-such-pass -o %t.keep
// RUN: filecheck %s --check-prefix=KEEP < %t.keep

// CHECK: builtin.module {
// CHECK-NEXT: tt.func public @k(%x: i32) {
// Nothing on stdout when -o is given:
// EMPTY: {{^}}START{{$}}
// EMPTY-NEXT: {{^}}END{{$}}
// KEEP: {{^}}previous contents{{$}}
builtin.module {
  tt.func public @k(%x: i32) {
    tt.return
  }
}
