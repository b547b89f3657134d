"""sparsecc.analysis.reduce_plan: which registers, lanes and warps a reduction combines, checked
against a brute-force walk of the layout's own element map."""

from __future__ import annotations

import pytest

from sparsecc.analysis.layouts import distributed
from sparsecc.analysis.reduce_plan import plan_reduce
from sparsecc.dialects.ttg import BlockedEncodingAttr, MmaEncodingAttr

LAYOUTS = [
    (BlockedEncodingAttr([8], [32], [4], [0]), (4096,)),
    (BlockedEncodingAttr([8], [32], [4], [0]), (64,)),  # wider than the tensor: copies
    (BlockedEncodingAttr([1, 4], [2, 16], [4, 1], [1, 0]), (8, 64)),
    (BlockedEncodingAttr([1, 8], [4, 8], [2, 2], [1, 0]), (32, 128)),
    (BlockedEncodingAttr([2, 1], [8, 4], [1, 4], [0, 1]), (16, 16)),
    (MmaEncodingAttr((2, 2)), (64, 64)),
    (MmaEncodingAttr((4, 1)), (16, 8)),  # replicated rows
]


@pytest.mark.parametrize("layout, shape", LAYOUTS)
@pytest.mark.parametrize("axis", [0, 1])
def test_plan_covers_each_element_once(layout, shape, axis: int) -> None:
    """Simulate the plan: per thread and result, the set of source elements its value covers
    after the in-thread step, the butterflies and the warp exchange must be the whole reduced
    axis of that result, each element once."""
    if axis >= len(shape):
        pytest.skip("1-D")
    dl = distributed(layout, shape)
    plan = plan_reduce(dl, axis)
    assert plan is not None
    warps = plan.warps
    held: dict[tuple[int, int], dict[tuple[int, ...], frozenset]] = {}
    for w in range(warps):
        for lane in range(32):
            parts = {}
            for group in plan.groups:
                elems = [dl.coord(w, lane, r) for r in group]
                assert len(set(elems)) == len(elems)
                res = elems[0][:axis] + elems[0][axis + 1:]
                assert all(e[:axis] + e[axis + 1:] == res for e in elems)
                parts[res] = frozenset(e[axis] for e in elems)
            held[w, lane] = parts
    for mask in plan.lane_masks:  # butterflies: partner's sets are disjoint, then joined
        nxt = {}
        for (w, lane), parts in held.items():
            other = held[w, lane ^ mask]
            assert other.keys() == parts.keys()
            assert all(not (parts[k] & other[k]) for k in parts)
            nxt[w, lane] = {k: parts[k] | other[k] for k in parts}
        held = nxt
    writers = [(w, lane) for (w, lane) in held if not lane & (plan.lane_copies | sum(plan.lane_masks))
               and not w & plan.warp_copies]
    total: dict[tuple[int, ...], list[int]] = {}
    for wl in writers:
        for k, s in held[wl].items():
            total.setdefault(k, []).extend(s)
    for k, axis_elems in total.items():
        assert sorted(axis_elems) == list(range(shape[axis])), k
    # every result coordinate of the tensor is covered
    full = {tuple(c[:axis] + c[axis + 1:]) for w in range(warps) for lane in range(32)
            for c in (dl.coord(w, lane, r) for r in range(dl.num_regs))}
    assert set(total) == full
