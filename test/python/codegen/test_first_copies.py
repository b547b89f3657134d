"""Which thread holds the first copy of each element (`lower_mem.first_replica`), simulated for
every thread: exactly one owner per element in blocked, wrapped and slice layouts. The atomics
and stores of an element are that thread's alone (regression: a histogram's 16 bins in a slice
layout were added once per copy, 32 times, on the H100)."""

from __future__ import annotations

import pytest

from sparsecc.analysis.layouts import distributed
from sparsecc.codegen.lower_mem import free_bits
from sparsecc.dialects.ttg import BlockedEncodingAttr, SliceEncodingAttr


def _owners(dl, num_warps: int) -> dict[tuple[int, ...], int]:
    """Element -> how many threads pass first_replica's test for it (its Python twin)."""
    free_lane, free_warp = free_bits(dl, "lane", 32), free_bits(dl, "warp", num_warps)
    count: dict[tuple[int, ...], int] = {}
    for warp in range(num_warps):
        for lane in range(32):
            if lane & free_lane or warp & free_warp:
                continue
            for r in range(dl.num_regs):
                if dl.regs[r] in dl.regs[:r]:
                    continue
                unwrapped = [sum(t.eval(lane, warp) for t in dl.base[d]) for d in range(len(dl.shape))]
                if all(unwrapped[d] < dl.shape[d] - dl.regs[r][d] for d in range(len(dl.shape)) if dl.wrap[d]):
                    c = dl.coord(warp, lane, r)
                    count[c] = count.get(c, 0) + 1
    return count


BLOCKED = BlockedEncodingAttr([1, 4], [4, 8], [4, 1], [1, 0])


@pytest.mark.parametrize("layout, shape, num_warps", [
    (BLOCKED, (64, 64), 4),                       # one thread per element
    (BLOCKED, (8, 16), 4),                        # wider than the tensor: wrapped copies
    (SliceEncodingAttr(0, BLOCKED), (16,), 4),    # a column reduction's result: copies per lane row
    (SliceEncodingAttr(1, BLOCKED), (64,), 4),    # a row reduction's result: copies per lane column
    (SliceEncodingAttr(0, BlockedEncodingAttr([1, 1], [32, 1], [2, 2], [1, 0])), (16,), 4),
])
def test_each_element_has_exactly_one_first_copy(layout, shape, num_warps):
    dl = distributed(layout, shape)
    owners = _owners(dl, num_warps)
    every = {dl.coord(w, ln, r) for w in range(num_warps) for ln in range(32) for r in range(dl.num_regs)}
    assert set(owners) == every
    assert set(owners.values()) == {1}, {c: n for c, n in owners.items() if n != 1}
