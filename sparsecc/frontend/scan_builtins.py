"""The IR of the scan, sort and gather builtins (issue 29), with Triton's semantics
(python/triton/language/standard.py and semantic.py):

- `associative_scan` is a `tt.scan` whose combine region inlines the user's @jit function
  (running result first, next element second); `cumsum` and `cumprod` are scans with an add
  or a multiply (`cumsum` sums ints narrower than 32 bits in int32, `cumprod` bf16 in fp32);
- `gather` is `tt.gather`;
- `flip`, `sort`, `topk` and `bitonic_merge` are built on `tt.gather`: a bitonic network whose
  compare-and-swap reads each element's partner `i ^ j` with a gather (Triton reshapes to a
  hypercube of 2s instead, which needs a rank of log2(numel)), keeping Triton's comparison
  `where((x > y) != (flip ^ is_right), y, x)`; they sort along any dim (Triton: the last);
- `histogram` compares every value with every bin and sums the matches (values outside the
  bins and masked-off ones count nowhere, as Triton's GPU lowering);
- `reduce_or` is a `tt.reduce` with an or; `softmax` is exp(x - max) / sum along `dim`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from xdsl.dialects import arith
from xdsl.dialects.builtin import BFloat16Type, IntegerType, f32, i1, i32
from xdsl.ir import SSAValue

from sparsecc.dialects import tt
from sparsecc.frontend import semantic as sem
from sparsecc.frontend.builtins import IMPLS, _dtype, _int, impl
from sparsecc.frontend.errors import SemanticError
from sparsecc.frontend.reduce_builtins import Combine, _axis, _input, _region, reduce_combine
from sparsecc.frontend.semantic import Emitter
from sparsecc.frontend.types import describe, ir_type, is_float

SCAN_CALLS_JIT = frozenset({"associative_scan"})
"""Builtins here that call a @jit function (they get the code generator's `_inline`)."""
SCAN_METHODS = frozenset({"associative_scan", "cumsum", "cumprod", "gather", "flip", "sort", "histogram",
                          "reduce_or", "softmax", "topk"})
"""Builtins a tensor also has as methods (`x.cumsum(0)`), as Triton's `_tensor_member_fn`s."""


def _tensor(x: Any, what: str) -> SSAValue:
    v = _input(x, what)
    if not sem.is_tensor(v):
        raise SemanticError(f"{what} needs a tensor, got {describe(v.type)}")
    return v


def scan(em: Emitter, vals: list[SSAValue], axis: Any, combine: Combine, reverse: Any, what: str) -> list[SSAValue]:
    """`tt.scan` of same-shape tensors along `axis`."""
    shape = sem.shape(vals[0])
    for v in vals[1:]:
        if sem.shape(v) != shape:
            raise SemanticError(f"{what}: the tensors must have one shape, got {list(shape)} and "
                                f"{list(sem.shape(v))}")
    ax = _axis(axis, len(shape), what)
    region = _region(em, [sem.elem(v) for v in vals], combine, what)
    op = tt.ScanOp(vals, ax, bool(reverse), region)
    em.insert(op)
    return list(op.results)


def _arith(em: Emitter, float_op: type, int_op: type) -> Combine:
    def combine(a: list[SSAValue], b: list[SSAValue]) -> list[SSAValue]:
        cls = float_op if is_float(a[0].type) else int_op
        return [em.value(cls(a[0], b[0]))]

    return combine


@impl
def associative_scan(em: Emitter, input: Any, axis: Any, combine_fn: Any, reverse: Any = False, *,
                     _inline: Callable[[Any, list[Any], dict[str, Any]], Any]) -> Any:
    single = not isinstance(input, tuple | list)
    vals = [_tensor(x, "tl.associative_scan") for x in ([input] if single else input)]
    if not vals:
        raise SemanticError("tl.associative_scan needs at least one tensor")
    if getattr(combine_fn, "__sparsecc_jit__", False) is not True:
        raise SemanticError("tl.associative_scan's combine_fn must be a @sparsecc.jit function, got "
                            f"{sem.py_desc(combine_fn)}")

    def combine(a: list[SSAValue], b: list[SSAValue]) -> list[SSAValue]:
        out = _inline(combine_fn, [*a, *b], {})
        return list(out) if isinstance(out, tuple | list) else [out]

    out = scan(em, vals, axis, combine, reverse, "tl.associative_scan")
    return out[0] if single else tuple(out)


@impl
def cumsum(em: Emitter, input: Any, axis: Any = 0, reverse: Any = False, dtype: Any = None) -> Any:
    v = _tensor(input, "tl.cumsum")
    if dtype is not None:
        v = sem.cast(em, v, ir_type(_dtype(dtype)))
    elif isinstance(sem.elem(v), IntegerType) and sem.elem(v).width.data < 32:
        v = sem.cast(em, v, i32)  # narrow ints (and bools) accumulate in int32, as in Triton
    return scan(em, [v], axis, _arith(em, arith.AddfOp, arith.AddiOp), reverse, "tl.cumsum")[0]


@impl
def cumprod(em: Emitter, input: Any, axis: Any = 0, reverse: Any = False) -> Any:
    v = _tensor(input, "tl.cumprod")
    if isinstance(sem.elem(v), BFloat16Type):
        v = sem.cast(em, v, f32)
    elif sem.elem(v) == i1:
        v = sem.cast(em, v, i32)
    return scan(em, [v], axis, _arith(em, arith.MulfOp, arith.MuliOp), reverse, "tl.cumprod")[0]


def _gather(em: Emitter, src: SSAValue, index: SSAValue, axis: int) -> SSAValue:
    return em.value(tt.GatherOp(src, index, axis))


@impl
def gather(em: Emitter, src: Any, index: Any, axis: Any) -> Any:
    s = _tensor(src, "tl.gather")
    i = sem.require_value(index, "tl.gather's index")
    sem.require_dense(i, "tl.gather's index")
    if not sem.is_tensor(i) or not isinstance(sem.elem(i), IntegerType) or sem.elem(i) == i1:
        raise SemanticError(f"tl.gather's index must be a tensor of integers, got {describe(i.type)}")
    ss, si = sem.shape(s), sem.shape(i)
    if len(ss) != len(si):
        raise SemanticError(f"tl.gather: the index must have the source's rank, got {list(si)} for {list(ss)}")
    ax = _axis(axis, len(ss), "tl.gather")
    if any(a != b for d, (a, b) in enumerate(zip(ss, si)) if d != ax):
        raise SemanticError(f"tl.gather: the index {list(si)} must have the source's shape {list(ss)} except "
                            f"along axis {ax}")
    return _gather(em, s, i, ax)


def _dim(dim: Any, rank: int, what: str) -> int:
    return rank - 1 if dim is None else _axis(dim, rank, what)


def _positions(em: Emitter, shape: tuple[int, ...], dim: int, n: int | None = None) -> SSAValue:
    """int32 tensor of `shape` (with `n` along `dim` when given) holding each element's index along `dim`."""
    shape = tuple(n if d == dim and n is not None else s for d, s in enumerate(shape))
    idx = em.value(tt.MakeRangeOp(0, shape[dim]))
    for d in range(len(shape)):
        if d != dim:
            idx = sem.expand_dims(em, idx, d)
    return sem.broadcast_to(em, idx, shape)


def _pow2(n: int, what: str) -> int:
    if n < 1 or n & (n - 1):
        raise SemanticError(f"{what} needs a power-of-two length, got {n}")
    return n.bit_length() - 1


def _bit_set(em: Emitter, idx: SSAValue, bit: int) -> SSAValue:
    return sem.compare(em, "!=", sem.binary(em, "&", idx, bit), 0)


def _compare_and_swap(em: Emitter, x: SSAValue, idx: SSAValue, dim: int, j: int, flip: SSAValue | bool) -> SSAValue:
    """One step of the network: each element and its partner `i ^ j` along `dim`; the left one
    keeps the smaller (the larger where `flip`), as Triton's `_compare_and_swap`."""
    y = _gather(em, x, sem.binary(em, "^", idx, j), dim)
    is_right = _bit_set(em, idx, j)
    if isinstance(flip, bool):
        want = is_right if not flip else sem.logical_not(em, is_right)
    else:
        want = em.value(arith.XOrIOp(flip, is_right))
    swap = em.value(arith.XOrIOp(sem.compare(em, ">", x, y), want))
    return sem.select(em, swap, y, x)


def _sort(em: Emitter, x: SSAValue, dim: int, descending: bool, what: str) -> SSAValue:
    shape = sem.shape(x)
    log_n = _pow2(shape[dim], what)
    idx = _positions(em, shape, dim)
    for stage in range(1, log_n + 1):
        flip: SSAValue | bool = descending if stage == log_n else _bit_set(em, idx, 1 << stage)
        for j in reversed(range(stage)):
            x = _compare_and_swap(em, x, idx, dim, 1 << j, flip)
    return x


@impl
def sort(em: Emitter, x: Any, dim: Any = None, descending: Any = 0) -> Any:
    v = _tensor(x, "tl.sort")
    return _sort(em, v, _dim(dim, len(sem.shape(v)), "tl.sort"), bool(descending), "tl.sort")


@impl
def topk(em: Emitter, x: Any, k: Any, dim: Any = None, descending: Any = True) -> Any:
    v = _tensor(x, "tl.topk")
    d = _dim(dim, len(sem.shape(v)), "tl.topk")
    kk = _int(k, "tl.topk's k")
    _pow2(kk, "tl.topk's k")
    if kk > sem.shape(v)[d]:
        raise SemanticError(f"tl.topk: k = {kk} exceeds the dimension's {sem.shape(v)[d]} elements")
    s = _sort(em, v, d, bool(descending), "tl.topk")
    if kk == sem.shape(v)[d]:
        return s
    return _gather(em, s, _positions(em, sem.shape(v), d, kk), d)


@impl
def bitonic_merge(em: Emitter, x: Any, dim: Any = None, descending: Any = 0) -> Any:
    v = _tensor(x, "tl.bitonic_merge")
    d = _dim(dim, len(sem.shape(v)), "tl.bitonic_merge")
    log_n = _pow2(sem.shape(v)[d], "tl.bitonic_merge")
    idx = _positions(em, sem.shape(v), d)
    for j in reversed(range(log_n)):
        v = _compare_and_swap(em, v, idx, d, 1 << j, bool(descending))
    return v


@impl
def flip(em: Emitter, x: Any, dim: Any = None) -> Any:
    v = _tensor(x, "tl.flip")
    d = _dim(dim, len(sem.shape(v)), "tl.flip")
    n = sem.shape(v)[d]
    return _gather(em, v, sem.binary(em, "-", n - 1, _positions(em, sem.shape(v), d)), d)


@impl
def histogram(em: Emitter, input: Any, num_bins: Any, mask: Any = None) -> Any:
    v = _tensor(input, "tl.histogram")
    if len(sem.shape(v)) != 1 or sem.elem(v) != i32:
        raise SemanticError(f"tl.histogram counts a 1-D int32 tensor, got {describe(v.type)}")
    bins = _int(num_bins, "tl.histogram's num_bins")
    _pow2(bins, "tl.histogram's num_bins")
    n = sem.shape(v)[0]
    hit = sem.compare(em, "==", sem.expand_dims(em, v, 1),
                      sem.expand_dims(em, em.value(tt.MakeRangeOp(0, bins)), 0))
    if mask is not None:
        m = sem.to_value(em, mask, i1, "tl.histogram's mask")
        sem.require_dense(m, "tl.histogram's mask")
        if sem.elem(m) != i1:
            raise SemanticError(f"tl.histogram's mask must be booleans, got {describe(m.type)}")
        m = sem.broadcast_to(em, m, (n,)) if sem.is_tensor(m) else sem.splat(em, m, (n,))
        hit = sem.binary(em, "&", hit, sem.expand_dims(em, m, 1))
    return IMPLS["sum"](em, sem.cast(em, hit, i32), 0, False)


@impl
def reduce_or(em: Emitter, input: Any, axis: Any, keep_dims: Any = False) -> Any:
    v = _input(input, "tl.reduce_or")
    if not isinstance(sem.elem(v), IntegerType):
        raise SemanticError(f"tl.reduce_or reduces integers, got {describe(v.type)}")
    if not sem.is_tensor(v):
        return v

    def combine(a: list[SSAValue], b: list[SSAValue]) -> list[SSAValue]:
        return [em.value(arith.OrIOp(a[0], b[0]))]

    return reduce_combine(em, [v], axis, combine, keep_dims, "tl.reduce_or")[0]


@impl
def softmax(em: Emitter, x: Any, dim: Any = None, keep_dims: Any = None, ieee_rounding: Any = False) -> Any:
    v = _tensor(x, "tl.softmax")
    if not is_float(sem.elem(v)):
        raise SemanticError(f"tl.softmax needs floats, got {describe(v.type)}")
    d = 0 if dim is None else _axis(dim, len(sem.shape(v)), "tl.softmax")
    z = sem.binary(em, "-", v, IMPLS["max"](em, v, d, False, True, True))
    num = IMPLS["exp"](em, z)
    den = IMPLS["sum"](em, num, d, True)
    return IMPLS["fdiv"](em, num, den, ieee_rounding)


__all__ = ["SCAN_CALLS_JIT", "SCAN_METHODS", "scan"]
