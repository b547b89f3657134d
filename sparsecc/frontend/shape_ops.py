"""The IR of Triton's shape ops: `tl.reshape`/`view`/`ravel`, `tl.trans`/`permute` (and `x.T`),
`tl.join`/`split`/`interleave`, `tl.cat`, `tl.broadcast`/`broadcast_to`, `tl.expand_dims`.

Semantics follow `triton.language` (3.x): shapes may be given as a tuple or as separate ints
(`x.reshape(4, 8)`); `trans()` without dims swaps the last two dims; `join` broadcasts its
operands and adds a minor dim of 2 (two scalars give a (2,) tensor), `split` undoes it (a (2,)
tensor gives two scalars); `interleave(a, b)` is `join(a, b)` reshaped to (..., 2 * N);
`cat(a, b, dim=d)` puts `b` after `a` along `d`. Every shape stays a power of two per dim.
The tensor methods of `TENSOR_METHODS` call the builtin of the same name with the tensor first.
"""

from __future__ import annotations

import math
from typing import Any

from xdsl.dialects.builtin import TensorType

from sparsecc.dialects import tt
from sparsecc.frontend import semantic as sem
from sparsecc.frontend.builtins import _int, _shape, impl
from sparsecc.frontend.errors import SemanticError
from sparsecc.frontend.semantic import Emitter
from sparsecc.frontend.types import describe

TENSOR_METHODS = frozenset({"reshape", "view", "ravel", "trans", "permute", "split", "expand_dims",
                            "broadcast_to"})
"""Builtins a tensor also has as methods (`x.reshape(4, 8)` is `tl.reshape(x, 4, 8)`); `x.T` is
`tl.trans(x)`."""


def _unwrap_dims(dims: Any) -> tuple[Any, ...]:
    """`f(x, (2, 0, 1))` and `f(x, 2, 0, 1)` alike: the varargs, or the one tuple in them."""
    dims = tuple(dims)
    if len(dims) == 1 and isinstance(dims[0], tuple | list):
        return tuple(dims[0])
    return dims


def _tensor(x: Any, what: str) -> sem.SSAValue:
    v = sem.require_value(x, what)
    sem.require_dense(v, what)
    return v


def _ranked(x: Any, what: str, sparse_ok: bool = False) -> sem.SSAValue:
    v = sem.require_value(x, what)
    if not sparse_ok:
        sem.require_dense(v, what)
    if not sem.is_tensor(v):
        raise SemanticError(f"{what} must be a tensor, got the scalar {describe(v.type)}")
    return v


def _scalar_of(em: Emitter, v: sem.SSAValue) -> sem.SSAValue:
    """The element of a one-element tensor (Triton's unsplat): a max over every axis."""
    while sem.is_tensor(v):
        v = em.value(tt.ReduceOp(v, "max", 0))
    return v


# --------------------------------------------------------------------------------------
# reshape, view, ravel
# --------------------------------------------------------------------------------------


def _reshape(em: Emitter, v: sem.SSAValue, dims: tuple[Any, ...], can_reorder: bool, name: str) -> Any:
    if not dims:  # reshape(x, ()) of a one-element tensor: its scalar
        if math.prod(sem.shape(v)) != 1:
            raise SemanticError(f"{name}: only a one-element tensor can become a scalar (shape ()), got "
                                f"{describe(v.type)}")
        return _scalar_of(em, v)
    new = _shape(dims, f"{name}'s shape")
    old = sem.shape(v)
    if math.prod(new) != math.prod(old):
        raise SemanticError(f"{name}: {list(old)} has {math.prod(old)} elements, {list(new)} has {math.prod(new)}")
    if not sem.is_tensor(v):
        return sem.splat(em, v, new)
    if tuple(new) == tuple(old):
        return v
    return em.value(tt.ReshapeOp(v, TensorType(sem.elem(v), list(new)), allow_reorder=can_reorder))


@impl
def reshape(em: Emitter, input: Any, shape: Any = (), can_reorder: Any = False) -> Any:
    v = _tensor(input, "tl.reshape's input")
    return _reshape(em, v, _unwrap_dims(shape), bool(can_reorder), "tl.reshape")


