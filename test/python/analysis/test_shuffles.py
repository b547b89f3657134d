"""The shape ops as shuffles (sparsecc/analysis/shuffles.py), checked by simulating every thread:
each thread's registers hold the elements its layout says; the result registers are read
either by renaming (the free path, `free_sources`) or through a buffer at the shuffle's
addresses (the shared path). Both must give torch's result for every element, on random
blocked layouts of rank 1 to 3 (replicated ones included)."""

from __future__ import annotations

import random

import pytest
import torch

from sparsecc.analysis.layouts import WARP, distributed
from sparsecc.analysis.shuffles import (
    cat_shuffle,
    derived_layout,
    free_sources,
    join_layout,
    join_shuffle,
    reshape_layout,
    reshape_shuffle,
    split_layout,
    split_shuffle,
    trans_shuffle,
)
from sparsecc.dialects.ttg import BlockedEncodingAttr


def _split_pow2(total: int, parts: int, rng: random.Random) -> list[int]:
    """`total` (a power of two) as a product of `parts` powers of two, at random."""
    out = [1] * parts
    for _ in range(total.bit_length() - 1):
        out[rng.randrange(parts)] *= 2
    return out


def random_blocked(rank: int, num_warps: int, rng: random.Random) -> BlockedEncodingAttr:
    spt = [rng.choice([1, 1, 2, 4]) for _ in range(rank)]
    order = list(range(rank))
    rng.shuffle(order)
    return BlockedEncodingAttr(spt, _split_pow2(WARP, rank, rng), _split_pow2(num_warps, rank, rng), order)


