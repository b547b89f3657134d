"""`sparse_linear_8bit(x, w, weight_scale, bias, activation)`: the 8-bit (fp8 e4m3 / int8)
`SparseLinear` forward in two launches: x quantized per token (`quantize_rows_fused`), then
`act((xq @ W.T) * x_scale[:, None] * weight_scale[None, :] + bias)` in one kernel that writes
y (tokens x out, x's dtype) directly.

The kernel is `sparse_linear_kernel`'s: `tl.dot(xq_tile, w_tile)` with `w_tile` the K x N view
of W, which the compiler turns into W @ xq.T with W on the left (the tensor cores' sparse
operand), reading xq as stored (row-major: K-major, as 8-bit B must be). So neither xq nor y is
transposed or copied, and both scales, the bias and the activation are applied to the fp32 (int8:
int32) sums before the one rounding to x's dtype. It replaces quantize_rows' six to eight torch
kernels, `sparse_mm` into an out x tokens bf16 buffer, and the transpose, cast, bias and
activation passes over y after it.

    w = sparsecc.compress(q)                                  # q, sw = quantize_rows(weight, torch.float8_e4m3fn)
    y = sparse_linear_8bit(x, w, sw, bias, "silu")            # x: (..., K) fp16 / bf16 -> (..., N)
"""

from __future__ import annotations

import importlib
from typing import Any

import torch

import sparsecc
import sparsecc.language as tl
from sparsecc.ops.linear_config import (
    SM_COUNT,
    LinearConfig,
    launch_constants_8bit,
    split_k_scratch,
)
from sparsecc.ops.mm_tiles import (
    _accumulate_k,
    _scaled_linear_epilogue,
    _scaled_tile_epilogue,
    _split_k_slice,
    _tile_scales,
)
from sparsecc.ops.quantize_rows import quantize_rows_fused
from sparsecc.ops.sparse_linear import ACTIVATIONS
from sparsecc.ops.sparse_mm import sm_count
from sparsecc.ops.stream_k import launch_linear_8bit_stream_k, stream_k_plan
from sparsecc.passes.convert_tt_to_ttg import has_wgmma
from sparsecc.runtime.sparse_tensor import SparseTensor

_jit = importlib.import_module("sparsecc.frontend.jit")

__all__ = ["default_config_linear_8bit", "launch_linear_8bit", "padded_tokens", "scaled_sparse_linear_kernel",
           "scaled_sparse_linear_splitk_kernel", "sparse_linear_8bit"]


@sparsecc.jit
def scaled_sparse_linear_kernel(Y, X, W, SCALE_X, SCALE_W, BIAS, M, N, K, stride_xm, stride_wn, stride_ym,
                                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                                ACC_INT: tl.constexpr, HAS_BIAS: tl.constexpr, ACTIVATION: tl.constexpr,
                                K_32: tl.constexpr = False, PAIR_N: tl.constexpr = False,
                                EARLY_SCALES: tl.constexpr = False):
    """Y[M, N] = act((X[M, K] @ W[N, K].T) * SCALE_X[M, None] * SCALE_W[None, N] + BIAS[N]): X
    and W int8 or fp8 (W 2:4 along K), an int32 (ACC_INT) or fp32 sum, the epilogue in fp32.
    K_32: the host saw K % 32 == 0, so W's values rows (K/2 bytes) and X's rows are 16-byte
    aligned (TMA). PAIR_N (launched with num_ctas=2 over grid (weight tiles rounded up to even,
    token tiles)): programs 2j and 2j+1 take adjacent weight tiles of one token tile, so a CTA
    pair reads the same X tiles and multicasts them (an odd last weight tile's partner reads
    zeros and stores nothing). EARLY_SCALES: the tile's scales are loaded before the K loop, so
    that their latency is not paid after it (`early_scales`)."""
    if K_32:
        stride_wn = tl.multiple_of(stride_wn, 32)
        stride_xm = tl.multiple_of(stride_xm, 32)
    if PAIR_N:
        pid_n = tl.program_id(0)
        pid_m = tl.program_id(1)
    else:
        pid_m = tl.program_id(0)
        pid_n = tl.program_id(1)
    x_ptr = tl.make_block_ptr(X, shape=(M, K), strides=(stride_xm, 1), offsets=(pid_m * BLOCK_M, 0),
                              block_shape=(BLOCK_M, BLOCK_K), order=(1, 0))
    w_ptr = tl.make_block_ptr(W, shape=(K, N), strides=(1, stride_wn), offsets=(0, pid_n * BLOCK_N),
                              block_shape=(BLOCK_K, BLOCK_N), order=(0, 1))
    if EARLY_SCALES:
        scale_x, scale_w = _tile_scales(SCALE_X, SCALE_W, M, N, pid_m, pid_n, BLOCK_M, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.int32 if ACC_INT else tl.float32)
    acc = _accumulate_k(acc, x_ptr, w_ptr, tl.cdiv(K, BLOCK_K), BLOCK_K)
    if EARLY_SCALES:
        _scaled_tile_epilogue(Y, BIAS, scale_x, scale_w, acc, M, N, stride_ym, pid_m, pid_n, BLOCK_M, BLOCK_N, HAS_BIAS,
                              ACTIVATION)
    else:
        _scaled_linear_epilogue(Y, BIAS, SCALE_X, SCALE_W, acc, M, N, stride_ym, pid_m, pid_n, BLOCK_M, BLOCK_N,
                                HAS_BIAS, ACTIVATION)