@impl
def view(em: Emitter, input: Any, shape: Any = ()) -> Any:
    v = _tensor(input, "tl.view's input")
    return _reshape(em, v, _unwrap_dims(shape), True, "tl.view")


@impl
def ravel(em: Emitter, x: Any, can_reorder: Any = False) -> Any:
    v = _tensor(x, "tl.ravel's input")
    return _reshape(em, v, (math.prod(sem.shape(v)),), bool(can_reorder), "tl.ravel")


# --------------------------------------------------------------------------------------
# trans, permute
# --------------------------------------------------------------------------------------


def permute_value(em: Emitter, v: sem.SSAValue, dims: tuple[Any, ...], name: str) -> sem.SSAValue:
    """`v` with result dim i = source dim dims[i] (a plain 2-D transpose carries no `order`)."""
    rank = len(sem.shape(v))
    perm = tuple(_int(d, f"{name}'s dims") for d in dims)
    if len(perm) != rank:
        raise SemanticError(f"{name}: dims {list(perm)} must have one entry per dim of {describe(v.type)}")
    if sorted(perm) != list(range(rank)):
        raise SemanticError(f"{name}: dims must be a permutation of 0..{rank - 1}, got {list(perm)}")
    if perm == tuple(range(rank)):
        return v
    if perm != (1, 0):  # a 2:4 tile may only be transposed as a whole (sparse-operand-to-lhs folds it)
        sem.require_dense(v, name)
    return em.value(tt.TransOp(v, None if perm == (1, 0) else perm))


@impl
def trans(em: Emitter, input: Any, dims: Any = ()) -> Any:
    v = _ranked(input, "tl.trans's input", sparse_ok=True)
    d = _unwrap_dims(dims)
    if not d:
        rank = len(sem.shape(v))
        if rank < 2:
            raise SemanticError(f"tl.trans without dims swaps the last two dims; {describe(v.type)} has "
                                "fewer than two")
        d = (*range(rank - 2), rank - 1, rank - 2)
    return permute_value(em, v, d, "tl.trans")


@impl
def permute(em: Emitter, input: Any, dims: Any = ()) -> Any:
    v = _ranked(input, "tl.permute's input", sparse_ok=True)
    return permute_value(em, v, _unwrap_dims(dims), "tl.permute")


# --------------------------------------------------------------------------------------
# join, split, interleave, cat
# --------------------------------------------------------------------------------------


def _same_dtype(em: Emitter, a: Any, b: Any, name: str) -> tuple[sem.SSAValue, sem.SSAValue]:
    """Two values of one element type (a Python number takes the other operand's)."""
    if not isinstance(a, sem.SSAValue) and not isinstance(b, sem.SSAValue):
        raise SemanticError(f"{name} needs at least one tensor or runtime scalar, got {sem.py_desc(a)} and "
                            f"{sem.py_desc(b)}")
    if not isinstance(a, sem.SSAValue):
        a = sem.to_value(em, a, sem.elem(b))
    if not isinstance(b, sem.SSAValue):
        b = sem.to_value(em, b, sem.elem(a))
    sem.require_dense(a, name)
    sem.require_dense(b, name)
    if sem.elem(a) != sem.elem(b):
        raise SemanticError(f"{name} needs operands of one dtype, got {describe(sem.elem(a))} and "
                            f"{describe(sem.elem(b))} (cast one with .to())")
    return a, b


def join_values(em: Emitter, a: sem.SSAValue, b: sem.SSAValue) -> sem.SSAValue:
    """tt.join of two same-typed values after broadcasting; two scalars give a (2,) tensor."""
    a, b = sem.broadcast_all(em, a, b)
    if not sem.is_tensor(a):
        a, b = sem.splat(em, a, [1]), sem.splat(em, b, [1])
        joined = em.value(tt.JoinOp(a, b))
        return em.value(tt.ReshapeOp(joined, TensorType(sem.elem(a), [2])))
    sem.require_dense(a, "tl.join")
    return em.value(tt.JoinOp(a, b))


@impl
def join(em: Emitter, a: Any, b: Any) -> Any:
    a, b = _same_dtype(em, a, b, "tl.join")
    return join_values(em, a, b)


