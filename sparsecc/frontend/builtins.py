"""The IR each `tl.*` builtin emits. One function per builtin, named like it.

The code generator binds a call's arguments against the marker's signature in
`sparsecc.language.core`, then calls `IMPLS[name](em, **arguments)`. Arguments arrive as
runtime values (`SSAValue`) or compile-time Python objects (ints, tuples, dtypes, strings).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    IntegerAttr,
    IntegerType,
    NoneAttr,
    TensorType,
    f16,
    f32,
    i1,
    i32,
    i64,
)
from xdsl.ir import Block, BlockArgument

import sparsecc.language as tl
from sparsecc.dialects import tt
from sparsecc.dialects.tt import PADDING_OPTIONS, PointerType, is_sparse
from sparsecc.frontend import semantic as sem
from sparsecc.frontend.errors import SemanticError
from sparsecc.frontend.semantic import Emitter
from sparsecc.frontend.types import describe, ir_type, is_float

IMPLS: dict[str, Callable[..., Any]] = {}


def impl(fn: Callable[..., Any]) -> Callable[..., Any]:
    IMPLS[fn.__name__.rstrip("_")] = fn
    return fn


def _int(x: Any, what: str) -> int:
    if isinstance(x, bool) or not isinstance(x, int):
        raise SemanticError(f"{what} must be a compile-time integer (a constexpr), got {sem.py_desc(x)}")
    return x


def _ints(x: Any, what: str) -> tuple[int, ...]:
    if isinstance(x, int) and not isinstance(x, bool):
        return (x,)
    if not isinstance(x, tuple | list):
        raise SemanticError(f"{what} must be a tuple of compile-time integers, got {sem.py_desc(x)}")
    return tuple(_int(e, f"every element of {what}") for e in x)


def _seq(x: Any, what: str) -> tuple[Any, ...]:
    if isinstance(x, tuple | list):
        return tuple(x)
    raise SemanticError(f"{what} must be a tuple, got {sem.py_desc(x)}")


def _dtype(x: Any, what: str = "dtype") -> tl.dtype:
    if isinstance(x, tl.dtype) and not isinstance(x, tl.pointer_type):
        return x
    raise SemanticError(f"{what} must be a tl dtype such as tl.float16, got {sem.py_desc(x)}")


MAX_NUMEL = sem.MAX_NUMEL


def _shape(x: Any, what: str = "shape") -> tuple[int, ...]:
    """A tensor or block shape: positive powers of two, as in Triton (layouts tile by them)."""
    dims = _ints(x, what)
    if not dims:
        raise SemanticError(f"{what} needs at least one dimension, got (); use a scalar (0.0) or a (1,) shape")
    for d in dims:
        if d <= 0:
            raise SemanticError(f"{what} dimensions must be positive, got {list(dims)}")
        if d & (d - 1):
            raise SemanticError(f"{what} dimensions must be powers of two, got {list(dims)} "
                                f"(as in Triton: pad to {1 << (d - 1).bit_length()} and mask)")
    if math.prod(dims) > MAX_NUMEL:
        raise SemanticError(f"{what} {list(dims)} has {math.prod(dims)} elements; a tensor holds at most "
                            f"{MAX_NUMEL} (Triton's limit: one program's registers and shared memory)")
    return dims


# --------------------------------------------------------------------------------------
# Program ids, ranges, constants
# --------------------------------------------------------------------------------------


def _axis(axis: Any) -> int:
    a = _int(axis, "axis")
    if a not in (0, 1, 2):
        raise SemanticError(f"axis must be 0, 1 or 2, got {a}")
    return a


@impl
def program_id(em: Emitter, axis: Any) -> Any:
    return em.value(tt.GetProgramIdOp(_axis(axis)))


@impl
def num_programs(em: Emitter, axis: Any) -> Any:
    return em.value(tt.GetNumProgramsOp(_axis(axis)))


@impl
def arange(em: Emitter, start: Any, end: Any) -> Any:
    s, e = _int(start, "tl.arange start"), _int(end, "tl.arange end")
    if e <= s:
        raise SemanticError(f"tl.arange end ({e}) must be greater than start ({s})")
    if e - s > MAX_NUMEL:
        raise SemanticError(f"tl.arange's range ({e - s}) exceeds {MAX_NUMEL} elements (Triton's limit)")
    if (e - s) & (e - s - 1):
        raise SemanticError(f"tl.arange's range must be a power of two, got {e - s} ({s}..{e}; "
                            f"as in Triton: use tl.arange(0, {1 << (e - s - 1).bit_length()}) and a mask)")
    return em.value(tt.MakeRangeOp(s, e))


@impl
def zeros(em: Emitter, shape: Any, dtype: Any) -> Any:
    return full(em, shape, 0, dtype)


@impl
def full(em: Emitter, shape: Any, value: Any, dtype: Any) -> Any:
    ty = ir_type(_dtype(dtype))
    if shape in ((), []):  # a 0-D tensor is a scalar of the dtype, as in Triton
        v = sem.to_value(em, value, ty, "tl.full's value")
        sem.require_dense(v, "tl.full")
        if sem.is_tensor(v):
            raise SemanticError("tl.full's value must be a scalar")
        return sem.cast(em, v, ty)
    dims = _shape(shape)
    if sem.is_py_scalar(value):
        return sem.constant(em, value, TensorType(ty, list(dims)))
    v = sem.require_value(value, "tl.full's value")
    sem.require_dense(v, "tl.full")
    if sem.is_tensor(v):
        raise SemanticError("tl.full's value must be a scalar")
    return sem.splat(em, sem.cast(em, v, ty), dims)


@impl
def cdiv(em: Emitter, x: Any, div: Any) -> Any:
    if not isinstance(x, sem.SSAValue) and not isinstance(div, sem.SSAValue):
        return -(-_int(x, "tl.cdiv's x") // _int(div, "tl.cdiv's div"))
    return sem.binary(em, "//", sem.binary(em, "-", sem.binary(em, "+", x, div), 1), div)


# --------------------------------------------------------------------------------------
# Block pointers
# --------------------------------------------------------------------------------------


@impl
def make_block_ptr(em: Emitter, base: Any, shape: Any, strides: Any, offsets: Any,
                   block_shape: Any, order: Any) -> Any:
    b = sem.require_value(base, "tl.make_block_ptr's base")
    if not isinstance(b.type, PointerType) or b.type.is_block:
        raise SemanticError(
            f"tl.make_block_ptr's base must be a pointer argument, got {describe(b.type)}")
    block = _shape(block_shape, "block_shape")
    rank = len(block)
    parts = {"shape": _seq(shape, "shape"), "strides": _seq(strides, "strides"),
             "offsets": _seq(offsets, "offsets"), "order": _ints(order, "order")}
    for key, vals in parts.items():
        if len(vals) != rank:
            raise SemanticError(f"tl.make_block_ptr: {key} has {len(vals)} entries but block_shape "
                                f"{list(block)} has {rank} dimensions")
    if sorted(parts["order"]) != list(range(rank)):
        raise SemanticError(f"tl.make_block_ptr: order {list(parts['order'])} must be a "
                            f"permutation of 0..{rank - 1}")
    sh = [sem.index_value(em, x, i64, "a block pointer shape entry") for x in parts["shape"]]
    st = [sem.index_value(em, x, i64, "a block pointer stride") for x in parts["strides"]]
    off = [sem.index_value(em, x, i32, "a block pointer offset") for x in parts["offsets"]]
    enc = b.type.encoding if is_sparse(b.type) else NoneAttr()
    tile = TensorType(b.type.pointee, list(block), enc)
    return em.value(tt.MakeTensorPtrOp(b, sh, st, off, parts["order"], PointerType(tile)))


@impl
def advance(em: Emitter, base: Any, offsets: Any) -> Any:
    p = sem.require_value(base, "tl.advance's pointer")
    if not sem.is_block_pointer(p):
        raise SemanticError(f"tl.advance needs a block pointer (from tl.make_block_ptr), got "
                            f"{describe(p.type)}")
    assert isinstance(p.type, PointerType) and isinstance(p.type.pointee, TensorType)
    rank = len(p.type.pointee.get_shape())
    offs = _seq(offsets, "tl.advance's offsets")
    if len(offs) != rank:
        raise SemanticError(f"tl.advance needs {rank} offsets (one per dimension), got {len(offs)}")
    return em.value(tt.AdvanceOp(p, [sem.index_value(em, o, i32, "an advance offset") for o in offs]))


# --------------------------------------------------------------------------------------
# Memory
# --------------------------------------------------------------------------------------


def _boundary_check(bc: Any, rank: int) -> tuple[int, ...]:
    dims = _ints(bc, "boundary_check") if bc not in (None, ()) else ()
    for d in dims:
        if not 0 <= d < rank:
            raise SemanticError(f"boundary_check dimension {d} out of range for a rank-{rank} block")
    return dims


def _mask(em: Emitter, mask: Any, ptr: sem.SSAValue | None = None) -> sem.SSAValue | None:
    """The boolean mask, broadcast to the shape of `ptr` (if given)."""
    if mask is None:
        return None
    m = sem.to_value(em, mask, i1, "mask")
    sem.require_dense(m, "a mask")
    if sem.elem(m) != i1:
        raise SemanticError(f"mask must be boolean (a comparison), got {describe(m.type)}")
    return m if ptr is None else _to_pointer_shape(em, m, ptr, "the mask")


def _to_pointer_shape(em: Emitter, v: sem.SSAValue, ptr: sem.SSAValue, what: str) -> sem.SSAValue:
    """`v` broadcast to the pointer's shape. As in Triton, the pointer is never broadcast to a
    larger value or mask: that would access each address several times (a store or an atomic
    repeated, a load duplicated), which is not what the kernel says."""
    ps, vs = sem.shape(ptr), sem.shape(v)
    if vs == ps:
        return v
    try:
        fits = sem.broadcast_shapes(vs, ps) == ps
    except SemanticError:
        fits = False
    if not fits:
        pointer = f"pointer of shape {list(ps)}" if ps else "scalar pointer"
        raise SemanticError(f"{what} has shape {list(vs)} but the {pointer} addresses {max(1, math.prod(ps))} "
                            f"element(s): {what} must broadcast to the pointer's shape (the pointer is not "
                            "broadcast to it)")
    return sem.broadcast_to(em, v, ps)


_LOAD_CACHE = ("", ".ca", ".cg", ".cv")
_STORE_CACHE = ("", ".wb", ".cg", ".cs", ".wt")
_EVICTION = ("", "evict_normal", "evict_first", "evict_last")


def _memory_hints(op: str, cache_modifier: Any, eviction_policy: Any) -> None:
    """Triton's cache and eviction hints: accepted (as hints, not emitted) when Triton knows
    them; a misspelt one is an error, not silently nothing."""
    caches = _LOAD_CACHE if op == "load" else _STORE_CACHE
    if cache_modifier not in caches:
        raise SemanticError(f"tl.{op}: cache_modifier={cache_modifier!r} is not one of "
                            f"{', '.join(repr(c) for c in caches[1:])}")
    if eviction_policy not in _EVICTION:
        raise SemanticError(f"tl.{op}: eviction_policy={eviction_policy!r} is not one of "
                            f"{', '.join(repr(c) for c in _EVICTION[1:])}")


@impl
def load(em: Emitter, pointer: Any, mask: Any, other: Any, boundary_check: Any,
         padding_option: Any, cache_modifier: Any, eviction_policy: Any, volatile: Any) -> Any:
    p = sem.require_value(pointer, "tl.load's pointer")
    _memory_hints("load", cache_modifier, eviction_policy)
    if sem.is_block_pointer(p):
        if mask is not None or other is not None:
            raise SemanticError("tl.load of a block pointer takes boundary_check/padding_option, "
                                "not mask/other")
        assert isinstance(p.type, PointerType) and isinstance(p.type.pointee, TensorType)
        bc = _boundary_check(boundary_check, len(p.type.pointee.get_shape()))
        if padding_option not in ("", None, *PADDING_OPTIONS):
            raise SemanticError(f"padding_option must be \"zero\" or \"nan\", got {padding_option!r}")
        if padding_option == "nan" and not is_float(p.type.pointee.element_type):
            raise SemanticError(f"padding_option=\"nan\" needs a floating-point block, got "
                                f"{describe(p.type.pointee.element_type)} (use \"zero\")")
        pad = PADDING_OPTIONS.get(padding_option) if padding_option else None
        return em.value(tt.LoadOp(p, boundary_check=bc, padding=pad))
    if not sem.is_pointer(p):
        raise SemanticError(f"tl.load needs a pointer, got {describe(p.type)}")
    if boundary_check not in (None, ()) or padding_option:
        raise SemanticError("boundary_check/padding_option apply to block pointers only; use mask/other")
    m = _mask(em, mask, p)
    if other is not None and m is None:
        raise SemanticError("tl.load's other needs a mask")
    o = None
    if other is not None:
        ptr_elem = sem.elem(p)
        assert isinstance(ptr_elem, PointerType)
        o = sem.to_value(em, other, ptr_elem.pointee, "tl.load's other", sem.shape(p))
        sem.require_dense(o, "tl.load's other")
        o = sem.broadcast_to(em, sem.cast(em, o, ptr_elem.pointee), sem.shape(p))
    return em.value(tt.LoadOp(p, m, o))


@impl
def store(em: Emitter, pointer: Any, value: Any, mask: Any, boundary_check: Any,
          cache_modifier: Any, eviction_policy: Any) -> Any:
    p = sem.require_value(pointer, "tl.store's pointer")
    _memory_hints("store", cache_modifier, eviction_policy)
    sem.require_dense(p, "tl.store")
    sem.require_dense(value, "tl.store")
    if sem.is_block_pointer(p):
        if mask is not None:
            raise SemanticError("tl.store to a block pointer takes boundary_check, not a mask")
        assert isinstance(p.type, PointerType) and isinstance(p.type.pointee, TensorType)
        tile = p.type.pointee
        bc = _boundary_check(boundary_check, len(tile.get_shape()))
        v = sem.to_value(em, value, tile.element_type, "the stored value")
        v = sem.broadcast_to(em, sem.cast(em, v, tile.element_type), tile.get_shape())
        em.insert(tt.StoreOp(p, v, boundary_check=bc))
        return None
    if not sem.is_pointer(p):
        raise SemanticError(f"tl.store needs a pointer, got {describe(p.type)}")
    if boundary_check not in (None, ()):
        raise SemanticError("boundary_check applies to block pointers only; use mask")
    ptr_elem = sem.elem(p)
    assert isinstance(ptr_elem, PointerType)
    v = sem.to_value(em, value, ptr_elem.pointee, "the stored value")
    v = _to_pointer_shape(em, sem.cast(em, v, ptr_elem.pointee), p, "the stored value")
    em.insert(tt.StoreOp(p, v, _mask(em, mask, p)))
    return None


# --------------------------------------------------------------------------------------
# Compute
# --------------------------------------------------------------------------------------

_DOT_INPUTS = ("fp16", "bf16", "fp8e4nv", "fp8e5", "i8")


@impl
def dot(em: Emitter, input: Any, other: Any, acc: Any, out_dtype: Any, allow_tf32: Any,
        input_precision: Any) -> Any:
    a = sem.require_value(input, "tl.dot's first operand")
    b = sem.require_value(other, "tl.dot's second operand")
    if is_sparse(a.type) and is_sparse(b.type):
        raise SemanticError("tl.dot: at most one operand may be 2:4 sparse")
    if len(sem.shape(a)) != 2 or len(sem.shape(b)) != 2:
        raise SemanticError(f"tl.dot needs two 2-D tiles, got {describe(a.type)} and {describe(b.type)}")
    ea, eb = sem.elem(a), sem.elem(b)
    if ea != eb:
        raise SemanticError(f"tl.dot operands must have the same element type, got "
                            f"{describe(ea)} and {describe(eb)}")
    from sparsecc.frontend.types import tl_dtype

    name = tl_dtype(ea).name
    tf32_sparse = name == "fp32" and (is_sparse(a.type) or is_sparse(b.type))  # NV12: tf32 1:2
    if name not in _DOT_INPUTS and not tf32_sparse:
        raise SemanticError(f"tl.dot operands must be fp16, bf16, fp8e4nv, fp8e5 or i8 (fp32 with a 1:2 "
                            f"NV12 operand), got {name} (convert with .to(tl.float16))")
    (m, k), (k2, n) = sem.shape(a), sem.shape(b)
    if k != k2:
        raise SemanticError(f"tl.dot shapes do not agree: [{m}, {k}] x [{k2}, {n}]")
    # a sparse right operand makes the tensor cores' m the dense left's rows after the swap
    # (sparse-operand-to-lhs): n = 8 is their smallest tile there
    if min(k, n) < 16 or m < (8 if is_sparse(b.type) and not is_sparse(a.type) else 16):
        raise SemanticError(f"tl.dot needs M, N and K of at least 16 (Triton's rule: the tensor cores' "
                            f"smallest tile), got [{m}, {k}] x [{k2}, {n}]; pad the block and mask")
    _dot_precision(name, tf32_sparse, allow_tf32, input_precision)
    if acc is None:
        if name == "i8":
            out = i32
        else:
            out = ir_type(_dtype(out_dtype, "out_dtype"))
            if out not in (f32, f16):
                raise SemanticError(f"out_dtype must be tl.float32 or tl.float16, got {describe(out)}")
        c = sem.constant(em, 0, TensorType(out, [m, n]))
    else:
        c = sem.require_value(acc, "tl.dot's acc")
        sem.require_dense(c, "tl.dot's accumulator")
        if sem.shape(c) != (m, n):
            raise SemanticError(f"tl.dot accumulator must have shape [{m}, {n}], got {describe(c.type)}")
        want = i32 if name == "i8" else None
        ce = sem.elem(c)
        if want is not None and ce != want:
            raise SemanticError(f"an i8 tl.dot accumulates in i32, got {describe(ce)}")
        if want is None and not is_float(ce):
            raise SemanticError(f"tl.dot accumulator must be floating point, got {describe(ce)}")
        if want is None:
            out = ir_type(_dtype(out_dtype, "out_dtype"))
            if ce != out:
                raise SemanticError(f"tl.dot's accumulator is {describe(ce)} but out_dtype is {describe(out)}: "
                                    "they must agree (as in Triton); accumulate in tl.float32 and convert "
                                    "the result with .to()")
    return em.value(tt.DotOp(a, b, c))


_PRECISIONS = ("tf32", "tf32x3", "ieee")


def _dot_precision(name: str, tf32_sparse: bool, allow_tf32: Any, input_precision: Any) -> None:
    """Triton's fp32 precision knobs: they matter for fp32 operands only, which the sparse
    (NV12) dot multiplies on tf32 tensor cores; asking for more precision is an error, not
    silently tf32."""
    if allow_tf32 not in (None, True, False):
        raise SemanticError(f"tl.dot: allow_tf32 must be True or False, got {sem.py_desc(allow_tf32)}")
    if input_precision is not None and input_precision not in _PRECISIONS:
        raise SemanticError(f"tl.dot: input_precision must be one of {', '.join(map(repr, _PRECISIONS))}, "
                            f"got {sem.py_desc(input_precision)}")
    if allow_tf32 is not None and input_precision is not None:
        raise SemanticError("tl.dot: give input_precision or allow_tf32, not both")
    wanted = input_precision or ("ieee" if allow_tf32 is False else "tf32")
    if tf32_sparse and wanted != "tf32":
        raise SemanticError(f"tl.dot: an fp32 (NV12) sparse dot multiplies in tf32; input_precision="
                            f"{wanted!r} is not supported (use \"tf32\", or convert the operands)")


@impl
def where(em: Emitter, condition: Any, x: Any, y: Any) -> Any:
    return sem.select(em, condition, x, y)


def _hint(name: str, input: Any, values: Any) -> Any:
    vals = values if isinstance(values, list | tuple) else [values]
    if not vals or any(isinstance(v, bool) or not isinstance(v, int) or v < 1 for v in vals):
        raise SemanticError(f"tl.{name}'s values must be positive compile-time ints, got {values!r}")
    v = sem.require_value(input, f"tl.{name}'s input")
    sem.require_dense(v, f"tl.{name}")
    return v


@impl
def multiple_of(em: Emitter, input: Any, values: Any) -> Any:
    v = _hint("multiple_of", input, values)
    vals = values if isinstance(values, list | tuple) else [values]
    if isinstance(v, BlockArgument) and isinstance(v.type, IntegerType) and len(vals) == 1:
        _raise_arg_divisibility(v, vals[0])
    return v


def _raise_arg_divisibility(arg: BlockArgument, multiple: int) -> None:
    """`tl.multiple_of(arg, d)` on a kernel's integer argument: its `tt.divisibility` becomes
    the largest power of two dividing d (if larger), as a ':16' specialization gives 16, so the
    analyses that read it (aligned vectors, TMA strides) may rely on it."""
    func = arg.owner.parent_op() if isinstance(arg.owner, Block) else None
    if not isinstance(func, tt.FuncOp) or arg.owner is not func.body.block:
        return
    pow2 = multiple & -multiple
    n = len(func.body.block.args)
    dicts = list(func.arg_attrs.data) if func.arg_attrs is not None else [DictionaryAttr({})] * n
    old = dicts[arg.index].data.get("tt.divisibility")
    if isinstance(old, IntegerAttr) and old.value.data >= pow2:
        return
    dicts[arg.index] = DictionaryAttr({**dicts[arg.index].data, "tt.divisibility": IntegerAttr(pow2, 32)})
    func.arg_attrs = ArrayAttr(dicts)


@impl
def max_contiguous(em: Emitter, input: Any, values: Any) -> Any:
    return _hint("max_contiguous", input, values)


@impl
def max_constancy(em: Emitter, input: Any, values: Any) -> Any:
    return _hint("max_constancy", input, values)


@impl
def zeros_like(em: Emitter, input: Any) -> Any:
    v = sem.require_value(input, "tl.zeros_like's input")
    if sem.is_tensor(v):
        return sem.constant(em, 0, TensorType(sem.elem(v), list(sem.shape(v))))
    return sem.constant(em, 0, v.type)


@impl
def maximum(em: Emitter, x: Any, y: Any, propagate_nan: Any = 0) -> Any:
    return sem.minmax(em, "max", x, y, sem.propagates_nan(propagate_nan))


@impl
def minimum(em: Emitter, x: Any, y: Any, propagate_nan: Any = 0) -> Any:
    return sem.minmax(em, "min", x, y, sem.propagates_nan(propagate_nan))


def to(em: Emitter, v: sem.SSAValue, dtype: Any, bitcast: Any = False) -> Any:
    """`x.to(dtype)`: an elementwise conversion."""
    from sparsecc.frontend.pointer_casts import involves_pointers, pointer_cast

    if isinstance(v, sem.SSAValue) and involves_pointers(v, dtype):
        return pointer_cast(em, v, dtype, bitcast)
    sem.require_dense(v, "'.to()'")
    dst = ir_type(_dtype(dtype))
    if bitcast:
        return _bitcast(em, v, dst)
    return sem.cast(em, v, dst)


def _bitcast(em: Emitter, v: sem.SSAValue, dst: Any) -> Any:
    """Reinterpret the bits of each element as `dst` (same width)."""
    from sparsecc.frontend.types import bitwidth, signless

    src = sem.elem(v)
    if src == dst:
        return v
    if signless(src) == signless(dst):  # int32 <-> uint32: the same bits, another signedness
        return sem.reinterpret(em, v, dst)
    if bitwidth(src) != bitwidth(dst) or bitwidth(src) == 1:
        raise SemanticError(f"a bitcast keeps the width: {describe(src)} ({bitwidth(src)} bits) cannot "
                            f"become {describe(dst)} ({bitwidth(dst)} bits)")
    return em.value(arith.BitcastOp(v, sem.like(v.type, dst)))  # ui<N> ends signless (erase_signedness)


@impl
def cast(em: Emitter, input: Any, dtype: Any, fp_downcast_rounding: Any = None, bitcast: Any = False) -> Any:
    if fp_downcast_rounding not in (None, "rtne"):
        raise SemanticError(f"tl.cast: fp_downcast_rounding={fp_downcast_rounding!r} is not supported (only 'rtne')")
    # a Python number or constexpr becomes a scalar first, as Triton's `to_tensor` makes it
    # (an int in int32's range is an i32, a float an fp32), then converts like any value
    v = sem.to_value(em, input, what="tl.cast's input")
    sem.require_dense(v, "tl.cast")
    return to(em, v, dtype, bitcast)