@sparsecc.jit
def scaled_sparse_linear_splitk_kernel(Y, X, W, SCALE_X, SCALE_W, BIAS, PARTIALS, TICKETS, M, N, K, stride_xm, stride_wn,
                                       stride_ym, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                                       BLOCK_K: tl.constexpr, SPLIT_K: tl.constexpr, ACC_INT: tl.constexpr,
                                       HAS_BIAS: tl.constexpr, ACTIVATION: tl.constexpr, K_32: tl.constexpr = False):
    """`scaled_sparse_linear_kernel` with K split over SPLIT_K programs (axis 2), for a few tokens
    on a long K, where one program per output tile leaves SMs idle: each program writes its K
    slice's sum (int32 for int8, else fp32: PARTIALS' dtype) as a partial tile PARTIALS[pid_k]
    (SPLIT_K x M x N); the last to take a ticket (TICKETS: one zeroed int32 per output tile) adds
    the partials in order, so the result does not depend on which finished last, then applies
    both scales and the epilogue.

        grid = (cdiv(M, BLOCK_M), cdiv(N, BLOCK_N), SPLIT_K)
        scaled_sparse_linear_splitk_kernel[grid](y, xq, w, xs, sw, y, partials, tickets, M, N, K, xq.stride(0),
                                                 w.stride(0), y.stride(0), BLOCK_M=16, BLOCK_N=64, BLOCK_K=256,
                                                 SPLIT_K=2, ACC_INT=False, HAS_BIAS=False, ACTIVATION="none")
    """
    if K_32:
        stride_wn = tl.multiple_of(stride_wn, 32)
        stride_xm = tl.multiple_of(stride_xm, 32)
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    pid_k = tl.program_id(2)
    acc = _split_k_slice(X, W, M, N, K, stride_xm, stride_wn, pid_m, pid_n, pid_k, BLOCK_M, BLOCK_N, BLOCK_K,
                         SPLIT_K, ACC_INT)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    inside = (rm[:, None] < M) & (rn[None, :] < N)
    tile_offsets = rm[:, None] * N + rn[None, :]
    tl.store(PARTIALS + pid_k * M * N + tile_offsets, acc, mask=inside)
    tile = pid_m * tl.num_programs(1) + pid_n
    ticket = tl.atomic_add(TICKETS + tile, 1, sem="acq_rel")  # publishes this partial, sees the others
    if ticket == SPLIT_K - 1:
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.int32 if ACC_INT else tl.float32)
        for s in tl.static_range(SPLIT_K):
            acc += tl.load(PARTIALS + s * M * N + tile_offsets, mask=inside, other=0)
        _scaled_linear_epilogue(Y, BIAS, SCALE_X, SCALE_W, acc, M, N, stride_ym, pid_m, pid_n, BLOCK_M, BLOCK_N,
                                HAS_BIAS, ACTIVATION)


