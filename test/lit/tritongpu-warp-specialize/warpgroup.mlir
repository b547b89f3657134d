// RUN: sed 's/"ttg.num-warps" = 4/"ttg.num-warps" = 8/' %S/tma.mlir | sparsecc-opt --split-input-file -p 'tritongpu-warp-specialize{warpgroup=true}' | filecheck %s --check-prefix=EIGHT
// RUN: sparsecc-opt %S/tma.mlir --split-input-file -p 'tritongpu-warp-specialize{warpgroup=true}' | filecheck %s --check-prefix=FOUR
// RUN: sed 's/"ttg.num-warps" = 4/"ttg.num-warps" = 8/' %S/tma.mlir | sparsecc-opt --split-input-file -p tritongpu-warp-specialize | filecheck %s --check-prefix=OFF
// With warpgroup=true, a kernel of two compute warpgroups (tma.mlir's sgemm at 8 warps) gets a
// producer warpgroup (4 warps, whose registers the lowering moves to the compute warps with
// setmaxnreg), the same ops marked; at 4 compute warps it keeps one producer warp, as it does
// at 8 without the option. The wgmma loop without TMA copies stays unmarked either way.

// EIGHT-LABEL: tt.func public @sgemm
// EIGHT-SAME:  attributes {"ttg.producer-warps" = 4 : i32}
// EIGHT:       } {ttg.producer}
// EIGHT:       tt.store
// EIGHT-LABEL: tt.func public @gemm
// EIGHT-NOT:   ttg.producer
// EIGHT:       tt.return

// FOUR-LABEL:  tt.func public @sgemm
// FOUR-SAME:   attributes {"ttg.producer-warps" = 1 : i32}

// OFF-LABEL:   tt.func public @sgemm
// OFF-SAME:    attributes {"ttg.producer-warps" = 1 : i32}
