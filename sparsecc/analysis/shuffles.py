"""The shape ops as element shuffles: where each element of `tt.trans`, `tt.reshape`, `tt.join`,
`tt.split` and `tt.cat` comes from, whether the GPU can do one without moving data, and the
layouts that make it so.

Every one of these ops is a bijection between its operands' and its results' elements. It is
described by one address per element in a common buffer (`Shuffle`): operand j's element c
sits at `offset_j + sum(c[d] * strides_j[d])`, result k's at `offset_k + sum(...)`; a result
element is the operand element of the same address. The GPU lowering either

- renames registers, when every thread already holds every result element it owns in a
  register of an operand, the same register in every thread (`free_sources`): a join of two
  tiles into a layout with the new dim in registers, a split back, a concatenation along a dim
  the layout repeats over, a reshape that keeps each thread's elements;
- or stores the operands to a shared scratch buffer at those addresses and reads the results
  back (a round trip, like `ttg.convert_layout`).

convert-tt-to-ttg picks the layouts of join/split/cat results (and of the reshapes next to
them) with `derived_layout`, so that the common cases (complex numbers and RoPE halves,
`tl.interleave`, de-interleaving loads) are free.

    >>> join_shuffle((4, 8)).operands   # a at the even addresses, b at the odd ones
    ((0, (16, 2)), (1, (16, 2)))
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from xdsl.ir import Attribute, Operation

from sparsecc.analysis.layouts import WARP, DistLayout, LayoutError, distributed
from sparsecc.dialects import tt
from sparsecc.dialects.ttg import BlockedEncodingAttr, SliceEncodingAttr

if TYPE_CHECKING:
    import numpy as np

Affine = tuple[int, tuple[int, ...]]
"""(offset, strides): element c is at offset + sum(c[d] * strides[d])."""


def row_major(shape: tuple[int, ...]) -> tuple[int, ...]:
    """Row-major strides of `shape` (in elements)."""
    return tuple(math.prod(shape[d + 1:]) for d in range(len(shape)))


@dataclass(frozen=True)
class Shuffle:
    """Where each operand and result element of a shape op lives in one buffer of `size`
    elements (see the module docstring)."""

    operands: tuple[Affine, ...]
    results: tuple[Affine, ...]
    size: int


def trans_shuffle(src: tuple[int, ...], perm: tuple[int, ...]) -> Shuffle:
    """`tt.trans`: the source row-major; result dim i walks source dim perm[i]."""
    rm = row_major(src)
    return Shuffle(((0, rm),), ((0, tuple(rm[p] for p in perm)),), math.prod(src))


def reshape_shuffle(src: tuple[int, ...], dst: tuple[int, ...]) -> Shuffle:
    """`tt.reshape`: both row-major (the elements keep their row-major order)."""
    return Shuffle(((0, row_major(src)),), ((0, row_major(dst)),), math.prod(src))


def join_shuffle(src: tuple[int, ...]) -> Shuffle:
    """`tt.join`: the result row-major, so a at the even addresses and b at the odd ones."""
    strides = tuple(2 * s for s in row_major(src))
    return Shuffle(((0, strides), (1, strides)), ((0, row_major((*src, 2))),), 2 * math.prod(src))


def split_shuffle(src: tuple[int, ...]) -> Shuffle:
    """`tt.split`: the inverse of `join_shuffle`."""
    j = join_shuffle(src[:-1])
    return Shuffle(j.results, j.operands, j.size)


def cat_shuffle(src: tuple[int, ...], dim: int) -> Shuffle:
    """`tt.cat` along `dim`: the result row-major, b shifted by a's extent along `dim`."""
    dst = list(src)
    dst[dim] *= 2
    rm = row_major(tuple(dst))
    return Shuffle(((0, rm), (src[dim] * rm[dim], rm)), ((0, rm),), math.prod(dst))


def shuffle_of(op: Operation) -> Shuffle | None:
    """The shuffle of a shape op (None for any other op)."""
    if isinstance(op, tt.TransOp):
        return trans_shuffle(tt.shape_of(op.src.type), op.perm)
    if isinstance(op, tt.ReshapeOp):
        return reshape_shuffle(tt.shape_of(op.src.type), tt.shape_of(op.result.type))
    if isinstance(op, tt.JoinOp):
        return join_shuffle(tt.shape_of(op.lhs.type))
    if isinstance(op, tt.SplitOp):
        return split_shuffle(tt.shape_of(op.src.type))
    if isinstance(op, tt.CatOp):
        return cat_shuffle(tt.shape_of(op.lhs.type), op.axis)
    return None


