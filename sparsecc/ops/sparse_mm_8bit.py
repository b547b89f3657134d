"""`sparse_mm` for 8-bit operands: int8 and fp8 (e4m3, e5m2) 2:4 A, optional rowwise scales;
and for tf32 1:2 A (NV12, float32), which the tensor cores also read K-major only.

`sparse_mm(A, B)` sends 8-bit operands here. The kernel is the fp16 one's tile loop (the same
`@sparsecc.jit` helpers) with an int32 sum for int8, then the epilogue a rowwise-scaled linear
needs, as plain tensor ops: `acc * scale_a[:, None] * scale_b[None, :]` in fp32, stored as the
output dtype. On the GPU the tensor cores read 8-bit B K-major only (they cannot transpose
bytes), so a row-major B is first copied column-major, as `torch._scaled_mm` asks its callers to.

    A = sparsecc.compress(sparsecc.prune_2to4(w_int8))          # M x K int8, 2:4
    d = sparsecc.ops.sparse_mm(A, x_int8.T)                     # int32, exact
    y = sparsecc.ops.sparse_mm(A, x_int8.T, torch.bfloat16, scale_a=sw, scale_b=sx)
"""

from __future__ import annotations

import importlib
from typing import Any

import torch

import sparsecc
import sparsecc.language as tl
from sparsecc.ops.mm_tiles import (
    MMConfig,
    _store_tile,
    _tile_coords,
    _tile_sum,
    check_out,
    is_column_major,
    kernel_stride_bn,
)
from sparsecc.passes.convert_tt_to_ttg import has_wgmma
from sparsecc.runtime.launcher import ALIGNMENT

_jit = importlib.import_module("sparsecc.frontend.jit")

__all__ = ["EIGHT_BIT_DTYPES", "default_config_8bit", "default_out_dtype", "scaled_sparse_mm_kernel",
           "sparse_mm_8bit"]

EIGHT_BIT_DTYPES: tuple[torch.dtype, ...] = (torch.int8, torch.float8_e4m3fn, torch.float8_e5m2)
"""The 8-bit operand dtypes `sparse_mm` takes (A and B of one dtype)."""


@sparsecc.jit
def scaled_sparse_mm_kernel(D, A, B, SCALE_A, SCALE_B, M, N, K, stride_am, stride_bk, stride_bn, stride_dm, stride_dn,
                            BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                            GROUP_M: tl.constexpr, B_KMAJOR: tl.constexpr, ACC_INT: tl.constexpr,
                            ROW_SCALE: tl.constexpr, COL_SCALE: tl.constexpr, K_32: tl.constexpr = False):
    # The 8-bit kernel (int8, fp8): an int32 (int8) or fp32 sum, then optional fp32 scales per
    # row of A (SCALE_A, M of them) and per column of B (SCALE_B, N), as a rowwise-scaled linear.
    # K_32: the host saw K % 32 == 0, so A's values rows (K/2 bytes) are 16-byte aligned: TMA.
    if K_32:
        stride_am = tl.multiple_of(stride_am, 32)
    pid_m, pid_n = _tile_coords(tl.program_id(0), tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N), GROUP_M)
    acc = _tile_sum(A, B, M, N, K, stride_am, stride_bk, stride_bn, pid_m, pid_n,
                    BLOCK_M, BLOCK_N, BLOCK_K, B_KMAJOR, ACC_INT)
    if ROW_SCALE or COL_SCALE:
        acc = acc.to(tl.float32)
    if ROW_SCALE:
        rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        acc = acc * tl.load(SCALE_A + rm, mask=rm < M, other=0.0)[:, None]
    if COL_SCALE:
        rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        acc = acc * tl.load(SCALE_B + rn, mask=rn < N, other=0.0)[None, :]
    _store_tile(D, acc, M, N, stride_dm, stride_dn, pid_m, pid_n, BLOCK_M, BLOCK_N)


