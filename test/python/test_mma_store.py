"""The epilogue's quad-transposed 16-byte stores (codegen/mma_store.py), checked on the CPU by
simulating the warp's lanes: which layouts qualify, and that after the exchange every lane's
16-byte vector holds exactly the 8 contiguous elements its address names."""

from __future__ import annotations

import pytest

from sparsecc.codegen.layouts import distributed
from sparsecc.codegen.mma_store import pair_plan, quad_transpose, row_exchange, transpose_plan
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


@pytest.mark.parametrize("mma, shape", [
    (MmaEncodingAttr((8, 1), version_major=3, instr_shape=(64, 128)), (256, 128)),  # the large H100 tile
    (MmaEncodingAttr((4, 1), version_major=3, instr_shape=(64, 64)), (64, 64)),
    (MmaEncodingAttr((4, 1)), (64, 32)),  # mma.sp with all warps along M
])
def test_every_lane_stores_the_eight_elements_its_address_names(mma, shape):
    dl = distributed(mma, shape)
    groups = transpose_plan(dl, 2, 1)
    assert groups is not None and len(groups) * 8 == dl.num_regs
    for warp in range(mma.warps_per_cta[0]):
        for quad in range(8):
            lanes = [4 * quad + t for t in range(4)]
            for group in groups:
                # each word: the two elements (coordinates) the lane's register pair holds
                words = [[(dl.coord(warp, lane, a), dl.coord(warp, lane, b)) for a, b in group] for lane in lanes]
                for t, vector in enumerate(simulate(words)):
                    row, col = dl.coord(warp, lanes[t], group[0][0])
                    start = col + 6 * t  # what store_transposed addresses
                    assert start % 8 == 0
                    elements = [e for pair in vector for e in pair]
                    assert elements == [(row, start + i) for i in range(8)]


@pytest.mark.parametrize("mma, shape, elt_bytes", [
    (MmaEncodingAttr((2, 2)), (64, 64), 2),  # warps along N interleave the chunks
    (MmaEncodingAttr((4, 1), version_major=3, instr_shape=(64, 16)), (64, 16), 2),  # two chunks a row
    (MmaEncodingAttr((8, 1), version_major=3, instr_shape=(64, 128)), (256, 128), 4),  # fp32
])
def test_layouts_that_do_not_qualify_keep_the_plain_stores(mma, shape, elt_bytes):
    assert transpose_plan(distributed(mma, shape), elt_bytes, 1) is None


def warp_exchange(dl, warp, groups, pairs):
    """The whole warp at once: every value is a list over the 32 lanes. Returns, per store, the
    (row, first column) each lane addresses and the 8 element coordinates its vector holds."""
    lanes = range(32)

    def select(c, a, b):
        return [x if ci else y for ci, x, y in zip(c, a, b)]

    def shfl_xor(x, mask):
        return [x[t ^ mask] for t in lanes]

    def bit(b):
        return [bool((t >> b) & 1) for t in lanes]

    transposed = [quad_transpose([[(dl.coord(warp, t, a), dl.coord(warp, t, b)) for t in lanes] for a, b in g],
                                 bit, select, shfl_xor) for g in groups]
    stores = []
    for i, j in pairs:
        a, b = row_exchange(transposed[i], transposed[j], bit(2), select, shfl_xor)
        for words, row_shift in ((a, 0), (b, 1)):
            per_lane = []
            for t in lanes:
                odd = (t >> 2) & 1
                row, left = dl.coord(warp, t, groups[i][0][0])
                _, right = dl.coord(warp, t, groups[j][0][0])
                start = (row - odd + row_shift, (right if odd else left) + 6 * (t % 4))
                per_lane.append((start, [e for w in words for e in w[t]]))
            stores.append(per_lane)
    return stores


@pytest.mark.parametrize("mma, shape", [
    (MmaEncodingAttr((8, 1), version_major=3, instr_shape=(64, 128)), (256, 128)),
    (MmaEncodingAttr((4, 1), version_major=3, instr_shape=(64, 64)), (64, 64)),
])
def test_paired_quads_store_whole_128_byte_rows(mma, shape):
    dl = distributed(mma, shape)
    groups = transpose_plan(dl, 2, 1)
    pairs = pair_plan(dl, groups)
    assert pairs is not None and 2 * len(pairs) == len(groups)
    written = []
    for warp in range(mma.warps_per_cta[0]):
        for per_lane in warp_exchange(dl, warp, groups, pairs):
            rows = {}
            for (row, col), elements in per_lane:
                assert elements == [(row, col + i) for i in range(8)]  # the address names the data
                rows.setdefault(row, []).append(col)
                written += elements
            # one warp instruction: 4 rows, each 64 contiguous elements (128 bytes) from 8 lanes
            assert len(rows) == 4
            for cols in rows.values():
                assert sorted(cols) == list(range(min(cols), min(cols) + 64, 8)) and min(cols) % 64 == 0
    assert sorted(written) == sorted((r, c) for r in range(shape[0]) for c in range(shape[1]))


def test_groups_without_a_right_neighbour_are_not_paired():
    dl = distributed(MmaEncodingAttr((4, 1), version_major=3, instr_shape=(64, 32)), (64, 32))
    groups = transpose_plan(dl, 2, 1)
    assert groups is not None and pair_plan(dl, groups) is None
