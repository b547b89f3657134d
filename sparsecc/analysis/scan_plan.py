"""How a `tt.scan` along one axis of a distributed tensor splits into the steps of the fast
lowering: within a thread sequentially, across the lanes along the axis with `shfl.sync.up`
(Hillis-Steele, one step per lane bit), across the warps along the axis and across the
layout's repetitions along the axis through a small shared exchange of totals.

It builds on the reduction's plan (`reduce_plan.plan_reduce`: which lane and warp bits move
along the axis, which registers share a result row) and adds what a scan needs on top: the
positions along the axis must be ordered as

    pos = low + S * (lane_pos + T * (warp_pos + W * rep))

with `low` < S a thread's contiguous run, `lane_pos` the lane bits along the axis (one run of
adjacent bits of the lane id), `warp_pos` the warp bits along the axis and `rep` the
repetition of the layout's tile along the axis (all four from registers, lanes, warps and
registers again). Layouts that are not of this form have no plan (the lowering then reports
the scan as unsupported for that layout).

    >>> from sparsecc.dialects.ttg import BlockedEncodingAttr
    >>> from sparsecc.analysis.layouts import distributed
    >>> p = plan_scan(distributed(BlockedEncodingAttr([2], [32], [4], [0]), (512,)), 0)
    >>> (p.run, p.lanes, p.warps, p.reps, p.lane_shift)
    (2, 32, 4, 2, 0)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.dialects.builtin import NoneAttr, TensorType
from xdsl.ir import Attribute

from sparsecc.analysis.layouts import WARP, DistLayout, LayoutError, distributed
from sparsecc.analysis.reduce_plan import (
    WORD_BYTES,
    ReducePlan,
    _bit_moves,
    plan_reduce,
    value_words,
)


@dataclass(frozen=True)
class ScanPlan:
    """The steps of one scan (see the module docstring)."""

    reduce: ReducePlan
    """The reduction's plan of the same layout and axis (lane copies, warp bits, groups)."""
    rows: tuple[tuple[tuple[int, ...], ...], ...]
    """Per row of the scan a thread holds (a reduce group): per repetition, the registers of
    its run in axis order."""
    run: int
    """S: elements of one run a thread holds along the axis."""
    lanes: int
    """T: lanes along the axis (1: none)."""
    lane_shift: int
    """The lowest lane-id bit along the axis (lane_pos = (lane >> lane_shift) % T)."""
    warps: int
    """W: warps along the axis."""
    reps: int
    """How often the layout's tile repeats along the axis."""

    @property
    def exchanges(self) -> bool:
        """Whether totals go through shared memory (several warps or repetitions)."""
        return self.warps > 1 or self.reps > 1


def plan_scan(dl: DistLayout, axis: int) -> ScanPlan | None:
    """The fast plan for scanning `dl` along `axis`, or None (see the module docstring)."""
    rp = plan_reduce(dl, axis)
    if rp is None:
        return None
    lane_moves = _bit_moves(dl, "lane", WARP.bit_length() - 1)
    warp_moves = _bit_moves(dl, "warp", rp.warps.bit_length() - 1)
    lane_bits = [m.bit_length() - 1 for m in rp.lane_masks]
    if lane_bits and lane_bits != list(range(lane_bits[0], lane_bits[0] + len(lane_bits))):
        return None  # the lanes along the axis must be one run of adjacent lane-id bits
    steps = [lane_moves[b][axis] for b in lane_bits] + [warp_moves[b][axis] for b in rp.warp_bits]
    lanes, warps = 1 << len(lane_bits), rp.warps_along
    first = steps[0] if steps else dl.shape[axis]
    if any(s != first << i for i, s in enumerate(steps)):
        return None  # lanes then warps must step along the axis in increasing powers of two
    run, tile = first, first * lanes * warps
    if tile > dl.shape[axis] or dl.shape[axis] % tile:
        return None
    reps = dl.shape[axis] // tile
    rows = []
    for group in rp.groups:
        by_pos: dict[int, int] = {}
        for r in group:
            o = dl.regs[r][axis] % dl.shape[axis]
            if o % tile >= run:
                return None
            by_pos[(o // tile) * run + o % tile] = r
        if sorted(by_pos) != list(range(run * reps)):
            return None
        rows.append(tuple(tuple(by_pos[h * run + k] for k in range(run)) for h in range(reps)))
    return ScanPlan(rp, tuple(rows), run, lanes, lane_bits[0] if lane_bits else 0, warps, reps)


def fast_scan_plan(src: Attribute, axis: int) -> ScanPlan | None:
    """The plan for a `tt.scan` of `src`-typed operands along `axis`, or None."""
    if not isinstance(src, TensorType) or isinstance(src.encoding, NoneAttr):
        return None
    if value_words(src.element_type) is None:
        return None
    try:
        dl = distributed(src.encoding, tuple(src.get_shape()))
    except LayoutError:
        return None
    return plan_scan(dl, axis)


def scan_exchange_bytes(plan: ScanPlan, shape: tuple[int, ...], axis: int, words: int) -> int:
    """Bytes of the exchange: `words` 32-bit words per total, one total per warp and repetition
    along the axis per row (0 when one warp holds each whole row once)."""
    if not plan.exchanges:
        return 0
    rows = math.prod(shape) // shape[axis]
    return words * rows * plan.reps * plan.warps * WORD_BYTES


__all__ = ["ScanPlan", "fast_scan_plan", "plan_scan", "scan_exchange_bytes"]
