"""`quantize_rows_fused(x, dtype)`: `sparsecc.nn.quantize.quantize_rows` as one `@sparsecc.jit`
launch — one read of x, one write of the 8-bit codes and of the fp32 scales.

The 8-bit layers quantize their activations per token on every forward; in torch that is six
to eight kernels (x.float(), abs, amax, where, two divisions, round, clamp, cast), each a pass
over the activations, which dominated the fp8 layer at decode. This kernel does the same
arithmetic in the same order, so its result is bit for bit `quantize_rows`':

    scale = amax / qmax          (1 where amax == 0; IEEE division, `tl.div_rn`)
    q     = clamp(x / scale, -qmax, qmax) -> fp8 e4m3 (the cast rounds to nearest even)
    q     = clamp(rint(x / scale), -qmax, qmax) -> int8 (rint: halves to even, as torch.round)

A row lives in one block (BLOCK_K = K rounded up to a power of two); short rows go several to a
program (ROWS), so a program reads at least ~2048 elements.

    q, scale = quantize_rows_fused(x, torch.float8_e4m3fn)   # x: tokens x K, fp16/bf16/fp32
"""

from __future__ import annotations

import torch

import sparsecc
import sparsecc.language as tl
from sparsecc.language.extra.cuda import libdevice

__all__ = ["quantize_rows_config", "quantize_rows_fused", "quantize_rows_kernel"]


@sparsecc.jit
def _scale(amax, QMAX: tl.constexpr):
    # quantize_rows' scale of a row whose absolute maximum is amax: 1 for an all-zero row
    return tl.where(amax > 0.0, tl.div_rn(amax, QMAX), 1.0)


@sparsecc.jit
def _codes(x, scale, QMAX: tl.constexpr, INT8: tl.constexpr):
    # x's codes for its row scale(s), rounded as quantize_rows rounds them
    scaled = tl.div_rn(x, scale)
    if INT8:
        scaled = libdevice.rint(scaled)
    return tl.clamp(scaled, -QMAX, QMAX).to(tl.int8 if INT8 else tl.float8e4nv)


@sparsecc.jit
def quantize_rows_kernel(Q, SCALE, X, M, K, stride_xm, stride_qm, BLOCK_K: tl.constexpr, ROWS: tl.constexpr,
                         QMAX: tl.constexpr, INT8: tl.constexpr):
    # ROWS rows of X (M x K) per program, each whole in BLOCK_K columns: the row's absolute
    # maximum, its scale, its codes; padding columns load 0, which leaves the maximum alone.
    # One row is a 1-d block, so that all warps share its columns, and its scale a scalar.
    cols = tl.arange(0, BLOCK_K)
    if ROWS == 1:
        row = tl.program_id(0)
        inside = cols < K
        x = tl.load(X + row * stride_xm + cols, mask=inside, other=0.0).to(tl.float32)
        scale = _scale(tl.max(tl.abs(x), axis=0), QMAX)
        tl.store(Q + row * stride_qm + cols, _codes(x, scale, QMAX, INT8), mask=inside)
        tl.store(SCALE + row, scale)
    else:
        rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
        inside = (rows[:, None] < M) & (cols[None, :] < K)
        x = tl.load(X + rows[:, None] * stride_xm + cols[None, :], mask=inside, other=0.0).to(tl.float32)
        scale = _scale(tl.max(tl.abs(x), axis=1), QMAX)
        tl.store(Q + rows[:, None] * stride_qm + cols[None, :], _codes(x, scale[:, None], QMAX, INT8), mask=inside)
        tl.store(SCALE + rows, scale, mask=rows < M)


def quantize_rows_config(k: int) -> tuple[int, int, int]:
    """(BLOCK_K, ROWS, num_warps) for rows of `k` elements: the row in one block, rows packed
    to ~2048 elements a program, and warps so each thread holds 16 of them (32 with 16 warps
    for 8193-16384: Llama's 11008 / 14336 columns).

        >>> quantize_rows_config(4096), quantize_rows_config(100), quantize_rows_config(14336)
        ((4096, 1, 8), (128, 16, 4), (16384, 1, 16))
    """
    block_k = max(16, 1 << (max(k, 1) - 1).bit_length())
    rows = max(1, 2048 // block_k)
    warps = min(16, max(4, block_k * rows // 512))
    return block_k, rows, warps


def quantize_rows_fused(x: torch.Tensor, dtype: torch.dtype, *, q: torch.Tensor | None = None,
                        scale: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """`quantize_rows(x, dtype)` in one launch: x (rows x cols, fp16 / bf16 / fp32, unit column
    stride) as `dtype` (torch.int8 or torch.float8_e4m3fn) codes and one fp32 scale per row,
    bit for bit the torch function's result. `q` and `scale` may be given (contiguous, of the
    result's shapes and dtypes) to write into. CUDA tensors run the kernel, CPU tensors the
    interpreter (exact, slow: for tests).

        >>> x = torch.tensor([[1.0, -2.0], [0.0, 0.0]])
        >>> q, s = quantize_rows_fused(x, torch.int8)
        >>> q.tolist(), s.tolist()
        ([[64, -127], [0, 0]], [0.015748031437397003, 1.0])
    """
    from sparsecc.nn.quantize import (
        QUANT_MAX,  # here: sparsecc.nn imports this module (through its ops)
    )

    qmax = QUANT_MAX.get(dtype)
    if qmax is None:
        raise TypeError(f"quantize_rows_fused: dtype must be one of {list(QUANT_MAX)}, got {dtype}")
    if x.dim() != 2 or x.dtype not in (torch.float16, torch.bfloat16, torch.float32):
        raise TypeError(f"quantize_rows_fused: x must be a 2-d fp16, bf16 or fp32 tensor, got {x.dim()}-d "
                        f"{x.dtype}")
    if x.stride(1) != 1:
        x = x.contiguous()
    m, k = x.shape
    q = torch.empty((m, k), dtype=dtype, device=x.device) if q is None else q
    scale = torch.empty(m, dtype=torch.float32, device=x.device) if scale is None else scale
    if m == 0 or k == 0:
        scale.fill_(1.0)  # quantize_rows: an empty row's maximum is taken as 0, its scale 1
        return q, scale
    block_k, rows, warps = quantize_rows_config(k)
    quantize_rows_kernel[(-(-m // rows),)](q, scale, x, m, k, x.stride(0), q.stride(0), BLOCK_K=block_k,
                                           ROWS=rows, QMAX=qmax, INT8=dtype == torch.int8, num_warps=warps)
    return q, scale
