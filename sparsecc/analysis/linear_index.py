"""Affine forms of tensor index expressions (`pid * BLOCK + tl.arange(0, BLOCK)` and the like):
the analysis raise-pointer-tensors uses to turn pointer tensors into block pointers, and that
`analysis/row_wraps.py` uses to find wrapped rows."""

from __future__ import annotations

from xdsl.dialects import arith
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, IntegerAttr, TensorType
from xdsl.ir import SSAValue

from sparsecc.dialects import tt

J = "j"
"""The key of the tile index (the `tl.arange` of the axis) in a linear form."""
ONE = "1"
"""The key of the constant term."""

Linear = dict[object, int]
"""sum(coef * atom) + const: keys are scalar SSA values, J and ONE."""


def add_linear(a: Linear, b: Linear, sign: int = 1) -> Linear:
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, 0) + sign * v
        if out[k] == 0:
            del out[k]
    return out


def scale_linear(a: Linear, c: int) -> Linear:
    return {k: v * c for k, v in a.items() if v * c}


def const_of(a: Linear) -> int | None:
    return a.get(ONE, 0) if set(a) <= {ONE} else None


def strip_casts(v: SSAValue) -> SSAValue:
    while isinstance(v.owner, tt.BroadcastOp | tt.ExpandDimsOp):
        v = v.owner.src
    return v


def linear(v: SSAValue, depth: int = 0, *, widen: bool = False) -> Linear | None:
    """`v` as a linear form, or None. Scalars that are not sums/products of constants are atoms;
    a tensor must be built from splats, constants and one `tl.arange`.

    `widen=True` also looks through sign extensions (`arith.extsi`, which keeps the value), so
    that an i64 row term (`pid_n * BLOCK_N + tl.arange(...)` with an i64 program id, compared
    with `extsi(splat(N))`) has the same form as its i32 parts; the row checks of sparse
    operands use it, raise-pointer-tensors does not."""
    if depth > 40:
        return None
    owner = v.owner
    is_tensor = isinstance(v.type, TensorType)
    if isinstance(owner, tt.BroadcastOp | tt.ExpandDimsOp):
        return linear(owner.src, depth + 1, widen=widen)
    if isinstance(owner, tt.SplatOp):
        return linear(owner.src, depth + 1, widen=widen)
    if widen and isinstance(owner, arith.ExtSIOp):
        return linear(owner.input, depth + 1, widen=True)
    if isinstance(owner, tt.MakeRangeOp):
        start = owner.start.value.data
        return {J: 1, ONE: start} if start else {J: 1}
    if isinstance(owner, arith.ConstantOp):
        value = owner.value
        if isinstance(value, IntegerAttr):
            return {ONE: value.value.data} if value.value.data else {}
        if isinstance(value, DenseIntOrFPElementsAttr):
            vals = value.get_values()
            if vals and all(x == vals[0] for x in vals) and isinstance(vals[0], int):
                return {ONE: vals[0]} if vals[0] else {}
        return None
    if isinstance(owner, arith.AddiOp | arith.SubiOp):
        a, b = linear(owner.lhs, depth + 1, widen=widen), linear(owner.rhs, depth + 1, widen=widen)
        if a is None or b is None:
            return None
        return add_linear(a, b, 1 if isinstance(owner, arith.AddiOp) else -1)
    if isinstance(owner, arith.MuliOp):
        a, b = linear(owner.lhs, depth + 1, widen=widen), linear(owner.rhs, depth + 1, widen=widen)
        if a is None or b is None:
            return None
        ca, cb = const_of(a), const_of(b)
        if ca is not None:
            return scale_linear(b, ca)
        if cb is not None:
            return scale_linear(a, cb)
        return None if is_tensor else {v: 1}
    if is_tensor:
        return None
    return {v: 1}


def scalar_atom(v: SSAValue) -> SSAValue | None:
    """`v` when it is one loop-invariant scalar (a splat of `M`), else None."""
    lw = linear(v)
    if lw is None or J in lw or len(lw) != 1 or next(iter(lw.values())) != 1 or ONE in lw:
        return None
    return next(iter(lw))  # type: ignore[return-value]


def clamp_wrap(index: SSAValue) -> tuple[SSAValue, SSAValue] | None:
    """(M, idx) when `index` is `tl.where(idx < M, idx, 0)` (tutorial 09's
    `offs_am = tl.where(offs_am < M, offs_am, 0)`): like `idx % M` it keeps every address in
    bounds, reading row 0 instead of row `idx - M` past the end; else None."""
    owner = index.owner
    if not isinstance(owner, arith.SelectOp) or not is_zero(owner.rhs):
        return None
    cond = strip_casts(owner.cond)
    cmp = cond.owner
    if not isinstance(cmp, arith.CmpiOp) or cmp.predicate.value.data != 2:  # slt
        return None
    kept = linear(owner.lhs)
    if kept is None or kept != linear(cmp.lhs):
        return None
    bound = scalar_atom(cmp.rhs)
    return None if bound is None else (bound, owner.lhs)


def is_zero(v: SSAValue) -> bool:
    """A splat of 0 (int or float, maybe cast: `other=0.0` of an int8 load is fptosi(0.0)):
    what a block pointer's zero padding reads."""
    owner = v.owner
    if isinstance(owner, arith.FPToSIOp | arith.SIToFPOp | arith.ExtFOp | arith.TruncFOp):
        return is_zero(owner.operands[0])
    if isinstance(owner, tt.SplatOp):
        owner = owner.src.owner
    if not isinstance(owner, arith.ConstantOp):
        return False
    value = owner.value
    if isinstance(value, DenseIntOrFPElementsAttr):
        vals = value.get_values()
        return bool(vals) and all(x == 0 for x in vals)
    return getattr(getattr(value, "value", None), "data", None) == 0
