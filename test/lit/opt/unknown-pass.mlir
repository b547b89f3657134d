// RUN: not sparsecc-opt %s -p canonicalize,no-such-pass 2>&1 | filecheck %s
// An unknown pass name is reported with the passes that do exist; no IR is printed.

// CHECK: error: unknown pass 'no-such-pass'; known passes: {{.*}}convert-tt-to-ttg{{.*}}decompose-sparse-tensors
// CHECK-NOT: builtin.module
// CHECK-NOT: Traceback
builtin.module {
}
