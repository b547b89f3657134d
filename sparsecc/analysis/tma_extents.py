"""Tensor-map extents for block pointers whose extent the kernel does not state on the host.

`sparsecc.analysis.tma.host_recipe` builds a tensor map from a `tt.make_tensor_ptr`'s shape.
Two kinds of dims have none the host can compute:

* a dim no mask bounds: raise-pointer-tensors gives it the extent UNBOUNDED_DIM (an unmasked
  tensor-of-pointers tile: a grouped GEMM's weights `w_ptr + rows[:, None] * stride + k[None, :]`,
  and the K dim of its tokens; after decompose-sparse-tensors the 2:4 values and metadata
  arrays get UNBOUNDED / 2 and UNBOUNDED / 16 there);
* a dim bounded by a value the device loads (a grouped GEMM's `offs_t < end`, `end` read from
  the expert offsets).

`loop_extents` gives such a pointer, copied in K loop `loop`, extents that are exact:

* the contiguous dim (K): the columns the loop reads, `start + max(trips, 1) * step` when the
  loop advances it by a constant `step` per trip equal to the tile's width (`start` and the trip
  count host expressions). Every column the kernel reads is below it, so no box is zero-filled
  along it; the launch checks (`guards`) that it fits in one row (`<= row stride`) and that
  `start >= 0`, so that a column of the map is the column the pointer load reads. A launch that
  fails a guard is refused with an error naming the argument (`tensor_map.encode`);
* the row dim: the rows the allocation holds in full from the base, `("rows", arg, stride, cols)`
  = (elements from the base to the end of the argument's storage - cols) // stride + 1,
  evaluated at launch from the tensor passed (`sparsecc.runtime.launcher`). A row the kernel
  reads whole lies inside the allocation, so inside the map; a row past it was an out-of-bounds
  read of the pointer load (nothing a correct program does), which TMA zero-fills;
* a row dim bounded on the device instead: the same allocation extent, only when the rows past
  the bound are never seen (`rows_past_bound_unseen`): the tile is operand B (A) of the loop's
  one dot, whose result goes only through the accumulator chain and elementwise ops to block-
  pointer stores that check the same bound at the same offsets along the same dim. A column n of
  a product depends on column n of B alone, so what a row past the bound holds reaches nothing
  that is written. The cp.async form keeps the exact bound.

The pipeline (`tritongpu-pipeline{tma-extents=true}`) computes the extents of a loop's streams,
and records them on each root as the `tma.extents` attribute (a JSON text) when the whole loop
goes to TMA; `host_recipe` reads that attribute, so the pipeline and the lowering agree.
"""

from __future__ import annotations

from typing import Any

from xdsl.dialects import arith, scf
from xdsl.ir import Operation, SSAValue

from sparsecc.analysis.tma import (
    EXTENTS_ATTR,
    MAX_DIM,
    arguments_of,
    evaluate,
    extents_of,
    host_expr,
    record_extents,
)
from sparsecc.analysis.value_equality import same_value
from sparsecc.dialects import tt


def _const(v: SSAValue) -> int | None:
    op = v.owner
    while isinstance(op, arith.ExtSIOp | arith.ExtUIOp | arith.TruncIOp | arith.IndexCastOp):
        op = op.operands[0].owner
    if isinstance(op, arith.ConstantOp):
        value = op.value
        return int(value.value.data) if hasattr(value, "value") and isinstance(value.value.data, int) else None
    return None


def _known(expr: Any) -> bool:
    """A host expression that is a real extent (not raise-pointer-tensors' UNBOUNDED)."""
    return expr is not None and (arguments_of(expr) or evaluate(expr, []) <= MAX_DIM)


def _unbounded(v: SSAValue) -> bool:
    c = _const(v)
    return c is not None and c > MAX_DIM


def _elementwise_users(v: SSAValue, seen: set[SSAValue]) -> list[tuple[Operation, int]] | None:
    """The (op, operand index) of every non-elementwise use of `v`, following arith ops and
    layout conversions (None when some use is neither those nor a store)."""
    if v in seen:
        return []
    seen.add(v)
    out: list[tuple[Operation, int]] = []
    for use in list(v.uses):
        op = use.operation
        if isinstance(op, tt.StoreOp):
            out.append((op, use.index))
        elif (op.dialect_name() == "arith" or op.name == "ttg.convert_layout") and len(op.results) == 1 \
                and not op.regions:
            more = _elementwise_users(op.results[0], seen)
            if more is None:
                return None
            out += more
        else:
            return None
    return out


