"""The `tl` namespace: dtypes, `constexpr` and the kernel builtins.

Builtins here are markers. They have the real signatures (so the code generator can bind and
check a call's arguments against them) but no bodies: `sparsecc.frontend` maps each marker to
the code that emits its IR. Called from plain Python they raise `OutsideKernelError`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


class OutsideKernelError(RuntimeError):
    """A `tl.*` builtin was called from plain Python instead of inside a @sparsecc.jit kernel."""


# --------------------------------------------------------------------------------------
# constexpr and dtypes
# --------------------------------------------------------------------------------------


class constexpr:  # noqa: N801 - the Triton spelling users know
    """Annotation for compile-time parameters (`BLOCK: tl.constexpr`), and a wrapper for
    compile-time globals (`SIZE = tl.constexpr(16)`)."""

    def __init__(self, value: Any):
        self.value = value.value if isinstance(value, constexpr) else value

    def __repr__(self) -> str:
        return f"constexpr({self.value!r})"

    def __eq__(self, other: object) -> bool:
        other_v = other.value if isinstance(other, constexpr) else other
        return bool(self.value == other_v)

    def __hash__(self) -> int:
        return hash(self.value)


class dtype:  # noqa: N801
    """A scalar element type (`tl.float16`, ...); `name` is its signature spelling ("fp16")."""

    FLOATS = ("fp8e4nv", "fp8e5", "fp16", "bf16", "fp32", "fp64")
    INTS = ("i1", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64")

    def __init__(self, name: str):
        if name not in self.FLOATS + self.INTS:
            raise ValueError(f"unknown dtype '{name}'")
        self.name = name

    def is_floating(self) -> bool:
        return self.name in self.FLOATS

    def is_int(self) -> bool:
        return self.name in self.INTS

    def is_ptr(self) -> bool:
        return False

    def is_int_unsigned(self) -> bool:
        """tl.uint8 ... tl.uint64 (`tl.uint32.is_int_unsigned()` is True; int1 is not)."""
        return self.name[0] == "u"

    def is_int_signed(self) -> bool:
        """tl.int8 ... tl.int64 (`tl.int32.is_int_signed()` is True; int1 is not)."""
        return self.name in ("i8", "i16", "i32", "i64")

    @property
    def primitive_bitwidth(self) -> int:
        return {"i1": 1, "i8": 8, "fp8e4nv": 8, "fp8e5": 8, "i16": 16, "fp16": 16, "bf16": 16,
                "i32": 32, "fp32": 32, "i64": 64, "fp64": 64,
                "u8": 8, "u16": 16, "u32": 32, "u64": 64}[self.name]

    @property
    def int_bitwidth(self) -> int:
        return self.primitive_bitwidth

    # Triton's per-type predicates, which kernels branch on at compile time
    # (`if x.dtype.is_bf16(): ...`, `tl.constexpr(x.dtype.is_int64())`)
    def is_fp8(self) -> bool:
        return self.name in ("fp8e4nv", "fp8e5")

    def is_fp8e4nv(self) -> bool:
        return self.name == "fp8e4nv"

    def is_fp8e5(self) -> bool:
        return self.name == "fp8e5"

    def is_fp16(self) -> bool:
        return self.name == "fp16"

    def is_bf16(self) -> bool:
        return self.name == "bf16"

    def is_fp32(self) -> bool:
        return self.name == "fp32"

    def is_fp64(self) -> bool:
        return self.name == "fp64"

    def is_standard_floating(self) -> bool:
        """fp16, bf16, fp32, fp64 (not the fp8 formats), as Triton's."""
        return self.name in ("fp16", "bf16", "fp32", "fp64")

    def is_int1(self) -> bool:
        return self.name == "i1"

    is_bool = is_int1

    def is_int8(self) -> bool:
        return self.name == "i8"

    def is_int16(self) -> bool:
        return self.name == "i16"

    def is_int32(self) -> bool:
        return self.name == "i32"

    def is_int64(self) -> bool:
        return self.name == "i64"

    def is_uint8(self) -> bool:
        return self.name == "u8"

    def is_uint16(self) -> bool:
        return self.name == "u16"

    def is_uint32(self) -> bool:
        return self.name == "u32"

    def is_uint64(self) -> bool:
        return self.name == "u64"

    def is_block(self) -> bool:
        return False

    def is_void(self) -> bool:
        return False

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.name == self.name  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.name))

    def __repr__(self) -> str:
        return f"tl.{_PY_NAMES.get(self.name, self.name)}"

    __str__ = __repr__


