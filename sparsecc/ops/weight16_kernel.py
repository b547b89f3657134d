"""`weight16_fused(...)`: a 2:4 weight's 16-bit kept values (N x K/2) or its dense N x K form,
from its stored arrays, in one `@sparsecc.jit` launch: the codes (or 8-/16-bit values), scales
and metadata read once, the output written once (16-byte stores of kept values, 8-byte ones of
dense groups), nothing through shared memory.

This is the CUDA form of `sparsecc.ops.densify._weight16` (the torch ops) and gives its bits:

    quantized:  kept = ((code - zero) * scale)  in fp32, rounded once to fp16 / bf16
                (code: the low nibble of byte j // 2 for even kept j, the high one for odd j;
                zero: the stored zero point, or 2^(bits-1); scale j // (kept values per scale))
    8-bit:      kept = (value * weight_scale[row]) in fp32, rounded once (int8 or fp8 e4m3 values)
    16-bit:     kept = value, moved as bits
    dense:      dense[r, 4g + p] = kept[r, 2g + 1] where p == idx1, else kept[r, 2g] where
                p == idx0, else +0 (idx0 / idx1 from the NV24 metadata word of row r and
                columns 16 (g // 4) ..: bits 4 (g % 4) .. +1 and +2 .. +3; `formats.nv24`)

A program writes a BLOCK_N x BLOCK_C tile of the output, shaped so that what elements share is
loaded once: kept values as [rows, runs, 8] (a run of 8 shares its scale, and its 4-bit codes
are one 32-bit word), dense columns as [rows, groups, 4] (a group's 4 positions share its pair
of kept values and its metadata nibble); the broadcasts along the last dimension cost nothing.

    out = weight16_fused(q.values, q.meta, q.scales, q.zeros, None, 4, 4096, torch.float16, dense=True)
"""

from __future__ import annotations

import torch

import sparsecc
import sparsecc.language as tl

__all__ = ["weight16_compiled", "weight16_config", "weight16_fused", "weight16_kernel", "weight16_launch",
           "weight16_problem"]

SOURCES = {"q4": 0, "q8": 1, "scaled": 2, "plain": 3}
"""The SOURCE constexpr of each kind of stored values."""


@sparsecc.jit
def _dequantize(OUT, SCALES, ZEROS, code, s_at, s_ok, QUANT4: tl.constexpr, HAS_ZEROS: tl.constexpr):
    # codes (int32) as kept values in OUT's 16-bit type, as the torch ops compute them: the
    # difference (code - zero) is exact, the product rounded once in fp32 (exact there for a
    # 16-bit scale), the cast to 16 bits the second and last rounding. s_at / s_ok: the scales'
    # offsets and mask, of the codes' shape or broadcast to it along the last dimension.
    scale = tl.load(SCALES + s_at, mask=s_ok, other=0.0).to(tl.float32)
    if HAS_ZEROS:
        zero = tl.load(ZEROS + s_at, mask=s_ok, other=0.0).to(tl.float32)
    elif QUANT4:
        zero = 8.0
    else:
        zero = 128.0
    return ((code.to(tl.float32) - zero) * scale).to(OUT.dtype.element_ty)


