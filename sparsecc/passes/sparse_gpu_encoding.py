"""sparse-gpu-encoding: stage dot operands through shared memory with a swizzle per `meta` class.

Each `ttg.convert_layout(tt.load(...)) -> #ttg.dot_op` becomes
`ttg.local_alloc(tt.load(...)) -> !ttg.memdesc<#ttg.shared>` + `ttg.local_load -> #ttg.dot_op`.
The #ttg.shared chosen depends on the dot_op's `meta` field (seed 001: the pass sees only the
tensor type, so the type must say whether it is values, metadata or a dense operand).

Bank math. Shared memory has 32 banks of 4 bytes: a 128-byte line touches every bank once.
`ldmatrix` reads 8x8 b16 matrices; each matrix is one phase of 8 row addresses x 16 bytes
(8 x 16 B = 128 B), so a phase is conflict-free iff its 8 rows fall in 8 different 16-byte
bank groups (modulo 128 B).

- Values (meta = 0, A of mma.sp: M x K/2, K/2 contiguous, read by non-transposed
  ldmatrix.x4) and dense A (meta = -1, opIdx 0) — row of R elements of e bytes, rowBytes = R*e:
  without a swizzle, rows >= 128 B apart start in the same bank group: 8-way conflict.
  Triton's MMAv2 rule fixes it: vec = 16 / e (one ldmatrix row = one 16-byte swizzle unit),
  perPhase = max(1, 128 / rowBytes) (rows that share one 128-byte line already sit in
  different bank groups, so they share a phase), maxPhase = max(1, 8 / perPhase) (8 rows =
  perPhase*maxPhase rows get distinct XOR masks), clamped to the R / vec units a row has.
  8 consecutive rows then cover perPhase rows/line x maxPhase phases = 8 distinct 16-byte
  groups: conflict-free. E.g. a 64x32 f16 values tile: rowBytes 64, perPhase 2, maxPhase 4.
- Dense B (opIdx 1, K x N row-major, read by ldmatrix.trans: each 8x8 matrix is 8 K-rows x
  8 N-contiguous halves = again 8 rows x 16 B): the same rule on its N-contiguous rows.
- Metadata (meta = 1, i16, (BM/16) x BK, NV24 word of (row m, chunk c) at [m//16, 16c + m%16]):
  seed 003's idea — one ldmatrix must feed two consecutive mma.sp m16n8k32 along K, the
  first with sparsity selector 0 (lane pair t0/t1 of each quad), the second with selector 1
  (t2/t3). The mma.sp metadata b32 of lane 4g+t (t = 0, 1 for selector 0) holds
  (row g, chunk c) and (row g+8, chunk c) for chunk c = 2s+t of K-step s. View the 64
  words [64q, 64q+64) of a metadata row as an 8x8 b16 matrix M with row R = 2c' + m//8,
  col m%8 (word 64q + 16c' + m = 64q + 8R + col: row-major, 16 contiguous bytes per row).
  `ldmatrix.trans` gives lane 4g+t {M[2t][g], M[2t+1][g]} = {(row g, chunk 4q+t),
  (row g+8, chunk 4q+t)}: selector 0's register of K-step 2q for t = 0, 1 and selector 1's
  register of K-step 2q+1 for t = 2, 3 — one register feeds both mma.sp. So the NV24
  format needs no permutation and no XOR swizzle: the 8 rows of a matrix are 128
  contiguous bytes, one per 16-byte bank group, conflict-free; ldmatrix.x4 covers 4 such
  groups (e.g. 4 m16 blocks = 64 rows). The shared layout is plain row-major
  (vec = perPhase = maxPhase = 1) and carries `metaPack = 1` when BK % 64 == 0 to tell the
  lowering the paired-selector ldmatrix read applies (otherwise per-thread ld.shared of
  adjacent words, which is also conflict-free).
- B of a Hopper warpgroup MMA (parent #ttg.mma version 3): wgmma reads it from shared memory
  itself, through a matrix descriptor, so it must be in one of the hardware's canonical
  layouts: `wgmma_swizzle` (MN-major, 128/64/32-byte swizzle, `colBlock` sub-tiles).
- Operands of `tt.dequantize` (a quantized 2:4 tile's codes, scales and zero points, loaded
  for it alone): the codes with the MMAv2 swizzle of their rows (a warp reads 16-byte chunks of
  several rows at once), scales and zero points plain row-major; they are not dot operands
  but what each thread dequantizes its share of the values tile from (`codegen/lower_quant.py`),
  staged so the pipeline streams them with the dot's tiles. An fp16 `tt.dequantize` whose one
  use converts it to the dot's values operand takes that `#ttg.dot_op<{meta = 0}>` encoding
  itself (`analysis/dequantize.fragment_dequantize`): its lowering builds the fragment
  registers from the codes, and the convert (a round trip through shared memory) goes.
- B loaded through a column-major block pointer (its tile's #ttg.blocked order is [0, 1]):
  staged K-major (`order = [0, 1]`: N rows of K, the same swizzle rule along K), so copies
  stay 16-byte vectors and plain `ldmatrix` (no .trans) gives the mma.sp B fragments.
- 8-bit (int8, fp8) and tf32 B: staged K-major whatever its memory order, since neither
  `ldmatrix.trans` (16-bit elements only) nor wgmma (16-bit transposes only) can read an
  N-major tile of them. A row-major (N-contiguous) tile is transposed on its way in: the
  registers' fast dim is not the buffer's, so the copy is per element (`st.shared.b8`, the
  cp.async ring's synchronous path) instead of 16-byte vectors.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from sparsecc.analysis.dequantize import fragment_dequantize
from sparsecc.analysis.dot_staging import elem_bytes as _elem_bytes
from sparsecc.analysis.dot_staging import mma_swizzle, shared_encoding_for, wgmma_swizzle
from sparsecc.dialects import tt
from sparsecc.dialects.ttg import (
    ConvertLayoutOp,
    DotOperandEncodingAttr,
    LocalAllocOp,
    LocalLoadOp,
    MemDescType,
    MmaEncodingAttr,
    SharedEncodingAttr,
)


@dataclass(frozen=True)
class SparseGPUEncodingPass(ModulePass):
    """Replace register converts of loaded dot operands by shared-memory staging."""

    name = "sparse-gpu-encoding"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for cvt in list(op.walk()):
            if not isinstance(cvt, ConvertLayoutOp):
                continue
            res_ty = cvt.result.type
            assert isinstance(res_ty, TensorType)
            enc = res_ty.encoding
            if not isinstance(enc, DotOperandEncodingAttr) or not isinstance(cvt.src.owner, tt.LoadOp):
                continue
            src_ty = cvt.src.type
            assert isinstance(src_ty, TensorType)
            mem_ty = MemDescType(src_ty.get_shape(), src_ty.element_type, shared_encoding_for(enc, src_ty))
            alloc = LocalAllocOp(mem_ty, cvt.src)
            load = LocalLoadOp(alloc.result, res_ty)
            Rewriter.replace_op(cvt, [alloc, load], [load.result])
            _hoist_invariant_alloc(alloc)
        for dq in [o for o in op.walk() if isinstance(o, tt.DequantizeOp)]:
            _stage_dequantize_operands(dq)
            _dequantize_into_fragments(dq)


def _hoist_invariant_alloc(alloc: LocalAllocOp) -> None:
    """A tile loaded before a loop and used by a dot inside it (attention's Q) is stored to
    shared memory once, right after its load, rather than on every iteration; the
    `ttg.local_load` stays by the dot. Buffers are never reused (allocate-shared-memory), so
    the one written before the loop stays valid through it."""
    src = alloc.src
    load = src.owner
    if not isinstance(load, tt.LoadOp) or load.parent_block() is alloc.parent_block():
        return
    if len(list(src.uses)) != 1:
        return  # other users of the registers: the tile is live in them anyway
    alloc.detach()
    Rewriter.insert_op(alloc, InsertPoint.after(load))


def _stage_dequantize_operands(dq: tt.DequantizeOp) -> None:
    """A quantized tile's codes, scales and zero points, loaded for `tt.dequantize` alone, go
    through shared memory (`ttg.local_alloc` + `ttg.local_load`; the codes swizzled, the rest
    row-major): the form the
    pipeline streams with the dot's other tiles, and the buffer the lowering dequantizes from
    in registers (`codegen/lower_quant.py`)."""
    for i, v in enumerate(dq.operands):
        load = v.owner
        if not isinstance(load, tt.LoadOp) or len(list(v.uses)) != 1:
            continue
        ty = v.type
        assert isinstance(ty, TensorType)
        if isinstance(ty.encoding, MmaEncodingAttr):
            continue  # scales in a wgmma's accumulator layout: registers by design (convert-tt-to-ttg)
        # codes rows are read 4-16 bytes a thread, several rows a warp: swizzled like ldmatrix
        # rows so those rows fall in different banks (scales rows are too short to need it)
        enc = (mma_swizzle(ty.get_shape()[1], _elem_bytes(ty.element_type)) if i == 0
               else SharedEncodingAttr(1, 1, 1, (1, 0)))
        mem_ty = MemDescType(ty.get_shape(), ty.element_type, enc)
        alloc = LocalAllocOp(mem_ty, v)
        staged = LocalLoadOp(alloc.result, ty)
        block = dq.parent_block()
        assert block is not None
        block.insert_ops_before([alloc, staged], dq)
        alloc.location = staged.location = load.location
        dq.operands[i] = staged.result


def _dequantize_into_fragments(dq: tt.DequantizeOp) -> None:
    """A `tt.dequantize` whose one use converts it to the dot's values operand takes that
    operand's `#ttg.dot_op` encoding itself where the lowering can build the fragments directly
    (`codegen/lower_quant.fragment_dequantize`): the convert, a round trip through shared
    memory, goes away."""
    uses = list(dq.result.uses)
    if len(uses) != 1 or not isinstance(uses[0].operation, ConvertLayoutOp):
        return
    cvt = uses[0].operation
    res_ty = cvt.result.type
    assert isinstance(res_ty, TensorType)
    if not fragment_dequantize(dq, res_ty.encoding):
        return
    direct = tt.DequantizeOp(dq.codes, dq.scales, dq.zeros, dq.bits.value.data, res_ty)
    direct.location = dq.location
    Rewriter.replace_op(dq, direct)
    Rewriter.replace_op(cvt, [], [direct.result])


__all__ = ["SparseGPUEncodingPass", "shared_encoding_for", "mma_swizzle", "wgmma_swizzle"]
