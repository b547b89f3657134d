// RUN: sparsecc-opt %s --split-input-file -p "convert-tt-to-ttg{num-warps=4 target=sm_90a}" --emit ptx | filecheck %s
// Pointer-tensor loads and stores move 16-byte vectors where the axis analysis proves it (as
// Triton's coalescing does): `pid * 1024 + arange` is contiguous in runs of 1024 and a multiple
// of 1024, the pointers are 16-byte aligned (`tt.divisibility = 16`, a launch's "*fp32:16"), and
// `offs < n` is constant over each thread's 4 elements because n is a multiple of 16. One address
// and one predicate per vector: the per-element addresses are gone. Take any of the three facts
// away and the access is per element again.

// CHECK-LABEL: .visible .entry add(
// CHECK-COUNT-2: setp.lt.s32
// CHECK-NOT:     setp
// A masked load without `other` zeroes its registers first (as Triton: else ptxas keeps them
// live from the kernel's entry, in case the predicate is false).
// CHECK:         mov.f32 [[Z:%f[0-9]+]], 0f00000000;
// CHECK-COUNT-4: mov.b32 %f{{[0-9]+}}, [[Z]];
// CHECK-NEXT:    @%p1 ld.global.v4.b32 {%f{{[0-9]+}}, %f{{[0-9]+}}, %f{{[0-9]+}}, %f{{[0-9]+}}}, [%rd{{[0-9]+}}];
// CHECK-COUNT-4: mov.b32 %f{{[0-9]+}}, [[Z]];
// CHECK-NEXT:    @%p2 ld.global.v4.b32 {%f{{[0-9]+}}, %f{{[0-9]+}}, %f{{[0-9]+}}, %f{{[0-9]+}}}, [%rd{{[0-9]+}}];
// CHECK-COUNT-2: ld.global.v4.b32
// CHECK-NOT:     ld.global.b32
// CHECK-COUNT-2: st.global.v4.b32
// CHECK-NOT:     st.global.b32
builtin.module {
  tt.func public @add(%x: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %y: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %o: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %n: i32 {tt.divisibility = 16 : i32}) {
    %pid = tt.get_program_id x : i32
    %c = arith.constant 1024 : i32
    %start = arith.muli %pid, %c : i32
    %r = tt.make_range {start = 0 : i32, end = 1024 : i32} : tensor<1024xi32>
    %s = tt.splat %start : i32 -> tensor<1024xi32>
    %offs = arith.addi %s, %r : tensor<1024xi32>
    %ns = tt.splat %n : i32 -> tensor<1024xi32>
    %mask = arith.cmpi slt, %offs, %ns : tensor<1024xi32>
    %xs = tt.splat %x : !tt.ptr<f32> -> tensor<1024x!tt.ptr<f32>>
    %xp = tt.addptr %xs, %offs : tensor<1024x!tt.ptr<f32>>, tensor<1024xi32>
    %a = tt.load %xp, %mask : tensor<1024x!tt.ptr<f32>>
    %ys = tt.splat %y : !tt.ptr<f32> -> tensor<1024x!tt.ptr<f32>>
    %yp = tt.addptr %ys, %offs : tensor<1024x!tt.ptr<f32>>, tensor<1024xi32>
    %b = tt.load %yp, %mask : tensor<1024x!tt.ptr<f32>>
    %os = tt.splat %o : !tt.ptr<f32> -> tensor<1024x!tt.ptr<f32>>
    %op = tt.addptr %os, %offs : tensor<1024x!tt.ptr<f32>>, tensor<1024xi32>
    %sum = arith.addf %a, %b : tensor<1024xf32>
    tt.store %op, %sum, %mask : tensor<1024x!tt.ptr<f32>>
    tt.return
  }
}

// -----

// fp16 with `other`: eight halves per thread are one v4.b32 of packed pairs, and the -2.0
// `other` is packed the same way (mov'd into the four words before the predicated load).

// CHECK-LABEL: .visible .entry row(
// CHECK:       mov.b16 [[H:%rs[0-9]+]], 0xC000;
// CHECK-NEXT:  mov.b32 %r{{[0-9]+}}, {[[H]], [[H]]};
// CHECK:       @%p{{[0-9]+}} ld.global.v4.b32 {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, [%rd{{[0-9]+}}];
// CHECK-NOT:   ld.global.b16
// CHECK:       @%p{{[0-9]+}} st.global.v4.b32
builtin.module {
  tt.func public @row(%x: !tt.ptr<f16> {tt.divisibility = 16 : i32}, %o: !tt.ptr<f16> {tt.divisibility = 16 : i32}, %stride: i32 {tt.divisibility = 16 : i32}, %n: i32 {tt.divisibility = 16 : i32}) {
    %pid = tt.get_program_id x : i32
    %rs = arith.muli %pid, %stride : i32
    %cols = tt.make_range {start = 0 : i32, end = 1024 : i32} : tensor<1024xi32>
    %ns = tt.splat %n : i32 -> tensor<1024xi32>
    %mask = arith.cmpi slt, %cols, %ns : tensor<1024xi32>
    %row = tt.addptr %x, %rs : !tt.ptr<f16>, i32
    %xs = tt.splat %row : !tt.ptr<f16> -> tensor<1024x!tt.ptr<f16>>
    %xp = tt.addptr %xs, %cols : tensor<1024x!tt.ptr<f16>>, tensor<1024xi32>
    %ninf = arith.constant dense<-2.0> : tensor<1024xf16>
    %v = tt.load %xp, %mask, %ninf : tensor<1024x!tt.ptr<f16>>
    %orow = tt.addptr %o, %rs : !tt.ptr<f16>, i32
    %os = tt.splat %orow : !tt.ptr<f16> -> tensor<1024x!tt.ptr<f16>>
    %op = tt.addptr %os, %cols : tensor<1024x!tt.ptr<f16>>, tensor<1024xi32>
    tt.store %op, %v, %mask : tensor<1024x!tt.ptr<f16>>
    tt.return
  }
}