SHUFFLE_OPS = (tt.TransOp, tt.ReshapeOp, tt.JoinOp, tt.SplitOp, tt.CatOp)


# --------------------------------------------------------------------------------------
# Free shuffles
# --------------------------------------------------------------------------------------


def _addresses(dl: DistLayout, affine: Affine, num_warps: int) -> np.ndarray:
    """addr[r, t]: the buffer address of register r of thread t (= warp * 32 + lane)."""
    import numpy as np  # here: `sparsecc-opt` runs with no shuffle to derive skip its import

    lanes = np.arange(WARP * num_warps) % WARP
    warps = np.arange(WARP * num_warps) // WARP
    offset, strides = affine
    addr = np.full((dl.num_regs, lanes.size), offset, dtype=np.int64)
    regs = np.asarray(dl.regs, dtype=np.int64).reshape(dl.num_regs, len(dl.shape))
    for d, terms in enumerate(dl.base):
        base = np.zeros(lanes.size, dtype=np.int64)
        for t in terms:
            x = lanes if t.src == "lane" else warps
            base += ((x // t.div) % t.mod) * t.mul
        c = base[None, :] + regs[:, d][:, None]
        if dl.wrap[d]:
            c %= dl.shape[d]
        addr += c * strides[d]
    return addr


@functools.lru_cache(maxsize=256)
def free_sources(operands: tuple[tuple[Attribute, tuple[int, ...]], ...],
                 results: tuple[tuple[Attribute, tuple[int, ...]], ...],
                 shuffle: Shuffle, num_warps: int) -> tuple[tuple[tuple[int, int], ...], ...] | None:
    """Per result, per register, the (operand, register) that holds the same element in every
    thread; None when some result register has no such source (the op needs shared memory).
    `operands`/`results` are (layout, shape) pairs."""
    try:
        src = [(_addresses(distributed(lay, shape), aff, num_warps))
               for (lay, shape), aff in zip(operands, shuffle.operands, strict=True)]
        dst = [(_addresses(distributed(lay, shape), aff, num_warps))
               for (lay, shape), aff in zip(results, shuffle.results, strict=True)]
    except LayoutError:
        return None
    where: dict[bytes, tuple[int, int]] = {}
    for j, addr in enumerate(src):
        for r in range(addr.shape[0]):
            where.setdefault(addr[r].tobytes(), (j, r))
    out = []
    for addr in dst:
        regs = []
        for r in range(addr.shape[0]):
            hit = where.get(addr[r].tobytes())
            if hit is None:
                return None
            regs.append(hit)
        out.append(tuple(regs))
    return tuple(out)


def layout_warps(layout: Attribute) -> int:
    """The number of warps a distributed layout spreads over."""
    if isinstance(layout, SliceEncodingAttr):
        return layout_warps(layout.parent)
    return math.prod(getattr(layout, "warps_per_cta", (1,)))


def is_free(op: Operation) -> bool:
    """Whether the lowering of the ttgir shape op `op` moves no data (see `free_sources`)."""
    shuffle = shuffle_of(op)
    if shuffle is None:
        return False
    num_warps = layout_warps(op.operands[0].type.encoding)
    pairs = tuple((v.type.encoding, tuple(v.type.get_shape())) for v in op.operands)
    res = tuple((v.type.encoding, tuple(v.type.get_shape())) for v in op.results)
    return free_sources(pairs, res, shuffle, num_warps) is not None


# --------------------------------------------------------------------------------------
# Layouts that make a shuffle free
# --------------------------------------------------------------------------------------


def _blocked(spt: list[int], tpw: list[int], wpc: list[int], order: list[int]) -> BlockedEncodingAttr:
    return BlockedEncodingAttr(spt, tpw, wpc, order)


def join_layout(src: BlockedEncodingAttr) -> BlockedEncodingAttr:
    """The source layout with the new minor dim in each thread's registers (order first)."""
    rank = len(src.order)
    return _blocked([*src.size_per_thread, 2], [*src.threads_per_warp, 1], [*src.warps_per_cta, 1],
                    [rank, *src.order])


def split_layout(src: BlockedEncodingAttr) -> BlockedEncodingAttr | None:
    """The source layout without its last dim, when that dim is all in each thread's registers."""
    last = len(src.order) - 1
    if src.size_per_thread[last] != 2 or src.threads_per_warp[last] != 1 or src.warps_per_cta[last] != 1:
        return None
    return _blocked(list(src.size_per_thread[:-1]), list(src.threads_per_warp[:-1]), list(src.warps_per_cta[:-1]),
                    [d for d in src.order if d != last])


def _linear_bits(src: BlockedEncodingAttr, shape: tuple[int, ...]) -> list[str] | None:
    """The kinds of the bits of a row-major element index, low to high ("r"egister, "l"ane,
    "w"arp), under a row-major blocked layout of `shape`; None for any other layout. Lanes and
    warps past the tensor (a layout larger than the tensor repeats it) may only be past its
    slowest dim: they are the top bits, which wrap around."""
    rank = len(shape)
    if tuple(src.order) != tuple(range(rank - 1, -1, -1)):
        return None
    bits: list[str] = []
    for d in reversed(range(rank)):
        spt, tpw, wpc = src.size_per_thread[d], src.threads_per_warp[d], src.warps_per_cta[d]
        if spt * tpw * wpc > shape[d] and (d > 0 or spt > shape[d]):
            return None  # the layout repeats an inner dim (or registers): no row-major bit order
        reps = max(1, shape[d] // (spt * tpw * wpc))
        for kind, n in (("r", spt), ("l", tpw), ("w", wpc), ("r", reps)):
            bits += [kind] * (n.bit_length() - 1)
    return bits


def reshape_layout(src: BlockedEncodingAttr, src_shape: tuple[int, ...],
                   dst_shape: tuple[int, ...]) -> BlockedEncodingAttr | None:
    """A row-major blocked layout of `dst_shape` in which each thread holds the elements it held
    in `src` (row-major order kept), or None where no blocked layout does."""
    bits = _linear_bits(src, src_shape)
    if bits is None:
        return None
    rank = len(dst_shape)
    spt, tpw, wpc = [1] * rank, [1] * rank, [1] * rank
    pos = 0
    for d in reversed(range(rank)):
        n = dst_shape[d].bit_length() - 1 if d else len(bits) - pos  # dim 0 takes any wrapped top bits
        dim_bits = "".join(bits[pos:pos + n])
        pos += n
        # a blocked dim is: registers (size_per_thread), lanes, warps, registers (repetitions)
        low = len(dim_bits) - len(dim_bits.lstrip("r"))
        rest = dim_bits[low:]
        lanes = len(rest) - len(rest.lstrip("l"))
        rest = rest[lanes:]
        warps = len(rest) - len(rest.lstrip("w"))
        if set(rest[warps:]) - {"r"} or (warps + lanes and (1 << low) > dst_shape[d]):
            return None
        spt[d], tpw[d], wpc[d] = 1 << low, 1 << lanes, 1 << warps
    return _blocked(spt, tpw, wpc, list(range(rank - 1, -1, -1)))


def derived_layout(op: Operation, src_layout: Attribute, num_warps: int) -> Attribute | None:
    """The layout of `op`'s result(s) that makes the tt shape op `op` free given its operands'
    blocked layout `src_layout`, or None (then the result keeps its own and the op shuffles
    through shared memory)."""
    layout = _candidate(op, src_layout)
    shuffle = shuffle_of(op)
    if layout is None or shuffle is None:
        return None
    operands = tuple((src_layout, tt.shape_of(v.type)) for v in op.operands)
    results = tuple((layout, tt.shape_of(v.type)) for v in op.results)
    return layout if free_sources(operands, results, shuffle, num_warps) is not None else None


def _candidate(op: Operation, src_layout: Attribute) -> Attribute | None:
    if not isinstance(src_layout, BlockedEncodingAttr):
        return None
    if isinstance(op, tt.JoinOp):
        return join_layout(src_layout)
    if isinstance(op, tt.SplitOp):
        return split_layout(src_layout)
    if isinstance(op, tt.CatOp):
        return src_layout  # the second half of `dim` in more registers of the same threads
    if isinstance(op, tt.ReshapeOp):
        return reshape_layout(src_layout, tt.shape_of(op.src.type), tt.shape_of(op.result.type))
    return None


__all__ = ["SHUFFLE_OPS", "Shuffle", "cat_shuffle", "derived_layout", "free_sources", "is_free", "join_layout",
           "join_shuffle", "layout_warps", "reshape_layout", "reshape_shuffle", "row_major", "shuffle_of", "split_layout",
           "split_shuffle", "trans_shuffle"]
