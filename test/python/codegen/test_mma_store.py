"""The epilogue's quad-transposed 16-byte stores (codegen/mma_store.py), checked on the CPU by
simulating the warp's lanes: which layouts qualify, and that after the exchange every lane's
16-byte vector holds exactly the 8 contiguous elements its address names."""

from __future__ import annotations

import pytest

from sparsecc.analysis.layouts import distributed
from sparsecc.codegen.mma_store import quad_transpose, transpose_plan
from sparsecc.dialects.ttg import MmaEncodingAttr


def simulate(words_per_lane: list[list[object]]) -> list[list[object]]:
    """Run quad_transpose on 4 lanes at once: every value is a list over the lanes."""
    lanes = range(len(words_per_lane))
    words = [[words_per_lane[t][k] for t in lanes] for k in range(4)]

    def select(c, a, b):
        return [x if ci else y for ci, x, y in zip(c, a, b)]

    def shfl_xor(x, mask):
        return [x[t ^ mask] for t in lanes]

    out = quad_transpose(words, lambda b: [bool((t >> b) & 1) for t in lanes], select, shfl_xor)
    return [[out[s][t] for s in range(4)] for t in lanes]


def test_quad_transpose_is_a_transpose():
    w = [[(t, k) for k in range(4)] for t in range(4)]
    assert simulate(w) == [[(s, t) for s in range(4)] for t in range(4)]


@pytest.mark.parametrize("mma, shape, spacing", [
    (MmaEncodingAttr((8, 1), version_major=3, instr_shape=(64, 128)), (256, 128), 8),  # the large H100 tile
    (MmaEncodingAttr((4, 1), version_major=3, instr_shape=(64, 64)), (64, 64), 8),
    (MmaEncodingAttr((4, 1)), (64, 32), 8),  # mma.sp with all warps along M
    (MmaEncodingAttr((2, 2)), (128, 128), 16),  # mma.sp's sm_80 tile: two warps along N interleave
    (MmaEncodingAttr((4, 2)), (128, 64), 16),
])
def test_every_lane_stores_the_eight_elements_its_address_names(mma, shape, spacing):
    dl = distributed(mma, shape)
    plan = transpose_plan(dl, 2, 1)
    assert plan is not None and len(plan.groups) * 8 == dl.num_regs and plan.spacing == spacing
    wm, wn = mma.warps_per_cta
    written = []
    for warp in range(wm * wn):
        for quad in range(8):
            lanes = [4 * quad + t for t in range(4)]
            for group in plan.groups:
                # each word: the two elements (coordinates) the lane's register pair holds
                words = [[(dl.coord(warp, lane, a), dl.coord(warp, lane, b)) for a, b in group] for lane in lanes]
                for t, vector in enumerate(simulate(words)):
                    row, col = dl.coord(warp, lanes[t], group[0][0])
                    start = col + (spacing - 2) * t  # what store_transposed addresses
                    assert start % 8 == 0
                    elements = [e for pair in vector for e in pair]
                    assert elements == [(row, start + i) for i in range(8)]
                    written += elements
    assert sorted(written) == sorted((r, c) for r in range(shape[0]) for c in range(shape[1]))


@pytest.mark.parametrize("mma, shape, elt_bytes", [
    (MmaEncodingAttr((2, 2)), (64, 32), 2),  # two chunks per row and thread
    (MmaEncodingAttr((4, 1), version_major=3, instr_shape=(64, 16)), (64, 16), 2),  # two chunks a row
    (MmaEncodingAttr((8, 1), version_major=3, instr_shape=(64, 128)), (256, 128), 4),  # fp32
])
def test_layouts_that_do_not_qualify_keep_the_plain_stores(mma, shape, elt_bytes):
    assert transpose_plan(distributed(mma, shape), elt_bytes, 1) is None
