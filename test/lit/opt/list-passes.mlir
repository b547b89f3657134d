// RUN: sparsecc-opt --list-passes | filecheck %s
// CHECK-DAG: {{^}}decompose-sparse-tensors{{$}}
// CHECK-DAG: {{^}}convert-tt-to-ttg{{$}}
// CHECK-DAG: {{^}}sparse-gpu-encoding{{$}}
// CHECK-DAG: {{^}}tritongpu-pipeline{{$}}
// CHECK-DAG: {{^}}canonicalize{{$}}
// CHECK-DAG: {{^}}cse{{$}}
// CHECK-DAG: {{^}}tritongpu-wgmma-unroll{{$}}
// CHECK-DAG: {{^}}tritongpu-sink-local-loads{{$}}
// CHECK-DAG: {{^}}tritongpu-warp-specialize{{$}}
// CHECK-DAG: {{^}}convert-ttg-to-ptx{{$}}
// CHECK-DAG: {{^}}ptx-hoist-loop-invariants{{$}}
// Passes no compiler stage runs say so beside their name.
// CHECK-DAG: {{^}}expand-dequantize  (tool pass, in no compiler pipeline: tt.dequantize as plain tensor ops, for a backend without its own dequantize lowering){{$}}