@impl
def split(em: Emitter, a: Any) -> Any:
    v = _ranked(a, "tl.split's input")
    shape = sem.shape(v)
    if shape[-1] != 2:
        raise SemanticError(f"tl.split splits a last dim of size 2, got {describe(v.type)}")
    if len(shape) == 1:  # (2,) -> two scalars
        op = tt.SplitOp(sem.expand_dims(em, v, 0))
        em.value(op)
        return _scalar_of(em, op.outLHS), _scalar_of(em, op.outRHS)
    op = tt.SplitOp(v)
    em.value(op)
    return op.outLHS, op.outRHS


@impl
def interleave(em: Emitter, a: Any, b: Any) -> Any:
    a, b = _same_dtype(em, a, b, "tl.interleave")
    c = join_values(em, a, b)
    shape = sem.shape(c)
    if len(shape) == 1:
        return c
    new = [*shape[:-2], 2 * shape[-2]]
    return em.value(tt.ReshapeOp(c, TensorType(sem.elem(c), new)))


@impl
def cat(em: Emitter, input: Any, other: Any, can_reorder: Any = False, dim: Any = 0) -> Any:
    a = _ranked(input, "tl.cat's input")
    b = _ranked(other, "tl.cat's other")
    rank = len(sem.shape(a))
    if can_reorder and rank != 1:
        raise SemanticError(f"tl.cat(can_reorder=True) concatenates 1-D tensors, got {describe(a.type)} "
                            "(use can_reorder=False and dim=)")
    if len(sem.shape(b)) != rank:
        raise SemanticError(f"tl.cat: tensors must have the same rank, got {describe(a.type)} and "
                            f"{describe(b.type)}")
    d = _int(dim, "tl.cat's dim")
    if not -rank <= d < rank:
        raise SemanticError(f"tl.cat: dim {d} out of range for a rank-{rank} tensor")
    d %= rank
    if sem.shape(a) != sem.shape(b):
        raise SemanticError(f"tl.cat needs tensors of the same shape, got {describe(a.type)} and "
                            f"{describe(b.type)}")
    a, b = _same_dtype(em, a, b, "tl.cat")
    _shape([*sem.shape(a)[:d], 2 * sem.shape(a)[d], *sem.shape(a)[d + 1:]], "tl.cat's result shape")
    return em.value(tt.CatOp(a, b, d))


# --------------------------------------------------------------------------------------
# broadcast, broadcast_to, expand_dims
# --------------------------------------------------------------------------------------


@impl
def broadcast(em: Emitter, input: Any, other: Any) -> Any:
    a = _tensor(input, "tl.broadcast's input")
    b = _tensor(other, "tl.broadcast's other")
    out = sem.broadcast_all(em, a, b)
    return out[0], out[1]


@impl
def broadcast_to(em: Emitter, input: Any, shape: Any = ()) -> Any:
    v = _tensor(input, "tl.broadcast_to's input")
    new = _shape(_unwrap_dims(shape), "tl.broadcast_to's shape")
    old = sem.shape(v)
    if sem.is_tensor(v) and len(old) != len(new):
        raise SemanticError(f"tl.broadcast_to keeps the rank: cannot broadcast {list(old)} to {list(new)}")
    return sem.broadcast_to(em, v, new)


@impl
def expand_dims(em: Emitter, input: Any, axis: Any) -> Any:
    v = _tensor(input, "tl.expand_dims's input")
    axes = list(axis) if isinstance(axis, tuple | list) else [axis]
    rank = len(sem.shape(v)) + len(axes)
    norm = []
    for a in axes:
        a = _int(a, "tl.expand_dims's axis")
        if not -rank <= a < rank:
            raise SemanticError(f"tl.expand_dims: axis {a} out of range for the rank-{rank} result")
        norm.append(a % rank)
    if len(set(norm)) != len(norm):
        raise SemanticError(f"tl.expand_dims: duplicate axes {norm}")
    if not sem.is_tensor(v):
        return sem.splat(em, v, [1] * rank)
    for a in sorted(norm):
        v = sem.expand_dims(em, v, a)
    return v


__all__ = ["TENSOR_METHODS", "join_values", "permute_value"]
