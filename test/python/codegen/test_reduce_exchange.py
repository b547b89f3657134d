"""The cross-warp exchange of `tt.reduce` (handlers/reduce.py `reduce_warps`), simulated thread by
thread on the CPU: after the lane butterflies each writer stores its warp's partial of each of
its results at word (result * W + warp place); after the barrier a thread either reads all W
words of its results, or (from 8 warps along the axis, `exchange_lanes`) reads the one word of
the warp place named by its exchange lane bits and butterflies over those bits. Every thread
must end with the whole reduced axis of each of its own results.

The 8-warp butterflies once ran over lane bits 0..2 whatever the layout: lanes that hold other
results (a reduction across rows whose lanes run along the row, an mma accumulator's column
lanes) were combined, and every output of `tl.sum(x, axis=0)` was wrong on the GPU. The PTX
test checks the compiled kernels' butterfly masks for the same layouts."""

from __future__ import annotations

import collections
import random
import re

import pytest
from reduction_kernels import dot_rowmax_kernel, reduce2d_kernel

import sparsecc
from sparsecc.analysis.layouts import WARP, DistLayout, distributed
from sparsecc.analysis.reduce_plan import ReducePlan, plan_reduce
from sparsecc.codegen.handlers.reduce import exchange_lanes
from sparsecc.dialects.ttg import BlockedEncodingAttr, MmaEncodingAttr

FAILED_ON_GPU = [
    # test_reduce2d[64-64-64-64-0-8] and [45-61-64-64-0-8]: one lane bit along the rows
    (BlockedEncodingAttr([1, 4], [2, 16], [8, 1], [1, 0]), (64, 64), 0),
    # test_reduce2d[7-200-8-256-0-8]: no lane along the rows
    (BlockedEncodingAttr([1, 4], [1, 32], [8, 1], [1, 0]), (8, 256), 0),
    # test_dot_result_reductions[128-64-64-8]: the column sums of a wgmma accumulator
    (MmaEncodingAttr((8, 1), 3, (64, 64)), (128, 64), 0),
]
ROW_KERNELS = [
    (BlockedEncodingAttr([8], [32], [8], [0]), (4096,), 0),
    (BlockedEncodingAttr([8], [32], [16], [0]), (4096,), 0),
    (BlockedEncodingAttr([4], [32], [8], [0]), (1024,), 0),  # more warps than the row needs
]


def _place(w: int, plan: ReducePlan) -> int:
    return sum((w >> b & 1) << i for i, b in enumerate(plan.warp_bits))


def _slot(lane: int, lanes: tuple[int, ...]) -> int:
    return sum((lane >> b & 1) << i for i, b in enumerate(lanes))


def simulate_exchange(dl: DistLayout, axis: int, lanes: tuple[int, ...] | None) -> None:
    """Walk every thread through the reduction with exchange lane bits `lanes` (None: every
    thread reads all W words) and assert that each ends with its results' whole axis, each
    element once. Values are the (result, axis coordinate) pairs a partial covers."""
    plan = plan_reduce(dl, axis)
    assert plan is not None and plan.warps_along > 1
    drop = lambda c: c[:axis] + c[axis + 1:]  # noqa: E731
    held: dict[tuple[int, int], dict[tuple[int, ...], frozenset]] = {}
    for w in range(plan.warps):
        for lane in range(WARP):
            parts: dict[tuple[int, ...], frozenset] = {}
            for group in plan.groups:
                elems = [dl.coord(w, lane, r) for r in group]
                parts[drop(elems[0])] = frozenset((drop(e), e[axis]) for e in elems)
            held[w, lane] = parts
    for mask in plan.lane_masks:
        held = {(w, lane): {k: v | held[w, lane ^ mask][k] for k, v in parts.items()}
                for (w, lane), parts in held.items()}
    # the exchange: the writers (no copy lane or warp) store at (result, warp place)
    smem: dict[tuple[tuple[int, ...], int], frozenset] = {}
    skip = plan.lane_copies | sum(plan.lane_masks)
    for (w, lane), parts in held.items():
        if lane & skip or w & plan.warp_copies:
            continue
        for k, v in parts.items():
            assert (k, _place(w, plan)) not in smem
            smem[k, _place(w, plan)] = v
    wcount = plan.warps_along
    got: dict[tuple[int, int], dict[tuple[int, ...], list]] = {}
    for (w, lane), parts in held.items():
        if lanes is None:
            got[w, lane] = {k: [a for p in range(wcount) for a in smem[k, p]] for k in parts}
        else:
            got[w, lane] = {k: list(smem[k, _slot(lane, lanes)]) for k in parts}
    if lanes is not None:
        for b in reversed(lanes):
            # the partner's value of the partner's own result at the same register
            nxt = {}
            for (w, lane), parts in got.items():
                other = got[w, lane ^ 1 << b]
                assert list(other) == list(parts)
                nxt[w, lane] = {k: v + list(other.values())[i] for i, (k, v) in enumerate(parts.items())}
            got = nxt
    for (w, lane), parts in got.items():
        for k, v in parts.items():
            assert sorted(v) == [(k, a) for a in range(dl.shape[axis])], (w, lane, k)