# The winners of bench/low_precision.py on the H100 (NOTES stop 14 runs 9-10): BLOCK_K 256, a
# K-major B tile of two 128-byte column blocks (wgmma atoms) and 128 bytes of values per A row,
# so each pipeline stage carries four k64 wgmma steps; decode (N <= 16) 64x16x512 (wgmma, TMA).
_LARGE_8 = {True: MMConfig(256, 128, 256, group_m=8, num_warps=8, num_stages=3),
            False: MMConfig(128, 128, 128, group_m=8, num_warps=4, num_stages=3)}
_SMALL_8 = MMConfig(128, 64, 256, group_m=8, num_warps=4, num_stages=4)
_DECODE_8 = MMConfig(64, 16, 512, group_m=8, num_warps=4, num_stages=3)
_CPU_8 = MMConfig(32, 32, 64, group_m=4, num_warps=4, num_stages=1)
# tf32: BLOCK_K 64 (a K-major B row of 64 fp32: two 128-byte atoms)
_LARGE_TF32 = {True: MMConfig(256, 128, 64, group_m=8, num_warps=8, num_stages=3),
               False: MMConfig(128, 128, 32, group_m=8, num_warps=4, num_stages=3)}
_SMALL_TF32 = MMConfig(64, 64, 32, group_m=8, num_warps=4, num_stages=4)
_DECODE_TF32 = MMConfig(32, 16, 128, group_m=8, num_warps=4, num_stages=4)


def default_config_8bit(m: int, n: int, k: int, device_type: str = "cuda", target: str | None = "sm_90a",
                        dtype: torch.dtype = torch.int8) -> MMConfig:
    """The tile config of an 8-bit (or, `dtype` float32, tf32) (m, n, k) sparse_mm on
    `device_type` compiled for `target`."""
    if device_type == "cpu":
        return _CPU_8
    tf32 = dtype == torch.float32
    if n <= 16:
        return _DECODE_TF32 if tf32 else _DECODE_8
    if m <= 256 or n <= 256:
        return _SMALL_TF32 if tf32 else _SMALL_8
    return (_LARGE_TF32 if tf32 else _LARGE_8)[has_wgmma(target)]


def _scale(scale: Any, length: int, name: str, device: torch.device) -> torch.Tensor | None:
    """A scale argument as a contiguous fp32 vector of `length` (one value: broadcast)."""
    if scale is None:
        return None
    if not isinstance(scale, torch.Tensor):
        raise TypeError(f"sparse_mm: {name} must be a torch.Tensor, got {type(scale).__name__}")
    if scale.device != device:
        raise ValueError(f"sparse_mm: {name} is on {scale.device} but the operands are on {device}")
    if scale.numel() == 1:
        return scale.reshape(1).to(torch.float32).expand(length).contiguous()
    if scale.numel() != length or max(scale.shape, default=1) != length:
        want = "(M,) or (M, 1)" if name == "scale_a" else "(N,) or (1, N)"
        raise ValueError(f"sparse_mm: {name} must have {length} values, shape {want}, got {tuple(scale.shape)}")
    return scale.reshape(length).to(torch.float32).contiguous()


def default_out_dtype(a_dtype: torch.dtype, scaled: bool) -> torch.dtype:
    """What this sparse_mm returns without `out_dtype`: int32 (exact) for unscaled int8, float32
    for tf32 (NV12, as torch.mm), bfloat16 otherwise.

        >>> default_out_dtype(torch.int8, scaled=False), default_out_dtype(torch.float8_e4m3fn, False)
        (torch.int32, torch.bfloat16)
    """
    if a_dtype == torch.float32:
        return torch.float32
    return torch.int32 if a_dtype == torch.int8 and not scaled else torch.bfloat16


def _out_dtype(a_dtype: torch.dtype, out_dtype: torch.dtype | None, scaled: bool) -> torch.dtype:
    allowed = [torch.bfloat16, torch.float16, torch.float32]
    if a_dtype == torch.int8 and not scaled:
        allowed.insert(0, torch.int32)
    out = default_out_dtype(a_dtype, scaled) if out_dtype is None else out_dtype
    if out not in allowed:
        raise TypeError(f"sparse_mm: out_dtype must be one of {', '.join(map(str, allowed))} for {a_dtype} "
                        f"operands{' with scales' if scaled and a_dtype == torch.int8 else ''}, got {out}")
    return out


