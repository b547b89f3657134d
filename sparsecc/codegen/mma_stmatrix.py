"""The shared scratch of tritongpu-coalesce-mma-stores' round trip (an MMA tile converted to
16-byte vectors along its rows): its layout, and on sm_90 its writes by `stmatrix.trans`.

The scratch is column-major with 16-byte chunks swizzled by the column
(`transposed_scratch_encoding`), so the reads are whole chunks and the MMA side's writes
(elementwise where stmatrix is missing) are free of bank conflicts.

An MMA accumulator's 8x8 blocks are `stmatrix`'s fragments already: lane l holds row l/4,
columns 2(l%4) and +1 of each block as one 32-bit word (mma.sp's and wgmma's layouts alike).
`stmatrix.sync.aligned.m8n8.x4.trans.shared.b16` stores four such blocks transposed: for block
i, the 16 bytes at the address lane 8i+j gives are the block's column j (its 8 rows). In a
column-major scratch a column's 8 rows are one 16-byte chunk, so one instruction writes 64
bytes per lane where `st.shared.b16` wrote 2 (16 instructions instead of 128 for a 128x128
tile on 4 warps).

`stmatrix_groups` decides statically whether a layout qualifies and which registers form each
instruction's four blocks; `block_of_lane` is the address rule, shared by the lowering and the
CPU test that simulates the instruction.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute

from sparsecc.analysis.dtypes import esize
from sparsecc.analysis.layouts import DistLayout, Term, distributed
from sparsecc.dialects import ptx
from sparsecc.dialects.ttg import BlockedEncodingAttr, MmaEncodingAttr, SharedEncodingAttr

if TYPE_CHECKING:
    from xdsl.ir import SSAValue

    from sparsecc.codegen.lower_base import LoweringContext, Regs, Smem

BLOCK = 8  # rows and columns of one stmatrix block
VECTOR_BYTES = 16
SWIZZLE_PHASES = 8  # 8 chunks of 16 bytes: one 128-byte row of banks
_ROW_LANES = Term("lane", 4, 8, 1)  # lane / 4 -> the block's row
_COL_LANES = Term("lane", 1, 4, 2)  # lane % 4 -> the block's column pair


def transposed_scratch_encoding(src: TensorType, dst: Attribute) -> SharedEncodingAttr | None:
    """The scratch layout of a `ttg.convert_layout` from an MMA tile to a blocked layout whose
    fastest dim is 0 (what tritongpu-coalesce-mma-stores inserts), or None for any other convert: column-major
    (`order = [0, 1]`), so that the blocked side reads 16-byte vectors, with 16-byte chunks
    swizzled by the column, so that the MMA side's writes (8 rows by 4 column pairs per warp
    instruction: 4 columns at once) land in different banks.

        >>> from xdsl.dialects.builtin import f16
        >>> mma = MmaEncodingAttr([4, 1], 3, [64, 128])
        >>> dst = BlockedEncodingAttr([8, 1], [16, 2], [1, 4], [0, 1])
        >>> enc = transposed_scratch_encoding(TensorType(f16, [128, 128], mma), dst)
        >>> enc.vec, enc.max_phase, enc.order
        (8, 8, (0, 1))
    """
    if not isinstance(src.encoding, MmaEncodingAttr) or not isinstance(dst, BlockedEncodingAttr):
        return None
    if len(src.get_shape()) != 2 or tuple(dst.order) != (0, 1):
        return None
    vec = VECTOR_BYTES // esize(src.element_type)
    chunks = max(1, src.get_shape()[0] // vec)
    return SharedEncodingAttr(vec, 1, min(SWIZZLE_PHASES, chunks), (0, 1))


def stmatrix_groups(dl: DistLayout, elt_bytes: int, enc: SharedEncodingAttr) -> list[tuple[int, ...]] | None:
    """The first register of each block, four blocks per instruction, for a layout that
    qualifies (16-bit elements; lanes exactly as an MMA fragment; registers in column pairs at
    block corners; no element held twice; a column-major scratch whose 16-byte chunks hold 8
    whole rows), or None."""
    if elt_bytes != 2 or len(dl.shape) != 2 or any(dl.wrap) or tuple(enc.order) != (0, 1) or enc.vec % BLOCK:
        return None
    lanes = [[t for t in terms if t.src == "lane" and t.mod > 1] for terms in dl.base]
    if lanes != [[_ROW_LANES], [_COL_LANES]]:
        return None
    if dl.num_regs % (2 * 4):
        return None
    firsts = []
    for r in range(0, dl.num_regs, 2):
        (row, col), nxt = dl.regs[r], dl.regs[r + 1]
        if row % BLOCK or col % BLOCK or nxt != (row, col + 1):
            return None
        firsts.append(r)
    return [tuple(firsts[i:i + 4]) for i in range(0, len(firsts), 4)]


def block_of_lane(lane: int) -> tuple[int, int]:
    """(block i of the instruction, column j of that block) whose 16 bytes lane `lane` addresses."""
    return lane // BLOCK, lane % BLOCK


def store_stmatrix(L: LoweringContext, sm: Smem, dl: DistLayout, groups: Sequence[tuple[int, ...]],
                   regs: Sequence[SSAValue]) -> None:
    """The registers of `dl` into `sm` (column-major) by one `stmatrix.x4.trans` per group:
    lane 8i+j addresses row 0, column j of block i (the warp's corner of the block plus the
    register's offset, the lane's own terms left out)."""
    from sparsecc.codegen.lower_mem import pack_words, smem_addr

    em = L.em
    warp_terms = [tuple(t for t in terms if t.src == "warp") for terms in dl.base]
    base = [em.term_sum(terms, L.ids.lane, L.ids.warp) for terms in warp_terms]
    block = em.divu(L.ids.lane, BLOCK)
    col_in_block = em.remu(L.ids.lane, BLOCK)
    is_block = [em.cmp("eq", block, em.c(i)) for i in range(4)]

    def pick(values: list[int]) -> SSAValue:
        """values[lane / 8] as an IR value (a select chain over the four blocks)."""
        out = em.c(values[3])
        for i in (2, 1, 0):
            if values[i] != values[3]:
                out = em.select(is_block[i], em.c(values[i]), out)
        return out

    L.before_shared_write()
    for group in groups:
        words = [pack_words(L, [regs[r], regs[r + 1]])[0] for r in group]
        row = em.add(base[0], pick([dl.regs[r][0] for r in group]))
        col = em.add(em.add(base[1], pick([dl.regs[r][1] for r in group])), col_in_block)
        addr = smem_addr(L, sm, (row, col))
        em.op(ptx.AsmOp("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [$0], {$1, $2, $3, $4};",
                        [addr, *words], []))
    L.after_shared_write()


@dataclass(frozen=True)
class BoxStagedTile:
    """A `ttg.box_staged` tile: its one-box buffer, the rows of dim 1 a box holds, and the
    registers still to be written into it, box by box, by the TMA store that reads it
    (`store_box`)."""

    sm: Smem
    rows: int
    src: Regs


def _stmatrix_plan(L: LoweringContext, sm: Smem, src: Regs) -> tuple[DistLayout, list[tuple[int, ...]]] | None:
    """(`src`'s layout, its `stmatrix` groups) on sm_90+ for an MMA tile bound for `sm`'s
    shared layout, or None where `stmatrix_groups` does not apply."""
    from sparsecc.dialects.ptx_targets import satisfies

    enc = sm.ty.encoding
    if not isinstance(enc, SharedEncodingAttr) or not satisfies(L.cfg.target, "sm_90"):
        return None
    if not isinstance(src.ty.encoding, MmaEncodingAttr):
        return None
    dl = distributed(src.ty.encoding, src.ty.get_shape())
    groups = stmatrix_groups(dl, esize(src.ty.element_type), enc)
    return None if groups is None else (dl, groups)


def box_groups(L: LoweringContext, staged: BoxStagedTile) -> tuple[DistLayout, list[list[tuple[int, ...]]]] | None:
    """(the staged registers' layout, their `stmatrix` groups sorted by the staged box every
    element of the group lies in for every thread: box j * parts + h holds dim 0's block j of
    `col_block` elements and dim 1's rows h * rows...); None where the tile does not go by
    stmatrix or a group spans two boxes."""
    sm, rows = staged.sm, staged.rows
    plan = _stmatrix_plan(L, sm, staged.src)
    enc = sm.ty.encoding
    shape = sm.ty.get_shape()
    if plan is None or not enc.col_block or shape[1] % rows:
        return None
    dl, groups = plan
    parts = shape[1] // rows
    boxes: list[list[tuple[int, ...]]] = [[] for _ in range(-(-shape[0] // enc.col_block) * parts)]
    for group in groups:
        coords = (dl.coord(w, lane, r + c) for r in group for c in (0, 1)
                  for w in range(L.cfg.num_warps) for lane in range(32))
        seen = {d0 // enc.col_block * parts + d1 // rows for d0, d1 in coords}
        if len(seen) != 1:
            return None
        boxes[seen.pop()].append(group)
    return dl, boxes


def store_box(L: LoweringContext, staged: BoxStagedTile, dl: DistLayout, groups: Sequence[tuple[int, ...]],
              box: int) -> None:
    """Write box `box` of a staged tile (its layout and `groups`, from `box_groups`) into the
    one-box buffer: the tile's own addresses, moved back by the boxes before it (a column block
    of the tile is its row boxes one after another, each a whole number of swizzle periods)."""
    from sparsecc.analysis.shared_memory import box_bytes
    from sparsecc.codegen.lower_base import Smem

    shifted = Smem(L.em.sub(staged.sm.addr, box * box_bytes(staged.sm.ty, staged.rows)), staged.sm.ty)
    store_stmatrix(L, shifted, dl, groups, staged.src.regs)


def store_by_stmatrix(L: LoweringContext, sm: Smem, src: Regs) -> bool:
    """On sm_90+, a 16-bit MMA tile bound for a column-major shared tile whose 16-byte chunks
    hold 8 whole rows (a convert's transposed scratch, a TMA store's tile) is written by
    `stmatrix.trans`, four 8x8 blocks an instruction; False (nothing emitted) where that does
    not apply."""
    plan = _stmatrix_plan(L, sm, src)
    if plan is None:
        return False
    dl, groups = plan
    L.wgmma_drain()
    store_stmatrix(L, sm, dl, groups, src.regs)
    return True
