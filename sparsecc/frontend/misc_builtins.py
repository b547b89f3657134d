"""The IR of the small Triton names of `sparsecc.language.misc` and `tl.target_info`, and tensor
descriptors, which are block pointers with every dimension bounds-checked.

A descriptor (`tl.make_tensor_descriptor`) is a compile-time object here, `Descriptor`: its base
pointer, shape and strides. Each `desc.load(offsets)` / `desc.store(offsets, v)` makes the block
pointer of that tile (`tt.make_tensor_ptr`, row-major order) and loads or stores it with
`boundary_check` on every dimension, which is what a TMA descriptor does (out-of-bounds elements
read as the padding and are not written). The existing block-pointer paths then apply: TMA on
sm_90a where the tile qualifies, else masked loads and stores.
"""

from __future__ import annotations

import contextvars
import operator
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerAttr, TensorType
from xdsl.ir import SSAValue

import sparsecc.language as tl
from sparsecc.dialects import tt
from sparsecc.dialects.tt import PointerType
from sparsecc.frontend import semantic as sem
from sparsecc.frontend.bound import BoundBuiltin
from sparsecc.frontend.builtins import IMPLS, _dtype, _int, _seq, _shape, impl
from sparsecc.frontend.errors import SemanticError
from sparsecc.frontend.semantic import Emitter
from sparsecc.frontend.types import bitwidth, describe, ir_type, is_int, tl_dtype

# --------------------------------------------------------------------------------------
# add, sub, mul, swizzle2d, condition, tuple, slice
# --------------------------------------------------------------------------------------


def _sanitize(name: str, flag: Any) -> None:
    if not isinstance(flag, bool | int):
        raise SemanticError(f"tl.{name}: sanitize_overflow must be a compile-time bool, got {sem.py_desc(flag)}")


@impl
def add(em: Emitter, x: Any, y: Any, sanitize_overflow: Any = True) -> Any:
    _sanitize("add", sanitize_overflow)
    return _arith(em, "+", x, y)


@impl
def sub(em: Emitter, x: Any, y: Any, sanitize_overflow: Any = True) -> Any:
    _sanitize("sub", sanitize_overflow)
    return _arith(em, "-", x, y)


@impl
def mul(em: Emitter, x: Any, y: Any, sanitize_overflow: Any = True) -> Any:
    _sanitize("mul", sanitize_overflow)
    return _arith(em, "*", x, y)


_PY_ARITH: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add, "-": operator.sub, "*": operator.mul,
    "//": lambda a, b: int(a / b) if isinstance(a, int) and isinstance(b, int) else a // b,
    "%": lambda a, b: a - b * int(a / b) if isinstance(a, int) and isinstance(b, int) else a % b,
}
"""Constexpr arithmetic with C's integer division and remainder, as the kernel's operators."""


def _arith(em: Emitter, op: str, a: Any, b: Any) -> Any:
    """`a <op> b`: folded when both are compile-time numbers, else the kernel's operator."""
    if sem.is_py_scalar(a) and sem.is_py_scalar(b):
        if op in ("//", "%") and b == 0:
            raise SemanticError(f"integer division by zero in a compile-time '{op}'")
        return _PY_ARITH[op](a, b)
    return sem.binary(em, op, a, b)


@impl
def swizzle2d(em: Emitter, i: Any, j: Any, size_i: Any, size_j: Any, size_g: Any) -> Any:
    # Triton's python/triton/language/standard.py, step by step
    ij = _arith(em, "+", _arith(em, "*", i, size_j), j)   # row-major index
    size_gj = _arith(em, "*", size_g, size_j)              # elements in a group of size_g rows
    group_id = _arith(em, "//", ij, size_gj)
    off_i = _arith(em, "*", group_id, size_g)               # first row of the group
    rows_left = _arith(em, "-", size_i, off_i)
    if sem.is_py_scalar(rows_left) and sem.is_py_scalar(size_g):
        group_rows = min(rows_left, size_g)
    else:
        group_rows = sem.minmax(em, "min", rows_left, size_g)  # the last group may be shorter
    ij = _arith(em, "%", ij, size_gj)
    new_i = _arith(em, "+", off_i, _arith(em, "%", ij, group_rows))
    new_j = _arith(em, "//", ij, group_rows)
    return new_i, new_j


@impl
def condition(em: Emitter, arg1: Any, disable_licm: Any = False) -> Any:
    if not isinstance(disable_licm, bool | int):
        raise SemanticError(f"tl.condition: disable_licm must be a compile-time bool, got {sem.py_desc(disable_licm)}")
    return arg1


@impl
def tuple_(em: Emitter, args: Any = ()) -> Any:
    if isinstance(args, SSAValue) or not isinstance(args, tuple | list):
        raise SemanticError(f"tl.tuple needs a tuple or list of values, got {sem.py_desc(args)}")
    return tuple(args)