def rows_past_bound_unseen(root: tt.MakeTensorPtrOp, dim: int, loop: scf.ForOp, tile: SSAValue) -> bool:
    """Whether what the tile `tile` (the loaded tile of `root`, in `loop`) holds past
    `root.shape[dim]` along `dim` never reaches memory (see the module docstring).

        >>> rows_past_bound_unseen(x_root, 1, k_loop, x_tile)  # bench/moe.py: y stored under t < end
        True
    """
    dots = [u.operation for u in tile.uses]
    if len(dots) != 1 or not isinstance(dots[0], tt.DotOp):
        return False
    dot = dots[0]
    if not ((dim == 0 and dot.a is tile and dot.b is not tile) or (dim == 1 and dot.b is tile and dot.a is not tile)):
        return False
    yields = loop.body.block.last_op
    assert isinstance(yields, scf.YieldOp)
    uses = list(dot.results[0].uses)
    if len(uses) != 1 or uses[0].operation is not yields:
        return False
    i = uses[0].index
    carried = loop.body.block.args[i + 1]
    if [u.operation for u in carried.uses] != [dot] or dot.c is not carried:
        return False
    stores = _elementwise_users(loop.results[i], set())
    if not stores:
        return False
    extent = root.tile_type.get_shape()[dim]
    for store, index in stores:
        assert isinstance(store, tt.StoreOp)
        ptr = store.ptr.owner
        checked = list(store.boundaryCheck.get_values()) if store.boundaryCheck is not None else []
        if index != 1 or not isinstance(ptr, tt.MakeTensorPtrOp) or dim not in checked:
            return False
        if ptr.tile_type.get_shape()[dim] != extent or not same_value(ptr.shape[dim], root.shape[dim]) \
                or not same_value(ptr.offsets[dim], root.offsets[dim]):
            return False
    return True


def loop_extents(root: tt.MakeTensorPtrOp, loop: scf.ForOp, func: tt.FuncOp, advance: tt.AdvanceOp,
                 tile: SSAValue) -> dict[str, Any] | None:
    """{"dims": [cols, rows], "guards": [[lo, hi], ...]} (host expressions, innermost first;
    each guard `lo <= hi` checked at launch) for `root`, a 2-D block pointer that `loop`
    advances by `advance` and loads as `tile`; None when the module docstring's rules do not
    give both dims (or when the shape's own extents already serve).

        >>> loop_extents(values_root, k_loop, func, advance, tile)  # bench/moe.py's weight values
        {'dims': [cols, ['rows', 0, stride_wn / 2, cols]], 'guards': [[0, start], [cols, stride_wn / 2]]}

    (cols = 0 + max(cdiv(K, 64), 1) * 32, written out as expressions.)"""
    if len(root.shape) != 2:
        return None
    order = tuple(root.order.get_values())
    if order not in ((1, 0), (0, 1)):
        return None
    fast, slow = order
    if host_expr(root.strides[fast], func) != ["const", 1]:
        return None
    stride = host_expr(root.strides[slow], func)
    shape = [host_expr(s, func) for s in root.shape]
    if stride is None or (_known(shape[0]) and _known(shape[1])):
        return None
    steps = [_const(v) for v in advance.offsets]
    if steps[slow] != 0 or steps[fast] is None:
        return None
    width = root.tile_type.get_shape()[fast]
    guards: list[list[Any]] = []
    if _known(shape[fast]):
        cols = shape[fast]
    elif _unbounded(root.shape[fast]):
        start = host_expr(root.offsets[fast], func)
        lb, ub, step = (host_expr(v, func) for v in (loop.lb, loop.ub, loop.step))
        if start is None or lb is None or ub is None or step is None or step[0] != "const" or step[1] <= 0:
            return None
        if steps[fast] == 0:
            cols = ["add", start, ["const", width]]
        elif steps[fast] == width:
            trips = ["divs", ["add", ["sub", ub, lb], ["const", step[1] - 1]], step]
            cols = ["add", start, ["mul", ["max", trips, ["const", 1]], ["const", width]]]
        else:
            return None
        guards.append([["const", 0], start])
    else:
        return None
    guards.append([cols, stride])
    if _known(shape[slow]):
        rows = shape[slow]
    elif _unbounded(root.shape[slow]) or rows_past_bound_unseen(root, slow, loop, tile):
        if not isinstance(root.base, SSAValue) or host_expr(root.base, func) is None:
            return None
        rows = ["rows", host_expr(root.base, func)[1], stride, cols]
    else:
        return None
    return {"dims": [cols, rows], "guards": guards}


__all__ = ["EXTENTS_ATTR", "extents_of", "loop_extents", "record_extents", "rows_past_bound_unseen"]
