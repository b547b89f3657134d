"""The IR of the reduction builtins (`tl.sum`, `max`, `min`, `argmax`, `argmin`, `xor_sum`,
`reduce`), with Triton's semantics (python/triton/language/standard.py):

- `sum` converts to `dtype` first when given, else ints narrower than 32 bits to int32;
- `max`/`min` reduce types narrower than 32 bits in float32/int32 and ignore NaN (the
  `tt.reduce max` kind); with `return_indices` they are a two-operand `tt.reduce combine`
  over (value, index) whose region keeps the larger value, or on a tie the smaller index
  (`return_indices_tie_break_left`, else whichever the reduction order gives);
- `reduce` inlines the user's @jit combine function into the `tt.reduce` region, called
  with the two partial results' scalars (`a..., b...`);
- `axis=None` reduces every axis (one after the other), `keep_dims` keeps them as size 1.

`reduce` needs the code generator to inline the combine function: it receives `_inline`
(`CodeGenerator.inline`), as every builtin named in `CALLS_JIT` does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from xdsl.dialects import arith
from xdsl.dialects.builtin import Float32Type, IntegerType, f32, i1, i32
from xdsl.ir import Block, Region, SSAValue

from sparsecc.dialects import tt
from sparsecc.dialects.tt import PointerType
from sparsecc.frontend import semantic as sem
from sparsecc.frontend.builtins import _dtype, _int, impl
from sparsecc.frontend.errors import SemanticError
from sparsecc.frontend.semantic import Emitter
from sparsecc.frontend.types import bitwidth, describe, ir_type, is_float

CALLS_JIT = frozenset({"reduce"})
"""Builtins that call a @jit function (they get the code generator's `_inline`)."""

Combine = Callable[[list[SSAValue], list[SSAValue]], list[SSAValue]]
"""Emits the combination of two partial results (one scalar per operand each)."""


def _input(x: Any, what: str) -> SSAValue:
    v = sem.require_value(x, f"{what}'s input")
    sem.require_dense(v, what)
    if isinstance(sem.elem(v), PointerType):
        raise SemanticError(f"{what} cannot reduce pointers")
    return v


def _axis(axis: Any, rank: int, what: str) -> int:
    ax = _int(axis, f"{what}'s axis")
    if ax < 0:
        ax += rank
    if not 0 <= ax < rank:
        raise SemanticError(f"{what}: axis {axis} out of range for a rank-{rank} tensor")
    return ax


def _keep(em: Emitter, r: SSAValue, ax: int) -> SSAValue:
    """The result of a reduction over `ax` with that axis kept as size 1."""
    return sem.expand_dims(em, r, ax) if sem.is_tensor(r) else sem.splat(em, r, [1])


def _reduce_kind(em: Emitter, kind: str, v: SSAValue, axis: Any, keep_dims: Any, what: str) -> SSAValue:
    """`tt.reduce kind` of one tensor along `axis` (every axis if None)."""
    rank = len(sem.shape(v))
    if axis is None:
        for _ in range(rank):
            v = em.value(tt.ReduceOp(v, kind, 0))
        return sem.splat(em, v, [1] * rank) if keep_dims else v
    ax = _axis(axis, rank, what)
    r = em.value(tt.ReduceOp(v, kind, ax))
    return _keep(em, r, ax) if keep_dims else r


def _region(em: Emitter, elts: Sequence[Any], combine: Combine, what: str) -> Region:
    """The combine region: block args a..., b..., the ops `combine` emits, tt.reduce.return."""
    block = Block(arg_types=[*elts, *elts])
    n = len(elts)
    old = em.move_to(block)
    try:
        out = combine(list(block.args[:n]), list(block.args[n:]))
        if len(out) != n:
            raise SemanticError(f"{what}: the combine function returns {len(out)} values for {n} operands")
        vals = []
        for k, (o, elt) in enumerate(zip(out, elts)):
            o = sem.to_value(em, o, elt, what=f"{what}'s combine result")
            if sem.is_tensor(o):
                raise SemanticError(f"{what}: the combine function must return scalars, result {k} is "
                                    f"{describe(o.type)}")
            if o.type != elt:
                raise SemanticError(f"{what}: the combine function's result {k} is {describe(o.type)}, "
                                    f"the operand's element type is {describe(elt)}")
            vals.append(o)
        em.insert(tt.ReduceReturnOp(vals))
    finally:
        em.move_to(old)
    return Region([block])


def reduce_combine(em: Emitter, vals: list[SSAValue], axis: Any, combine: Combine, keep_dims: Any,
                   what: str) -> list[SSAValue]:
    """`tt.reduce combine` of same-shape tensors along `axis` (every axis if None)."""
    shape = sem.shape(vals[0])
    for v in vals[1:]:
        if sem.shape(v) != shape:
            raise SemanticError(f"{what}: the tensors must have one shape, got {list(shape)} and "
                                f"{list(sem.shape(v))}")
    rank = len(shape)
    elts = [sem.elem(v) for v in vals]
    axes = [0] * rank if axis is None else [_axis(axis, rank, what)]
    for ax in axes:
        op = tt.ReduceOp(vals, "combine", ax, _region(em, elts, combine, what))
        em.insert(op)
        vals = list(op.results)
    if keep_dims:
        if axis is None:
            return [sem.splat(em, v, [1] * rank) for v in vals]
        return [_keep(em, v, axes[0]) for v in vals]
    return vals


# --------------------------------------------------------------------------------------
# The builtins


@impl
def sum_(em: Emitter, input: Any, axis: Any, keep_dims: Any, dtype: Any = None) -> Any:
    v = _input(input, "tl.sum")
    if dtype is not None:
        v = sem.cast(em, v, ir_type(_dtype(dtype)))
    elif isinstance(sem.elem(v), IntegerType) and sem.elem(v).width.data < 32:
        v = sem.cast(em, v, i32)  # narrow ints accumulate in int32, as in Triton
    if not sem.is_tensor(v):
        return v
    return _reduce_kind(em, "sum", v, axis, keep_dims, "tl.sum")


def _widen(em: Emitter, v: SSAValue) -> SSAValue:
    """Types narrower than 32 bits reduce in float32 / int32 (Triton's max and min)."""
    e = sem.elem(v)
    if is_float(e) and not isinstance(e, Float32Type):
        return sem.cast(em, v, f32) if bitwidth(e) < 32 else v
    if isinstance(e, IntegerType) and e.width.data < 32:
        return sem.cast(em, v, i32)
    return v


def _arg_combine(em: Emitter, kind: str, tie_break_left: bool) -> Combine:
    """Triton's _argmax_combine / _argmin_combine: the better value wins; on equal values the
    smaller index when `tie_break_left`, else the second operand."""

    def combine(a: list[SSAValue], b: list[SSAValue]) -> list[SSAValue]:
        (va, ia), (vb, ib) = a, b
        if is_float(va.type):
            better = em.value(arith.CmpfOp(va, vb, "ogt" if kind == "max" else "olt"))
            equal = em.value(arith.CmpfOp(va, vb, "oeq"))
        else:
            better = em.value(arith.CmpiOp(va, vb, "sgt" if kind == "max" else "slt"))
            equal = em.value(arith.CmpiOp(va, vb, "eq"))
        if tie_break_left:
            tie = em.value(arith.AndIOp(equal, em.value(arith.CmpiOp(ia, ib, "slt"))))
            better = em.value(arith.OrIOp(better, tie))
        return [em.value(arith.SelectOp(better, va, vb)), em.value(arith.SelectOp(better, ia, ib))]

    return combine


def _with_indices(em: Emitter, kind: str, v: SSAValue, axis: Any, tie_break_left: Any, keep_dims: Any,
                  what: str) -> tuple[SSAValue, SSAValue]:
    if axis is None:
        raise SemanticError(f"{what} with indices needs an axis (as in Triton)")
    shape = sem.shape(v)
    ax = _axis(axis, len(shape), what)
    index = em.value(tt.MakeRangeOp(0, shape[ax]))
    for d in range(len(shape)):
        if d != ax:
            index = sem.expand_dims(em, index, d)
    index = sem.broadcast_to(em, index, shape)
    vals = reduce_combine(em, [v, index], ax, _arg_combine(em, kind, bool(tie_break_left)), keep_dims, what)
    return vals[0], vals[1]


def _max_min(em: Emitter, kind: str, input: Any, axis: Any, return_indices: Any, tie_break_left: Any,
             keep_dims: Any) -> Any:
    what = f"tl.{kind}"
    v = _input(input, what)
    if not sem.is_tensor(v):
        if return_indices:
            raise SemanticError(f"{what} with indices needs a tensor, got {describe(v.type)}")
        return v
    if return_indices:
        return _with_indices(em, kind, v, axis, tie_break_left, keep_dims, what)
    if sem.elem(v) == i1:
        v = sem.cast(em, v, i32)
    return _reduce_kind(em, kind, _widen(em, v), axis, keep_dims, what)


@impl
def max_(em: Emitter, input: Any, axis: Any, return_indices: Any = False, return_indices_tie_break_left: Any = True,
         keep_dims: Any = False) -> Any:
    return _max_min(em, "max", input, axis, return_indices, return_indices_tie_break_left, keep_dims)


@impl
def min_(em: Emitter, input: Any, axis: Any, return_indices: Any = False, return_indices_tie_break_left: Any = True,
         keep_dims: Any = False) -> Any:
    return _max_min(em, "min", input, axis, return_indices, return_indices_tie_break_left, keep_dims)


@impl
def argmax(em: Emitter, input: Any, axis: Any, tie_break_left: Any = True, keep_dims: Any = False) -> Any:
    v = _input(input, "tl.argmax")
    if not sem.is_tensor(v):
        raise SemanticError(f"tl.argmax needs a tensor, got {describe(v.type)}")
    return _with_indices(em, "max", v, axis, tie_break_left, keep_dims, "tl.argmax")[1]


@impl
def argmin(em: Emitter, input: Any, axis: Any, tie_break_left: Any = True, keep_dims: Any = False) -> Any:
    v = _input(input, "tl.argmin")
    if not sem.is_tensor(v):
        raise SemanticError(f"tl.argmin needs a tensor, got {describe(v.type)}")
    return _with_indices(em, "min", v, axis, tie_break_left, keep_dims, "tl.argmin")[1]


@impl
def xor_sum(em: Emitter, input: Any, axis: Any = None, keep_dims: Any = False) -> Any:
    v = _input(input, "tl.xor_sum")
    if not isinstance(sem.elem(v), IntegerType):
        raise SemanticError(f"tl.xor_sum reduces integers, got {describe(v.type)}")
    if not sem.is_tensor(v):
        return v

    def combine(a: list[SSAValue], b: list[SSAValue]) -> list[SSAValue]:
        return [em.value(arith.XOrIOp(a[0], b[0]))]

    return reduce_combine(em, [v], axis, combine, keep_dims, "tl.xor_sum")[0]


@impl
def reduce(em: Emitter, input: Any, axis: Any, combine_fn: Any, keep_dims: Any = False, *,
           _inline: Callable[[Any, list[Any], dict[str, Any]], Any]) -> Any:
    single = not isinstance(input, tuple | list)
    vals = [_input(x, "tl.reduce") for x in ([input] if single else input)]
    if not vals:
        raise SemanticError("tl.reduce needs at least one tensor")
    if getattr(combine_fn, "__sparsecc_jit__", False) is not True:
        raise SemanticError(f"tl.reduce's combine_fn must be a @sparsecc.jit function, got {sem.py_desc(combine_fn)}")
    scalars = [v for v in vals if not sem.is_tensor(v)]
    if scalars:
        raise SemanticError(f"tl.reduce needs tensors, got {describe(scalars[0].type)}")

    def combine(a: list[SSAValue], b: list[SSAValue]) -> list[SSAValue]:
        out = _inline(combine_fn, [*a, *b], {})
        return list(out) if isinstance(out, tuple | list) else [out]

    out = reduce_combine(em, vals, axis, combine, keep_dims, "tl.reduce")
    return out[0] if single else tuple(out)


__all__ = ["CALLS_JIT", "reduce_combine"]
