"""Which `ttg.convert_layout`s rename registers: an mma accumulator to the next dot's A operand
(codegen/mma_shortcut.py builds them), or between accumulators (and their slices) of mma
layouts that differ only in instruction N: a fact both the lowering and the shared-memory
analysis need (such a convert takes no scratch and no barrier)."""

from __future__ import annotations

from xdsl.dialects.builtin import TensorType

from sparsecc.analysis.dtypes import esize
from sparsecc.dialects.ttg import DotOperandEncodingAttr, MmaEncodingAttr, SliceEncodingAttr


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


def _mma_of(enc: object) -> tuple[MmaEncodingAttr, int] | None:
    """(the mma layout, the sliced dim or -1) of an mma layout or a slice of one."""
    if isinstance(enc, MmaEncodingAttr):
        return enc, -1
    if isinstance(enc, SliceEncodingAttr) and isinstance(enc.parent, MmaEncodingAttr):
        return enc.parent, enc.dim
    return None


def is_mma_relabel(src: TensorType, dst: TensorType) -> bool:
    """Whether `src` and `dst` are accumulator layouts (or slices of them along the same dim)
    of two mma layouts that differ only in their instruction's N: each thread then holds the
    same elements in the same registers (analysis.layouts.distributed reads only the warps),
    so the convert is a relabel. Attention at head dim 128: the row max and sum come from
    Q K^T (wgmma m64n64) and scale the P @ V accumulator (m64n128).

        is_mma_relabel(alpha_slice_of_m64n64, alpha_slice_of_m64n128)   # True
    """
    s, d = _mma_of(src.encoding), _mma_of(dst.encoding)
    if s is None or d is None or s[1] != d[1] or src.get_shape() != dst.get_shape():
        return False
    (a, _), (b, _) = s, d
    return a.version_major == b.version_major and a.warps_per_cta == b.warps_per_cta


def renames_registers(src: TensorType, dst: TensorType) -> bool:
    """Whether a convert from `src` to `dst` renames registers (`is_mma_to_a_rename` or
    `is_mma_relabel`): no scratch, no barrier, no shared-memory round trip."""
    return is_mma_to_a_rename(src, dst) or is_mma_relabel(src, dst)


__all__ = ["is_mma_relabel", "is_mma_to_a_rename", "renames_registers"]
