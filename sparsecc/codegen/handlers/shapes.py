"""Handlers of the shape ops that move elements between threads: `tt.trans` (tl.permute,
tl.trans), `tt.join`, `tt.split`, `tt.cat`, and `tt.reshape` past rank 2.

Each is a `Shuffle` (sparsecc/analysis/shuffles.py): one buffer address per operand and result
element. Where the layouts let every thread find its result elements in its own registers the
op renames registers (no instruction); otherwise the operands are stored to a shared scratch
buffer at their addresses and the results read back at theirs (vectorized where a thread's
registers are consecutive addresses), with a barrier in between, like `ttg.convert_layout`.
i1 tensors travel as i16 through shared memory.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from xdsl.dialects.builtin import TensorType, i1, i16
from xdsl.ir import Attribute, Operation, SSAValue

from sparsecc.analysis.dtypes import esize
from sparsecc.analysis.layouts import DistLayout, contiguous_run, distributed
from sparsecc.analysis.shuffles import Affine, Shuffle, free_sources, layout_warps, shuffle_of
from sparsecc.codegen.handlers.table import handles
from sparsecc.codegen.lower_base import Regs
from sparsecc.codegen.lower_mem import pack_words, unpack_words, word_type
from sparsecc.dialects import ptx, tt

if TYPE_CHECKING:
    from sparsecc.codegen.lower_state import LoweringState


def stored_type(elt: Attribute) -> Attribute:
    """The type an element has in the scratch buffer (i1 as i16: predicates are not stored)."""
    return i16 if elt == i1 else elt


def _run(dl: DistLayout, aff: Affine, elt: Attribute) -> int:
    """How many consecutive registers move as one vector: consecutive, aligned addresses."""
    offset, strides = aff
    if 1 not in strides:
        return 1
    fast = strides.index(1)
    run = contiguous_run(dl, fast, max(1, 16 // esize(elt)))
    while run > 1 and (offset % run or any(s % run for d, s in enumerate(strides) if d != fast)):
        run //= 2
    return run


def _address(L: LoweringState, base: SSAValue, coord: tuple[SSAValue, ...], aff: Affine, elt: Attribute) -> SSAValue:
    em = L.em
    offset, strides = aff
    idx = em.c(offset)
    for c, s in zip(coord, strides, strict=True):
        idx = em.add(idx, em.mul(c, s))
    return em.add(base, em.mul(idx, esize(elt)))


def shuffle_regs(L: LoweringState, op: Operation, shuffle: Shuffle, srcs: list[Regs],
                 result_types: list[TensorType]) -> list[Regs]:
    """The results of the shape op `op`: renamed registers where free, else through its scratch."""
    pairs = tuple((r.ty.encoding, tuple(r.ty.get_shape())) for r in srcs)
    res = tuple((t.encoding, tuple(t.get_shape())) for t in result_types)
    picks = free_sources(pairs, res, shuffle, layout_warps(srcs[0].ty.encoding))
    if picks is not None:
        return [Regs(ty, [srcs[j].regs[r] for j, r in pick]) for ty, pick in zip(result_types, picks, strict=True)]
    em = L.em
    elt = srcs[0].ty.element_type
    st = stored_type(elt)
    base = L.scratch(op)
    L.wgmma_drain()
    L.before_shared_write()
    for src, aff in zip(srcs, shuffle.operands, strict=True):
        dl = distributed(src.ty.encoding, src.ty.get_shape())
        vals = src.regs
        if elt == i1:
            vals = [em.select(v, em.c(1, i16), em.c(0, i16)) for v in vals]
        coords = L.coords(dl)
        run = _run(dl, aff, st)
        for r0 in range(0, dl.num_regs, run):
            addr = _address(L, base, coords[r0], aff, st)
            em.op(ptx.StSharedOp(addr, pack_words(L, vals[r0:r0 + run])))
    L.after_shared_write()
    L.before_shared_read()
    out = []
    for ty, aff in zip(result_types, shuffle.results, strict=True):
        dl = distributed(ty.encoding, ty.get_shape())
        coords = L.coords(dl)
        run = _run(dl, aff, st)
        vals: list[SSAValue] = []
        for r0 in range(0, dl.num_regs, run):
            wt, wn = word_type(st, run)
            ld = em.op(ptx.LdSharedOp(_address(L, base, coords[r0], aff, st), wt, wn))
            vals += unpack_words(L, list(ld.results), st, run)
        if elt == i1:
            vals = [em.cmp("ne", v, 0) for v in vals]
        out.append(Regs(ty, vals))
    return out


def lower_shuffle(L: LoweringState, op: Operation) -> None:
    """Lower the shape op `op` (any of `shuffle_of`'s) and record its results."""
    shuffle = shuffle_of(op)
    assert shuffle is not None
    srcs = [L.regs(v) for v in op.operands]
    results = shuffle_regs(L, op, shuffle, srcs, [r.type for r in op.results])
    for r, v in zip(op.results, results, strict=True):
        L.set(r, v)


@handles(tt.TransOp, tt.JoinOp, tt.SplitOp, tt.CatOp)
def _shape_op(L: LoweringState, op: Operation) -> None:
    lower_shuffle(L, op)
