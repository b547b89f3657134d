"""Conversions between sparsecc's `SparseTensor` and PyTorch's `SparseSemiStructuredTensor`
(`torch.sparse.to_sparse_semi_structured`), so a weight sparsified by either side moves across.

The two keep different metadata layouts (PyTorch's is its CUTLASS or cuSPARSELt backend's), so a
conversion goes through the dense matrix: exact, since both hold the same 2:4 values, and done
once per weight. PyTorch's tensor lives on CUDA only, and PyTorch densifies it with a cuSPARSELt
matmul, which (torch 2.11 on the H100) works for fp16 and bf16 but not int8.

    w = torch.sparse.to_sparse_semi_structured(dense_fp16_cuda)
    s = sparsecc.from_semi_structured(w)          # -> SparseTensor (NV24)
    w2 = sparsecc.to_semi_structured(s)           # -> SparseSemiStructuredTensor
"""

from __future__ import annotations

import torch

from sparsecc.runtime.compress import compress
from sparsecc.runtime.sparse_tensor import SparseTensor

__all__ = ["from_semi_structured", "to_semi_structured"]


def _semi_structured_class() -> type:
    cls = getattr(torch.sparse, "SparseSemiStructuredTensor", None)
    if cls is None:
        raise RuntimeError(f"this torch ({torch.__version__}) has no torch.sparse.SparseSemiStructuredTensor")
    return cls


def from_semi_structured(t: torch.Tensor) -> SparseTensor:
    """The `SparseTensor` (NV24) holding the same 2:4 matrix as PyTorch's semi-structured `t`.

        >>> s = from_semi_structured(torch.sparse.to_sparse_semi_structured(w))  # doctest: +SKIP
    """
    cls = _semi_structured_class()
    if not isinstance(t, cls):
        raise TypeError(f"from_semi_structured expects a torch.sparse.SparseSemiStructuredTensor, got "
                        f"{type(t).__name__} (for a dense 2:4 tensor use sparsecc.compress)")
    try:
        dense = t.to_dense()
    except RuntimeError as e:  # PyTorch computes to_dense with a cuSPARSELt matmul, not for every dtype
        raise ValueError(f"from_semi_structured: PyTorch cannot densify this {t.dtype} tensor ({str(e).splitlines()[0]}); "
                         "compress the dense weight it was made from instead") from e
    return compress(dense)


def to_semi_structured(s: SparseTensor) -> torch.Tensor:
    """PyTorch's `SparseSemiStructuredTensor` of the matrix `s` holds (CUDA only; the dtypes and
    minimum shapes are PyTorch's).

        >>> w = to_semi_structured(sparsecc.compress(dense_fp16_cuda))  # doctest: +SKIP
    """
    if not isinstance(s, SparseTensor):
        raise TypeError(f"to_semi_structured expects a sparsecc.SparseTensor, got {type(s).__name__}")
    _semi_structured_class()
    if not s.is_cuda:
        raise ValueError(f"to_semi_structured: PyTorch's SparseSemiStructuredTensor lives on CUDA only; this "
                         f"SparseTensor is on {s.device} (move it with .cuda() first)")
    if s.encoding != "NV24":
        raise ValueError(f"to_semi_structured: PyTorch's semi-structured tensors are 2:4; this SparseTensor is "
                         f"{s.encoding}")
    try:
        return torch.sparse.to_sparse_semi_structured(s.to_dense())
    except (RuntimeError, ValueError, TypeError) as e:  # PyTorch's own limits (dtypes, shapes)
        raise ValueError(f"to_semi_structured: PyTorch refused the {tuple(s.shape)} {s.dtype} matrix: {e}") from e