@sparsecc.jit
def _kept_kernel(OUT, VALUES, SCALES, ZEROS, WSCALE, rows, pid, N, K, S, BLOCK_Q: tl.constexpr, SOURCE: tl.constexpr,
                 HAS_ZEROS: tl.constexpr, GROUP_SHIFT: tl.constexpr):
    # kept values 8 pid BLOCK_Q .. + 8 BLOCK_Q of the rows as a [rows, BLOCK_Q, 8] tile: the 8
    # of a run share a scale (a group holds at least 8), so it is loaded once per run, and a
    # run is one 16-byte store
    q = pid * BLOCK_Q + tl.arange(0, BLOCK_Q)
    e = tl.arange(0, 8)[None, None, :]
    r64 = rows.to(tl.int64)[:, None]
    run_ok = (rows < N)[:, None] & (q < K // 16)[None, :]
    at = (r64 * (K // 2))[:, :, None] + (q * 8)[None, :, None] + e  # kept value offsets
    ok = run_ok[:, :, None]
    if SOURCE == 3:
        v = tl.load(VALUES + at, mask=ok, other=0.0)
    elif SOURCE == 2:
        w = tl.load(VALUES + at, mask=ok, other=0).to(tl.float32)
        v = (w * tl.load(WSCALE + r64, mask=rows[:, None] < N, other=0.0).to(tl.float32)[:, :, None])
        v = v.to(OUT.dtype.element_ty)
    else:
        if SOURCE == 0:  # a run's 8 codes are one 32-bit word, kept value e in bits 4e .. 4e+3
            words = VALUES.to(tl.pointer_type(tl.int32))
            word = tl.load(words + r64 * (K // 16) + q[None, :], mask=run_ok, other=0)
            code = (word[:, :, None] >> (e * 4)) & 15
        else:
            code = tl.load(VALUES + at, mask=ok, other=0).to(tl.int32) & 255
        if GROUP_SHIFT < 0:  # one scale per row
            s_at = r64 * S
            s_ok = rows[:, None] < N
        else:
            s_at = r64 * S + ((q * 8) >> GROUP_SHIFT)[None, :]
            s_ok = run_ok
        v = _dequantize(OUT, SCALES, ZEROS, code, s_at[:, :, None], s_ok[:, :, None], SOURCE == 0, HAS_ZEROS)
    tl.store(OUT + at, v, mask=ok)


@sparsecc.jit
def _dense_kernel(OUT, VALUES, META, SCALES, ZEROS, WSCALE, rows, pid, N, K, S, BLOCK_G: tl.constexpr,
                  SOURCE: tl.constexpr, HAS_ZEROS: tl.constexpr, GROUP_SHIFT: tl.constexpr):
    # dense columns 4 pid BLOCK_G .. + 4 BLOCK_G of the rows as a [rows, BLOCK_G, 4] tile: a
    # group's pair of kept values (first, second) and metadata are loaded once for its 4
    # positions, and a group is one 8-byte store
    g = pid * BLOCK_G + tl.arange(0, BLOCK_G)
    r64 = rows.to(tl.int64)[:, None]
    ok = (rows < N)[:, None] & (g < K // 4)[None, :]
    if SOURCE == 3:  # the pair as one 32-bit word (first in the low half), moved as bits
        pair = tl.load(VALUES.to(tl.pointer_type(tl.int32)) + r64 * (K // 4) + g[None, :], mask=ok, other=0)
        first = pair.to(tl.int16).to(OUT.dtype.element_ty, bitcast=True)
        second = (pair >> 16).to(tl.int16).to(OUT.dtype.element_ty, bitcast=True)
    else:
        if SOURCE == 2:
            at = r64 * (K // 2) + (g * 2)[None, :]
            w_scale = tl.load(WSCALE + r64, mask=rows[:, None] < N, other=0.0).to(tl.float32)
            first = (tl.load(VALUES + at, mask=ok, other=0).to(tl.float32) * w_scale).to(OUT.dtype.element_ty)
            second = (tl.load(VALUES + at + 1, mask=ok, other=0).to(tl.float32) * w_scale).to(OUT.dtype.element_ty)
        else:
            if SOURCE == 0:  # the pair's codes are one byte: first in the low nibble
                pair = tl.load(VALUES + r64 * (K // 4) + g[None, :], mask=ok, other=0).to(tl.int32)
                codes = (pair & 15, (pair >> 4) & 15)
            else:  # one 16-bit word: first in the low byte
                pair = tl.load(VALUES.to(tl.pointer_type(tl.int16)) + r64 * (K // 4) + g[None, :], mask=ok,
                               other=0).to(tl.int32)
                codes = (pair & 255, (pair >> 8) & 255)
            if GROUP_SHIFT < 0:  # one scale per row
                s_at = r64 * S
                s_ok = rows[:, None] < N
            else:
                s_at = r64 * S + ((g * 2) >> GROUP_SHIFT)[None, :]
                s_ok = ok
            first = _dequantize(OUT, SCALES, ZEROS, codes[0], s_at, s_ok, SOURCE == 0, HAS_ZEROS)
            second = _dequantize(OUT, SCALES, ZEROS, codes[1], s_at, s_ok, SOURCE == 0, HAS_ZEROS)
    # group g's positions: the word of (row r, chunk g // 4) at META[r // 16, 16 (g // 4) + r % 16],
    # the group in its bits 4 (g % 4) .. +3: idx0 in the low two, idx1 in the high two
    m_at = (rows >> 4).to(tl.int64)[:, None] * K + ((g >> 2) * 16)[None, :] + (rows & 15)[:, None]
    word = tl.load(META + m_at, mask=ok, other=0).to(tl.int32)
    nib = ((word >> ((g & 3) * 4)[None, :]) & 15)[:, :, None]
    pos = tl.arange(0, 4)[None, None, :]
    # idx1 first, as the torch ops (the order matters only for words no NV24 weight holds)
    placed = tl.where(pos == (nib >> 2), second[:, :, None], tl.where(pos == (nib & 3), first[:, :, None], 0.0))
    tl.store(OUT + (r64 * K)[:, :, None] + (g * 4)[None, :, None] + pos, placed, mask=ok[:, :, None])


@sparsecc.jit(do_not_specialize=["N", "S"])  # (only masks and a row's scales use them: no recompile per value)
def weight16_kernel(OUT, VALUES, META, SCALES, ZEROS, WSCALE, N, K, S, BLOCK_N: tl.constexpr,
                    BLOCK_C: tl.constexpr, SOURCE: tl.constexpr, HAS_ZEROS: tl.constexpr, GROUP_SHIFT: tl.constexpr,
                    DENSE: tl.constexpr):
    # OUT: N x K (DENSE) or N x K/2, contiguous; VALUES: N x K/4 (4-bit codes) or N x K/2,
    # 4-byte aligned; META: ceil(N/16) x K int16; SCALES / ZEROS: N x S; WSCALE: N fp32. Arrays
    # a SOURCE does not read may be any pointer. GROUP_SHIFT: log2 of the kept values per scale
    # (>= 3), -1 for one scale per row (S == 1). A program writes BLOCK_N x BLOCK_C of OUT.
    rows = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    if DENSE:
        _dense_kernel(OUT, VALUES, META, SCALES, ZEROS, WSCALE, rows, tl.program_id(1), N, K, S, BLOCK_C // 4,
                      SOURCE, HAS_ZEROS, GROUP_SHIFT)
    else:
        _kept_kernel(OUT, VALUES, SCALES, ZEROS, WSCALE, rows, tl.program_id(1), N, K, S, BLOCK_C // 8, SOURCE,
                     HAS_ZEROS, GROUP_SHIFT)


def weight16_config(n: int, cols: int) -> tuple[int, int, int]:
    """(BLOCK_N, BLOCK_C, num_warps) for an output of `n` rows of `cols` columns: 8192-element
    tiles over 8 warps, 32 elements a thread, as wide as the row allows (up to 512 columns).

        >>> weight16_config(4096, 4096), weight16_config(40, 96)
        ((16, 512, 8), (64, 128, 8))
    """
    block_c = min(512, max(16, 1 << (max(cols, 1) - 1).bit_length()))
    return 8192 // block_c, block_c, 8


def weight16_problem(scales: torch.Tensor | None, bits: int, k: int) -> str | None:
    """What keeps the kernel from a weight of these scales, bits and K (None: nothing): K a
    multiple of 16, codes of 4 or 8 bits with one scale per row or per a power of two >= 16 of
    dense columns (every `formats.quant` scheme has these).

        >>> weight16_problem(torch.zeros(4, 3), 4, 128)
        '3 scales a row for K = 128: not one per row or per a power of two >= 16 columns'
    """
    if k % 16:
        return f"K = {k} is not a multiple of 16"
    if scales is None:
        return None
    if bits not in (4, 8):
        return f"bits = {bits}: codes are 4 or 8 bits"
    s = scales.shape[1] if scales.dim() == 2 else 0
    per = k // s if s and k % s == 0 else 0
    if s != 1 and (per < 16 or per & (per - 1)):
        return f"{s} scales a row for K = {k}: not one per row or per a power of two >= 16 columns"
    return None


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
    if values.data_ptr() % 4:  # the kernel reads code and value pairs / runs as 16- or 32-bit words
        values = values.clone()
    grid, args, kwargs = _launch(out, values, meta, scales, zeros, weight_scale, bits, k, dense)
    weight16_kernel[grid](*args, **kwargs)


def weight16_compiled(out: torch.Tensor, values: torch.Tensor, meta: torch.Tensor, scales: torch.Tensor | None,
                      zeros: torch.Tensor | None, weight_scale: torch.Tensor | None, bits: int, k: int,
                      dense: bool) -> bool:
    """Whether `weight16_launch` with these arguments finds its kernel already compiled and
    loaded (a launch that would compile must not happen inside a CUDA graph capture). Codes
    not 4-byte aligned count as not compiled (their launch copies them first)."""
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
    problem = weight16_problem(scales, bits, k)
    if problem is not None:
        raise ValueError(f"weight16_fused: {problem}")
    shape = (n, k if dense else k // 2)
    if out is None:
        out = torch.empty(shape, dtype=dtype, device=values.device)
    if n == 0:
        return out
    arrays = [a.contiguous() if a is not None else None for a in (values, meta, scales, zeros, weight_scale)]
    weight16_launch(out, *arrays, bits, k, dense)
    return out
