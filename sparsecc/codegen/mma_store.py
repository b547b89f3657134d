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

Where a row has two such groups side by side (64 columns: a tile at least 64 wide), a third
exchange pairs neighbouring quads (`shfl.sync.bfly` by 4; their rows are neighbours): the even
quad gives its right group's chunk for its row and takes the odd quad's left group's chunk for
the odd row. Then each of the two stores covers, per row, 128 contiguous bytes written by 8
lanes (4 rows per warp instruction, whole 128-byte lines) instead of 64 bytes by 4 lanes.

`transpose_plan` decides statically whether a layout qualifies (16-bit elements, the quad's
lanes on columns, no other warp along columns, whole groups of four chunks per row) and which
registers form each group; `pair_plan` which groups pair up. `quad_transpose` and `row_exchange`
are the exchanges, written over abstract select and shuffle functions so that a CPU test can run
them on a simulated warp.
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
_QUAD_ROWS = Term("lane", 4, 8, 1)  # lane / 4 -> row
PAIR = 2 * CHUNK * QUAD  # columns of two neighbouring groups


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


def pair_plan(dl: DistLayout, groups: list[list[tuple[int, int]]]) -> list[tuple[int, int]] | None:
    """(left, right) group indices covering 64 consecutive columns of one row, every group in
    exactly one pair; None where the quads' rows or the columns do not allow it."""
    if dl.wrap[0] or not dl.base[0] or dl.base[0][0] != _QUAD_ROWS:
        return None
    at = {dl.regs[g[0][0]]: i for i, g in enumerate(groups)}
    pairs = []
    for (row, col), i in at.items():
        if col % PAIR == 0:
            j = at.get((row, col + PAIR // 2))
            if j is None:
                return None
            pairs.append((i, j))
    return pairs if 2 * len(pairs) == len(groups) else None


def row_exchange(left: Sequence[W], right: Sequence[W], odd_quad: object,
                 select: Callable[[object, W, W], W], shfl_xor: Callable[[W, int], W]) -> tuple[list[W], list[W]]:
    """After `quad_transpose` of a row's left and right group: the words of store A (the even
    quad's row: even lanes its left chunk, odd lanes its right one) and of store B (the odd
    quad's row, likewise)."""
    got = [shfl_xor(select(odd_quad, a, b), QUAD) for a, b in zip(left, right)]
    store_a = [select(odd_quad, g, a) for g, a in zip(got, left)]
    store_b = [select(odd_quad, b, g) for g, b in zip(got, right)]
    return store_a, store_b


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


def store_transposed(L: Lowerer, bp: BlockPtr, val: Regs, dims: list[int], dl: DistLayout,
                     groups: list[list[tuple[int, int]]], coords: list[tuple[SSAValue, ...]]) -> None:
    """The vector path of `store_block` for a planned layout: per group, pack and transpose
    across the quad; then per pair of groups exchange rows with the neighbouring quad and store
    twice 16 bytes (unpaired layouts: store each group's 16 bytes). One bounds predicate per
    vector: it lies in or out as a whole, which the caller's alignment test guarantees."""
    from sparsecc.codegen.lower_mem import global_addr, global_coords, in_bounds, pack_words

    em = L.em
    elt = val.ty.element_type
    quad_lane = em.band(L.lane, em.c(QUAD - 1))
    bits = [em.cmp("ne", em.band(L.lane, em.c(1 << b)), 0) for b in (0, 1)]

    def shfl(x: SSAValue, mask: int) -> SSAValue:
        return em.val(ptx.AsmOp(f"shfl.sync.bfly.b32 $0, $1, {mask}, 0x1f, -1;", [x], [i32]))

    def store(row: SSAValue, col: SSAValue, words: list[SSAValue]) -> None:
        g = global_coords(L, bp, (row, col))
        em.op(ptx.StGlobalOp(global_addr(L, bp, g, elt), words, mask=in_bounds(L, bp, g, dims)))

    # lane t's chunk starts 8t - 2t = 6t columns right of its own first piece
    shift = em.mul(quad_lane, CHUNK - 2)
    transposed = [quad_transpose([pack_words(L, [val.regs[a], val.regs[b]])[0] for a, b in group],
                                 lambda b: bits[b], em.select, shfl) for group in groups]
    starts = [(coords[g[0][0]][0], em.add(coords[g[0][0]][1], shift)) for g in groups]
    pairs = pair_plan(dl, groups)
    if pairs is None:
        for words, (row, col) in zip(transposed, starts):
            store(row, col, words)
        return
    odd = em.cmp("ne", em.band(L.lane, em.c(QUAD)), 0)
    odd_i = em.select(odd, em.c(1), em.c(0))
    for i, j in pairs:
        store_a, store_b = row_exchange(transposed[i], transposed[j], odd, em.select, shfl)
        (row, left_col), (_, right_col) = starts[i], starts[j]
        col = em.select(odd, right_col, left_col)
        row_a = em.sub(row, odd_i)  # the even quad's row
        store(row_a, col, store_a)
        store(em.add(row_a, 1), col, store_b)
