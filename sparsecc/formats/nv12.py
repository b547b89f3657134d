"""NV12: NVIDIA's 1:2 structured sparsity of 32-bit elements along K (tf32 tensor cores).

What `mma.sp` and `wgmma.mma_async.sp` call ".tf32 with 1:2 sparsity": of every 2 consecutive
fp32 elements of a row at most 1 is nonzero (so every NV12 matrix is also 2:4). The tensor cores
read the values as tf32 (the low 13 mantissa bits are ignored). The name follows NV24 (N:M ->
NV{N}{M}); `#tt.sparse<"NV12">` and `*fp32:NV12` name it.

The contract, for a dense M x K fp32 matrix (row-major, K the sparse dimension):

* `values` is M x K/2 fp32: pair `p` of row `m` stores its kept element (the nonzero; the first
  one of an all-zero pair) at `values[m, p]`.
* The metadata describes each pair as 2:4 over its four 16-bit halves, as PTX does: kept
  element i is indices (2i, 2i + 1), the nibble 0b0100 (i = 0) or 0b1110 (i = 1). A 16-bit word
  holds the 4 pairs (8 columns) of one row, pair j in bits 4j..4j+3. Words are arranged exactly
  like NV24's, 8 columns per word instead of 16: the word of row m and 8-column chunk c is 16-bit
  entry `16*c + m % 16` of metadata row `m // 16`.
* `meta` stores those 16-bit entries in pairs as int32 (little-endian: entry 2e in the low
  half of element e), ceil(M/16) x K: the same shape and strides as NV24's metadata (only the
  element is twice as wide), so decomposition is NV24's. Rows past M hold 0x4444 words
  (element 0 of each pair).
* K must be a multiple of 16, tiles multiples of 16 both ways.

`sparsecc.compress(dense_fp32)` produces NV12 (`prune_1to2` makes a matrix NV12-sparse); the
interpreter runs `tl.dot` with an NV12 operand in fp32, the GPU `mma.sp` m16n8k16.tf32 (sm_80+)
or `wgmma.mma_async.sp` m64nNk16.tf32 (sm_90a). On the GPU a thread's metadata register packs
the 16-bit words as NV24's do for 16-bit elements (chunk t of rows g and g + 8, two threads of a
quad per instruction: measured on the H100, bench/results/NOTES.md stop 14); the dense operand
is read K-major (tf32 operands are not transposed by the tensor cores).
"""

from __future__ import annotations

from sparsecc.formats.base import (
    META_16BIT,
    ArrayMap,
    GroupShape,
    Instruction,
    MetadataLayout,
    SparseFormat,
)
from sparsecc.formats.elements import FP32, I16, I32

GROUP = GroupShape(kept=1, size=2)
META = MetadataLayout(element=I16, index_bits=2, word_cols=8, block_rows=16, pad_word=0x4444, halves=True)

NV12 = SparseFormat(
    name="NV12",
    summary="NVIDIA 1:2 of 32-bit elements (tf32) along the last dimension",
    element_types=(FP32,),
    element_kind="a 32-bit float element type (read as tf32)",
    runtime_element_types=(FP32,),
    group=GROUP,
    meta=META,
    values=ArrayMap(suffix="values", element=None, row_div=1, col_div=2, row_stride_div=2),
    # 16 entries of 8 columns per 16 dense rows = K 16-bit entries per 8 columns... stored as
    # K int32 (entry pairs) per metadata row: NV24's geometry with a wider element
    metadata=ArrayMap(suffix="meta", element=I32, row_div=16, col_div=1, row_stride_div=1, masked_fill=0),
    tile_multiple=(16, 16),
    instructions=(
        Instruction("mma.sp::ordered_metadata", (16, 8, 16), "sm_80",
                    "a thread pair's register holds the 8-column words of rows r and r+8, as NV24's",
                    (FP32,), META_16BIT),
        Instruction("wgmma.mma_async.sp", (64, 256, 16), "sm_90a", "K-major operands only; the mma.sp layout per warp",
                    (FP32,), META_16BIT),
    ),
)
"""The NV12 format (see the module docstring)."""
