"""16-byte global stores of 16-bit MMA-layout tiles (a GEMM's epilogue), by a transpose inside
each quad of lanes.

In the MMA accumulator layout (mma.sp's and wgmma's alike) the four lanes of a quad hold, for
one row, consecutive 2-element pieces of each 8-column chunk: lane t has columns c+2t, c+2t+1
of each chunk c its warp covers (every 8th column, or every 8·wn-th with wn warps along N).
Stored as they are, every store instruction writes 4 bytes per lane and 16 bytes per row (eight
half-filled 32-byte sectors per warp instruction). Measured on the H100 (bench/results/NOTES.md),
such stores take 16-18% of a 4096³ sparse GEMM's time.

Four of a thread's chunks in one row are a 4x4 matrix of 32-bit words (lane t: word k = its
piece of the group's chunk k). Transposing it across the quad, two butterfly stages
(`shfl.sync.bfly` by 1 and by 2, two shuffles and six selects each), leaves lane t with the
whole chunk t of the group: 8 contiguous elements, one 16-byte `st.global.v4`, a quarter of
the store instructions and full sectors.

`transpose_plan` decides statically whether a layout qualifies (16-bit elements, the quad's
lanes on columns, warps along N at whole chunks, whole groups of four chunks per row) and which
registers form each group; `quad_transpose` is the exchange, written over abstract select and
shuffle functions so that a CPU test can run it on four simulated lanes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from xdsl.dialects.builtin import StringAttr, i32
from xdsl.ir import SSAValue

from sparsecc.analysis.layouts import DistLayout, Term
from sparsecc.dialects import ptx

if TYPE_CHECKING:
    from sparsecc.codegen.lower_base import LoweringContext

W = TypeVar("W")
CHUNK = 8  # columns per chunk (one 16-byte vector of 16-bit elements)
QUAD = 4  # lanes (and chunks) per transposed group
_QUAD_LANES = Term("lane", 1, 4, 2)  # lane % 4 -> column 2 * (lane % 4)


@dataclass(frozen=True)
class TransposePlan:
    """How a layout's registers form groups: `groups[i][k]` is the (register, register) pair
    holding columns +0/+1 of the group's chunk k in this thread; a thread's chunks in a row lie
    `spacing` columns apart (8, or 8 x the warps along N, whose chunks interleave)."""

    groups: list[list[tuple[int, int]]]
    spacing: int


def transpose_plan(dl: DistLayout, elt_bytes: int, fast: int) -> TransposePlan | None:
    """The groups of a qualifying layout (16-bit elements, the quad's lanes on columns, warps
    along N at whole chunks, four chunks per row and group), or None."""
    if len(dl.shape) != 2 or fast != 1 or dl.wrap[1] or elt_bytes != 2:
        return None
    col_terms = dl.base[1]
    if not col_terms or col_terms[0] != _QUAD_LANES:
        return None
    if any(t.src != "warp" or (t.mod > 1 and t.mul % CHUNK) for t in col_terms[1:]):
        return None
    chunk_cols = sorted({col for _, col in dl.regs if col % CHUNK == 0})
    if len(chunk_cols) < QUAD:
        return None
    spacing = chunk_cols[1] - chunk_cols[0]
    where = {off: r for r, off in enumerate(dl.regs)}
    groups, used = [], 0
    for off in dl.regs:
        row, col = off
        if col % (spacing * QUAD):
            continue
        group = []
        for k in range(QUAD):
            pair = (where.get((row, col + spacing * k)), where.get((row, col + spacing * k + 1)))
            if None in pair:
                return None
            group.append(pair)
        groups.append(group)
        used += 2 * QUAD
    return TransposePlan(groups, spacing) if used == dl.num_regs else None


def quad_transpose(words: Sequence[W], lane_bit: Callable[[int], object],
                   select: Callable[[object, W, W], W], shfl_xor: Callable[[W, int], W]) -> list[W]:
    """Lane t's words k = 0..3 (row t of a 4x4 matrix over the quad) -> column t (word s = what
    lane s held at k = t). Stage b swaps, with the lane t ^ 2^b, the two words whose index bit b
    differs from lane bit b: `select(bit, a, b)` is `a if bit else b`."""
    w = list(words)
    for b in (0, 1):
        tb = lane_bit(b)
        other = 1 - b
        new = list(w)
        for kc in (0, 1):
            i0 = kc << other  # index bit b = 0
            i1 = i0 | (1 << b)  # index bit b = 1
            send = select(tb, w[i0], w[i1])  # the word whose bit b is not the lane's
            got = shfl_xor(send, 1 << b)
            new[i0] = select(tb, got, w[i0])
            new[i1] = select(tb, w[i1], got)
        w = new
    return w


def store_transposed(L: LoweringContext, plan: TransposePlan, regs: Sequence[SSAValue],
                     coords: list[tuple[SSAValue, ...]], pack: Callable[[list[SSAValue]], list[SSAValue]],
                     store: Callable[[tuple[SSAValue, SSAValue], list[SSAValue]], None]) -> None:
    """The vector path of `store_block` for a planned layout: per group, `pack` each register
    pair into a 32-bit word, transpose across the quad and hand the 16 bytes and the element
    they start at to `store` (the caller's bounds-checked global store: the vector lies in or
    out as a whole, which its alignment test guarantees)."""
    em = L.em
    quad_lane = em.band(L.ids.lane, em.c(QUAD - 1))
    bits = [em.cmp("ne", em.band(L.ids.lane, em.c(1 << b)), 0) for b in (0, 1)]

    def shfl(x: SSAValue, mask: int) -> SSAValue:
        # ptx.AsmOp(template, [x], [i32]) via `create` (the epilogue builds 64 of them)
        template = StringAttr(f"shfl.sync.bfly.b32 $0, $1, {mask}, 0x1f, -1;")
        return em.val(ptx.AsmOp.create(operands=(x,), result_types=(i32,), properties={"template": template}))

    # lane t stores the group's chunk t: spacing * t - 2t columns right of its own first piece
    shift = em.mul(quad_lane, plan.spacing - 2)
    for group in plan.groups:
        words = [pack([regs[a], regs[b]])[0] for a, b in group]
        out = quad_transpose(words, lambda b: bits[b], em.select, shfl)
        row, col = coords[group[0][0]]
        store((row, em.add(col, shift)), out)