@impl
def slice_(em: Emitter, start: Any, stop: Any, step: Any = None) -> Any:
    for part in (start, stop, step):
        if isinstance(part, SSAValue):
            raise SemanticError("tl.slice bounds must be compile-time integers")
    return slice(start, stop, step)


# --------------------------------------------------------------------------------------
# tl.target_info
# --------------------------------------------------------------------------------------

_TARGET: contextvars.ContextVar[str | None] = contextvars.ContextVar("sparsecc_target", default=None)
"""The target (`sm_90a`) of the kernel being compiled; None on the interpreter."""


@contextmanager
def compiling_for(target: str | None) -> Iterator[None]:
    """Answer `tl.target_info` questions for `target` while a kernel's TTIR is generated."""
    token = _TARGET.set(target)
    try:
        yield
    finally:
        _TARGET.reset(token)


def _capability(target: str) -> int:
    """`sm_90a` -> 90."""
    digits = "".join(c for c in target.removeprefix("sm_") if c.isdigit())
    return int(digits) if digits else 0


@impl
def current_target(em: Emitter) -> Any:
    return _TARGET.get()


@impl
def is_cuda(em: Emitter) -> Any:
    return _TARGET.get() is not None


@impl
def cuda_capability_geq(em: Emitter, major: Any, minor: Any = 0) -> Any:
    major, minor = _int(major, "cuda_capability_geq's major"), _int(minor, "cuda_capability_geq's minor")
    target = _TARGET.get()
    return target is not None and _capability(target) >= major * 10 + minor


for _amd in ("is_hip", "is_hip_cdna3", "is_hip_cdna4", "is_hip_gfx1250"):
    IMPLS[_amd] = lambda em: False


# --------------------------------------------------------------------------------------
# Tensor descriptors
# --------------------------------------------------------------------------------------


class Descriptor:
    """A `tl.make_tensor_descriptor` while the kernel compiles: the base pointer, the shape and
    strides (SSA values or ints) and the tile shape; `.load`/`.store` are its methods."""

    def __init__(self, base: SSAValue, shape: tuple[Any, ...], strides: tuple[Any, ...],
                 block_shape: tuple[int, ...], padding: str):
        self.base = base
        self.shape = shape
        self.strides = strides
        self.block_shape = block_shape
        self.padding = padding

    @property
    def dtype(self) -> tl.dtype:
        assert isinstance(self.base.type, PointerType)
        return tl_dtype(self.base.type.pointee)

    @property
    def block_type(self) -> tl.block_type:
        return tl.block_type(self.dtype, self.block_shape)

    @property
    def load(self) -> Any:
        return BoundBuiltin(self, "load_tensor_descriptor")  # type: ignore[arg-type]

    @property
    def store(self) -> Any:
        return BoundBuiltin(self, "store_tensor_descriptor")  # type: ignore[arg-type]

    def __repr__(self) -> str:
        return f"tensor descriptor of {list(self.block_shape)} {self.dtype} tiles"


def _is_one(x: Any) -> bool:
    """Whether a stride is the constant 1 (an int, or an argument specialized to 1)."""
    if isinstance(x, SSAValue):
        owner = x.owner
        return (isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr)
                and owner.value.value.data == 1)
    return x == 1 and not isinstance(x, bool)


@impl
def make_tensor_descriptor(em: Emitter, base: Any, shape: Any, strides: Any, block_shape: Any,
                           padding_option: Any = "zero") -> Any:
    b = sem.require_value(base, "tl.make_tensor_descriptor's base")
    if not isinstance(b.type, PointerType) or b.type.is_block or sem.is_tensor(b):
        raise SemanticError(f"tl.make_tensor_descriptor's base must be a pointer argument, got {describe(b.type)}")
    sem.require_dense(b, "tl.make_tensor_descriptor")
    dims, st = _seq(shape, "shape"), _seq(strides, "strides")
    if not 1 <= len(dims) <= 5:
        raise SemanticError(f"tl.make_tensor_descriptor needs 1 to 5 dimensions (as in Triton), got {len(dims)}")
    block = _shape(block_shape, "block_shape")
    for what, vals in (("strides", st), ("block_shape", block)):
        if len(vals) != len(dims):
            raise SemanticError(f"tl.make_tensor_descriptor: {what} has {len(vals)} entries but shape has {len(dims)}")
    elem_bytes = bitwidth(b.type.pointee) // 8
    if block[-1] * elem_bytes < 16:
        raise SemanticError(f"a descriptor's block shape must span at least 16 bytes in the last dimension, got "
                            f"{block[-1]} * {elem_bytes} = {block[-1] * elem_bytes} bytes (as in Triton)")
    if not _is_one(st[-1]):
        raise SemanticError(f"a tensor descriptor's last stride must be 1 (the rows are contiguous), got "
                            f"{sem.py_desc(st[-1])}")
    for s in st[:-1]:
        if isinstance(s, int) and (s * elem_bytes) % 16:
            raise SemanticError(f"a tensor descriptor's leading strides must be multiples of 16 bytes, got {s} "
                                f"elements of {elem_bytes} bytes (as in Triton)")
    if padding_option not in ("zero", "nan"):
        raise SemanticError(f"padding_option must be \"zero\" or \"nan\", got {padding_option!r}")
    if padding_option == "nan" and not tl_dtype(b.type.pointee).is_floating():
        raise SemanticError("padding_option=\"nan\" needs a floating-point tensor (as in Triton)")
    for x in (*dims, *st):  # checked here; each tile's block pointer converts them
        if isinstance(x, bool) or not (isinstance(x, int) or (isinstance(x, SSAValue) and not sem.is_tensor(x)
                                                              and is_int(sem.elem(x)))):
            raise SemanticError(f"a tensor descriptor's shape and strides must be integers, got {sem.py_desc(x)}")
    return Descriptor(b, dims, st, block, padding_option)


