"""Weights of a 2:4 layer in the forms the dispatcher's other paths compute with
(`sparsecc.ops.dispatch`): 16-bit kept values of a quantized or 8-bit weight (for the 16-bit
sparse kernel), and the dense 16-bit weight (for `F.linear` / cuBLAS).

These are torch ops on the stored arrays, written to stay small (no int64 index arrays, no
full-size fp32 copies of the weight) and to fuse: under `torch.compile` inductor turns each into
one elementwise kernel; in eager code on CUDA `weight16` runs them as one sparsecc kernel
(`sparsecc.ops.weight16_kernel`) with the same bits. They give the same values as `SparseTensor.to_dense()` and
`QuantizedSparseTensor.to_dense()` (the kept values placed bit for bit; a quantized value is
`(code - zero) * scale` rounded once), so a dense and a sparse call differ only by the order
of the sums.

    w16 = dense_weight(values, meta, k)                         # fp16/bf16 NV24 arrays -> N x K
    kept = dequantize_kept(q.values, q.scales, q.zeros, 4, torch.float16)  # w4: N x K/2
    kept = scale_kept(w8.values, weight_scale, torch.float16)   # 8-bit layer -> N x K/2
    w16 = weight16(q.values, q.meta, q.scales, q.zeros, None, 4, k, torch.float16, dense=True)  # one kernel on CUDA
"""

from __future__ import annotations

import os

import torch

from sparsecc.ops import weight16_kernel as wk

__all__ = ["dense_weight", "dequantize_kept", "scale_kept", "weight16"]


