"""16-byte global stores of 16-bit MMA-layout tiles (a GEMM's epilogue), by a transpose inside
each quad of lanes.

In the MMA accumulator layout (mma.sp's and wgmma's alike) the four lanes of a quad hold, for
one row, consecutive 2-element pieces of each 8-column chunk: lane t has columns 8j+2t, 8j+2t+1.
Stored as they are, every store instruction writes 4 bytes per lane and 16 bytes per row (eight
half-filled 32-byte sectors per warp instruction). Measured on the H100 (bench/epilogue_probe.py,
NOTES stop 10), those stores were 16-18% of a 4096³ sparse GEMM's time.

Four consecutive chunks of a row are a 4x4 matrix of 32-bit words (lane t: word k = its piece
of chunk 4q+k). Transposing it across the quad, two butterfly stages (`shfl.sync.bfly` by 1 and
by 2, two shuffles and six selects each), leaves lane t with the whole chunk 4q+t: 8 contiguous
elements, one 16-byte `st.global.v4`, a quarter of the store instructions and full sectors.

`transpose_plan` decides statically whether a layout qualifies (16-bit elements, the quad's
lanes on columns, no other warp along columns, whole groups of four chunks per row) and which
registers form each group; `quad_transpose` is the exchange, written over abstract select and
shuffle functions so that a CPU test can run it on four simulated lanes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

from xdsl.dialects.builtin import i32
from xdsl.ir import SSAValue

from sparsecc.codegen.layouts import DistLayout, Term
from sparsecc.dialects import ptx

if TYPE_CHECKING:
    from sparsecc.codegen.lower import Lowerer
    from sparsecc.codegen.lower_base import BlockPtr, Regs

W = TypeVar("W")
CHUNK = 8  # columns per chunk (one 16-byte vector of 16-bit elements)
QUAD = 4  # lanes (and chunks) per transposed group
_QUAD_LANES = Term("lane", 1, 4, 2)  # lane % 4 -> column 2 * (lane % 4)


def transpose_plan(dl: DistLayout, elt_bytes: int, fast: int) -> list[list[tuple[int, int]]] | None:
    """Register pairs per group, or None where the layout does not qualify: for each group (one
    row, four consecutive chunks starting at a multiple of 32 columns) the (register, register)
    holding columns +0/+1 of chunk k = 0..3 in this thread."""
    if len(dl.shape) != 2 or fast != 1 or dl.wrap[1] or elt_bytes != 2:
        return None
    col_terms = dl.base[1]
    if not col_terms or col_terms[0] != _QUAD_LANES or any(t.mod != 1 for t in col_terms[1:]):
        return None
    where = {off: r for r, off in enumerate(dl.regs)}
    groups, used = [], 0
    for off in dl.regs:
        row, col = off
        if col % (CHUNK * QUAD):
            continue
        group = []
        for k in range(QUAD):
            pair = (where.get((row, col + CHUNK * k)), where.get((row, col + CHUNK * k + 1)))
            if None in pair:
                return None
            group.append(pair)
        groups.append(group)
        used += 2 * QUAD
    return groups if used == dl.num_regs else None


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


def store_transposed(L: Lowerer, bp: BlockPtr, val: Regs, dims: list[int],
                     groups: list[list[tuple[int, int]]], coords: list[tuple[SSAValue, ...]]) -> None:
    """The vector path of `store_block` for a planned layout: per group, pack, transpose across
    the quad and store 16 bytes (one bounds predicate: the vector lies in or out as a whole,
    which the caller's alignment test guarantees)."""
    from sparsecc.codegen.lower_mem import global_addr, global_coords, in_bounds, pack_words

    em = L.em
    elt = val.ty.element_type
    quad_lane = em.band(L.lane, em.c(QUAD - 1))
    bits = [em.cmp("ne", em.band(L.lane, em.c(1 << b)), 0) for b in (0, 1)]

    def shfl(x: SSAValue, mask: int) -> SSAValue:
        return em.val(ptx.AsmOp(f"shfl.sync.bfly.b32 $0, $1, {mask}, 0x1f, -1;", [x], [i32]))

    # lane t's chunk starts 8t - 2t = 6t columns right of its own first piece
    shift = em.mul(quad_lane, CHUNK - 2)
    for group in groups:
        words = [pack_words(L, [val.regs[a], val.regs[b]])[0] for a, b in group]
        out = quad_transpose(words, lambda b: bits[b], em.select, shfl)
        row, col = coords[group[0][0]]
        g = global_coords(L, bp, (row, em.add(col, shift)))
        em.op(ptx.StGlobalOp(global_addr(L, bp, g, elt), out, mask=in_bounds(L, bp, g, dims)))