@pytest.mark.parametrize("layout, shape, axis", FAILED_ON_GPU + ROW_KERNELS)
def test_exchange_gives_each_thread_its_results(layout, shape, axis: int) -> None:
    dl = distributed(layout, shape)
    simulate_exchange(dl, axis, exchange_lanes(plan_reduce(dl, axis)))


@pytest.mark.parametrize("layout, shape, axis", FAILED_ON_GPU)
def test_the_simulation_catches_partners_with_other_results(layout, shape, axis: int) -> None:
    """The lanes the 8-warp exchange used before (bits 0..2) fail these layouts' simulation:
    the check can fail."""
    with pytest.raises(AssertionError):
        simulate_exchange(distributed(layout, shape), axis, (0, 1, 2))


def test_exchange_lanes_of_the_failed_layouts() -> None:
    lanes = [exchange_lanes(plan_reduce(distributed(lay, shape), axis)) for lay, shape, axis in FAILED_ON_GPU]
    assert lanes == [None, None, (2, 3, 4)]


def _random_blocked(rng: random.Random, warps: int) -> tuple[BlockedEncodingAttr, tuple[int, int]]:
    tpw, wpc = [1, 1], [1, 1]
    for _ in range(5):
        tpw[rng.randrange(2)] *= 2
    for _ in range(warps.bit_length() - 1):
        wpc[rng.randrange(2)] *= 2
    spt = [rng.choice([1, 2, 4]) for _ in range(2)]
    shape = tuple(s * t * w * rng.choice([1, 2]) for s, t, w in zip(spt, tpw, wpc))
    return BlockedEncodingAttr(spt, tpw, wpc, rng.choice([[1, 0], [0, 1]])), shape


@pytest.mark.parametrize("seed", range(40))
def test_exchange_on_random_layouts(seed: int) -> None:
    rng = random.Random(seed)
    layout, shape = _random_blocked(rng, rng.choice([8, 16]))
    for axis in (0, 1):
        dl = distributed(layout, shape)
        plan = plan_reduce(dl, axis)
        if plan is None or plan.warps_along == 1:
            continue
        simulate_exchange(dl, axis, exchange_lanes(plan))


F32_OUTS = {k: "*fp32" for k in ("OUT_SUM", "OUT_MAX", "OUT_MIN", "OUT_PROD")}
REDUCE2D_SIG = {"X": "*fp32", **F32_OUTS, "OUT_ARGMAX": "*i32", "OUT_ARGMIN": "*i32", "M": "i32", "N": "i32"}


def _bfly_masks(ptx: str) -> collections.Counter:
    return collections.Counter(int(m) for m in re.findall(r"shfl\.sync\.bfly\.b32\s+\S+, \S+, (\d+)", ptx))


@pytest.mark.parametrize("bm, bn, masks", [(64, 64, {16}), (8, 256, set())])
def test_reduce_across_rows_shuffles_only_lanes_along_the_rows(bm: int, bn: int, masks: set[int]) -> None:
    """reduce2d along axis 0 at 8 warps: the only butterflies are over the lane bits that move
    along the rows (threadsPerWarp [2, 16]: lane 16; [1, 32]: none); the 8 warps' partials are
    read back whole."""
    ptx = sparsecc.compile(reduce2d_kernel, signature=REDUCE2D_SIG, constexprs={"AXIS": 0, "BM": bm, "BN": bn},
                           num_warps=8, target="sm_90a").asm["ptx"]
    assert set(_bfly_masks(ptx)) == masks


def test_dot_column_sum_shuffles_the_row_lanes() -> None:
    """dot_rowmax at 128x64, 8 warps: the row reductions butterfly lanes 1 and 2 (3 reductions,
    two operands in argmax: 6 shuffles each), the column sum lanes 4, 8, 16 only, before and
    after the exchange."""
    sig = {"A": "*fp16", "B": "*fp16", "OUT_MAX": "*fp32", "OUT_SUM": "*fp32", "OUT_ARG": "*i32"}
    ptx = sparsecc.compile(dot_rowmax_kernel, signature=sig, constexprs={"K": 64, "BM": 128, "BN": 64},
                           num_warps=8, target="sm_90a").asm["ptx"]
    got = _bfly_masks(ptx)
    assert got[1] == got[2] == 6
    assert got[4] == got[8] == got[16]