def dense_weight(values: torch.Tensor, meta: torch.Tensor, k: int) -> torch.Tensor:
    """The dense N x K matrix of NV24 arrays (values N x K/2 of any 1- or 2-byte type, int16
    metadata ceil(N/16) x K); the same as `SparseTensor(values, meta, (N, k)).to_dense()`.

        >>> import sparsecc
        >>> w = sparsecc.prune_2to4(torch.randn(24, 32)).half()
        >>> s = sparsecc.compress(w)
        >>> bool((dense_weight(s.values, s.meta, 32) == w).all())
        True
    """
    n = values.shape[0]
    blocks = meta.shape[0]
    # word (row r, 16-column chunk c) lies at meta[r // 16, 16 c + r % 16] (`formats.nv24`)
    words = meta.reshape(blocks, k // 16, 16).transpose(1, 2).reshape(blocks * 16, k // 16)[:n]
    shifts = torch.arange(0, 16, 4, dtype=torch.int16, device=meta.device)
    groups = (words.unsqueeze(-1) >> shifts) & 0xF  # a 4-bit group: idx0 (bits 0-1), idx1 (bits 2-3)
    idx0 = (groups & 3).reshape(n, k // 4, 1)
    idx1 = (groups >> 2).reshape(n, k // 4, 1)
    pos = torch.arange(4, dtype=torch.int16, device=meta.device)
    bits = values.view(torch.uint8) if values.element_size() == 1 else values  # fp8: moved as bytes
    kept = bits.reshape(n, k // 4, 2)
    zero = torch.zeros((), dtype=bits.dtype, device=values.device)
    dense = torch.where(pos == idx1, kept[..., 1:], torch.where(pos == idx0, kept[..., :1], zero))
    return dense.reshape(n, k).view(values.dtype)


def dequantize_kept(values: torch.Tensor, scales: torch.Tensor, zeros: torch.Tensor | None,
                    bits: int, dtype: torch.dtype) -> torch.Tensor:
    """The kept values (N x K/2, `dtype`) of a quantized 2:4 weight's arrays: `(code - zero) *
    scale` rounded once, as `QuantizedSparseTensor.to_dense()` and the kernel compute them
    (`bits` 4 or 8; `zeros` None: the symmetric zero point 2^(bits-1)); with the weight's `meta`
    they are an NV24 weight the 16-bit kernel takes.

        >>> import sparsecc
        >>> q = sparsecc.compress(sparsecc.prune_2to4(torch.randn(16, 256)).half(), quant="w4g128")
        >>> kept = dequantize_kept(q.values, q.scales, q.zeros, 4, torch.float16)
        >>> bool((dense_weight(kept, q.meta, 256) == q.to_dense()).all())
        True
    """
    n = values.shape[0]
    b = values.view(torch.uint8)
    if bits == 4:  # kept value 2j in the low nibble of byte j
        codes = torch.stack((b & 0xF, b >> 4), dim=-1).reshape(n, -1)
    else:
        codes = b
    groups = scales.shape[1]
    c = codes.reshape(n, groups, -1).float()
    # the symmetric zero point 2^(bits-1), without int arithmetic on `bits`: a caller compiled
    # with dynamic shapes may see it as a symbolic int, and torch 2.11 fails on
    # `1 << (s - 1)`; the comparison is a guard and leaves a constant
    zero = zeros.float().unsqueeze(-1) if zeros is not None else (8.0 if bits == 4 else 128.0)
    # exact in float32 (an integer of at most 8 bits times a 16-bit float), rounded once
    return ((c - zero) * scales.float().unsqueeze(-1)).to(dtype).reshape(n, -1)


def scale_kept(values: torch.Tensor, weight_scale: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """The kept values (N x K/2, `dtype`) of an 8-bit layer's weight (int8 or fp8 values, one
    fp32 scale per output channel): `values * scale` rounded once to `dtype`.

        >>> v = torch.tensor([[2, -3]], dtype=torch.int8)
        >>> scale_kept(v, torch.tensor([0.5]), torch.float16).tolist()
        [[1.0, -1.5]]
    """
    return (values.float() * weight_scale.float().unsqueeze(-1)).to(dtype)


def _weight16(values: torch.Tensor, meta: torch.Tensor, scales: torch.Tensor | None, zeros: torch.Tensor | None,
              weight_scale: torch.Tensor | None, bits: int, k: int, dtype: torch.dtype, dense: bool) -> torch.Tensor:
    if scales is not None:
        kept = dequantize_kept(values, scales, zeros, bits, dtype)
    elif weight_scale is not None:
        kept = scale_kept(values, weight_scale, dtype)
    else:
        kept = values
    return dense_weight(kept, meta, k) if dense else kept


FUSE_ENV = "SPARSECC_DISPATCH_FUSE"
"""$SPARSECC_DISPATCH_FUSE=0: `weight16` runs the torch ops on CUDA too (for A/B timing)."""


def weight16(values: torch.Tensor, meta: torch.Tensor, scales: torch.Tensor | None, zeros: torch.Tensor | None,
             weight_scale: torch.Tensor | None, bits: int, k: int, dtype: torch.dtype, dense: bool) -> torch.Tensor:
    """A 2:4 weight's 16-bit kept values (`dense=False`: N x K/2, for the 16-bit kernel) or its
    dense N x K form (`dense=True`), from its stored arrays: quantized (`scales`, `zeros`, `bits`),
    8-bit with per-channel `weight_scale`, or 16-bit (both None; the kept values are then
    `values` itself).

    In eager code on CUDA this is one sparsecc kernel launch (`sparsecc.ops.weight16_kernel`,
    compiled on first use for each kind of arrays), bit for bit the torch ops. Under
    torch.compile the torch ops are traced into the caller's graph, where inductor fuses them
    into one kernel of its own (a custom op would only hide them from it). On the CPU, with
    $SPARSECC_DISPATCH_FUSE=0, and in a CUDA graph capture that meets a kind of arrays whose
    kernel was not compiled before (compiling and loading it must not happen in a capture; the
    warm-up run before the capture compiles it), it runs as torch ops.

        >>> import sparsecc
        >>> q = sparsecc.compress(sparsecc.prune_2to4(torch.randn(16, 256)).half(), quant="w8g128")
        >>> bool((weight16(q.values, q.meta, q.scales, None, None, 8, 256, torch.float16, True) == q.to_dense()).all())
        True
    """
    args = (values, meta, scales, zeros, weight_scale, bits, k, dtype, dense)
    if torch.compiler.is_compiling() or not values.is_cuda or os.environ.get(FUSE_ENV, "1").strip() == "0":
        return _weight16(*args)
    if scales is None and weight_scale is None and not dense:
        return values  # the stored 16-bit kept values, as the torch ops return them
    out_dtype = values.dtype if scales is None and weight_scale is None else dtype
    if out_dtype not in (torch.float16, torch.bfloat16) or wk.weight16_problem(scales, bits, k) is not None:
        return _weight16(*args)  # (an fp32 layer's weight, arrays of no `formats.quant` scheme)
    arrays = [a.contiguous() if a is not None else None for a in (values, meta, scales, zeros, weight_scale)]
    n = values.shape[0]
    out = torch.empty((n, k if dense else k // 2), dtype=out_dtype, device=values.device)
    if n == 0:
        return out
    if torch.cuda.is_current_stream_capturing() and not wk.weight16_compiled(out, *arrays, bits, k, dense):
        return _weight16(*args)
    wk.weight16_launch(out, *arrays, bits, k, dense)
    return out