// -----

// No alignment fact on the pointer (a "*fp32" launch of an unaligned view): per element.

// CHECK-LABEL: .visible .entry unaligned(
// CHECK-NOT:   .v4
// CHECK-COUNT-8: ld.global.b32
builtin.module {
  tt.func public @unaligned(%x: !tt.ptr<f32>, %n: i32 {tt.divisibility = 16 : i32}) {
    %pid = tt.get_program_id x : i32
    %c = arith.constant 1024 : i32
    %start = arith.muli %pid, %c : i32
    %r = tt.make_range {start = 0 : i32, end = 1024 : i32} : tensor<1024xi32>
    %s = tt.splat %start : i32 -> tensor<1024xi32>
    %offs = arith.addi %s, %r : tensor<1024xi32>
    %ns = tt.splat %n : i32 -> tensor<1024xi32>
    %mask = arith.cmpi slt, %offs, %ns : tensor<1024xi32>
    %xs = tt.splat %x : !tt.ptr<f32> -> tensor<1024x!tt.ptr<f32>>
    %xp = tt.addptr %xs, %offs : tensor<1024x!tt.ptr<f32>>, tensor<1024xi32>
    %a = tt.load %xp, %mask : tensor<1024x!tt.ptr<f32>>
    %b = arith.addf %a, %a : tensor<1024xf32>
    tt.store %xp, %b, %mask : tensor<1024x!tt.ptr<f32>>
    tt.return
  }
}

// -----

// n not known to be a multiple of 4 elements: `offs < n` may change inside a thread's four
// elements, so each keeps its own predicate and its own access.

// CHECK-LABEL: .visible .entry ragged(
// CHECK-NOT:   .v4
// CHECK-COUNT-8: setp.lt.s32
// CHECK-COUNT-8: ld.global.b32
builtin.module {
  tt.func public @ragged(%x: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %n: i32) {
    %pid = tt.get_program_id x : i32
    %c = arith.constant 1024 : i32
    %start = arith.muli %pid, %c : i32
    %r = tt.make_range {start = 0 : i32, end = 1024 : i32} : tensor<1024xi32>
    %s = tt.splat %start : i32 -> tensor<1024xi32>
    %offs = arith.addi %s, %r : tensor<1024xi32>
    %ns = tt.splat %n : i32 -> tensor<1024xi32>
    %mask = arith.cmpi slt, %offs, %ns : tensor<1024xi32>
    %xs = tt.splat %x : !tt.ptr<f32> -> tensor<1024x!tt.ptr<f32>>
    %xp = tt.addptr %xs, %offs : tensor<1024x!tt.ptr<f32>>, tensor<1024xi32>
    %a = tt.load %xp, %mask : tensor<1024x!tt.ptr<f32>>
    %b = arith.addf %a, %a : tensor<1024xf32>
    tt.store %xp, %b, %mask : tensor<1024x!tt.ptr<f32>>
    tt.return
  }
}

// -----

// `offs <= n` changes at n + 1, which no alignment fact places on a vector boundary: per element.
// A scalar load (`tl.load(ptr + pid)`) is one ld.global that every thread issues.

// CHECK-LABEL: .visible .entry le_mask(
// CHECK:       ld.global.b64
// CHECK-NOT:   .v4
// CHECK-COUNT-8: ld.global.b32
builtin.module {
  tt.func public @le_mask(%x: !tt.ptr<f32> {tt.divisibility = 16 : i32}, %t: !tt.ptr<i64>, %n: i32 {tt.divisibility = 16 : i32}) {
    %pid = tt.get_program_id x : i32
    %tp = tt.addptr %t, %pid : !tt.ptr<i64>, i32
    %tv = tt.load %tp : !tt.ptr<i64>
    %c = arith.constant 1024 : i32
    %start = arith.muli %pid, %c : i32
    %r = tt.make_range {start = 0 : i32, end = 1024 : i32} : tensor<1024xi32>
    %s = tt.splat %start : i32 -> tensor<1024xi32>
    %offs = arith.addi %s, %r : tensor<1024xi32>
    %ns = tt.splat %n : i32 -> tensor<1024xi32>
    %mask = arith.cmpi sle, %offs, %ns : tensor<1024xi32>
    %xs = tt.splat %x : !tt.ptr<f32> -> tensor<1024x!tt.ptr<f32>>
    %xp = tt.addptr %xs, %offs : tensor<1024x!tt.ptr<f32>>, tensor<1024xi32>
    %a = tt.load %xp, %mask : tensor<1024x!tt.ptr<f32>>
    %b = arith.sitofp %tv : i64 to f32
    %bs = tt.splat %b : f32 -> tensor<1024xf32>
    %sum = arith.addf %a, %bs : tensor<1024xf32>
    tt.store %xp, %sum, %mask : tensor<1024x!tt.ptr<f32>>
    tt.return
  }
}
