"""`weight16_fused(...)`: a 2:4 weight's 16-bit kept values (N x K/2) or its dense N x K form,
from its stored arrays, in one `@sparsecc.jit` launch — the codes (or 8-/16-bit values), the
scales and the metadata read once, the output written once with 16-byte stores.

This is the CUDA form of `sparsecc.ops.densify._weight16` (the torch ops) and gives its bits:

    quantized:  kept = ((code - zero) * scale)  in fp32, rounded once to fp16 / bf16
                (code: the low nibble of byte j // 2 for even kept j, the high one for odd j;
                zero: the stored zero point, or 2^(bits-1); scale j // (kept values per scale))
    8-bit:      kept = (value * weight_scale[row]) in fp32, rounded once (int8 or fp8 e4m3 values)
    16-bit:     kept = value, moved as it is
    dense:      dense[r, 4g + p] = kept[r, 2g + 1] where p == idx1, else kept[r, 2g] where
                p == idx0, else +0 (idx0 / idx1 from the NV24 metadata word of row r and
                columns 16 (g // 4) ..: bits 4 (g % 4) .. +1 and +2 .. +3; `formats.nv24`)

Each program writes a BLOCK_N x BLOCK_C tile of the output (kept or dense columns) and finds
the source of each element itself (a gather within L1: neighbouring outputs share their code
bytes, scales and metadata words), so one kernel serves every scheme and both forms.

    out = weight16_fused(q.values, q.meta, q.scales, q.zeros, None, 4, 4096, torch.float16, dense=True)
"""

from __future__ import annotations

import torch

import sparsecc
import sparsecc.language as tl

__all__ = ["weight16_compiled", "weight16_config", "weight16_fused", "weight16_kernel", "weight16_launch"]

SOURCES = {"q4": 0, "q8": 1, "scaled": 2, "plain": 3}
"""The SOURCE constexpr of each kind of stored values."""


