"""Op semantics of the CPU interpreter: one small function per op name, in `HANDLERS`.

A handler takes the running program (for program ids, nested blocks and a per-op cache), the
op and its operand values, and returns its result values. Values follow `interp_values`:
exact-dtype torch tensors (0-d for scalars) and pointer records.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IntegerAttr,
    TensorType,
)
from xdsl.ir import Operation

from sparsecc import formats
from sparsecc.runtime.codec import decode_meta_tile
from sparsecc.runtime.interp_memory import atomic_rmw, load, store
from sparsecc.runtime.interp_values import (
    BlockPtr,
    InterpreterError,
    ScalarPtr,
    TensorPtr,
    int_width,
    torch_dtype,
)
from sparsecc.runtime.quant_codec import dequantize_tile

Handler = Callable[[Any, Operation, list[Any]], Sequence[Any]]
HANDLERS: dict[str, Handler] = {}
TERMINATORS = frozenset({"scf.yield", "scf.condition", "tt.return", "tt.reduce.return"})


def _on(*names: str) -> Callable[[Handler], Handler]:
    def register(fn: Handler) -> Handler:
        for n in names:
            HANDLERS[n] = fn
        return fn

    return register


def _result_dtype(op: Operation, i: int = 0) -> torch.dtype:
    return torch_dtype(op.results[i].type)


def _shape(op: Operation, i: int = 0) -> tuple[int, ...]:
    ty = op.results[i].type
    return tuple(ty.get_shape()) if isinstance(ty, TensorType) else ()


def _wrap(v: int, width: int) -> int:
    if width == 1:
        return v & 1
    v &= (1 << width) - 1
    return v - (1 << width) if v >= 1 << (width - 1) else v


# --------------------------------------------------------------------------------------
# Constants
# --------------------------------------------------------------------------------------


@_on("arith.constant")
def _constant(prog: Any, op: Operation, _: list[Any]) -> Sequence[Any]:
    hit = prog.cache.get(op)
    if hit is None:
        hit = _make_constant(op)
        prog.cache[op] = hit
    return (hit,)


def _make_constant(op: Operation) -> torch.Tensor:
    attr = op.properties.get("value", op.attributes.get("value"))
    ty = op.results[0].type
    dtype = torch_dtype(ty)
    if isinstance(attr, IntegerAttr):
        v = attr.value.data
        if dtype == torch.bool:
            return torch.tensor(bool(v & 1))
        if dtype.is_floating_point:
            return torch.tensor(float(v), dtype=dtype)
        return torch.tensor(_wrap(v, int_width(ty)), dtype=dtype)
    if isinstance(attr, FloatAttr):
        return torch.tensor(float(attr.value.data), dtype=dtype)
    if isinstance(attr, DenseIntOrFPElementsAttr):
        shape = tuple(ty.get_shape())
        values = list(attr.get_values())
        if dtype == torch.bool:
            values = [bool(int(v) & 1) for v in values]
        elif not dtype.is_floating_point:
            values = [_wrap(int(v), int_width(ty)) for v in values]
        if len(values) == 1:
            return torch.full(shape, values[0], dtype=dtype)
        return torch.tensor(values, dtype=dtype).reshape(shape)
    raise InterpreterError(f"unsupported constant attribute {attr}")


# --------------------------------------------------------------------------------------
# Integer arithmetic (wraps at the type's width; unsigned ops reinterpret the bits)
# --------------------------------------------------------------------------------------


def _unsigned(x: torch.Tensor, width: int) -> Any:
    """The bits of `x` as non-negative numbers: int64 tensor (width < 64) or numpy uint64."""
    if width == 1:
        return x.to(torch.int64)
    if width < 64:
        return x.to(torch.int64) & ((1 << width) - 1)
    return np.asarray(x.numpy()).view(np.uint64)


def _from_unsigned(r: Any, dtype: torch.dtype) -> torch.Tensor:
    if isinstance(r, torch.Tensor):
        return r.to(dtype) if dtype != torch.bool else (r & 1).to(torch.bool)
    arr = np.asarray(r, dtype=np.uint64).view(np.int64)
    return torch.from_numpy(arr.copy()).to(dtype)


def _binary(fn: Callable[[Any, Any], Any]) -> Handler:
    def handler(prog: Any, op: Operation, v: list[Any]) -> Sequence[Any]:
        return (fn(v[0], v[1]).to(_result_dtype(op)),)

    return handler


def _bool_aware(int_fn: Callable[[Any, Any], Any], bool_fn: Callable[[Any, Any], Any]) -> Handler:
    def handler(prog: Any, op: Operation, v: list[Any]) -> Sequence[Any]:
        a, b = v
        return ((bool_fn(a, b) if a.dtype == torch.bool else int_fn(a, b)),)

    return handler


HANDLERS["arith.addi"] = _bool_aware(torch.add, torch.logical_xor)
HANDLERS["arith.subi"] = _bool_aware(torch.sub, torch.logical_xor)
HANDLERS["arith.muli"] = _bool_aware(torch.mul, torch.logical_and)
HANDLERS["arith.andi"] = _binary(torch.bitwise_and)
HANDLERS["arith.ori"] = _binary(torch.bitwise_or)
HANDLERS["arith.xori"] = _binary(torch.bitwise_xor)
HANDLERS["arith.maxsi"] = _binary(torch.maximum)
HANDLERS["arith.minsi"] = _binary(torch.minimum)
HANDLERS["arith.shli"] = _binary(torch.bitwise_left_shift)
HANDLERS["arith.shrsi"] = _binary(torch.bitwise_right_shift)


def _nonzero_divisor(b: torch.Tensor) -> None:
    if bool((b == 0).any()):
        raise InterpreterError("integer division by zero")


def _signed_div(kind: str) -> Handler:
    def handler(prog: Any, op: Operation, v: list[Any]) -> Sequence[Any]:
        a, b = v
        _nonzero_divisor(b)
        wide_a, wide_b = a.to(torch.int64), b.to(torch.int64)
        if kind == "div":
            r = torch.div(wide_a, wide_b, rounding_mode="trunc")
        elif kind == "rem":
            r = torch.fmod(wide_a, wide_b)
        elif kind == "floor":
            r = torch.div(wide_a, wide_b, rounding_mode="floor")
        else:
            r = -torch.div(-wide_a, wide_b, rounding_mode="floor")
        return (r.to(a.dtype),)

    return handler


HANDLERS["arith.divsi"] = _signed_div("div")
HANDLERS["arith.remsi"] = _signed_div("rem")
HANDLERS["arith.floordivsi"] = _signed_div("floor")
HANDLERS["arith.ceildivsi"] = _signed_div("ceil")


def _unsigned_op(fn: Callable[[Any, Any], Any], divides: bool = False) -> Handler:
    def handler(prog: Any, op: Operation, v: list[Any]) -> Sequence[Any]:
        a, b = v
        if divides:
            _nonzero_divisor(b)
        w = int_width(op.operands[0].type)
        return (_from_unsigned(fn(_unsigned(a, w), _unsigned(b, w)), a.dtype),)

    return handler


def _udiv(a: Any, b: Any) -> Any:
    return a // b


def _ceil_udiv(a: Any, b: Any) -> Any:
    return (a + b - 1) // b if isinstance(a, torch.Tensor) else -(-a // b)


def _umax(a: Any, b: Any) -> Any:
    return torch.maximum(a, b) if isinstance(a, torch.Tensor) else np.maximum(a, b)


def _umin(a: Any, b: Any) -> Any:
    return torch.minimum(a, b) if isinstance(a, torch.Tensor) else np.minimum(a, b)


def _ushr(a: Any, b: Any) -> Any:
    return a >> b


HANDLERS["arith.divui"] = _unsigned_op(_udiv, divides=True)
HANDLERS["arith.remui"] = _unsigned_op(lambda a, b: a % b, divides=True)
HANDLERS["arith.ceildivui"] = _unsigned_op(_ceil_udiv, divides=True)
HANDLERS["arith.maxui"] = _unsigned_op(_umax)
HANDLERS["arith.minui"] = _unsigned_op(_umin)
HANDLERS["arith.shrui"] = _unsigned_op(_ushr)


# --------------------------------------------------------------------------------------
# Float arithmetic (in the operands' dtype)
# --------------------------------------------------------------------------------------

HANDLERS["arith.addf"] = _binary(torch.add)
HANDLERS["arith.subf"] = _binary(torch.sub)
HANDLERS["arith.mulf"] = _binary(torch.mul)
HANDLERS["arith.divf"] = _binary(torch.div)


def _zeros_ordered(fn: Callable[[Any, Any], Any], larger: bool) -> Callable[[Any, Any], Any]:
    """`fn` (a torch max/min) with -0.0 < +0.0, as PTX `max`/`min.f32` (what the GPU runs for
    these ops): torch returns its first operand when the two compare equal, so
    `torch.fmax(-0.0, 0.0)` is -0.0 where the GPU gives +0.0."""

    def ordered(a: Any, b: Any) -> Any:
        r = fn(a, b)
        a, b = torch.as_tensor(a), torch.as_tensor(b)
        if not r.is_floating_point():
            return r
        both = (a == 0) & (b == 0)
        # the max of two zeros is -0 only if both are; the min is +0 only if both are
        pick = torch.where(torch.signbit(a), b, a) if larger else torch.where(torch.signbit(a), a, b)
        return torch.where(both, pick.to(r.dtype), r)

    return ordered


HANDLERS["arith.maximumf"] = _binary(_zeros_ordered(torch.maximum, True))
HANDLERS["arith.minimumf"] = _binary(_zeros_ordered(torch.minimum, False))
HANDLERS["arith.maxnumf"] = _binary(_zeros_ordered(torch.fmax, True))
HANDLERS["arith.minnumf"] = _binary(_zeros_ordered(torch.fmin, False))


def _unary(fn: Callable[[torch.Tensor], torch.Tensor]) -> Handler:
    def handler(prog: Any, op: Operation, v: list[Any]) -> Sequence[Any]:
        return (fn(v[0]).to(_result_dtype(op)),)

    return handler


HANDLERS["arith.negf"] = _unary(torch.neg)
for _name, _fn in {
    "exp": torch.exp, "exp2": torch.exp2, "log": torch.log, "log2": torch.log2, "sqrt": torch.sqrt,
    "rsqrt": torch.rsqrt, "absf": torch.abs, "absi": torch.abs, "sin": torch.sin, "cos": torch.cos,
    "tanh": torch.tanh, "erf": torch.erf, "floor": torch.floor, "ceil": torch.ceil,
}.items():
    HANDLERS[f"math.{_name}"] = _unary(_fn)


HANDLERS["arith.remf"] = _binary(torch.fmod)  # C's fmod: the dividend's sign, as Triton's frem


@_on("arith.mului_extended")
def _mului_extended(prog: Any, op: Operation, v: list[Any]) -> Sequence[Any]:
    """The low and high halves of the unsigned product of two 32- or 64-bit integers."""
    a, b = v
    w = int_width(op.operands[0].type)
    a, b = torch.broadcast_tensors(a, b)
    bits = (1 << w) - 1
    prods = [(x & bits) * (y & bits) for x, y in zip(a.reshape(-1).tolist(), b.reshape(-1).tolist())]
    lo = torch.tensor([_wrap(p, w) for p in prods], dtype=a.dtype).reshape(a.shape)
    hi = torch.tensor([_wrap(p >> w, w) for p in prods], dtype=a.dtype).reshape(a.shape)
    return (lo, hi)


@_on("math.fma")
def _fma(prog: Any, op: Operation, v: list[Any]) -> Sequence[Any]:
    a, b, c = v
    return ((a * b + c).to(_result_dtype(op)),)


# --------------------------------------------------------------------------------------
# Comparisons and select
# --------------------------------------------------------------------------------------

_SIGNED_CMP: dict[int, Callable[[Any, Any], Any]] = {
    0: torch.eq, 1: torch.ne, 2: torch.lt, 3: torch.le, 4: torch.gt, 5: torch.ge,
}
_UNSIGNED_CMP: dict[int, Callable[[Any, Any], Any]] = {
    6: lambda a, b: a < b, 7: lambda a, b: a <= b, 8: lambda a, b: a > b, 9: lambda a, b: a >= b,
}


@_on("arith.cmpi")
def _cmpi(prog: Any, op: Operation, v: list[Any]) -> Sequence[Any]:
    a, b = v
    pred = op.predicate.value.data  # type: ignore[attr-defined]
    if pred in _SIGNED_CMP:
        return (_SIGNED_CMP[pred](a, b),)
    w = int_width(op.operands[0].type)
    r = _UNSIGNED_CMP[pred](_unsigned(a, w), _unsigned(b, w))
    return (r if isinstance(r, torch.Tensor) else torch.from_numpy(np.asarray(r).copy()),)


_FLOAT_CMP: dict[str, Callable[[Any, Any], Any]] = {
    "eq": torch.eq, "gt": torch.gt, "ge": torch.ge, "lt": torch.lt, "le": torch.le, "ne": torch.ne,
}
_CMPF_PREDICATES = ["false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord",
                    "ueq", "ugt", "uge", "ult", "ule", "une", "uno", "true"]


@_on("arith.cmpf")
def _cmpf(prog: Any, op: Operation, v: list[Any]) -> Sequence[Any]:
    a, b = v
    name = _CMPF_PREDICATES[op.predicate.value.data]  # type: ignore[attr-defined]
    shape = torch.broadcast_shapes(a.shape, b.shape)
    ordered = ~(torch.isnan(a) | torch.isnan(b))
    if name == "false":
        return (torch.zeros(shape, dtype=torch.bool),)
    if name == "true":
        return (torch.ones(shape, dtype=torch.bool),)
    if name == "ord":
        return (ordered,)
    if name == "uno":
        return (~ordered,)
    cmp = _FLOAT_CMP[name[1:]](a, b)
    if name[0] == "o":
        return (cmp & ordered,)
    return (cmp | ~ordered,)


@_on("arith.select")
def _select(prog: Any, op: Operation, v: list[Any]) -> Sequence[Any]:
    c, a, b = v
    if c.dim() == 0:
        return (a if bool(c) else b,)
    if isinstance(a, TensorPtr) and isinstance(b, TensorPtr):
        if a.buf is not b.buf:
            raise InterpreterError("select between pointers into different arguments")
        return (TensorPtr(a.buf, torch.where(c, a.offsets, b.offsets)),)
    return (torch.where(c, a, b),)


# --------------------------------------------------------------------------------------
# Casts
# --------------------------------------------------------------------------------------


def _to_result(prog: Any, op: Operation, v: list[Any]) -> Sequence[Any]:
    return (v[0].to(_result_dtype(op)),)


for _name in ("extf", "truncf", "sitofp", "fptosi", "index_cast", "index_castui"):
    HANDLERS[f"arith.{_name}"] = _to_result


@_on("arith.extsi")
def _extsi(prog: Any, op: Operation, v: list[Any]) -> Sequence[Any]:
    x = v[0]
    dtype = _result_dtype(op)
    return ((-x.to(dtype)) if x.dtype == torch.bool else x.to(dtype),)


@_on("arith.extui", "arith.uitofp")
def _extui(prog: Any, op: Operation, v: list[Any]) -> Sequence[Any]:
    w = int_width(op.operands[0].type)
    u = _unsigned(v[0], w)
    if not isinstance(u, torch.Tensor):  # 64-bit unsigned to float
        return (torch.from_numpy(u.astype(np.float64)).to(_result_dtype(op)),)
    return (u.to(_result_dtype(op)),)


@_on("arith.trunci")
def _trunci(prog: Any, op: Operation, v: list[Any]) -> Sequence[Any]:
    dtype = _result_dtype(op)
    if dtype == torch.bool:
        return ((v[0] & 1).to(torch.bool),)
    return (v[0].to(dtype),)


@_on("arith.fptoui")
def _fptoui(prog: Any, op: Operation, v: list[Any]) -> Sequence[Any]:
    return (v[0].to(torch.int64).to(_result_dtype(op)),)


@_on("arith.bitcast")
def _bitcast(prog: Any, op: Operation, v: list[Any]) -> Sequence[Any]:
    return (v[0].contiguous().view(_result_dtype(op)),)


# --------------------------------------------------------------------------------------
# tt: program ids, ranges, shapes
# --------------------------------------------------------------------------------------


@_on("tt.get_program_id")
def _program_id(prog: Any, op: Operation, _: list[Any]) -> Sequence[Any]:
    return (torch.tensor(prog.program_id[op.axis.value.data], dtype=torch.int32),)  # type: ignore[attr-defined]


@_on("tt.get_num_programs")
def _num_programs(prog: Any, op: Operation, _: list[Any]) -> Sequence[Any]:
    return (torch.tensor(prog.grid[op.axis.value.data], dtype=torch.int32),)  # type: ignore[attr-defined]


@_on("tt.make_range")
def _make_range(prog: Any, op: Operation, _: list[Any]) -> Sequence[Any]:
    start, end = op.start.value.data, op.end.value.data  # type: ignore[attr-defined]
    return (torch.arange(start, end, dtype=torch.int32),)


@_on("tt.splat")
def _splat(prog: Any, op: Operation, v: list[Any]) -> Sequence[Any]:
    shape = _shape(op)
    x = v[0]
    if isinstance(x, ScalarPtr):
        return (TensorPtr(x.buf, torch.full(shape, x.offset, dtype=torch.int64)),)
    return (x.expand(shape),)


def _shaped(fn: Callable[[torch.Tensor, Operation], torch.Tensor]) -> Handler:
    """A shape op that applies equally to data tensors and to tensors of pointers."""

    def handler(prog: Any, op: Operation, v: list[Any]) -> Sequence[Any]:
        x = v[0]
        if isinstance(x, TensorPtr):
            return (TensorPtr(x.buf, fn(x.offsets, op)),)
        return (fn(x, op),)

    return handler


HANDLERS["tt.broadcast"] = _shaped(lambda x, op: x.expand(_shape(op)))
HANDLERS["tt.expand_dims"] = _shaped(lambda x, op: x.unsqueeze(op.axis.value.data))  # type: ignore[attr-defined]
HANDLERS["tt.reshape"] = _shaped(lambda x, op: x.reshape(_shape(op)))
HANDLERS["tt.trans"] = _shaped(lambda x, op: x.permute(op.perm))  # type: ignore[attr-defined]


def _pairwise(fn: Callable[[torch.Tensor, torch.Tensor, Operation], torch.Tensor]) -> Handler:
    """A shape op of two operands (tt.join, tt.cat), on data tensors or on two tensors of
    pointers into one buffer."""

    def handler(prog: Any, op: Operation, v: list[Any]) -> Sequence[Any]:
        a, b = v
        if isinstance(a, TensorPtr) or isinstance(b, TensorPtr):
            if not (isinstance(a, TensorPtr) and isinstance(b, TensorPtr) and a.buf is b.buf):
                raise InterpreterError(f"{op.name} of pointers into two different tensors")
            return (TensorPtr(a.buf, fn(a.offsets, b.offsets, op)),)
        return (fn(a, b, op),)

    return handler


HANDLERS["tt.join"] = _pairwise(lambda a, b, op: torch.stack((a, b), dim=-1))
HANDLERS["tt.cat"] = _pairwise(lambda a, b, op: torch.cat((a, b), dim=op.axis))  # type: ignore[attr-defined]


@_on("tt.split")
def _split(prog: Any, op: Operation, v: list[Any]) -> Sequence[Any]:
    x = v[0]
    if isinstance(x, TensorPtr):
        return TensorPtr(x.buf, x.offsets[..., 0]), TensorPtr(x.buf, x.offsets[..., 1])
    return x[..., 0], x[..., 1]


# --------------------------------------------------------------------------------------
# tt: pointers and memory
# --------------------------------------------------------------------------------------


@_on("tt.addptr")
def _addptr(prog: Any, op: Operation, v: list[Any]) -> Sequence[Any]:
    p, off = v
    if isinstance(p, ScalarPtr):
        return (ScalarPtr(p.buf, p.offset + int(off)),)
    if isinstance(p, TensorPtr):
        return (TensorPtr(p.buf, p.offsets + off.to(torch.int64)),)
    raise InterpreterError(f"addptr needs a pointer or a tensor of pointers, got {type(p).__name__}")


@_on("tt.make_tensor_ptr")
def _make_tensor_ptr(prog: Any, op: Operation, v: list[Any]) -> Sequence[Any]:
    rank = len(op.tile_type.get_shape())  # type: ignore[attr-defined]
    base = v[0]
    if not isinstance(base, ScalarPtr):
        raise InterpreterError("make_tensor_ptr needs a scalar pointer base")
    nums = [int(x) for x in v[1:]]
    shape, strides, offsets = nums[:rank], nums[rank:2 * rank], nums[2 * rank:]
    block = tuple(op.tile_type.get_shape())  # type: ignore[attr-defined]
    order = tuple(op.order.get_values())  # type: ignore[attr-defined]
    return (BlockPtr(base.buf, base.offset, tuple(shape), tuple(strides), tuple(offsets), block, order),)


@_on("tt.advance")
def _advance(prog: Any, op: Operation, v: list[Any]) -> Sequence[Any]:
    p = v[0]
    assert isinstance(p, BlockPtr)
    deltas = [int(x) for x in v[1:]]
    offsets = tuple(o + d for o, d in zip(p.offsets, deltas, strict=True))
    return (BlockPtr(p.buf, p.base, p.shape, p.strides, offsets, p.block_shape, p.order),)


@_on("tt.load")
def _load(prog: Any, op: Operation, v: list[Any]) -> Sequence[Any]:
    mask = v[1] if op.mask is not None else None  # type: ignore[attr-defined]
    other = v[2] if op.other is not None else None  # type: ignore[attr-defined]
    checked = tuple(op.boundaryCheck.get_values()) if op.boundaryCheck is not None else ()  # type: ignore[attr-defined]
    padding = op.padding.value.data if op.padding is not None else None  # type: ignore[attr-defined]
    return (load(v[0], mask, other, checked, padding, _result_dtype(op)),)


@_on("tt.store")
def _store(prog: Any, op: Operation, v: list[Any]) -> Sequence[Any]:
    mask = v[2] if op.mask is not None else None  # type: ignore[attr-defined]
    checked = tuple(op.boundaryCheck.get_values()) if op.boundaryCheck is not None else ()  # type: ignore[attr-defined]
    store(v[0], v[1], mask, checked)
    return ()


@_on("tt.atomic_rmw")
def _atomic(prog: Any, op: Operation, v: list[Any]) -> Sequence[Any]:
    mask = v[2] if op.mask is not None else None  # type: ignore[attr-defined]
    cmp = v[-1] if op.cmp is not None else None  # type: ignore[attr-defined]
    return (atomic_rmw(op.kind.data, v[0], v[1], mask, cmp),)  # type: ignore[attr-defined]


# --------------------------------------------------------------------------------------
# tt: compute
# --------------------------------------------------------------------------------------


@_on("tt.dot")
def _dot(prog: Any, op: Operation, v: list[Any]) -> Sequence[Any]:
    a, b, c = v[0], v[1], v[2]
    if op.meta is not None:  # type: ignore[attr-defined]
        # A holds the format's values: decode the dense tile they and the metadata encode
        fmt = formats.of_dot_metadata(op.meta.type.element_type)  # type: ignore[attr-defined]
        a = decode_meta_tile(a.contiguous(), v[3].contiguous(), fmt)
    dtype = _result_dtype(op)
    if not a.dtype.is_floating_point:
        acc = a.to(torch.int64) @ b.to(torch.int64) + c.to(torch.int64)
        return (acc.to(dtype),)
    return ((a.float() @ b.float() + c.float()).to(dtype),)


@_on("tt.dequantize")
def _dequantize(prog: Any, op: Operation, v: list[Any]) -> Sequence[Any]:
    zeros = v[2] if op.zeros is not None else None  # type: ignore[attr-defined]
    bits = op.bits.value.data  # type: ignore[attr-defined]
    return (dequantize_tile(v[0], v[1], zeros, bits, _result_dtype(op)),)


@_on("tt.reduce")
def _reduce(prog: Any, op: Operation, v: list[Any]) -> Sequence[Any]:
    axis = op.axis.value.data  # type: ignore[attr-defined]
    kind = op.kind.data  # type: ignore[attr-defined]
    if kind == "combine":
        return _reduce_region(prog, op.combine.block, list(v), axis)  # type: ignore[attr-defined]
    x = v[0]
    if kind == "sum":
        r = x.sum(dim=axis, dtype=torch.float32 if x.dtype in (torch.float16, torch.bfloat16) else None)
    elif x.is_floating_point():
        # Triton's maxnumf/minnumf: NaN loses to any number; all NaN gives NaN
        nan = x.isnan()
        fill = float("-inf") if kind == "max" else float("inf")
        filled = x.masked_fill(nan, fill)
        r = filled.amax(dim=axis) if kind == "max" else filled.amin(dim=axis)
        # -0.0 < +0.0 (PTX max/min.f32): a zero result is +0 for max, -0 for min, if any is
        want_neg = kind != "max"
        wanted_zero = ((x == 0) & (torch.signbit(x) == want_neg)).any(dim=axis)
        r = torch.where((r == 0) & wanted_zero, torch.full_like(r, -0.0 if want_neg else 0.0), r)
        r = torch.where(nan.all(dim=axis), torch.full_like(r, float("nan")), r)
    else:
        r = x.amax(dim=axis) if kind == "max" else x.amin(dim=axis)
    return (r.to(x.dtype),)


def _reduce_region(prog: Any, block: Any, xs: list[Any], axis: int) -> list[Any]:
    """A `tt.reduce combine`: the region applied to neighbouring pairs along `axis` (the lower
    index first) until one remains; the region's scalar ops run on whole tensors at once."""
    while xs[0].shape[axis] > 1:
        n = xs[0].shape[axis]
        if n % 2:  # (tensor dims are powers of two; kept general) the last one waits a round
            tail = [x.narrow(axis, n - 1, 1) for x in xs]
            xs = [x.narrow(axis, 0, n - 1) for x in xs]
        else:
            tail = None
        left = [x.unfold(axis, 2, 2)[..., 0] for x in xs]
        right = [x.unfold(axis, 2, 2)[..., 1] for x in xs]
        out = prog.exec_block(block, [*left, *right])
        # a result the region computes from constants alone is a scalar: one per element
        xs = [torch.as_tensor(r).to(x.dtype).expand(x.shape).contiguous() for r, x in zip(out, left)]
        if tail is not None:
            xs = [torch.cat([x, t], dim=axis) for x, t in zip(xs, tail)]
    return [x.squeeze(axis) for x in xs]


