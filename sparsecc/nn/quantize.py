"""Symmetric per-row 8-bit quantization, the form the 8-bit 2:4 layers use for their weights (one
scale per output channel) and their activations (one scale per token, computed each forward).

    q, scale = quantize_rows(x, torch.float8_e4m3fn)    # x ~= q.float() * scale[:, None]
"""

from __future__ import annotations

import torch

QUANT_MAX = {torch.int8: 127.0, torch.float8_e4m3fn: 448.0}
"""The largest magnitude each 8-bit type holds: a row's absolute maximum maps to it."""


def quantize_rows(x: torch.Tensor, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """`(q, scale)`: x (rows x cols, any float) as `dtype` codes with one fp32 scale per row, so
    that `q.float() * scale[:, None]` approximates x (int8: round to nearest; fp8: the cast's
    rounding). An all-zero row gets scale 1 and zero codes. The same bits on every device;
    `sparsecc.ops.quantize_rows.quantize_rows_fused` computes them in one launch. Zeros stay zeros, so a 2:4 row
    stays 2:4.

        >>> q, s = quantize_rows(torch.tensor([[1.0, -2.0], [0.0, 0.0]]), torch.int8)
        >>> q.tolist(), s.tolist()
        ([[64, -127], [0, 0]], [0.015748031437397003, 1.0])
    """
    qmax = QUANT_MAX.get(dtype)
    if qmax is None:
        raise TypeError(f"quantize_rows: dtype must be one of {list(QUANT_MAX)}, got {dtype}")
    xf = x.float()
    amax = xf.abs().amax(dim=-1)
    # divided by a tensor: torch on CUDA multiplies by the reciprocal of a Python number (one
    # ulp off the quotient in places), on the CPU it divides; the division is the same on both
    # and is what the fused kernel (sparsecc.ops.quantize_rows) computes
    scale = torch.where(amax > 0, amax / torch.full_like(amax, qmax), torch.ones_like(amax))
    scaled = xf / scale.unsqueeze(-1)
    if dtype == torch.int8:
        q = scaled.round().clamp(-qmax, qmax).to(torch.int8)
    else:
        q = scaled.clamp(-qmax, qmax).to(dtype)
    return q, scale