def _descriptor(desc: Any, what: str) -> Descriptor:
    if not isinstance(desc, Descriptor):
        raise SemanticError(f"{what} needs a tensor descriptor (from tl.make_tensor_descriptor), got "
                            f"{sem.py_desc(desc)}")
    return desc


def _tile_pointer(em: Emitter, d: Descriptor, offsets: Any, what: str) -> SSAValue:
    offs = _seq(offsets, f"{what}'s offsets")
    if len(offs) != len(d.block_shape):
        raise SemanticError(f"{what} needs {len(d.block_shape)} offsets (one per dimension), got {len(offs)}")
    order = tuple(range(len(d.block_shape) - 1, -1, -1))  # row-major: the last dimension is contiguous
    return IMPLS["make_block_ptr"](em, d.base, d.shape, d.strides, offs, d.block_shape, order)


@impl
def load_tensor_descriptor(em: Emitter, desc: Any, offsets: Any) -> Any:
    d = _descriptor(desc, "tl.load_tensor_descriptor")
    p = _tile_pointer(em, d, offsets, "a descriptor load")
    every_dim = tuple(range(len(d.block_shape)))
    return IMPLS["load"](em, p, None, None, every_dim, d.padding, "", "", False)


@impl
def store_tensor_descriptor(em: Emitter, desc: Any, offsets: Any, value: Any) -> Any:
    d = _descriptor(desc, "tl.store_tensor_descriptor")
    v = sem.require_value(value, "a descriptor store's value")
    if sem.shape(v) != d.block_shape:
        raise SemanticError(f"a descriptor store needs a value of the block shape {list(d.block_shape)}, got "
                            f"{describe(v.type)} (as in Triton, it is not broadcast)")
    p = _tile_pointer(em, d, offsets, "a descriptor store")
    return IMPLS["store"](em, p, v, None, tuple(range(len(d.block_shape))), "", "")



# --------------------------------------------------------------------------------------
# tl.inline_asm_elementwise
# --------------------------------------------------------------------------------------


@impl
def inline_asm_elementwise(em: Emitter, asm: Any, constraints: Any, args: Any, dtype: Any, is_pure: Any,
                           pack: Any) -> Any:
    if not isinstance(asm, str) or not isinstance(constraints, str):
        raise SemanticError("tl.inline_asm_elementwise: asm and constraints must be compile-time strings")
    p = _int(pack, "tl.inline_asm_elementwise's pack")
    if p < 1:
        raise SemanticError(f"tl.inline_asm_elementwise's pack must be at least 1, got {p}")
    if not isinstance(is_pure, bool | int):
        raise SemanticError("tl.inline_asm_elementwise's is_pure must be a compile-time bool")
    values = [sem.require_value(a, "an argument of tl.inline_asm_elementwise") if not sem.is_py_scalar(a)
              else sem.to_value(em, a, None, "an argument of tl.inline_asm_elementwise")
              for a in _seq(args, "tl.inline_asm_elementwise's args")]
    for v in values:
        sem.require_dense(v, "tl.inline_asm_elementwise")
        if isinstance(sem.elem(v), PointerType):
            raise SemanticError("tl.inline_asm_elementwise's arguments must be numbers, not pointers")
    dtypes = tuple(dtype) if isinstance(dtype, tuple | list) else (dtype,)
    results = [ir_type(_dtype(d, "tl.inline_asm_elementwise's dtype")) for d in dtypes]
    values = sem.broadcast_all(em, *values) if values else values
    shape = sem.shape(values[0]) if values else ()
    types = [TensorType(t, list(shape)) if shape else t for t in results]
    op = tt.ElementwiseInlineAsmOp(asm, constraints, values, types, bool(is_pure), p)
    em.insert(op)
    out = list(op.results)
    return out[0] if not isinstance(dtype, tuple | list) else tuple(out)