@sparsecc.jit
def _kept_value(VALUES, SCALES, ZEROS, WSCALE, rows, r64, j, inside, N, K, S,
                SOURCE: tl.constexpr, HAS_ZEROS: tl.constexpr, GROUP_SHIFT: tl.constexpr):
    # kept value j of the given rows (fp32, or the stored 16-bit value for SOURCE 3), as the
    # torch ops compute it: the difference (code - zero) is exact, the product rounded once in
    # fp32 (and exact there for 16-bit scales), the cast to 16 bits the second and last rounding
    if SOURCE == 3:
        v = tl.load(VALUES + r64 * (K // 2) + j, mask=inside, other=0.0)
    elif SOURCE == 2:
        w = tl.load(VALUES + r64 * (K // 2) + j, mask=inside, other=0).to(tl.float32)
        v = w * tl.load(WSCALE + rows, mask=rows < N, other=0.0).to(tl.float32)
    else:
        if SOURCE == 0:  # kept value j in the low (even j) or high (odd j) nibble of byte j // 2
            byte = tl.load(VALUES + r64 * (K // 4) + (j >> 1), mask=inside, other=0).to(tl.int32)
            code = (byte >> ((j & 1) * 4)) & 15
            fixed = 8.0
        else:
            code = tl.load(VALUES + r64 * (K // 2) + j, mask=inside, other=0).to(tl.int32) & 255
            fixed = 128.0
        if GROUP_SHIFT < 0:  # one scale per row
            s_at = r64 * S
            s_ok = rows < N
        else:
            s_at = r64 * S + (j >> GROUP_SHIFT)
            s_ok = inside
        scale = tl.load(SCALES + s_at, mask=s_ok, other=0.0).to(tl.float32)
        if HAS_ZEROS:
            zero = tl.load(ZEROS + s_at, mask=s_ok, other=0.0).to(tl.float32)
        else:
            zero = fixed
        v = (code.to(tl.float32) - zero) * scale
    return v


@sparsecc.jit
def weight16_kernel(OUT, VALUES, META, SCALES, ZEROS, WSCALE, N, K, S, BLOCK_N: tl.constexpr,
                    BLOCK_C: tl.constexpr, SOURCE: tl.constexpr, HAS_ZEROS: tl.constexpr, GROUP_SHIFT: tl.constexpr,
                    DENSE: tl.constexpr):
    # OUT: N x K (DENSE) or N x K/2, contiguous; VALUES: N x K/4 (4-bit codes) or N x K/2;
    # META: ceil(N/16) x K int16; SCALES / ZEROS: N x S; WSCALE: N fp32. Arrays a SOURCE does
    # not read may be any pointer. GROUP_SHIFT: log2 of the kept values per scale,
    # -1 for one scale per row (S == 1).
    rows = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    cols = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    r64 = rows.to(tl.int64)[:, None]
    if DENSE:
        inside = (rows[:, None] < N) & (cols[None, :] < K)
        # the word of (row r, chunk c) at META[r // 16, 16 c + r % 16]; group g of the chunk in
        # bits 4g .. 4g+3: idx0 in the low two, idx1 in the high two
        at = (rows >> 4).to(tl.int64)[:, None] * K + (cols & -16)[None, :] + (rows & 15)[:, None]
        word = tl.load(META + at, mask=inside, other=0).to(tl.int32)
        nib = (word >> (((cols >> 2) & 3) * 4)[None, :]) & 15
        pos = (cols & 3)[None, :]
        second = pos == (nib >> 2)
        keep = second | (pos == (nib & 3))
        j = (cols >> 2)[None, :] * 2 + second.to(tl.int32)
        v = _kept_value(VALUES, SCALES, ZEROS, WSCALE, rows[:, None], r64, j, inside, N, K, S, SOURCE, HAS_ZEROS,
                        GROUP_SHIFT)
        v = tl.where(keep, v, 0.0)
        width = K
    else:
        inside = (rows[:, None] < N) & (cols[None, :] < K // 2)
        v = _kept_value(VALUES, SCALES, ZEROS, WSCALE, rows[:, None], r64, cols[None, :], inside, N, K, S, SOURCE,
                        HAS_ZEROS, GROUP_SHIFT)
        width = K // 2
    tl.store(OUT + r64 * width + cols[None, :], v.to(OUT.dtype.element_ty), mask=inside)


def weight16_config(n: int, cols: int) -> tuple[int, int, int]:
    """(BLOCK_N, BLOCK_C, num_warps) for an output of `n` rows of `cols` columns: 4096-element
    tiles over 8 warps, 16 elements a thread (two 16-byte stores), as wide as the row allows.

        >>> weight16_config(4096, 4096), weight16_config(40, 96)
        ((8, 512, 8), (32, 128, 8))
    """
    block_c = min(512, max(16, 1 << (max(cols, 1) - 1).bit_length()))
    return 4096 // block_c, block_c, 8


def _launch(out: torch.Tensor, values: torch.Tensor, meta: torch.Tensor, scales: torch.Tensor | None,
            zeros: torch.Tensor | None, weight_scale: torch.Tensor | None, bits: int,
            k: int, dense: bool) -> tuple[tuple[int, int], tuple, dict]:
    """The grid, positional and keyword arguments of `weight16_kernel` for these arrays."""
    n = values.shape[0]
    if scales is not None:
        source = "q4" if bits == 4 else "q8"
    else:
        source = "scaled" if weight_scale is not None else "plain"
    s = scales.shape[1] if scales is not None else 1
    per = (k // 2) // s  # kept values per scale: G / 2, a power of two (`formats.quant`)
    shift = -1 if s == 1 else per.bit_length() - 1
    block_n, block_c, warps = weight16_config(n, out.shape[1])
    grid = (-(-n // block_n), -(-out.shape[1] // block_c))
    args = (out, values, meta, scales if scales is not None else values, zeros if zeros is not None else values,
            weight_scale if weight_scale is not None else values, n, k, s)
    kwargs = {"BLOCK_N": block_n, "BLOCK_C": block_c, "SOURCE": SOURCES[source], "HAS_ZEROS": zeros is not None,
              "GROUP_SHIFT": shift, "DENSE": dense, "num_warps": warps}
    return grid, args, kwargs


def weight16_launch(out: torch.Tensor, values: torch.Tensor, meta: torch.Tensor, scales: torch.Tensor | None,
                    zeros: torch.Tensor | None, weight_scale: torch.Tensor | None, bits: int, k: int,
                    dense: bool) -> None:
    """One launch of `weight16_kernel` writing `out` (contiguous: N x K when `dense`, else N x K/2);
    no checks (`weight16_fused` is the checked entry point)."""
    grid, args, kwargs = _launch(out, values, meta, scales, zeros, weight_scale, bits, k, dense)
    weight16_kernel[grid](*args, **kwargs)


def weight16_compiled(out: torch.Tensor, values: torch.Tensor, meta: torch.Tensor, scales: torch.Tensor | None,
                      zeros: torch.Tensor | None, weight_scale: torch.Tensor | None, bits: int, k: int,
                      dense: bool) -> bool:
    """Whether `weight16_launch` with these arguments finds its kernel already compiled and
    loaded (a launch that would compile must not happen inside a CUDA graph capture)."""
    grid, args, kwargs = _launch(out, values, meta, scales, zeros, weight_scale, bits, k, dense)
    try:
        return weight16_kernel.fast.get(weight16_kernel.fast_key(args, kwargs)) is not None
    except TypeError:
        return False


def weight16_fused(values: torch.Tensor, meta: torch.Tensor, scales: torch.Tensor | None, zeros: torch.Tensor | None,
                   weight_scale: torch.Tensor | None, bits: int, k: int, dtype: torch.dtype, dense: bool, *,
                   out: torch.Tensor | None = None) -> torch.Tensor:
    """`densify._weight16(...)` in one launch, bit for bit: the kept values (N x K/2) or, with
    `dense`, the dense N x K matrix, in `dtype` (the values' own dtype for 16-bit values). `out`
    may be given (contiguous, of the result's shape and dtype) to write into. CUDA tensors run
    the kernel, CPU tensors the interpreter (exact, slow: for tests).

        >>> q = sparsecc.compress(sparsecc.prune_2to4(torch.randn(24, 256)).half(), quant="w4g128")
        >>> w = weight16_fused(q.values, q.meta, q.scales, q.zeros, None, 4, 256, torch.float16, True)
        >>> bool((w == q.to_dense()).all())
        True
    """
    n = values.shape[0]
    if scales is None and weight_scale is None:
        if values.element_size() != 2:
            raise TypeError(f"weight16_fused: values without scales must be 16-bit, got {values.dtype}")
        dtype = values.dtype
    if dtype not in (torch.float16, torch.bfloat16):
        raise TypeError(f"weight16_fused: dtype must be torch.float16 or torch.bfloat16, got {dtype}")
    if k % 16 or (scales is not None and (bits not in (4, 8) or (k // 2) % scales.shape[1])):
        raise ValueError(f"weight16_fused: K = {k} (a multiple of 16), bits = {bits} (4 or 8) and "
                         f"{None if scales is None else tuple(scales.shape)} scales do not fit")
    shape = (n, k if dense else k // 2)
    if out is None:
        out = torch.empty(shape, dtype=dtype, device=values.device)
    if n == 0:
        return out
    arrays = [a.contiguous() if a is not None else None for a in (values, meta, scales, zeros, weight_scale)]
    weight16_launch(out, *arrays, bits, k, dense)
    return out
