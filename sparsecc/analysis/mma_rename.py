"""Which `ttg.convert_layout`s of an mma accumulator to the next dot's A operand rename
registers (codegen/mma_shortcut.py builds them): a fact both the lowering and the shared-memory
analysis need (such a convert takes no scratch and no barrier)."""

from __future__ import annotations

from xdsl.dialects.builtin import TensorType

from sparsecc.analysis.dtypes import esize
from sparsecc.dialects.ttg import DotOperandEncodingAttr, MmaEncodingAttr


def is_mma_to_a_rename(src: TensorType, dst: TensorType) -> bool:
    """Whether converting `src` (an mma.sync or wgmma accumulator layout) to `dst` renames
    registers: 16-bit elements, `dst` the dense A operand of an mma layout with the same warps
    (version 2 or 3 alike: their register maps agree), warps along M only, whole m16 tiles per
    warp and K a multiple of 16.

        is_mma_to_a_rename(p_f16_mma_8x1, p_f16_dot_op_a)   # True for attention's P
    """
    s_enc, d_enc = src.encoding, dst.encoding
    if not (isinstance(s_enc, MmaEncodingAttr) and isinstance(d_enc, DotOperandEncodingAttr)):
        return False
    parent = d_enc.parent
    if d_enc.op_idx != 0 or d_enc.meta != -1 or not isinstance(parent, MmaEncodingAttr):
        return False
    if parent.warps_per_cta != s_enc.warps_per_cta:
        return False
    if esize(src.element_type) != 2 or len(src.get_shape()) != 2:
        return False
    wm, wn = s_enc.warps_per_cta
    m, n = src.get_shape()
    return wn == 1 and m % (16 * wm) == 0 and n % 16 == 0


__all__ = ["is_mma_to_a_rename"]
