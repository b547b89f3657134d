"""2:4 and 1:2 pruning and compression to the NV24 / NV12 formats (`sparsecc.prune_2to4`,
`sparsecc.prune_1to2`, `sparsecc.compress`).

The format itself (values M x K/2, int16 metadata ceil(M/16) x K, the bits of a word) is one
definition, `sparsecc.formats.nv24`; the torch code that encodes and decodes it is
`sparsecc.runtime.codec`, whose metadata functions are re-exported here.

Everything here is vectorized torch code, so it runs unchanged on CPU and CUDA tensors.
"""

from __future__ import annotations

import math

import torch

from sparsecc import formats
from sparsecc.formats import NV12, NV24, QuantScheme
from sparsecc.runtime.codec import decode_meta, decode_meta_tile, encode_meta
from sparsecc.runtime.quant_tensor import QuantizedSparseTensor, quant_format
from sparsecc.runtime.sparse_tensor import SparseTensor

__all__ = [
    "compress",
    "decode_meta",
    "decode_meta_tile",
    "decompress",
    "encode_meta",
    "prune_1to2",
    "prune_2to4",
]

GROUP, KEPT = NV24.group.size, NV24.group.kept
"""Columns of a 2:4 group, and how many of them may be nonzero."""


def prune_2to4(dense: torch.Tensor) -> torch.Tensor:
    """A copy of `dense` with only the 2 largest-|x| entries of every group of 4 (last dim) kept.

    Ties go to the lower index, and NaN ranks as the largest magnitude, so the result is always
    2:4 sparse and `compress` accepts it. Works for any float dtype, int8, and any leading dims.

        >>> prune_2to4(torch.tensor([[1, -5, 3, 2]], dtype=torch.int8))
        tensor([[ 0, -5,  3,  0]], dtype=torch.int8)
    """
    return _prune(dense, KEPT, GROUP, "prune_2to4")


def prune_1to2(dense: torch.Tensor) -> torch.Tensor:
    """A copy of `dense` with only the larger-|x| entry of every pair (last dim) kept: NV12's 1:2
    sparsity, what tf32 sparse tensor cores take (ties and NaN as `prune_2to4`).

        >>> prune_1to2(torch.tensor([[1.0, -5.0, 3.0, 2.0]]))
        tensor([[ 0., -5.,  3.,  0.]])
    """
    return _prune(dense, NV12.group.kept, NV12.group.size, "prune_1to2")


def _prune(dense: torch.Tensor, kept: int, group: int, name: str) -> torch.Tensor:
    if not isinstance(dense, torch.Tensor):
        raise TypeError(f"{name} expects a torch.Tensor, got {type(dense).__name__}")
    if not (dense.is_floating_point() or dense.dtype == torch.int8):
        raise TypeError(f"{name} expects a floating-point or int8 tensor, got dtype {dense.dtype}")
    if dense.dim() == 0 or dense.shape[-1] % group != 0:
        raise ValueError(
            f"{name}: the last dimension must be a multiple of {group}, got shape "
            f"{tuple(dense.shape)}")
    x = dense.detach()
    # Rank in float32 (exact for int8 and every 16-bit and 8-bit float; |-128| does not wrap) so
    # comparisons work on any dtype.
    key = x.abs() if x.element_size() >= 4 else x.float().abs()
    key = torch.where(torch.isnan(key), torch.full_like(key, math.inf), key)
    groups = key.reshape(*x.shape[:-1], x.shape[-1] // group, group)
    ki, kj = groups.unsqueeze(-1), groups.unsqueeze(-2)  # [..., i, j]
    pos = torch.arange(group, device=x.device)
    lower = pos.unsqueeze(0) < pos.unsqueeze(1)  # [i, j]: j < i
    beaten_by = (kj > ki) | ((kj == ki) & lower)
    keep = (beaten_by.sum(-1) < kept).reshape(x.shape)
    return torch.where(keep, x, torch.zeros((), dtype=x.dtype, device=x.device))


def compress(dense: torch.Tensor, format: str | None = None, *,  # noqa: A002
             quant: str | QuantScheme | None = None) -> SparseTensor | QuantizedSparseTensor:
    """Compress a 2:4-sparse M x K matrix to NV24 (`sparsecc.formats.nv24`): fp16, bf16, int8,
    float8_e4m3fn or float8_e5m2; a 1:2-sparse float32 one to NV12 (tf32, `formats.nv12`).
    `format` names the format; by default the dtype picks it.

    `quant` (a scheme such as "w4g128", "w8c", "w4g64z"; `formats.quant`), or a quantized
    `format` such as "NV24.w4g128", quantizes the kept values of an fp16/bf16 matrix instead and
    returns a `QuantizedSparseTensor`; K must then also be a multiple of the group.

    K must be a multiple of 16; any M >= 1 works (meta is padded to a multiple of 16 rows with
    0x4444 words). Raises if the data is not 2:4 sparse, naming the first bad group. Outputs live
    on the input's device.

        >>> w = prune_2to4(torch.randn(16, 128, dtype=torch.float16))
        >>> compress(w).encoding, compress(w, quant="w4g128").encoding
        ('NV24', 'NV24.w4g128')
    """
    qfmt = _quantized(format, quant)
    if qfmt is not None:
        return QuantizedSparseTensor.from_dense(dense, qfmt)
    return SparseTensor.from_dense(dense, format)


def _quantized(format: str | None, quant: str | QuantScheme | None) -> formats.SparseFormat | None:  # noqa: A002
    """The quantized format `compress`'s arguments ask for; None: an unquantized one."""
    if quant is None:
        fmt = formats.get(format) if isinstance(format, str) else None
        return fmt if fmt is not None and fmt.quant is not None else None
    if isinstance(quant, QuantScheme):
        quant = quant.spec
    if not isinstance(quant, str):
        raise TypeError(f'compress: quant must be a scheme such as "w4g128", got {type(quant).__name__}')
    fmt = formats.lookup(format) if format is not None else NV24
    if fmt.quant is not None:
        if fmt.quant.spec != quant:
            raise ValueError(f"compress: format {fmt.name!r} and quant={quant!r} disagree; "
                             "give one of them")
        return fmt
    return quant_format(formats.lookup(f"{fmt.name}.{quant}"))


def decompress(sparse: SparseTensor | QuantizedSparseTensor) -> torch.Tensor:
    """The dense M x K matrix of a SparseTensor or QuantizedSparseTensor (`sparse.to_dense()`)."""
    return sparse.to_dense()