def sparse_mm_8bit(a: Any, b: torch.Tensor, out_dtype: torch.dtype | None = None, *,
                   out: torch.Tensor | None = None, config: MMConfig | None = None,
                   scale_a: torch.Tensor | None = None, scale_b: torch.Tensor | None = None) -> torch.Tensor:
    """`sparse_mm` for an int8 or fp8 2:4 A (M x K) and B (K x N) of the same dtype.

    Sums in int32 (int8: exact) or fp32 (fp8); with `scale_a` (M values) and/or `scale_b` (N
    values, fp32) returns `(A @ B) * scale_a[:, None] * scale_b[None, :]`. The output dtype is
    `out_dtype`, else `out`'s, else int32 for unscaled int8 and bfloat16 otherwise.

        >>> A = sparsecc.compress(sparsecc.prune_2to4(torch.randint(-9, 9, (32, 64), dtype=torch.int8)))
        >>> b = torch.randint(-9, 9, (64, 16), dtype=torch.int8)
        >>> torch.equal(sparse_mm_8bit(A, b), A.to_dense().int() @ b.int())
        True
    """
    m, k = a.shape
    n = b.shape[1]
    scaled = scale_a is not None or scale_b is not None
    if out is not None and out_dtype is None:
        out_dtype = out.dtype
    dtype = _out_dtype(a.dtype, out_dtype, scaled)
    sa = _scale(scale_a, m, "scale_a", b.device)
    sb = _scale(scale_b, n, "scale_b", b.device)
    if out is None:
        d = torch.empty((m, n), dtype=dtype, device=b.device)
    else:
        check_out(out, (m, n), dtype, b.device)
        d = out
    if m == 0 or n == 0:
        return d
    if d.is_cuda and (d.data_ptr() % ALIGNMENT or d.stride(1) != 1):
        d.copy_(sparse_mm_8bit(a, b, dtype, config=config, scale_a=scale_a, scale_b=scale_b))
        return d
    kmajor = False
    if b.is_cuda:
        # the tensor cores read 8-bit B K-major: a column-major copy unless it is one already
        if not (is_column_major(b) and b.data_ptr() % ALIGNMENT == 0):
            b = b.t().contiguous().t()
        kmajor = True
    target = _jit.current_target() if b.is_cuda else None
    cfg = config if config is not None else default_config_8bit(m, n, k, b.device.type, target, a.dtype)
    if not isinstance(cfg, MMConfig):
        raise TypeError(f"sparse_mm: config must be a sparsecc.ops.MMConfig, got {type(cfg).__name__}")
    step = 32 if a.dtype == torch.float32 else 64
    if cfg.block_m % 16 or cfg.block_n % 16 or cfg.block_k % step:
        raise ValueError(f"sparse_mm: config {cfg} needs BLOCK_M and BLOCK_N multiples of 16 and BLOCK_K a "
                         f"multiple of {step} for {a.dtype} operands")
    if cfg.persistent or cfg.num_ctas != 1:
        raise ValueError(f"sparse_mm: config {cfg}: 8-bit operands take one program per tile (no persistent, "
                         "no CTA pairs)")
    grid = (-(-m // cfg.block_m) * -(-n // cfg.block_n),)
    scaled_sparse_mm_kernel[grid](  # an absent scale passes d: an unread pointer (its flag is off)
        d, a, b, d if sa is None else sa, d if sb is None else sb, m, n, k, a.stride(0),
        b.stride(0), kernel_stride_bn(b, k, kmajor), d.stride(0), d.stride(1),
        BLOCK_M=cfg.block_m, BLOCK_N=cfg.block_n, BLOCK_K=cfg.block_k, GROUP_M=cfg.group_m, B_KMAJOR=kmajor,
        ACC_INT=a.dtype == torch.int8, ROW_SCALE=sa is not None, COL_SCALE=sb is not None,
        K_32=a.stride(0) % 32 == 0,
        num_warps=cfg.num_warps, num_stages=cfg.num_stages)
    return d
