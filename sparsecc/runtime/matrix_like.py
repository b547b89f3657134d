"""What a compressed matrix shares with a dense one: the dense logical shape, strides and device,
so a kernel can be handed a `SparseTensor` or a `QuantizedSparseTensor` where a torch matrix went
(kernels address a sparse operand as if dense; the compiler rewrites the addressing)."""

from __future__ import annotations

from typing import Any

import torch

from sparsecc.formats import SparseFormat

__all__ = ["CompressedMatrix"]


class CompressedMatrix:
    """Tensor-like surface of a compressed M x K matrix: the arrays of its format `_format`
    (`_values`, `_meta`, ...: each array's `suffix` names the attribute that holds it) and the
    dense logical shape `_shape`; subclasses define `to()` and those slots.

        >>> import sparsecc, torch
        >>> w = sparsecc.compress(sparsecc.prune_2to4(torch.randn(8, 32, dtype=torch.float16)))
        >>> w.shape, w.stride(), w.numel(), w.device.type
        (torch.Size([8, 32]), (32, 1), 256, 'cpu')
    """

    __slots__ = ()
    _format: SparseFormat
    _shape: torch.Size
    _values: torch.Tensor
    _meta: torch.Tensor

    def to(self, device: Any = None, dtype: torch.dtype | None = None,
           non_blocking: bool = False) -> Any:  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    @property
    def values(self) -> torch.Tensor:
        """The format's values array: the kept elements (or, quantized, their packed codes)."""
        return self._values

    @property
    def meta(self) -> torch.Tensor:
        """The format's metadata array (the kept positions)."""
        return self._meta

    @property
    def encoding(self) -> str:
        """The format's name: "NV24", "NV12", "NV24.w4g128", ..."""
        return self._format.name

    @property
    def nbytes(self) -> int:
        """Bytes of every stored array (values, metadata, any scales): what a GEMM reads."""
        arrays = (getattr(self, a.suffix) for a in self._format.arrays)
        return sum(t.numel() * t.element_size() for t in arrays if t is not None)

    @property
    def shape(self) -> torch.Size:
        """The dense logical shape (M, K)."""
        return self._shape

    @property
    def device(self) -> torch.device:
        """Where the arrays live."""
        return self._values.device

    @property
    def is_cuda(self) -> bool:
        """Whether the arrays live on a CUDA device."""
        return self._values.is_cuda

    @property
    def ndim(self) -> int:
        """2: a matrix."""
        return 2

    def dim(self) -> int:
        """2: a matrix."""
        return 2

    def numel(self) -> int:
        """Elements of the dense logical matrix (M*K), not of the stored arrays."""
        return self._shape[0] * self._shape[1]

    def size(self, dim: int | None = None) -> torch.Size | int:
        """The dense logical shape, or its extent along `dim`."""
        return self._shape if dim is None else self._shape[dim]

    def stride(self, dim: int | None = None) -> tuple[int, int] | int:
        """Dense row-major strides (K, 1): kernels address the sparse operand as if dense."""
        strides = (self._shape[1], 1)
        return strides if dim is None else strides[dim]

    def cuda(self, device: torch.device | str | int | None = None, non_blocking: bool = False) -> Any:
        """Move to a CUDA device (the current one by default)."""
        if device is None:
            device = "cuda"
        elif isinstance(device, int):
            device = torch.device("cuda", device)
        return self.to(device, non_blocking=non_blocking)

    def cpu(self) -> Any:
        """Move to the CPU."""
        return self.to("cpu")
