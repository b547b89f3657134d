"""Registers of one thread that hold equal elements, from the axis analysis's constancy.

An elementwise op computes one value per register of its result's layout. When the axis
analysis proves the result constant over aligned groups of elements (`mask = cols < n_cols` with
`n_cols` a multiple of 16: constant over each group of 16 columns) and a thread holds several
registers of one group, computing the first of them is enough: the others are copies. This is
what Triton's elementwise lowering does (`maybeDeduplicate`): a row kernel's `tl.where(mask, ...)`
then selects with one predicate per vector instead of one `setp` (and one predicate register)
per element, which is what kept the layer norm's registers above Triton's.

    reps = equal_registers(L, op.results[0])   # e.g. [0, 0, 0, 0, 4, 4, 4, 4] for 8 registers
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, SSAValue

from sparsecc.analysis.axis_info import AxisAnalysis
from sparsecc.analysis.layouts import DistLayout, distributed
from sparsecc.dialects.ttg import BlockedEncodingAttr, SliceEncodingAttr

if TYPE_CHECKING:
    from sparsecc.codegen.lower_state import LoweringState


def axis_analysis(L: LoweringState) -> AxisAnalysis:
    """The function's axis analysis, made once per lowering (shared with the pointer accesses)."""
    caches = L.caches
    if caches.axes is None:
        caches.axes = AxisAnalysis(L.cfg.func, L.cfg.divs)
    assert isinstance(caches.axes, AxisAnalysis)
    return caches.axes


def group_sizes(dl: DistLayout, constancy: tuple[int, ...]) -> tuple[int | None, ...]:
    """Per dim, the size of the aligned groups of equal elements that a thread's registers can
    be sorted into by their register offsets alone (None: the whole dim is one group). A group
    is cut down until every term of the thread's base along the dim is a multiple of it, so that
    two registers whose offsets fall in one group hold elements of one group, whatever the
    thread."""
    out: list[int | None] = []
    for d, k in enumerate(constancy):
        if k >= dl.shape[d]:
            out.append(None)
            continue
        g = k
        while g > 1 and any(t.mul % g for t in dl.base[d] if t.mod > 1):
            g //= 2
        out.append(g)
    return tuple(out)


def register_groups(dl: DistLayout, constancy: tuple[int, ...]) -> list[int]:
    """Per register, the first register of the thread that holds an element of its group."""
    sizes = group_sizes(dl, constancy)
    first: dict[tuple[int, ...], int] = {}
    reps = []
    for r, off in enumerate(dl.regs):
        key = tuple(0 if g is None else o // g for o, g in zip(off, sizes))
        reps.append(first.setdefault(key, r))
    return reps


def _blocked(enc: Attribute) -> bool:
    """A blocked layout or a slice of one (the row kernels' layouts; mma accumulators are left
    to the dot lowering)."""
    while isinstance(enc, SliceEncodingAttr):
        enc = enc.parent
    return isinstance(enc, BlockedEncodingAttr)


def equal_registers(L: LoweringState, value: SSAValue) -> list[int] | None:
    """Per register of `value` (a ttgir tensor in a distributed layout), the register that
    holds the same element value (itself when it is a group's first); None when no two of a
    thread's registers are known equal."""
    ty = value.type
    if not isinstance(ty, TensorType) or not _blocked(ty.encoding):
        return None
    constancy = axis_analysis(L).of(value).constancy
    if all(k == 1 for k in constancy):
        return None
    reps = register_groups(distributed(ty.encoding, ty.get_shape()), constancy)
    return reps if any(r != i for i, r in enumerate(reps)) else None


__all__ = ["axis_analysis", "equal_registers", "group_sizes", "register_groups"]