def _thread_values(layout, t: torch.Tensor, num_warps: int) -> list[list[float]]:
    """values[thread][reg]: what each thread holds of `t` under `layout`."""
    dl = distributed(layout, tuple(t.shape))
    return [[t[dl.coord(th // WARP, th % WARP, r)].item() for r in range(dl.num_regs)]
            for th in range(WARP * num_warps)]


def _address(aff, coord) -> int:
    offset, strides = aff
    return offset + sum(c * s for c, s in zip(coord, strides, strict=True))


def simulate(shuffle, srcs, src_layouts, results, res_layouts, num_warps: int) -> bool:
    """Check both lowerings of `shuffle` against the expected `results`; returns whether the
    free path applied."""
    threads = WARP * num_warps
    held = [_thread_values(lay, s, num_warps) for lay, s in zip(src_layouts, srcs, strict=True)]
    # the shared path: store every register at its address, read each result at its own
    buf: dict[int, float] = {}
    for lay, s, aff, vals in zip(src_layouts, srcs, shuffle.operands, held, strict=True):
        dl = distributed(lay, tuple(s.shape))
        for th in range(threads):
            for r in range(dl.num_regs):
                buf[_address(aff, dl.coord(th // WARP, th % WARP, r))] = vals[th][r]
    for lay, want, aff in zip(res_layouts, results, shuffle.results, strict=True):
        dl = distributed(lay, tuple(want.shape))
        for th in range(threads):
            for r in range(dl.num_regs):
                c = dl.coord(th // WARP, th % WARP, r)
                assert buf[_address(aff, c)] == want[c].item(), (c, th, r)
    # the free path, where it applies: result register = the picked operand register
    picks = free_sources(tuple((lay, tuple(s.shape)) for lay, s in zip(src_layouts, srcs, strict=True)),
                         tuple((lay, tuple(w.shape)) for lay, w in zip(res_layouts, results, strict=True)),
                         shuffle, num_warps)
    if picks is None:
        return False
    for lay, want, pick in zip(res_layouts, results, picks, strict=True):
        dl = distributed(lay, tuple(want.shape))
        for th in range(threads):
            for r, (j, s) in enumerate(pick):
                assert held[j][th][s] == want[dl.coord(th // WARP, th % WARP, r)].item(), (th, r)
    return True


SHAPES = [(64,), (8, 16), (4, 8, 2), (2, 4, 16), (32, 4)]


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("shape", SHAPES)
def test_trans_join_split_cat_reshape_on_random_layouts(shape, seed):
    rng = random.Random(hash((shape, seed)))
    torch.manual_seed(seed)
    nw = rng.choice([1, 2, 4])
    rank = len(shape)
    a, b = torch.randn(shape), torch.randn(shape)
    lay = lambda r: random_blocked(r, nw, rng)  # noqa: E731
    # permute (every rank-2+ permutation through a random one)
    if rank >= 2:
        perm = list(range(rank))
        rng.shuffle(perm)
        simulate(trans_shuffle(shape, tuple(perm)), [a], [lay(rank)], [a.permute(perm)], [lay(rank)], nw)
    # reshape to a different factorisation
    n = a.numel()
    dst = (n // 4, 4) if rank != 2 else (n,)
    simulate(reshape_shuffle(shape, dst), [a], [lay(rank)], [a.reshape(dst)], [lay(len(dst))], nw)
    # join, and split back
    ja, jb = lay(rank), lay(rank)
    joined = torch.stack((a, b), -1)
    simulate(join_shuffle(shape), [a, b], [ja, jb], [joined], [lay(rank + 1)], nw)
    simulate(split_shuffle((*shape, 2)), [joined], [lay(rank + 1)], [a, b], [ja, ja], nw)
    # cat along each dim
    for d in range(rank):
        simulate(cat_shuffle(shape, d), [a, b], [ja, ja], [torch.cat((a, b), d)], [lay(rank)], nw)


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("shape", SHAPES)
def test_derived_layouts_are_free(shape, seed):
    """join_layout, split_layout, the cat layout and reshape_layout make their op rename
    registers (and the simulation agrees with torch)."""
    rng = random.Random(hash((shape, seed, "derived")))
    nw = rng.choice([1, 2, 4, 8])
    rank = len(shape)
    a, b = torch.randn(shape), torch.randn(shape)
    src = random_blocked(rank, nw, rng)
    j = join_layout(src)
    joined = torch.stack((a, b), -1)
    assert simulate(join_shuffle(shape), [a, b], [src, src], [joined], [j], nw)
    back = split_layout(j)
    assert back == src
    assert simulate(split_shuffle((*shape, 2)), [joined], [j], [a, b], [back, back], nw)
    for d in range(rank):
        free = simulate(cat_shuffle(shape, d), [a, b], [src, src], [torch.cat((a, b), d)], [src], nw)
        tile = src.size_per_thread[d] * src.threads_per_warp[d] * src.warps_per_cta[d]
        assert free or tile > shape[d]  # the second half in more registers (unless the layout repeats)
    # a row-major layout reshaped (interleave: the join's minor dim merged into the last one)
    rm = BlockedEncodingAttr(src.size_per_thread, src.threads_per_warp, src.warps_per_cta,
                             list(range(rank - 1, -1, -1)))
    jr = join_layout(rm)
    dst = (*shape[:-1], 2 * shape[-1])
    lay = reshape_layout(jr, (*shape, 2), dst)
    if lay is not None:  # no blocked layout keeps a layout that repeats an inner dim
        assert simulate(reshape_shuffle((*shape, 2), dst), [joined], [jr], [joined.reshape(dst)], [lay], nw)


def test_reshape_layout_of_a_deinterleaving_load():
    """(512,) fp16 loaded 8 per thread by 128 threads (the layout repeats it twice) reshaped to
    (256, 2): each thread keeps its 8 elements as 4 rows of 2."""
    src = BlockedEncodingAttr([8], [32], [4], [0])
    lay = reshape_layout(src, (512,), (256, 2))
    assert lay == BlockedEncodingAttr([4, 2], [32, 1], [4, 1], [1, 0])
    x = torch.randn(512)
    assert simulate(reshape_shuffle((512,), (256, 2)), [x], [src], [x.reshape(256, 2)], [lay], 4)


def test_split_layout_needs_the_minor_dim_in_registers():
    assert split_layout(BlockedEncodingAttr([1, 1], [16, 2], [4, 1], [1, 0])) is None
    assert split_layout(BlockedEncodingAttr([2, 2], [32, 1], [4, 1], [1, 0])) == \
        BlockedEncodingAttr([2], [32], [4], [0])


def test_derived_layout_of_other_ops_is_none():
    from xdsl.dialects.builtin import TensorType, f32
    from xdsl.ir import Block

    from sparsecc.dialects import tt

    blk = Block(arg_types=[TensorType(f32, [4, 8])])
    lay = BlockedEncodingAttr([1, 1], [4, 8], [1, 1], [1, 0])
    assert derived_layout(tt.TransOp(blk.args[0], (1, 0)), lay, 1) is None
    assert derived_layout(tt.JoinOp(blk.args[0], blk.args[0]), lay, 1) == join_layout(lay)
