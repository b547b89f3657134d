"""An mma.sync or wgmma accumulator turned into the A operand of the next dot without shared memory.

In attention, P = softmax(Q K^T) sits in the registers of the first dot's #ttg.mma layout and
is the A operand of P @ V. When every warp is along M (warpsPerCTA = [W, 1]: each warp holds
whole rows of P) and both dots share the parent layout, the m16n8 accumulators of two
neighbouring n8 tiles hold exactly the m16k16 A fragment of one K step (Triton's
"mma to dot shortcut"): lane 4g + t has (row g, cols 2t, 2t+1) and (row g + 8, the same cols)
of each n8 tile, which are A's a0/a1 (K columns 0-7) and a2/a3 (K columns 8-15) after packing
two 16-bit values into a b32. The convert is then a renaming of registers.

A wgmma accumulator (#ttg.mma version 3, warps [W, 1]) has version 2's register map with the
same warps, and wgmma's register A takes the mma.sync A fragment of each warp's 16 rows, so
the same renaming serves any pair of versions 2/3 whose warps agree (P @ V on wgmma with P in
registers, as Triton emits it on Hopper).
"""

from __future__ import annotations

from xdsl.dialects.builtin import TensorType

from sparsecc.analysis.mma_rename import is_mma_to_a_rename
from sparsecc.codegen.lower_base import Frag, LoweringContext, Regs
from sparsecc.codegen.lower_mem import pack_words


def mma_to_a_frags(L: LoweringContext, regs: Regs, dst: TensorType) -> Frag:
    """The A fragments ((i, kk) -> 4 b32, lower_dot's keys) of accumulator registers `regs`,
    whose order is analysis/layouts.mma's: (m16 tile i, n8 tile j, c0..c3) with c0/c1 at row
    g and c2/c3 at row g + 8."""
    wm = dst.encoding.parent.warps_per_cta[0]  # type: ignore[union-attr]
    m, n = dst.get_shape()
    rep_m, rep_n = m // (16 * wm), n // 8
    r = list(regs.regs)
    frags = {}
    for i in range(rep_m):
        for kk in range(n // 16):
            lo, hi = (i * rep_n + 2 * kk) * 4, (i * rep_n + 2 * kk + 1) * 4
            frags[(i, kk)] = pack_words(L, [r[lo], r[lo + 1], r[lo + 2], r[lo + 3],
                                            r[hi], r[hi + 1], r[hi + 2], r[hi + 3]])
    return Frag(dst, frags)


__all__ = ["is_mma_to_a_rename", "mma_to_a_frags"]
