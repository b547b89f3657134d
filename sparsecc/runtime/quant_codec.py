"""The torch code of the quantized 2:4 formats (`sparsecc.formats.quant`): round-to-nearest
quantization of the kept values, packing codes into bytes, and dequantization of whole arrays or
of kernel tiles (the interpreter's `tt.dequantize`).

A kept value is `(code - zero) * scale`, computed in float32 and rounded once to the logical
type: the difference is an integer of at most 8 bits, so this is the product a GPU computes in
the logical type itself, bit for bit.
"""

from __future__ import annotations

import torch

from sparsecc.formats.quant import QuantScheme

__all__ = ["dequantize_tile", "pack_codes", "quantize_kept", "unpack_codes"]


def quantize_kept(kept: torch.Tensor, scheme: QuantScheme,
                  dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """Codes (uint8, one per kept value), scales and zero points (None when symmetric) of an
    M x K/2 matrix of kept values, by round-to-nearest with the scales as stored (in `dtype`), so
    that dequantizing gives back the nearest representable value of each group's grid. A zero
    point's grid spans the group's values and 0, so 0 stays exact.

        >>> kept = torch.tensor([[1.0, -2.0, 0.5, 4.0]])
        >>> codes, scales, zeros = quantize_kept(kept, QuantScheme.parse("w4c"), torch.float16)
        >>> codes.tolist(), scales.tolist(), zeros
        ([[10, 4, 9, 15]], [[0.5712890625]], None)
    """
    m, half_k = kept.shape
    per_group = half_k if scheme.group is None else scheme.group // 2
    x = kept.detach().float().reshape(m, half_k // per_group, per_group)
    if scheme.zero_point:
        # The range includes 0 (as GPTQ's): a group of one sign otherwise needs a zero point
        # outside 0 .. max_code, which clamps, and its far end comes back many steps off.
        lo, hi = x.amin(-1).clamp(max=0), x.amax(-1).clamp(min=0)
        scale = ((hi - lo) / scheme.max_code).to(dtype)
        s = _nonzero(scale.float())
        zero = (torch.round(-lo / s).clamp(0, scheme.max_code) + 0.0).to(dtype)  # + 0.0: no -0
        z = zero.float()
    else:
        scale = (x.abs().amax(-1) / (scheme.fixed_zero - 1)).to(dtype)
        s = _nonzero(scale.float())
        zero, z = None, torch.full_like(s, float(scheme.fixed_zero))
    codes = torch.round(x / s.unsqueeze(-1) + z.unsqueeze(-1)).clamp(0, scheme.max_code)
    return codes.to(torch.uint8).reshape(m, half_k), scale, zero


def _nonzero(scale: torch.Tensor) -> torch.Tensor:
    """A group of zeros has scale 0: divide by 1 instead (its codes are the zero point)."""
    return torch.where(scale == 0, torch.ones_like(scale), scale)


def pack_codes(codes: torch.Tensor, scheme: QuantScheme) -> torch.Tensor:
    """The `values` array (int8) of uint8 codes: 4-bit codes two to a byte, kept value 2j in the
    low nibble of byte j.

        >>> pack_codes(torch.tensor([[1, 15, 7, 0]], dtype=torch.uint8), QuantScheme.parse("w4c"))
        tensor([[-15,   7]], dtype=torch.int8)
    """
    c = codes.to(torch.int32)
    if scheme.bits == 4:
        c = c[..., 0::2] | (c[..., 1::2] << 4)
    return c.to(torch.uint8).view(torch.int8)


def unpack_codes(values: torch.Tensor, bits: int) -> torch.Tensor:
    """The codes (int32, 0 .. 2^bits - 1) a `values` array or tile holds, one per kept value.

        >>> unpack_codes(torch.tensor([[-15, 7]], dtype=torch.int8), 4).tolist()
        [[1, 15, 7, 0]]
    """
    b = values.to(torch.int32) & 0xFF
    if bits == 8:
        return b
    return torch.stack((b & 0xF, b >> 4), dim=-1).reshape(*b.shape[:-1], b.shape[-1] * 2)


def dequantize_tile(values: torch.Tensor, scales: torch.Tensor, zeros: torch.Tensor | None,
                    bits: int, dtype: torch.dtype) -> torch.Tensor:
    """Kept values (`dtype`, R x C) of a tile of codes (R x C/codes-per-byte) with its R x S
    scales: kept value j takes scale j // (C / S), S dividing C (a tile covers whole groups; S is
    1 for per-row scales). `zeros` None: the symmetric zero point 2^(bits-1).

        >>> v = torch.tensor([[-15, 7]], dtype=torch.int8)
        >>> dequantize_tile(v, torch.tensor([[0.5, 2.0]]), None, 4, torch.float32).tolist()
        [[-3.5, 3.5, -2.0, -16.0]]
    """
    codes = unpack_codes(values, bits).float()
    rows, cols = codes.shape
    s = scales.float()
    if s.shape[0] != rows or cols % s.shape[1]:
        raise ValueError(f"dequantize: {tuple(s.shape)} scales do not cover a {rows}x{cols} tile")
    per = cols // s.shape[1]
    z = zeros.float() if zeros is not None else torch.full_like(s, float(1 << (bits - 1)))
    out = (codes - z.repeat_interleave(per, dim=1)) * s.repeat_interleave(per, dim=1)
    return out.to(dtype)
