"""`SparseTensor`: a 2:4-sparse matrix in the NV24 format (values + int16 metadata), or a 1:2
float32 one in NV12 (values + int32 pairs of metadata words; tf32 tensor cores).

It is deliberately not a `torch.Tensor` subclass and has no `data_ptr`: `@sparsecc.jit` recognises
it by duck typing (`values`, `meta`, `encoding`) and passes it to kernels as the two arrays
`values` and `meta` (the arrays its format, `sparsecc.formats.nv24`, decomposes into). Shape,
strides and size describe the DENSE logical M x K matrix, because kernels address a sparse
operand as if it were dense and the compiler rewrites the addressing.
"""

from __future__ import annotations

from typing import Any

import torch

from sparsecc import formats
from sparsecc.runtime.codec import (
    compress_arrays,
    decode_meta_tile,
    meta_array_dtype,
    runtime_dtypes,
)
from sparsecc.runtime.matrix_like import CompressedMatrix

__all__ = ["GROUP", "META_CHUNK", "META_PAD_WORD", "NV24", "SUPPORTED_DTYPES", "SparseTensor"]

_FORMAT = formats.NV24
NV24 = _FORMAT.name
SUPPORTED_DTYPES: tuple[torch.dtype, ...] = runtime_dtypes(_FORMAT)
GROUP = _FORMAT.group.size  # a 2:4 group: 4 consecutive columns, at most 2 nonzeros
META_CHUNK = _FORMAT.meta.word_cols  # columns per 16-bit metadata word (= rows per row block)
META_PAD_WORD = _FORMAT.meta.pad_word  # idx (0, 1) in all four groups; fills rows past M
_WITH_TENSOR_FORM = (formats.NV24, formats.NV12)
"""The formats a SparseTensor holds (one pair of arrays each)."""


class SparseTensor(CompressedMatrix):
    """A 2:4-sparse M x K matrix: `values` (M x K/2) and `meta` (int16, ceil(M/16) x K).

    Build one with `sparsecc.compress(dense)`; the constructor only checks that the arrays fit
    the format (metadata contents are not inspected, that would cost a device sync).
    """

    __slots__ = ("_format", "_meta", "_shape", "_values")

    def __init__(self, values: torch.Tensor, meta: torch.Tensor,
                 shape: tuple[int, int] | torch.Size, encoding: str = NV24) -> None:
        fmt = formats.get(encoding) if isinstance(encoding, str) else None
        if fmt not in _WITH_TENSOR_FORM:
            why = "has no SparseTensor form yet" if fmt is not None else "is not a sparse format"
            names = ", ".join(repr(f.name) for f in _WITH_TENSOR_FORM)
            raise ValueError(f"SparseTensor: unsupported encoding {encoding!r}: it {why} (supported: {names})")
        if not isinstance(values, torch.Tensor) or not isinstance(meta, torch.Tensor):
            raise TypeError("SparseTensor: values and meta must be torch.Tensors, got "
                            f"{type(values).__name__} and {type(meta).__name__}")
        dims = tuple(int(d) for d in shape)
        if len(dims) != 2:
            raise ValueError(f"SparseTensor: shape must be 2-D (M, K), got {tuple(shape)}")
        m, k = dims
        if m < 1 or k < 1 or k % fmt.tile_multiple[1] != 0:
            raise ValueError(
                f"SparseTensor: shape {dims} needs M >= 1 and K a positive multiple of "
                f"{fmt.tile_multiple[1]}")
        dtypes = runtime_dtypes(fmt)
        if values.dtype not in dtypes:
            supported = ", ".join(str(d) for d in dtypes)
            raise TypeError(f"SparseTensor: unsupported values dtype {values.dtype} "
                            f"({fmt.name} supports {supported})")
        if meta.dtype != meta_array_dtype(fmt):
            raise TypeError(f"SparseTensor: meta must be {meta_array_dtype(fmt)}, got {meta.dtype}")
        values_shape = fmt.values.shape(formats.INT, m, k)
        if tuple(values.shape) != values_shape:
            raise ValueError(f"SparseTensor: values of a {m}x{k} matrix must have shape "
                             f"{values_shape}, got {tuple(values.shape)}")
        meta_shape = fmt.metadata.shape(formats.INT, m, k)
        if tuple(meta.shape) != meta_shape:
            raise ValueError(f"SparseTensor: meta of a {m}x{k} matrix must have shape {meta_shape}, "
                             f"got {tuple(meta.shape)}")
        if values.device != meta.device:
            raise ValueError(f"SparseTensor: values on {values.device} but meta on {meta.device}")
        # Kernels index both arrays as dense row-major buffers.
        self._values = values.contiguous()
        self._meta = meta.contiguous()
        self._shape = torch.Size(dims)
        self._format = fmt

    @classmethod
    def from_dense(cls, dense: torch.Tensor, encoding: str | None = None) -> SparseTensor:
        """Same as `sparsecc.compress(dense, encoding)`."""
        if encoding is not None:
            fmt = formats.lookup(encoding)
        elif isinstance(dense, torch.Tensor):
            fmt = formats.for_dtype(str(dense.dtype).removeprefix("torch."))
        else:
            fmt = _FORMAT
        values, meta = compress_arrays(dense, fmt)
        return cls(values, meta, tuple(dense.shape), fmt.name)

    @property
    def dtype(self) -> torch.dtype:
        return self._values.dtype

    def to_dense(self) -> torch.Tensor:
        """The dense M x K matrix (the exact inverse of `compress` on 2:4 input)."""
        return decode_meta_tile(self._values, self._meta, self._format)

    def to(self, device: torch.device | str | int | torch.dtype | None = None,
           dtype: torch.dtype | None = None, non_blocking: bool = False) -> SparseTensor:
        """Move to `device` and/or cast values to `dtype` (fp16/bf16); `to(dtype)` also works."""
        if isinstance(device, torch.dtype):
            device, dtype = None, device
        values, meta = self._values, self._meta
        if dtype is not None:
            values = values.to(dtype=dtype)
        if device is not None:
            values = values.to(device=device, non_blocking=non_blocking)
            meta = meta.to(device=device, non_blocking=non_blocking)
        if values is self._values and meta is self._meta:
            return self
        return SparseTensor(values, meta, self._shape, self.encoding)

    def __repr__(self) -> str:
        m, k = self._shape
        return (f"SparseTensor(shape=({m}, {k}), dtype={self.dtype}, device={self.device}, "
                f"encoding={self.encoding!r}, values={tuple(self._values.shape)}, "
                f"meta={tuple(self._meta.shape)})")

    def __reduce__(self) -> tuple[Any, ...]:
        return (SparseTensor, (self._values, self._meta, tuple(self._shape), self.encoding))
