"""Runtime values of the CPU interpreter: dtype mapping, memory buffers and pointer kinds.

Scalars and tiles are torch tensors of the exact IR element type (scalars are 0-d), so f16
math stays in f16 and integer arithmetic wraps at its width. Pointers are a flat buffer (the
argument tensor's memory seen as a 1-D array of its dtype, from the tensor's first element to
its last) plus element offsets: an int for a scalar pointer, an int64 tensor for a tensor of
pointers, and the Triton block-pointer fields for a block pointer.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float8E4M3FNType,
    Float8E5M2Type,
    Float16Type,
    Float32Type,
    Float64Type,
    IndexType,
    IntegerType,
    TensorType,
)
from xdsl.ir import Attribute

__all__ = [
    "InterpreterError",
    "Buffer",
    "ScalarPtr",
    "TensorPtr",
    "BlockPtr",
    "torch_dtype",
    "int_width",
    "flat_buffer",
]


class InterpreterError(Exception):
    """A kernel did something the hardware would not allow (or the interpreter cannot run)."""


def torch_dtype(ty: Attribute) -> torch.dtype:
    """The torch dtype holding values of IR scalar (or tensor element) type `ty`."""
    if isinstance(ty, TensorType):
        ty = ty.element_type
    if isinstance(ty, IntegerType):
        width = ty.width.data
        table = {1: torch.bool, 8: torch.int8, 16: torch.int16, 32: torch.int32, 64: torch.int64}
        if width in table:
            return table[width]
    elif isinstance(ty, IndexType):
        return torch.int64
    elif isinstance(ty, Float16Type):
        return torch.float16
    elif isinstance(ty, BFloat16Type):
        return torch.bfloat16
    elif isinstance(ty, Float32Type):
        return torch.float32
    elif isinstance(ty, Float64Type):
        return torch.float64
    elif isinstance(ty, Float8E4M3FNType):
        return torch.float8_e4m3fn
    elif isinstance(ty, Float8E5M2Type):
        return torch.float8_e5m2
    raise InterpreterError(f"the interpreter has no runtime representation for type {ty}")


def int_width(ty: Attribute) -> int:
    """Bit width of an integer (or index) type, elementwise for tensors."""
    if isinstance(ty, TensorType):
        ty = ty.element_type
    if isinstance(ty, IndexType):
        return 64
    assert isinstance(ty, IntegerType)
    return ty.width.data


@dataclass(frozen=True)
class Buffer:
    """A kernel argument's memory: `data` is 1-D and a pointer's element offset `o` (0 = the
    tensor's first element, its data pointer) is `data[o + origin]`.

    For a tensor whose elements are consecutive (contiguous, or a permutation of a contiguous
    one), `data` runs from its first element to its last and `origin` is 0: a view `base[:16]`
    gives 16 elements, so an access past them is an error even though `base` has more.
    A strided view that skips elements (`x[:, :8]` of a wider matrix, `x[::2]`) is passed as
    Triton passes it, its raw data pointer, and the kernel addresses it with the strides it is
    given: `data` is then its whole storage (`origin` = the view's storage offset), and any
    element of that storage may be accessed, as on the GPU."""

    data: torch.Tensor
    name: str
    origin: int = 0
    strided: bool = False
    """True for a strided view bounded by its storage (see above)."""

    @property
    def size(self) -> int:
        return self.data.numel()


def _fills_its_span(t: torch.Tensor) -> bool:
    """Whether the elements of `t` are exactly the `span` consecutive ones from its first: its
    dims, ordered by stride, are a contiguous layout (a permutation of a contiguous tensor)."""
    expected = 1
    for size, stride in sorted((s, st) for s, st in zip(t.shape, t.stride()) if s != 1):
        if stride != expected:
            return False
        expected *= size
    return True


def flat_buffer(t: torch.Tensor, name: str) -> Buffer:
    """`t`'s memory as a flat 1-D tensor sharing `t`'s storage (so stores land in `t`): from its
    first element to its last, or its whole storage for a strided view (see `Buffer`)."""
    span = 0 if t.numel() == 0 else 1 + sum((s - 1) * st for s, st in zip(t.shape, t.stride()))
    flat = torch.empty(0, dtype=t.dtype, device=t.device)
    if span and not _fills_its_span(t):
        flat.set_(t.untyped_storage(), 0, (t.untyped_storage().nbytes() // t.element_size(),), (1,))
        return Buffer(flat, name, t.storage_offset(), strided=True)
    flat.set_(t.untyped_storage(), t.storage_offset(), (span,), (1,))
    return Buffer(flat, name)


@dataclass(frozen=True)
class ScalarPtr:
    buf: Buffer
    offset: int


@dataclass(frozen=True)
class TensorPtr:
    buf: Buffer
    offsets: torch.Tensor  # int64, the tensor's shape


@dataclass(frozen=True)
class BlockPtr:
    buf: Buffer
    base: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    offsets: tuple[int, ...]
    block_shape: tuple[int, ...]
    order: tuple[int, ...]