# BLOCK_M over tokens, BLOCK_N over output features: sparse_mm_8bit's measured tiles (NOTES stop
# 14) with their M and N swapped (that kernel put W's rows on M). On sm_90a up to 256 tokens, the
# tiles bench/fp8_torchao.py measured best on the H100 against torchao's CUTLASS kernel (cold L2,
# NOTES stop 30 runs 4-5): more bytes in flight than the old 16x64x256 s4 / 64x128x256 s4 (8
# stages at decode where the grid leaves each SM one CTA, 5-6 stages at 17-255 tokens; a 512-wide
# K step at decode was as fast but took 255 registers and spilled with a bias). From 256 tokens,
# bench/linear_8bit_tiles.py's (NOTES stop 23 run 4).
_DECODE = LinearConfig(16, 64, 256, num_warps=4, num_stages=4)
_DECODE_DEEP = {False: LinearConfig(16, 64, 256, num_warps=4, num_stages=8),
                True: LinearConfig(16, 64, 256, num_warps=4, num_stages=10)}
_NARROW = LinearConfig(32, 64, 256, num_warps=4, num_stages=6)
_NARROW_DEEP = {False: LinearConfig(32, 64, 256, num_warps=4, num_stages=8),
                True: LinearConfig(32, 64, 256, num_warps=4, num_stages=10)}
LONG_K = 10240
"""K from which a grid of at most one CTA an SM takes 10 stages instead of 8 (40 or more K
steps of 256): on the H100 (NOTES stop 31 run 13, cold L2) 4096x14336 at one token 20.2 us
against 21.2, at 64 tokens 20.8 against 21.2 (6 stages: 24.2; torchao 21.3); 8192x8192 ties."""
_SMALL = LinearConfig(64, 128, 256, num_warps=4, num_stages=4)
_SMALL_DEEP = LinearConfig(64, 128, 256, num_warps=4, num_stages=5)
_MID = LinearConfig(128, 128, 128, num_warps=8, num_stages=7)
"""From 128 tokens where a 64x128 grid is more than a wave: K steps of 128 with seven stages
(182 KB; the scales loaded before the K loop, `early_scales`) against 128x128x256 with three,
on the H100 at 128 tokens (fp8, cold L2, NOTES stop 34 run 5): 11008x4096 17.7 us against
19.6 (torchao 19.4), 12288x4096 19.0 against 21.0 (21.8), 14336x4096 21.5 against 22.9 (23.2)."""
_MID_DEEP = LinearConfig(128, 128, 256, num_warps=8, num_stages=4)
"""From 256 tokens where 128x256 tiles leave too few CTAs: four stages (216 KB, the epilogue
stores from registers, no staging scratch) against three, on the H100 at 512 tokens (NOTES
stop 33 run 8, cold L2): 4096x14336 37.0 us against 44.3 (torchao 36.4), 4096x11008 30.3
against 34.6 (29.7), 4096x4096 13.6 against 14.2 (13.5)."""
_MID_PERSISTENT = LinearConfig(128, 128, 128, num_warps=8, num_stages=7, stream_k=True)
"""From 256 tokens where 128x256 tiles make more than one wave and at most two
(`_PERSISTENT_WAVES`): 128x128 tiles on one program an SM, each taking its tiles in turn
(`stream_k_plan` with no split), so that the producer warp loads a tile's first stages during
the last one's epilogue and a partial last wave costs its share of the SMs' time, not a wave.
On the H100 (fp8, cold L2, NOTES stop 34 runs 2-3, 6): at 512 tokens 11008x4096 33.1-34.4 us
against 39.2 for 128x256 (torchao 31-32), 12288x4096 33.9 against 40.4 (31.8); at 256 tokens
22016x4096 38.1 against 45.1 (35.8), 32000x4096 49.6 against 52.8 (46.6); at 384 tokens
14336x4096 35.4 against 41.9. Where the plan would split the last wave, its parts lost
everywhere measured (11008x4096 at 512 tokens: 45.7 us in 3 parts), so those shapes keep
128x256 (28672x8192 at 256 tokens: 83.8 us against 87.1 split); at 200 tokens, whose second
token tile is ragged, 128x256 wins (32000x4096 52.9 us against 60.6)."""
_MID_PINGPONG = LinearConfig(128, 128, 256, num_warps=4, num_stages=4, stream_k=True, pingpong=True)
"""Above 256 tokens where `_MID_PERSISTENT` would run: its 128x128 tiles on two compute
warpgroups that take the tiles in turn, one's epilogue under the other's K loop, with K steps of
256 in four stages (208 KB) and each group's output leaving through one 8 KB box (64 x 64) at a
time; whole tiles only (`stream_k_plan`), also where the 8-warp plan would split the last wave,
and whole token tiles (`padded_tokens`). On the H100 (fp8, cold L2, NOTES stop 37 runs 2, 4-5,
8-9), at 512 tokens: 11008x4096 31.2-31.9 us against 32.1-33.3 (torchao 31.5-32.3), 12288x4096
31.8-32.5 against 32.5-33.3 (31.4-32.7), 14336x4096 40.3-40.6 against 41.4-42.9 for 128x256
(40.6-41.4); at 448 11008x4096 38.1 against 43.5, at 384 12288x4096 32.8 against 40.8 for
128x256, at 300 and 384 14336x4096 and 22016x4096 1-3% ahead. With a ragged last token tile
where the 8-warp plan would split, padded to whole tiles (NOTES stop 38 run 5, layers): at 300
tokens 13824x5120 49.5 us against 58.7 for 128x256, 12288x4096 38.2 against 45.7; at 448
14336x4096 46.9 against 47.7-49.1 (int8 46.5 against 48.4), 13824x5120 59.1 against 60.7 (before
the padding these lost: 52.6 against 42.2 at 14336x4096, NOTES stop 37 run 9). Lost: at 256
tokens (11008x4096 27.5 against 25.4)."""
_PERSISTENT_WAVES = 2.0
PERSISTENT_TOKENS = 512
"""The most tokens `_MID_PERSISTENT` is chosen at: from 1024 its 128x128 tiles lose to 128x256
everywhere measured (H100, NOTES stop 35 runs 6-8, cold L2: 8192x8192 at 1024 tokens 97.3 us
against 70.1, 11008x4096 71.1 against 57.4); at 768 it wins on 8192x8192 (63.3 against 67.3)
and loses on 11008x4096 (44.6 against 41.3)."""
_LARGE = {True: LinearConfig(128, 256, 128, num_warps=8, num_stages=4),
          False: LinearConfig(128, 128, 128, num_warps=4, num_stages=3)}