class pointer_type(dtype):  # noqa: N801
    """The dtype of a pointer argument; `element_ty` is what it points to. `encoding` is
    "NV24" for a pointer into a 2:4-sparse tensor."""

    def __init__(self, element_ty: dtype, encoding: str | None = None):
        self.element_ty = element_ty
        self.encoding = encoding
        self.name = f"*{element_ty.name}" + (f":{encoding}" if encoding else "")

    def is_ptr(self) -> bool:
        return True

    def is_floating(self) -> bool:
        return False

    def is_int(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"pointer<{self.element_ty!r}{', ' + self.encoding if self.encoding else ''}>"

    __str__ = __repr__


float8e4nv = dtype("fp8e4nv")
float8e5 = dtype("fp8e5")
float16 = dtype("fp16")
bfloat16 = dtype("bf16")
float32 = dtype("fp32")
float64 = dtype("fp64")
int1 = dtype("i1")
int8 = dtype("i8")
int16 = dtype("i16")
int32 = dtype("i32")
int64 = dtype("i64")
uint8 = dtype("u8")
uint16 = dtype("u16")
uint32 = dtype("u32")
uint64 = dtype("u64")

_PY_NAMES = {"fp8e4nv": "float8e4nv", "fp8e5": "float8e5", "fp16": "float16", "bf16": "bfloat16", "fp32": "float32",
             "fp64": "float64", "i1": "int1", "i8": "int8", "i16": "int16", "i32": "int32",
             "i64": "int64", "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64"}

DTYPES: dict[str, dtype] = {d.name: d for d in (float8e4nv, float8e5, float16, bfloat16, float32, float64,
                                                   int1, int8, int16, int32, int64,
                                                   uint8, uint16, uint32, uint64)}
"""Signature spelling -> dtype."""


# --------------------------------------------------------------------------------------
# Builtin markers
# --------------------------------------------------------------------------------------

BUILTINS: dict[str, Callable[..., Any]] = {}
"""Marker name -> marker; the frontend has one implementation per name."""


def builtin(fn: F) -> F:
    """Register `fn` as a kernel builtin whose calls outside a kernel fail clearly."""

    @functools.wraps(fn)
    def marker(*args: Any, **kwargs: Any) -> Any:
        raise OutsideKernelError(
            f"tl.{fn.__name__}() can only be called inside a @sparsecc.jit kernel "
            "(it is compiled, not executed by Python)"
        )

    marker.__sparsecc_builtin__ = fn.__name__  # type: ignore[attr-defined]
    BUILTINS[fn.__name__] = marker
    return marker  # type: ignore[return-value]


def builtin_name(obj: Any) -> str | None:
    """The builtin name of a marker, or None for anything else."""
    return getattr(obj, "__sparsecc_builtin__", None)


@builtin
def program_id(axis: int) -> Any:
    """This program's index along grid axis 0, 1 or 2."""


@builtin
def num_programs(axis: int) -> Any:
    """The grid size along axis 0, 1 or 2."""


@builtin
def arange(start: int, end: int) -> Any:
    """The i32 tensor [start, end)."""


@builtin
def zeros(shape: Any, dtype: Any) -> Any:
    """A tensor of zeros."""


@builtin
def full(shape: Any, value: Any, dtype: Any) -> Any:
    """A tensor filled with `value`."""


@builtin
def cdiv(x: Any, div: Any) -> Any:
    """Ceiling division (x + div - 1) // div."""


@builtin
def make_block_ptr(base: Any, shape: Any, strides: Any, offsets: Any, block_shape: Any,
                   order: Any) -> Any:
    """A block pointer: a `block_shape` tile at `offsets` inside a `shape` tensor at `base`."""


@builtin
def advance(base: Any, offsets: Any) -> Any:
    """Move a block pointer by `offsets` (elements per dimension)."""


@builtin
def load(pointer: Any, mask: Any = None, other: Any = None, boundary_check: Any = (),
         padding_option: str = "", cache_modifier: str = "", eviction_policy: str = "",
         volatile: bool = False) -> Any:
    """Load through a pointer, a tensor of pointers, or a block pointer."""


@builtin
def store(pointer: Any, value: Any, mask: Any = None, boundary_check: Any = (),
          cache_modifier: str = "", eviction_policy: str = "") -> Any:
    """Store through a pointer, a tensor of pointers, or a block pointer."""


@builtin
def dot(input: Any, other: Any, acc: Any = None, out_dtype: Any = float32,
        allow_tf32: Any = None, input_precision: Any = None) -> Any:
    """Matrix product of two 2-D tiles plus `acc`; `input` may be 2:4 sparse."""


@builtin
def atomic_add(pointer: Any, val: Any, mask: Any = None, sem: Any = None, scope: Any = None) -> Any:
    """Per element, atomically `*pointer += val`; returns the old values. The split-K idiom:
    `tl.atomic_add(C + offs, partial, mask=offs < n)` (fp32, int32, int64, fp16; bf16 on sm_90;
    `sem` is acq_rel unless given (as in Triton), `scope` GPU; see `sparsecc.language.atomics`)."""


@builtin
def cast(input: Any, dtype: Any, fp_downcast_rounding: Any = None, bitcast: bool = False) -> Any:
    """`input` converted to `dtype` (like `x.to(dtype)`); `bitcast=True` reinterprets the bits
    of each element instead (same width): `tl.cast(bits, tl.float32, bitcast=True)`."""


@builtin
def reshape(input: Any, *shape: Any, can_reorder: bool = False) -> Any:
    """The same elements, in row-major order, with a new shape (a power of two per dim):
    `tl.reshape(x, (BLOCK_M * 2, BLOCK_N // 2))` or `x.reshape(BLOCK_M * 2, BLOCK_N // 2)`.
    `can_reorder=True` is accepted (sparsecc keeps the row-major order anyway); an empty shape
    turns a one-element tensor into a scalar."""


@builtin
def view(input: Any, *shape: Any) -> Any:
    """Triton's deprecated `tl.reshape(input, shape, can_reorder=True)`: `x.view(4, 8)`."""


@builtin
def ravel(x: Any, can_reorder: bool = False) -> Any:
    """The elements of `x` as a 1-D tensor, row-major: `flat = tl.ravel(tile)` (or `tile.ravel()`)."""


@builtin
def trans(input: Any, *dims: Any) -> Any:
    """The dims of `input` permuted (`tl.permute`); without `dims`, the last two swapped (a
    batched 2-D transpose): `tl.dot(x, tl.trans(w))` with `w` a BLOCK_N×BLOCK_K tile, or `w.T`.
    A 2-D transpose next to loads or stores is folded into them (no data moves)."""


@builtin
def permute(input: Any, *dims: Any) -> Any:
    """Result dim i is `input`'s dim dims[i]: `tl.permute(x, (2, 0, 1))` or `x.permute(2, 0, 1)`."""


@builtin
def join(a: Any, b: Any) -> Any:
    """`a` and `b` (broadcast to one shape) side by side in a new minor dim of size 2:
    `tl.join(re, im)` of two (M, N) tiles is (M, N, 2); two scalars give a (2,) tensor."""


@builtin
def split(a: Any) -> Any:
    """The inverse of `tl.join`: `re, im = tl.split(z)` for z of shape (..., 2) (or `z.split()`);
    a (2,) tensor gives two scalars."""


@builtin
def interleave(a: Any, b: Any) -> Any:
    """The elements of `a` and `b` alternating along the last dim: (M, N) and (M, N) give
    (M, 2N) with out[:, 0::2] = a and out[:, 1::2] = b (`tl.join(a, b).reshape(M, 2 * N)`)."""


@builtin
def cat(input: Any, other: Any, can_reorder: bool = False, dim: int = 0) -> Any:
    """`other` after `input` along `dim` (both of one shape): `tl.cat(lo, hi, dim=1)`. With
    `can_reorder=True` (1-D only, as in Triton) the order is free; sparsecc keeps it."""


@builtin
def broadcast(input: Any, other: Any) -> Any:
    """Both operands broadcast to their common shape: `x2, y2 = tl.broadcast(x[:, None], y[None, :])`."""


@builtin
def broadcast_to(input: Any, *shape: Any) -> Any:
    """`input` broadcast to `shape`: `tl.broadcast_to(bias[None, :], (BLOCK_M, BLOCK_N))`."""


@builtin
def expand_dims(input: Any, axis: Any) -> Any:
    """`input` with new size-1 dims at `axis` (an int or a tuple; positions in the result):
    `tl.expand_dims(x, 1)` is `x[:, None]`."""


@builtin
def multiple_of(input: Any, values: Any) -> Any:
    """Triton's promise that `input` is a multiple of `values`; accepted and returned unchanged:
    sparsecc derives divisibility from `i32:16` specialization and its own analyses, e.g.
    `offs = tl.multiple_of(pid * BLOCK, BLOCK)`."""


@builtin
def max_contiguous(input: Any, values: Any) -> Any:
    """Triton's promise that the first `values` entries of `input` are contiguous; accepted and
    returned unchanged (raise-pointer-tensors proves contiguity from the index arithmetic):
    `offs = tl.max_contiguous(tl.arange(0, BLOCK), BLOCK)`."""


@builtin
def max_constancy(input: Any, values: Any) -> Any:
    """Triton's promise that runs of `values` entries of `input` are equal; accepted and returned
    unchanged: `tl.max_constancy(rows, 16)`."""


@builtin
def zeros_like(input: Any) -> Any:
    """A tensor of zeros with `input`'s shape and dtype: `acc = tl.zeros_like(x)`."""


@builtin
def where(condition: Any, x: Any, y: Any) -> Any:
    """Elementwise `x if condition else y`."""


@builtin
def maximum(x: Any, y: Any, propagate_nan: Any = 0) -> Any:
    """Elementwise maximum; a NaN loses to a number unless `propagate_nan=tl.PropagateNan.ALL`
    (Triton's default `PropagateNan.NONE` is 0): `tl.maximum(x, 0.0)`."""


@builtin
def minimum(x: Any, y: Any, propagate_nan: Any = 0) -> Any:
    """Elementwise minimum, NaN as in `tl.maximum`: `tl.minimum(x, limit)`."""


@builtin
def sum(input: Any, axis: Any = None, keep_dims: bool = False, dtype: Any = None) -> Any:  # noqa: A001
    """Sum along `axis` (all axes if None), in `dtype` when given (else ints narrower than 32
    bits sum in int32, as in Triton): `tl.sum(x, axis=1, keep_dims=True)`."""


@builtin
def max(input: Any, axis: Any = None, return_indices: bool = False,  # noqa: A001
        return_indices_tie_break_left: bool = True, keep_dims: bool = False) -> Any:
    """Maximum along `axis` (all axes if None); NaN is ignored unless every element is NaN, and
    types narrower than 32 bits reduce in float32/int32 (Triton's semantics). With
    `return_indices=True`, `(values, indices)` of the maxima (the smallest index among equal
    maxima): `m, i = tl.max(x, axis=0, return_indices=True)`."""


@builtin
def min(input: Any, axis: Any = None, return_indices: bool = False,  # noqa: A001
        return_indices_tie_break_left: bool = True, keep_dims: bool = False) -> Any:
    """Minimum along `axis`, as `tl.max`: `m, i = tl.min(x, axis=0, return_indices=True)`."""


@builtin
def static_range(arg1: int, arg2: int | None = None, step: int = 1) -> Any:
    """`for i in tl.static_range(n)`: a loop unrolled at compile time (i is a constexpr)."""
