"""Handlers of view and shape ops: `tt.make_range`, `tt.splat`, `tt.expand_dims`,
`tt.broadcast`, `tt.reshape`.

Most move no data: the result's registers are (some of) the source's, picked by comparing
the two layouts' per-register offsets. `tt.reshape` keeps the row-major element order, which
a layout need not: unless each thread keeps its elements it goes through a shared scratch
buffer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from xdsl.dialects.builtin import TensorType, i1

from sparsecc.analysis.layouts import distributed
from sparsecc.analysis.shuffles import is_free
from sparsecc.codegen.handlers.shapes import lower_shuffle
from sparsecc.codegen.handlers.table import handles
from sparsecc.codegen.lower_base import LoweringError, Regs, Smem
from sparsecc.codegen.lower_mem import load_shared, store_shared
from sparsecc.dialects import tt
from sparsecc.dialects import ttg as ttgd

if TYPE_CHECKING:
    from sparsecc.codegen.lower_state import LoweringState


@handles(tt.MakeRangeOp)
def _make_range(L: LoweringState, op: tt.MakeRangeOp) -> None:
    ty = op.result.type
    dl = distributed(ty.encoding, ty.get_shape())
    start = op.start.value.data
    L.set(op.result, Regs(ty, [L.em.add(c[0], start) for c in L.coords(dl)]))


@handles(tt.SplatOp)
def _splat(L: LoweringState, op: tt.SplatOp) -> None:
    ty = op.result.type
    dl = distributed(ty.encoding, ty.get_shape())
    L.set(op.result, Regs(ty, [L.get(op.src)] * dl.num_regs))


@handles(tt.ExpandDimsOp)
def _expand_dims(L: LoweringState, op: tt.ExpandDimsOp) -> None:
    src = L.get(op.src)
    assert isinstance(src, Regs)
    s_enc = op.src.type.encoding
    r_enc = op.result.type.encoding
    if not (isinstance(s_enc, ttgd.SliceEncodingAttr) and s_enc.parent == r_enc and s_enc.dim == op.axis.value.data):
        raise LoweringError("the source layout must be #ttg.slice<{dim = axis, parent = result layout}>")
    L.set(op.result, Regs(op.result.type, list(src.regs)))


@handles(tt.BroadcastOp)
def _broadcast(L: LoweringState, op: tt.BroadcastOp) -> None:
    src = L.get(op.src)
    ty = op.result.type
    assert isinstance(src, Regs)
    s_shape = src.ty.get_shape()
    if src.ty.encoding != ty.encoding:
        raise LoweringError("source and result layouts differ")
    sdl = distributed(src.ty.encoding, s_shape)
    rdl = distributed(ty.encoding, ty.get_shape())
    bdims = [d for d in range(len(s_shape)) if s_shape[d] != ty.get_shape()[d]]
    index = {}
    for r, off in enumerate(sdl.regs):
        key = tuple(o for d, o in enumerate(off) if d not in bdims)
        index.setdefault(key, r)
    out = []
    for off in rdl.regs:
        key = tuple(o for d, o in enumerate(off) if d not in bdims)
        if key not in index:
            raise LoweringError("cannot match broadcast registers")
        out.append(src.regs[index[key]])
    L.set(op.result, Regs(ty, out))


def row_major(ty: TensorType) -> ttgd.MemDescType:
    """An unswizzled row-major shared buffer of `ty`'s shape and element type."""
    order = tuple(range(len(ty.get_shape()) - 1, -1, -1))
    return ttgd.MemDescType(ty.get_shape(), ty.element_type, ttgd.SharedEncodingAttr(1, 1, 1, order), True)


@handles(tt.ReshapeOp)
def _reshape(L: LoweringState, op: tt.ReshapeOp) -> None:
    """`tt.reshape` keeps the row-major order of the elements: registers are renamed where each
    thread keeps its elements (`is_free`); otherwise the source is stored row-major into a
    scratch buffer and read back as the result's shape in the result's layout (rank 3 and
    up, and i1, by the shuffle of sparsecc/codegen/handlers/shapes.py)."""
    st, rt = op.src.type, op.result.type
    if is_free(op) or len(st.get_shape()) > 2 or len(rt.get_shape()) > 2 or st.element_type == i1:
        lower_shuffle(L, op)
        return
    src = L.regs(op.src)
    addr = L.scratch(op)
    store_shared(L, Smem(addr, row_major(st)), src)
    L.set(op.result, load_shared(L, Smem(addr, row_major(rt)), rt))
