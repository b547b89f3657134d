// RUN: sparsecc-opt --list-passes | filecheck %s
// Every pass by name, each with the first sentence of its docstring.
// CHECK-DAG: {{^}}decompose-sparse-tensors{{ +[A-Z].*$}}
// CHECK-DAG: {{^}}convert-tt-to-ttg{{ +[A-Z].*$}}
// CHECK-DAG: {{^}}sparse-gpu-encoding{{ +[A-Z].*$}}
// CHECK-DAG: {{^}}tritongpu-pipeline{{ +[A-Z].*$}}
// CHECK-DAG: {{^}}canonicalize{{ +[A-Z].*$}}
// CHECK-DAG: {{^}}cse{{ +[A-Z].*$}}
// CHECK-DAG: {{^}}tritongpu-wgmma-unroll{{ +[A-Z].*$}}
// CHECK-DAG: {{^}}tritongpu-sink-local-loads{{ +[A-Z].*$}}
// CHECK-DAG: {{^}}tritongpu-scale-after-dot{{ +[A-Z].*$}}
// CHECK-DAG: {{^}}tritongpu-warp-specialize{{ +[A-Z].*$}}
// CHECK-DAG: {{^}}convert-ttg-to-ptx{{ +[A-Z].*$}}
// CHECK-DAG: {{^}}ptx-hoist-loop-invariants{{ +[A-Z].*$}}
// CHECK-DAG: {{^}}ptx-strength-reduce{{ +[A-Z].*$}}
// CHECK-DAG: {{^}}allocate-shared-memory {{ *}}Give every shared buffer and scratch its offset, the module its total{{$}}
// CHECK-DAG: {{^}}tritongpu-insert-barriers {{ *}}Place the CTA barriers of each `tt.func` as `ttg.barrier` ops{{$}}
// Passes no compiler stage runs say so after their description.
// CHECK-DAG: {{^}}expand-dequantize {{ *}}Rewrite `tt.dequantize` as extui/shifts/reshapes/float ops  (tool pass, in no compiler pipeline: tt.dequantize as plain tensor ops, for a backend without its own dequantize lowering){{$}}
