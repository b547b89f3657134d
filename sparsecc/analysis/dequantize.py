"""Where `tt.dequantize` can build a dot operand's fragments itself (no shared-memory round trip).

sparse-gpu-encoding gives such an op the dot's `#ttg.dot_op` encoding; the lowering
(`codegen/lower_quant.py`) then builds the fragment registers straight from the codes.

A warpgroup MMA's fragment dequantization may also take its scales (and zero points) in
registers, loaded in the dot's accumulator layout (`scale_registers`): a thread's A fragment
rows are its accumulator rows, so each thread loads just the scales of its own rows, and the
K loop keeps no shared-memory stream for them (the other streams can then be TMA copies).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from types import MappingProxyType

from xdsl.dialects.builtin import TensorType, f16

from sparsecc.analysis.layouts import WARP, LayoutError, distributed
from sparsecc.dialects import tt
from sparsecc.dialects import ttg as ttgd


def fragment_dequantize(op: tt.DequantizeOp, enc: object) -> bool:
    """Whether `op` can produce the dot operand of encoding `enc` straight in its fragment
    registers: an f16 result for the values (meta = 0) of an mma.sp / wgmma.sp A operand, 4- or
    8-bit codes in rows of whole 16-byte chunks, m16 row tiles, each scale covering whole
    8-column halves of the 16-column steps."""
    res_ty, codes_ty, scales_ty = op.result.type, op.codes.type, op.scales.type
    if not (isinstance(enc, ttgd.DotOperandEncodingAttr) and enc.op_idx == 0 and enc.meta == 0
            and isinstance(enc.parent, ttgd.MmaEncodingAttr)):
        return False
    assert isinstance(res_ty, TensorType) and isinstance(codes_ty, TensorType) and isinstance(scales_ty, TensorType)
    rows, cols = res_ty.get_shape()
    bits = op.bits.value.data
    per_scale = cols // scales_ty.get_shape()[1]
    return (res_ty.element_type == f16 and bits in (4, 8) and rows % 16 == 0
            and codes_ty.get_shape()[1] % 16 == 0 and cols % 16 == 0 and per_scale % 8 == 0)


def feeding_dot(op: tt.DequantizeOp) -> tt.DotOp | None:
    """The `tt.dot` whose A operand is `op`'s only use, or None."""
    uses = list(op.result.uses)
    if len(uses) != 1 or not isinstance(uses[0].operation, tt.DotOp) or uses[0].index != 0:
        return None
    return uses[0].operation


@functools.cache
def scale_registers(mma: ttgd.MmaEncodingAttr, rows: int,
                    groups: int) -> Mapping[tuple[int, int, int], int] | None:
    """Where a thread finds the scale of each group of its A fragment rows when a rows x groups
    scale tile is held in the accumulator layout `mma` (a wgmma's, #ttg.mma version 3): key
    (m16 tile i of the warp, half h: row g or g + 8, group column c) -> register index, the same
    for every thread, or None when some thread does not hold a scale it needs (more group
    columns than the layout's columns cover), or the layout has no register map for the shape.

    A warp's i-th m16 tile is tile `w_m + i * W_m` of the block (`codegen.lower_dot.warp_m_tiles`),
    its rows 16 * tile + g and + 8 for lane 4g + t, exactly the rows the accumulator layout gives
    the thread; its fragments span every kept column, so it needs every group column. Cached
    (several passes and the lowering ask, each evaluating every thread): the map is read-only.

        >>> dict(scale_registers(ttgd.MmaEncodingAttr((8, 1), version_major=3, instr_shape=(64, 128)), 128, 1))
        {(0, 0, 0): 0, (0, 1, 0): 2}
    """
    if mma.version_major != 3:
        return None
    wm, wn = mma.warps_per_cta
    if rows % (16 * wm):
        return None
    try:
        dl = distributed(mma, (rows, groups))
    except LayoutError:
        return None
    rep = rows // (16 * wm)
    threads = [(w, lane) for w in range(wm * wn) for lane in range(WARP)]
    found: dict[tuple[int, int, int], int] = {}
    for i in range(rep):
        for h in (0, 1):
            rows_of = [16 * ((w // wn) % wm + i * wm) + lane // 4 + 8 * h for w, lane in threads]
            for c in range(groups):
                r = next((r for r in range(dl.num_regs)
                          if all(dl.coord(w, lane, r) == (row, c) for (w, lane), row in zip(threads, rows_of))), None)
                if r is None:
                    return None
                found[(i, h, c)] = r
    return MappingProxyType(found)


def scales_in_registers(op: tt.DequantizeOp, v: object) -> bool:
    """Whether operand `v` (the scales or zero points) of `op` arrives in registers by design: the
    op builds a wgmma's A fragments and `v` is in their accumulator layout (`scale_registers`),
    not staged in shared memory."""
    res_ty = op.result.type
    enc = getattr(res_ty, "encoding", None)
    ty = getattr(v, "type", None)
    if not (isinstance(enc, ttgd.DotOperandEncodingAttr) and isinstance(ty, TensorType)
            and v in (op.scales, op.zeros)):
        return False
    return ty.encoding == enc.parent and scale_registers(enc.parent, *ty.get_shape()) is not None


__all__ = ["feeding_dot", "fragment_dequantize", "scale_registers", "scales_in_registers"]
