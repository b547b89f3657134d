"""Runtime values of the CPU interpreter: dtype mapping, memory buffers and pointer kinds.

Scalars and tiles are torch tensors of the exact IR element type (scalars are 0-d), so f16
math stays in f16 and integer arithmetic wraps at its width. Pointers are a flat buffer (the
argument tensor's storage seen as a 1-D array of its dtype, starting at the tensor's first
element) plus element offsets: an int for a scalar pointer, an int64 tensor for a tensor of
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
    """A kernel argument's memory: `data` is 1-D, element 0 is the tensor's first element."""

    data: torch.Tensor
    name: str

    @property
    def size(self) -> int:
        return self.data.numel()


def flat_buffer(t: torch.Tensor, name: str) -> Buffer:
    """View `t`'s storage from its first element to the storage's end as a flat 1-D tensor."""
    itemsize = t.element_size()
    storage = t.untyped_storage()
    n = storage.nbytes() // itemsize - t.storage_offset()
    flat = torch.empty(0, dtype=t.dtype, device=t.device)
    flat.set_(storage, t.storage_offset(), (max(n, 0),), (1,))
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