_CPU = LinearConfig(16, 32, 64, num_warps=4, num_stages=1)
FILLED_CTAS = 80
"""CTAs a tile's grid needs to take it (about 0.6 of an H100's 132 SMs): with fewer, the next
smaller tile's grid keeps more SMs busy. Measured on the H100 at 256-2048 tokens: 128x256 tiles
win from 86 CTAs on (11008 outputs, 256 tokens: 29.8 us against 34.5 for 64x128), 128x128x256
wins at 512 tokens on 4096 outputs (64 CTAs of 128x256: 20.8 us against 28.7 at 4096x4096); at
17-128 tokens 64x128 wins from 86 CTAs on (11008 outputs, 64 tokens: 16.0 us against 20.1 for
32x64), 32x64 below (4096x11008 at 128 tokens, 64 CTAs of 64x128: 19.7 us against 22.4); at
decode 16x64 with 8 stages wins up to a CTA an SM (4096x11008, 64 CTAs: 16.6 us against 21.5
with 4) and loses above (11008x4096, 172 CTAs: 18.8 against 15.2)."""


def _ctas(m: int, n: int, tile: LinearConfig) -> int:
    return -(-m // tile.block_m) * -(-n // tile.block_n)


def default_config_linear_8bit(m: int, n: int, k: int, device_type: str = "cuda",
                               target: str | None = "sm_90a", sms: int = SM_COUNT) -> LinearConfig:
    """The tiles of an 8-bit `sparse_linear_8bit` of m tokens, n outputs and k inputs. On sm_90a:
    up to 16 tokens 16x64, with 8 stages where the grid has at most one CTA an SM (`SM_COUNT`;
    10 from `LONG_K`), else 4; up to 256, 64x128 where its grid has `FILLED_CTAS` CTAs (from
    128 tokens 128x128x128 s7 (`_MID`) where the 64x128 grid is more than a wave and its own has
    `FILLED_CTAS`), else
    32x64 (more CTAs, each with six stages in flight; 8, or 10 from `LONG_K`, where the grid has
    at most one CTA an SM: at 128 tokens the deeper ring's 144 KB leave one CTA an SM where six
    stages fit two, 4096x11008 26.8 us against 19.7); from 256 the
    largest tile whose grid has `FILLED_CTAS` CTAs (128x256, then 128x128x256 with four stages
    above 256 tokens), else 64x128; above 128 tokens 128x256 where its grid has `FILLED_CTAS`
    CTAs (at 200 tokens 32000x4096 52.9 us against 67.0 for 128x128, NOTES stop 34 run 6), and
    from 256 to `PERSISTENT_TOKENS` where that grid is more than a wave and at most two, 128x128
    tiles in the persistent form: above 256 tokens the ping-pong one (`_MID_PINGPONG`, its token
    rows padded to whole tiles), at 256 the 8-warp one where its plan splits nothing
    (`_MID_PERSISTENT`; `sms`: the GPU's SMs, which the launch plans for, so that the plan it was
    chosen by is the one that runs); at 256 tokens, where 128x256 leaves too few CTAs,
    128x128x128 s7 where its grid has `FILLED_CTAS`. Elsewhere 16x64 up to 16 tokens, 64x128 up
    to 256, 128x128 above.

        >>> default_config_linear_8bit(1, 4096, 4096)
        LinearConfig(block_m=16, block_n=64, block_k=256, num_warps=4, num_stages=8, split_k=1)
        >>> default_config_linear_8bit(64, 4096, 4096).block_n, default_config_linear_8bit(64, 11008, 4096).block_n
        (64, 128)
        >>> [default_config_linear_8bit(m, 4096, 14336).num_stages for m in (1, 64, 128)]
        [10, 10, 6]
        >>> default_config_linear_8bit(512, 4096, 4096).block_n, default_config_linear_8bit(1024, 11008, 4096).block_n
        (128, 256)
        >>> default_config_linear_8bit(512, 11008, 4096).stream_k, default_config_linear_8bit(1024, 8192, 8192).stream_k
        (True, False)
    """
    if device_type == "cpu":
        return _CPU
    if not has_wgmma(target):
        if m <= 16:
            return _DECODE
        return _SMALL if m <= 256 or n <= 256 else _LARGE[False]
    long_k = k >= LONG_K
    if m <= 16:
        return _DECODE_DEEP[long_k] if _ctas(m, n, _DECODE) <= SM_COUNT else _DECODE
    if m > 128:
        large = _ctas(m, n, _LARGE[True])
        if 256 <= m <= PERSISTENT_TOKENS and sms < large <= _PERSISTENT_WAVES * sms:
            if m > 256:
                return _MID_PINGPONG
            if stream_k_plan(m, n, k, _MID_PERSISTENT, sms)[2] == 1:
                return _MID_PERSISTENT
        if large >= FILLED_CTAS:
            return _LARGE[True]
        if m >= 256:
            if _ctas(m, n, _MID) < FILLED_CTAS:  # (_MID_DEEP has _MID's 128x128 tiles)
                return _SMALL
            # at 256 tokens 128x128x128 s7 (H100, NOTES stop 35 run 8, cold L2: 8192x8192 28.1 us
            # against 35.9 for 64x128, 5120x5120 15.1 against 21.0)
            return _MID_DEEP if m > 256 else _MID
    if _ctas(m, n, _SMALL_DEEP) >= FILLED_CTAS:
        # a 64x128 grid of more than a wave: 128 tokens a tile, half the CTAs, at least
        # FILLED_CTAS of them (H100, NOTES stop 31 run 15, cold L2: 14336x4096 at 128
        # tokens 23.2 us against 25.1, 28672x8192 69.8 against 74.2)
        if m >= 128 and _ctas(m, n, _SMALL_DEEP) > SM_COUNT and _ctas(m, n, _MID) >= FILLED_CTAS:
            return _MID
        return _SMALL_DEEP
    return _NARROW_DEEP[long_k] if _ctas(m, n, _NARROW) <= SM_COUNT else _NARROW


def _check(x: Any, w: Any, weight_scale: Any, bias: Any, activation: str) -> None:
    if not isinstance(w, SparseTensor) or w.dtype not in (torch.int8, torch.float8_e4m3fn):
        raise TypeError("sparse_linear_8bit: w must be an int8 or float8_e4m3fn sparsecc.SparseTensor "
                        f"(sparsecc.compress(codes)), got {getattr(w, 'dtype', type(w).__name__)}")
    if not isinstance(x, torch.Tensor) or x.dtype not in (torch.float16, torch.bfloat16, torch.float32):
        raise TypeError(f"sparse_linear_8bit: x must be an fp16, bf16 or fp32 tensor, got "
                        f"{getattr(x, 'dtype', type(x).__name__)}")
    n, k = w.shape
    if x.dim() == 0 or x.shape[-1] != k:
        raise ValueError(f"sparse_linear_8bit: x has shape {tuple(x.shape)}, the weight ({n} x {k} = out x in) "
                         f"takes {k} features")
    if not isinstance(weight_scale, torch.Tensor) or tuple(weight_scale.shape) != (n,) \
            or weight_scale.dtype != torch.float32:
        raise ValueError(f"sparse_linear_8bit: weight_scale must be a float32 tensor of shape ({n},)")
    if bias is not None and (not isinstance(bias, torch.Tensor) or tuple(bias.shape) != (n,)):
        raise ValueError(f"sparse_linear_8bit: bias must be a tensor of shape ({n},)")
    if activation not in ACTIVATIONS:
        raise ValueError(f"sparse_linear_8bit: activation must be one of {ACTIVATIONS}, got {activation!r}")
    for name, t in (("weight_scale", weight_scale), ("bias", bias)):
        if t is not None and t.device != x.device:
            raise ValueError(f"sparse_linear_8bit: {name} is on {t.device}, x on {x.device}")
    if w.device != x.device:
        raise ValueError(f"sparse_linear_8bit: x is on {x.device}, the weight on {w.device}")


def sparse_linear_8bit(x: torch.Tensor, w: SparseTensor, weight_scale: torch.Tensor, bias: torch.Tensor | None = None,
                       activation: str = "none", config: LinearConfig | None = None) -> torch.Tensor:
    """`act(quantized(x) @ (W * weight_scale[:, None]).T + bias)` for an 8-bit 2:4 W (out x in,
    int8 or fp8 e4m3 codes, one fp32 scale per output channel): x (..., in) is quantized per
    token to W's dtype (`quantize_rows`' arithmetic, one launch), multiplied on the 8-bit sparse
    tensor cores, and scaled, biased, activated and rounded to x's dtype in the kernel's
    epilogue. CUDA tensors run the kernels, CPU tensors the interpreter (exact, slow).

        q, sw = quantize_rows(weight, torch.float8_e4m3fn)       # weight: 2:4 pruned, out x in
        y = sparse_linear_8bit(x, sparsecc.compress(q), sw, bias, "silu")
    """
    _check(x, w, weight_scale, bias, activation)
    n, k = w.shape
    lead = x.shape[:-1]
    x2 = x.reshape(-1, k)
    m = x2.shape[0]
    if m == 0 or n == 0:
        return torch.empty((m, n), dtype=x.dtype, device=x.device).reshape(*lead, n)
    target = _jit.current_target() if x.is_cuda else None
    cfg = config
    if cfg is None:
        sms = sm_count(x.device.index) if x.is_cuda else SM_COUNT
        cfg = default_config_linear_8bit(m, n, k, x.device.type, target, sms)
    if cfg.cta_pairs and x.is_cuda and not has_wgmma(target):
        raise ValueError(f"sparse_linear_8bit: config cta_pairs needs TMA multicast (sm_90a); this GPU is {target}")
    rows = padded_tokens(m, cfg, has_wgmma(target)) if x.is_cuda else m
    xq = torch.empty((rows, k), dtype=w.dtype, device=x.device)
    x_scale = torch.empty(rows, dtype=torch.float32, device=x.device)
    quantize_rows_fused(x2, w.dtype, q=xq[:m], scale=x_scale[:m])
    y = torch.empty((rows, n), dtype=x.dtype, device=x.device)
    b = bias.to(x.dtype).contiguous() if bias is not None else None
    launch_linear_8bit(y, xq, x_scale, w, weight_scale.contiguous(), b, activation, cfg)
    return (y if rows == m else y[:m]).reshape(*lead, n)


def padded_tokens(m: int, cfg: LinearConfig, hopper: bool = True) -> int:
    """The token rows `sparse_linear_8bit` runs `cfg` on: m rounded up to whole token tiles for a
    persistent config (`stream_k`) and, on sm_90a (`hopper`), for tiles of 128 tokens or more;
    else m. The rows past m are quantized from nothing and their outputs dropped (a view of the
    first m rows is returned): each output row reads only its own token's row. On the H100 a
    kernel whose last token tile is ragged ran slower than the same tiles whole, with more rows:
    persistent kernels (ours and torchao's) 20-35% (fp8, NOTES stop 37 runs 9, 13-14: 11008x4096
    at 448 tokens 38.1 us against 31.5 at 512), data-parallel ones 1-18% (fp8 and int8 layers,
    NOTES stop 38 runs 6 and 8: 4096x14336 at 300 tokens 62.7 us against 51.7 padded to 384,
    32000x4096 85.9 against 73.2, 28672x8192 at 448 163.5 against 151.9; none slower padded),
    while the padded rows cost only memory.

        >>> padded_tokens(448, LinearConfig(128, 128, 256, 4, 4, stream_k=True)), padded_tokens(448, _LARGE[True])
        (512, 512)
        >>> padded_tokens(448, _LARGE[True], hopper=False), padded_tokens(100, _SMALL)
        (448, 100)
    """
    if m % cfg.block_m == 0 or not (cfg.stream_k or (hopper and cfg.block_m >= 128)):
        return m
    return -(-m // cfg.block_m) * cfg.block_m


def launch_linear_8bit(y: torch.Tensor, xq: torch.Tensor, x_scale: torch.Tensor, w: SparseTensor,
                       weight_scale: torch.Tensor, bias: torch.Tensor | None, activation: str,
                       cfg: LinearConfig) -> None:
    """One launch of `scaled_sparse_linear_kernel` for `cfg` on already quantized tokens (`xq`,
    M x K codes of W's dtype with unit column stride; `x_scale` M fp32), writing `y` (M x N). No
    checks: `sparse_linear_8bit` is the checked entry point; benchmarks call this to time the
    GEMM alone, as a peer's kernel that takes quantized inputs is timed.

        xq, xs = quantize_rows_fused(x, w.dtype)
        launch_linear_8bit(y, xq, xs, w, sw, None, "none", default_config_linear_8bit(*y.shape, x.shape[1]))
    """
    m, k = xq.shape
    n = w.shape[0]
    b = bias if bias is not None else y
    if cfg.stream_k:
        launch_linear_8bit_stream_k(y, xq, x_scale, w, weight_scale, b, cfg, bias is not None, activation)
        return
    grid = (-(-m // cfg.block_m), -(-n // cfg.block_n))
    consts = launch_constants_8bit(w, k, cfg, bias is not None, activation)
    if cfg.cta_pairs:
        pairs = (-(-n // cfg.block_n) + 1) // 2
        scaled_sparse_linear_kernel[(2 * pairs, grid[0])](y, xq, w, x_scale, weight_scale, b, m, n, k, xq.stride(0),
                                                          w.stride(0), y.stride(0), PAIR_N=True, num_ctas=2, **consts)
        return
    if cfg.split_k <= 1:
        scaled_sparse_linear_kernel[grid](y, xq, w, x_scale, weight_scale, b, m, n, k, xq.stride(0), w.stride(0),
                                          y.stride(0), **consts)
        return
    partials, tickets = split_k_scratch("sparse_linear_8bit", cfg, m, n, grid[0] * grid[1], y.device,
                                        torch.int32 if w.dtype == torch.int8 else torch.float32)
    scaled_sparse_linear_splitk_kernel[(*grid, cfg.split_k)](
        y, xq, w, x_scale, weight_scale, b, partials, tickets, m, n, k, xq.stride(0), w.stride(0), y.stride(0),
        SPLIT_K=cfg.split_k, **consts)


def reference_linear_8bit(x: torch.Tensor, w: SparseTensor, weight_scale: torch.Tensor,
                          bias: torch.Tensor | None = None, activation: str = "none") -> torch.Tensor:
    """What `sparse_linear_8bit` computes, in torch: x quantized by `quantize_rows`, the exact
    product of the codes (float64), both scales, the bias and the activation in fp32, one rounding
    to x's dtype. The CPU path of the layer (the interpreter is for checking kernels)."""
    from sparsecc.nn.quantize import quantize_rows
    from sparsecc.ops.dispatch import activate

    n, k = w.shape
    xq, x_scale = quantize_rows(x.reshape(-1, k), w.dtype)
    acc = (xq.double() @ w.to_dense().double().T).float()  # the codes' products summed in float64
    y = acc * x_scale[:, None] * weight_scale.float()[None, :]
    if bias is not None:
        y = y + bias.float()
    return activate(y, activation).to(x.dtype).reshape(*x.shape[:-1], n)