# --------------------------------------------------------------------------------------
# scf
# --------------------------------------------------------------------------------------


@_on("scf.for")
def _for(prog: Any, op: Operation, v: list[Any]) -> Sequence[Any]:
    lb, ub, step, *carried = v
    dtype = lb.dtype
    lo, hi, st = int(lb), int(ub), int(step)
    if st <= 0:
        raise InterpreterError(f"scf.for step must be positive, got {st}")
    body = op.regions[0].block
    for i in range(lo, hi, st):
        carried = prog.exec_block(body, [torch.tensor(i, dtype=dtype), *carried])
    return carried


@_on("scf.while")
def _while(prog: Any, op: Operation, v: list[Any]) -> Sequence[Any]:
    """Before region -> (condition, values); while true the after region maps the values to
    the next iteration's; the values at the first false condition are the results."""
    before, after = op.regions[0].block, op.regions[1].block
    carried = v
    while True:
        cond, *passed = prog.exec_block(before, carried)
        if not bool(cond):
            return passed
        carried = prog.exec_block(after, passed)


@_on("scf.if")
def _if(prog: Any, op: Operation, v: list[Any]) -> Sequence[Any]:
    region = op.regions[0] if bool(v[0]) else op.regions[1]
    if not region.blocks:
        return ()
    return prog.exec_block(region.block, [])


