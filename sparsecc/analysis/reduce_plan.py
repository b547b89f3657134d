"""How a reduction along one axis of a distributed tensor splits into the three steps of the
fast lowering (as Triton does it): within a thread, across lanes, across warps.

A distributed layout (`sparsecc.analysis.layouts`) gives each thread a base coordinate made of
`((x // div) % mod) * mul` terms of its lane and warp id, plus constant register offsets. With
power-of-two shapes each lane bit and each warp bit of the thread id moves the base along one
dimension by one power of two (or, after the `mod shape` of a replicated layout, not at all),
and the base is the sum of the moves of the bits that are set. `plan_reduce` checks that on
the layout's own model and sorts the bits:

- a lane bit that moves along the reduced axis: a `shfl.sync.bfly` with that lane mask
  combines the two partial results (the partner holds the same result coordinates);
- a warp bit that moves along the axis: the warps exchange one partial per result through
  shared memory (`warps_along` values per result);
- a bit that moves nothing: the threads hold copies (they combine nothing, and only one of
  them writes to the exchange);
- a bit that moves along another dimension: those threads hold other results.

The registers of a thread that share the non-axis offsets (modulo the shape) hold the same
result and are combined first; registers whose whole offset is equal modulo the shape are
copies of one element (a layout wider than the tensor) and count once.

    >>> from sparsecc.dialects.ttg import BlockedEncodingAttr
    >>> from sparsecc.analysis.layouts import distributed
    >>> dl = distributed(BlockedEncodingAttr([8], [32], [4], [0]), (4096,))
    >>> p = plan_reduce(dl, 0)
    >>> (len(p.groups[0]), p.lane_masks, p.warps_along)
    (32, (1, 2, 4, 8, 16), 4)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    IntegerType,
    NoneAttr,
    TensorType,
)
from xdsl.ir import Attribute

from sparsecc.analysis.layouts import WARP, DistLayout, LayoutError, distributed

WORD_BYTES = 4
"""The exchange moves 32-bit words (a 64-bit value takes two)."""


@dataclass(frozen=True)
class ReducePlan:
    """The steps of one reduction (see the module docstring)."""

    groups: tuple[tuple[int, ...], ...]
    """Per result a thread holds: the source registers to combine, copies left out."""
    keys: tuple[tuple[int, ...], ...]
    """Per group, the non-axis register offsets (modulo the shape) that name its result."""
    lane_masks: tuple[int, ...]
    """Butterfly lane masks (one per lane bit along the axis), in increasing order."""
    warp_bits: tuple[int, ...]
    """Bits of the warp id that move along the axis; warp i of the exchange is made of them."""
    lane_copies: int
    """Lane bits whose threads hold copies (only the lane with these bits clear writes)."""
    warp_copies: int
    """Warp-id bits whose warps hold copies."""
    warps: int
    """The warps the layout tells apart (`layout_warps`): warps from this one on hold copies."""

    @property
    def warps_along(self) -> int:
        """How many warps hold parts of one result (1: no shared-memory exchange)."""
        return 1 << len(self.warp_bits)


def layout_warps(dl: DistLayout) -> int:
    """How many warps the layout tells apart (warps beyond them hold copies)."""
    return max((t.div * t.mod for terms in dl.base for t in terms if t.src == "warp"), default=1)


def _bit_moves(dl: DistLayout, src: str, bits: int) -> list[tuple[int, ...]]:
    """Per bit of the lane or warp id, how the thread base moves (modulo the shape)."""
    moves = []
    for b in range(bits):
        lane, warp = (1 << b, 0) if src == "lane" else (0, 1 << b)
        moves.append(tuple(
            sum(t.eval(lane, warp) for t in terms) % dl.shape[d] for d, terms in enumerate(dl.base)))
    return moves


def _is_linear(dl: DistLayout, lane_moves: list[tuple[int, ...]], warp_moves: list[tuple[int, ...]],
               num_warps: int) -> bool:
    """Each bit moves one dimension by a power of two (or nothing), no two bits the same way, and
    every thread's base is the sum of its bits' moves: what the butterflies rely on."""
    seen: set[tuple[int, int]] = set()
    for mv in lane_moves + warp_moves:
        nonzero = [(d, v) for d, v in enumerate(mv) if v]
        if len(nonzero) > 1:
            return False
        if nonzero:
            d, v = nonzero[0]
            if v & (v - 1) or (d, v) in seen:
                return False
            seen.add((d, v))
    for warp in range(num_warps):
        for lane in range(WARP):
            want = [0] * len(dl.shape)
            for b, mv in enumerate(lane_moves):
                if lane >> b & 1:
                    want = [a + m for a, m in zip(want, mv)]
            for b, mv in enumerate(warp_moves):
                if warp >> b & 1:
                    want = [a + m for a, m in zip(want, mv)]
            got = [sum(t.eval(lane, warp) for t in terms) % dl.shape[d] for d, terms in enumerate(dl.base)]
            if got != want:
                return False
    # register offsets must not reach bits a lane or warp owns (else two threads share elements)
    for off in dl.regs:
        for d, o in enumerate(off):
            if any(mv[d] and (o % dl.shape[d]) & mv[d] for mv in lane_moves + warp_moves):
                return False
    return True


def plan_reduce(dl: DistLayout, axis: int) -> ReducePlan | None:
    """The fast plan for reducing `dl` along `axis`, or None when the layout is not the sum of
    independent lane, warp and register bits (the caller then takes the shared-memory path).
    Warps beyond the `layout_warps(dl)` the layout tells apart hold copies."""
    num_warps = layout_warps(dl)
    if num_warps & (num_warps - 1):
        return None
    lane_moves = _bit_moves(dl, "lane", WARP.bit_length() - 1)
    warp_moves = _bit_moves(dl, "warp", num_warps.bit_length() - 1)
    if not _is_linear(dl, lane_moves, warp_moves, num_warps):
        return None
    groups: dict[tuple[int, ...], list[int]] = {}
    seen: set[tuple[int, ...]] = set()
    for r, off in enumerate(dl.regs):
        full = tuple(o % s for o, s in zip(off, dl.shape))
        if full in seen:
            continue  # a copy of an element this thread already holds
        seen.add(full)
        groups.setdefault(full[:axis] + full[axis + 1:], []).append(r)
    lane_masks, lane_copies = [], 0
    for b, mv in enumerate(lane_moves):
        if not any(mv):
            lane_copies |= 1 << b
        elif mv[axis]:
            lane_masks.append(1 << b)
    warp_bits, warp_copies = [], 0
    for b, mv in enumerate(warp_moves):
        if not any(mv):
            warp_copies |= 1 << b
        elif mv[axis]:
            warp_bits.append(b)
    return ReducePlan(tuple(tuple(g) for g in groups.values()), tuple(groups), tuple(lane_masks),
                      tuple(warp_bits), lane_copies, warp_copies, num_warps)


def value_words(ty: Attribute) -> int | None:
    """32-bit words a shuffle or the exchange moves per element of `ty` (None: not supported)."""
    if isinstance(ty, Float32Type | Float16Type | BFloat16Type):
        return 1
    if isinstance(ty, IntegerType) and ty.width.data in (1, 8, 16, 32, 64):
        return 2 if ty.width.data == 64 else 1
    return None


def fast_reduce_plan(src: Attribute, axis: int, results: Sequence[Attribute]) -> ReducePlan | None:
    """The plan for a `tt.reduce` of a `src`-typed operand (all operands share its shape and
    layout) along `axis` into `results`, or None where the lowering takes the shared-memory path:
    no distributed layout, a layout that is no sum of bits, a result layout that is not the
    source's with `axis` dropped (the result must be where the plan leaves it), or an element
    type a shuffle cannot move."""
    if not isinstance(src, TensorType) or isinstance(src.encoding, NoneAttr):
        return None
    try:
        dl = distributed(src.encoding, tuple(src.get_shape()))
    except LayoutError:
        return None
    plan = plan_reduce(dl, axis)
    if plan is None or any(value_words(element_type(r)) is None for r in results):
        return None
    res = results[0]
    if isinstance(res, TensorType):
        try:
            rdl = distributed(res.encoding, tuple(res.get_shape()))
        except LayoutError:
            return None
        drop = lambda t: t[:axis] + t[axis + 1:]  # noqa: E731
        if rdl.base != drop(dl.base) or rdl.wrap != drop(dl.wrap):
            return None
        keys = set(plan.keys)
        if any(tuple(o % s for o, s in zip(off, rdl.shape)) not in keys for off in rdl.regs):
            return None
        if any(r.encoding != res.encoding for r in results if isinstance(r, TensorType)):
            return None
    return plan


def element_type(ty: Attribute) -> Attribute:
    return ty.element_type if isinstance(ty, TensorType) else ty


def exchange_bytes(plan: ReducePlan, result_shape: tuple[int, ...], words: int) -> int:
    """Bytes of the cross-warp exchange: `words` 32-bit words per value, one value per warp
    along the axis per result element (0 when one warp holds a whole result)."""
    if plan.warps_along == 1:
        return 0
    return words * math.prod(result_shape) * plan.warps_along * WORD_BYTES


__all__ = ["ReducePlan", "WORD_BYTES", "exchange_bytes", "fast_reduce_plan", "layout_warps", "plan_reduce",
           "value_words"]
