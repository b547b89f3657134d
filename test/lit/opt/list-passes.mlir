// RUN: sparsecc-opt --list-passes | filecheck %s
// CHECK-DAG: {{^}}decompose-sparse-tensors{{$}}
// CHECK-DAG: {{^}}convert-tt-to-ttg{{$}}
// CHECK-DAG: {{^}}sparse-gpu-encoding{{$}}
// CHECK-DAG: {{^}}tritongpu-pipeline{{$}}
// CHECK-DAG: {{^}}canonicalize{{$}}
// CHECK-DAG: {{^}}cse{{$}}
