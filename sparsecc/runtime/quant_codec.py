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
    M x K/2 matrix of finite kept values, by round-to-nearest with the scales as stored (in
    `dtype`). A zero point's grid spans the group's values and 0, so 0 stays exact.

    Every group comes back within half a step of its values: |(code - zero) * scale - x| is at
    most scale / 2, and `(code - zero) * scale` rounded to `dtype` (what `dequantize_tile` and
    the GPU compute) is finite, also for values at the type's max and for tiny ones. The scale
    is computed in float32 and rounded up to `dtype`, so the grid covers the group; a group
    whose grid point next to the type's max would round to inf takes the finest scale whose
    grid stays finite instead (`_refit`).

        >>> kept = torch.tensor([[1.0, -2.0, 0.5, 4.0]])
        >>> codes, scales, zeros = quantize_kept(kept, QuantScheme.parse("w4c"), torch.float16)
        >>> codes.tolist(), scales.tolist(), zeros
        ([[10, 5, 9, 15]], [[0.57177734375]], None)
    """
    m, half_k = kept.shape
    per_group = half_k if scheme.group is None else scheme.group // 2
    x = kept.detach().float().reshape(m, half_k // per_group, per_group)
    if scheme.zero_point:
        # The range includes 0 (as GPTQ's): a group of one sign otherwise needs a zero point
        # outside 0 .. max_code, which clamps, and its far end comes back many steps off.
        lo, hi = x.amin(-1).clamp(max=0), x.amax(-1).clamp(min=0)
        # hi/q - lo/q, not (hi - lo)/q: the difference overflows float32 near bf16's max
        step = hi / scheme.max_code - lo / scheme.max_code
        end = torch.maximum(hi, -lo)
    else:
        end = x.abs().amax(-1)
        step = end / (scheme.fixed_zero - 1)
    scale = _round_up(step, dtype)
    codes, zero, ok = _encode(x, scale, scheme, dtype)
    if not bool(ok.all()):
        _refit(x, end, scale, codes, zero, ok, scheme, dtype)
    zeros = zero.to(dtype) if scheme.zero_point else None
    return codes.to(torch.uint8).reshape(m, half_k), scale, zeros


def _encode(x: torch.Tensor, scale: torch.Tensor, scheme: QuantScheme,
            dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Codes (float32, like x: groups x values) and zero points (float32, one per group) of x
    with the given scales (`dtype`), and whether each group is within half a step of x with a
    finite dequantization in `dtype`."""
    s = scale.float()
    safe = torch.where(s == 0, torch.ones_like(s), s)  # a group of zeros: codes = zero point
    if scheme.zero_point:
        lo = x.amin(-1).clamp(max=0)
        zero = torch.round(-lo / safe).clamp(0, scheme.max_code) + 0.0  # + 0.0: no -0
    else:
        zero = torch.full_like(s, float(scheme.fixed_zero))
    codes = torch.round(x / safe.unsqueeze(-1) + zero.unsqueeze(-1)).clamp(0, scheme.max_code)
    # exact in float32: an integer of at most 8 bits times a 16-bit float's significand
    grid = (codes - zero.unsqueeze(-1)) * s.unsqueeze(-1)
    # x / s in float32 may misround a tie by 2^-16 of a step (the quotient is at most 256)
    off = (grid - x).abs() <= s.unsqueeze(-1) * (0.5 + 2.0 ** -15)
    ok = off.all(-1) & torch.isfinite(grid.to(dtype)).all(-1) & torch.isfinite(scale)
    return codes, zero, ok


def _refit(x: torch.Tensor, end: torch.Tensor, scale: torch.Tensor, codes: torch.Tensor,
           zero: torch.Tensor, ok: torch.Tensor, scheme: QuantScheme, dtype: torch.dtype) -> None:
    """Rescale, in place, the groups not `ok`: those whose nearest grid point to a value at the
    type's max rounds to inf. Scale `end / n` rounded down maps the group's largest magnitude
    `end` to exactly n steps or just above (never rounding up past `end`); the largest n that
    passes `_encode` wins. n = 1 always fits (the scale is `end` itself), so this ends."""
    top = scheme.max_code if scheme.zero_point else scheme.fixed_zero - 1
    bad = torch.nonzero(~ok.flatten()).squeeze(-1)
    flat_x, flat_end = x.reshape(-1, x.shape[-1]), end.flatten()
    flat_scale, flat_codes, flat_zero = scale.view(-1), codes.view(-1, x.shape[-1]), zero.view(-1)
    for n in range(top, 0, -1):
        s = _round_down(flat_end[bad] / n, dtype)
        c, z, fits = _encode(flat_x[bad], s, scheme, dtype)
        done = bad[fits]
        flat_scale[done], flat_codes[done], flat_zero[done] = s[fits], c[fits], z[fits]
        bad = bad[~fits]
        if bad.numel() == 0:
            return
    raise RuntimeError(f"internal error: quantize_kept found no finite {dtype} scale for "
                       f"{bad.numel()} group(s) of {scheme.spec}; please report this")


def _round_up(v: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """The smallest `dtype` value >= v (v >= 0, float32): the next bit pattern up where the
    cast rounded down (16-bit floats' patterns of non-negative values are ordered)."""
    t = v.to(dtype)
    up = (t.view(torch.int16) + 1).view(dtype)
    return torch.where(t.float() < v, up, t)


def _round_down(v: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """The largest `dtype` value <= v (v >= 0, float32); see `_round_up`."""
    t = v.to(dtype)
    down = (t.view(torch.int16) - 1).view(dtype)
    return torch.where(t.float() > v, down, t)


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
