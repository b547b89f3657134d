"""NV24: NVIDIA's 2:4 structured sparsity along K, as `mma.sp` and `wgmma.mma_async.sp` read it.

The contract every stage shares (the compiler, the interpreter, `sparsecc.compress`, the GPU
kernels), for a dense M x K matrix `A` (row-major, K the sparse dimension):

* Along K each row is cut into groups of 4 consecutive columns; a group holds at most 2
  nonzeros (NaN counts as nonzero). The 2 kept positions `idx0 < idx1` of a group with fewer
  nonzeros are its nonzeros topped up with the lowest free positions; an all-zero group keeps
  `(0, 1)` with values `0, 0`.
* `values` is M x K/2 (the dense element type, contiguous): group `g` of row `m` stores
  `A[m, 4g+idx0]` at `values[m, 2g]` and `A[m, 4g+idx1]` at `values[m, 2g+1]`.
* `meta` is i16, ceil(M/16) x K (contiguous). The 16-bit word of row `m` and 16-column chunk
  `c` lives at `meta[m // 16, 16*c + m % 16]`. In it, group `j` of the chunk (columns
  `16c+4j .. 16c+4j+3`) occupies bits `4j..4j+3`: `idx0` in bits `4j..4j+1`, `idx1` in bits
  `4j+2..4j+3` (PTX `ordered_metadata`: the smaller index in the low bits). Words are stored as
  int16 two's complement (`0b1000111001001101` is stored as -29107).
* K must be a multiple of 16. M may be anything >= 1: rows past M up to the next multiple of
  16 exist only in `meta` and hold 0x4444 (`(0, 1)` in every group), so a kernel can always
  load whole 16-row metadata blocks.

Decomposed, a dense block of a matrix with row stride sM (sK = 1) addressed at (om, ok) with a
BM x BK tile is:

    values    shape [M, K/2]          strides [sM/2, sK]  offsets [om, ok/2]   tile BM x BK/2
    metadata  shape [ceil(M/16), K]   strides [sM, sK]    offsets [om/16, ok]  tile BM/16 x BK

(the metadata row stride equals the dense one because a metadata row holds 16 words for each
16 columns: K words). Offsets along M and K must be multiples of 16 at run time (a tile starts
on a metadata word), tiles multiples of 16 both ways.

The GPU reads both arrays unchanged: `mma.sp::ordered_metadata` m16n8k32 (sm_80+) and, on
sm_90a, `wgmma.mma_async.sp` with K = 32 per instruction; neither needs a re-encoding.

The element types: fp16, bf16, fp8 e4m3 / e5m2 and int8, everywhere (`#tt.sparse<"NV24">`,
`*T:NV24` signatures, `compress`, `SparseTensor`, the interpreter, the GPU). The arrays have
the same shapes and the same 16-bit words for every type, since a group is 4 elements whatever
their width. What differs is how a thread's 32-bit metadata register packs the words, which
each instruction below states as data (`base.MetaFragment`, read by the lowering):

* 16-bit elements (m16n8k32, K = 32 per instruction): one register serves two instructions;
  thread t of quad g holds 16-column chunk t of rows g (bits 15:0) and g + 8 (bits 31:16), the
  sparsity selector picking threads 0-1 or 2-3;
* 8-bit elements (m16n8k64 / m64nNk64, K = 64): one register per instruction, every thread
  supplying one; thread t holds row g + 8 (t % 2), chunks 2 (t // 2) and 2 (t // 2) + 1: 32
  consecutive columns of one row (measured on the H100, bench/results/NOTES.md stop 14).

fp8 needs sm_89 or newer, and the tensor cores read an 8-bit dense operand K-major only.
"""

from __future__ import annotations

from sparsecc.formats.base import (
    META_8BIT,
    META_16BIT,
    ArrayMap,
    GroupShape,
    Instruction,
    MetadataLayout,
    SparseFormat,
)
from sparsecc.formats.elements import BF16, FP8E4NV, FP8E5, FP16, I8, I16

GROUP = GroupShape(kept=2, size=4)
META = MetadataLayout(element=I16, index_bits=2, word_cols=16, block_rows=16, pad_word=0x4444)

NV24 = SparseFormat(
    name="NV24",
    summary="NVIDIA 2:4 along the last dimension",
    element_types=(FP16, BF16, FP8E4NV, FP8E5, I8),
    element_kind="a 16- or 8-bit element type",
    runtime_element_types=(FP16, BF16, FP8E4NV, FP8E5, I8),
    group=GROUP,
    meta=META,
    # Values: 2 of every 4 columns, rows unchanged; the row stride halves with the columns.
    values=ArrayMap(suffix="values", element=None, row_div=1, col_div=GROUP.size // GROUP.kept,
                    row_stride_div=GROUP.size // GROUP.kept),
    # Metadata: one row per 16 dense rows, holding 16 words per 16 columns (K words a row).
    metadata=ArrayMap(suffix="meta", element=I16, row_div=META.block_rows,
                      col_div=META.word_cols // META.block_rows, row_stride_div=1, masked_fill=0),
    tile_multiple=(META.block_rows, META.word_cols),
    instructions=(
        Instruction("mma.sp::ordered_metadata", (16, 8, 32), "sm_80",
                    "a thread pair's 32-bit register holds the two 16-bit words of rows r and r+8",
                    (FP16, BF16), META_16BIT),
        Instruction("wgmma.mma_async.sp", (64, 256, 32), "sm_90a",
                    "N any multiple of 8 up to 256; the same words, a thread pair's 32-bit register",
                    (FP16, BF16), META_16BIT),
        Instruction("mma.sp::ordered_metadata", (16, 8, 64), "sm_89",
                    "8-bit (e4m3, e5m2; s8 from sm_80): each thread's register holds two words of one row",
                    (FP8E4NV, FP8E5, I8), META_8BIT),
        Instruction("wgmma.mma_async.sp", (64, 256, 64), "sm_90a",
                    "8-bit, K-major operands only; the 8-bit mma.sp register layout per warp",
                    (FP8E4NV, FP8E5, I8), META_8BIT),
    ),
)
"""The NV24 format (see the module docstring)."""
