"""`sparse_linear(x, w, bias, activation)`: `act(x @ W.T + bias)` with W a 2:4 SparseTensor read as
stored (N × K, 2:4 along K) — an nn.Linear with a sparse weight.

The kernel is written as a Triton user would: `tl.dot(x_tile, w_tile)` with `w_tile` the K×N
view of W; the compiler (sparse-operand-to-lhs) computes the transposed product with W on the
left, so neither W nor x is copied. Bias and activation run in the kernel's epilogue.

    w = sparsecc.compress(sparsecc.prune_2to4(linear.weight.detach()))
    y = sparse_linear(x, w, linear.bias, activation="silu")   # x: (..., K) -> y: (..., N)

W may also be a `QuantizedSparseTensor` (`sparsecc.compress(w, quant="w4g128")`: 4- or 8-bit
codes with a scale per group of K columns); the kernel is the same, the compiler dequantizes each
W tile before the sparse dot, so BLOCK_K must then cover whole groups (a multiple of G).

On Hopper (sm_90a), from `QUANT_WGMMA_FROM` tokens on, a quantized W runs the same kernel compiled
with `quant_wgmma` (`LinearConfig.quant_wgmma`, `quantized_prefill_config`): the codes and scales
stream into shared memory with the tokens tile, each warp dequantizes its rows of W straight into
the register-A fragments of `wgmma.mma_async.sp`, and the tokens x^T are read by descriptor, as
in the 16-bit kernel; below that (and on other GPUs) the dequantized tile feeds mma.sp.

At decode a few tokens give few output tiles, too few CTAs to keep the SMs' loads in flight:
`LinearConfig(split_k=S)` runs `sparse_linear_splitk_kernel`, S programs per tile, each over
a contiguous S-th of K; the last of them to finish (a ticket counter) sums the S partial tiles
in a fixed order and runs the epilogue, in the same launch (`launch_linear`). Where the tiles
make full waves and a thin last one, `LinearConfig(stream_k=True)` runs the persistent form of
`sparsecc.ops.stream_k` instead (one program an SM, the last wave split along K).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import torch

import sparsecc
import sparsecc.language as tl
from sparsecc.ops import dispatch as _dispatch
from sparsecc.ops.densify import weight16
from sparsecc.ops.linear_config import (
    SM_COUNT,
    LinearConfig,
    launch_constants,
    split_k_scratch,
    table_linear_config,
)
from sparsecc.ops.mm_tiles import (
    _accumulate_k,
    _bias_activate,
    _linear_epilogue,
    _row_strides,
    _split_k_slice,
)
from sparsecc.ops.stream_k import launch_linear_stream_k
from sparsecc.runtime.quant_tensor import QuantizedSparseTensor
from sparsecc.runtime.sparse_tensor import SparseTensor

ACTIVATIONS = ("none", "relu", "gelu_tanh", "silu")


@sparsecc.jit
def sparse_linear_kernel(Y, X, W, BIAS, M, N, K, stride_xm, stride_wn, stride_ym,
                         BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                         HAS_BIAS: tl.constexpr, ACTIVATION: tl.constexpr, ROWS_16B: tl.constexpr = False, ROWS_64: tl.constexpr = False):
    """Y[M, N] = act(X[M, K] @ W[N, K].T + BIAS[N]), W 2:4 sparse along K. ROWS_16B: the host saw
    X's row stride a multiple of 8 elements and W's (dense K) of 16, so the rows of X and of W's
    kept values start 16 bytes apart and the tiles can stream by TMA; ROWS_64 (quantized W): W's
    of 64, so its codes' rows do too."""
    stride_xm, stride_wn = _row_strides(stride_xm, stride_wn, ROWS_16B, ROWS_64)
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    x_ptr = tl.make_block_ptr(X, shape=(M, K), strides=(stride_xm, 1), offsets=(pid_m * BLOCK_M, 0),
                              block_shape=(BLOCK_M, BLOCK_K), order=(1, 0))
    w_ptr = tl.make_block_ptr(W, shape=(K, N), strides=(1, stride_wn), offsets=(0, pid_n * BLOCK_N),
                              block_shape=(BLOCK_K, BLOCK_N), order=(0, 1))
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    acc = _accumulate_k(acc, x_ptr, w_ptr, tl.cdiv(K, BLOCK_K), BLOCK_K)
    _linear_epilogue(Y, BIAS, acc, M, N, stride_ym, pid_m, pid_n, BLOCK_M, BLOCK_N, HAS_BIAS, ACTIVATION)


@sparsecc.jit
def sparse_linear_splitk_kernel(Y, X, W, BIAS, PARTIALS, TICKETS, M, N, K, stride_xm, stride_wn, stride_ym,
                                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                                SPLIT_K: tl.constexpr, HAS_BIAS: tl.constexpr, ACTIVATION: tl.constexpr,
                                ROWS_16B: tl.constexpr = False, ROWS_64: tl.constexpr = False):
    """`sparse_linear_kernel` with K split over SPLIT_K programs (axis 2): each writes its K
    slice's product as an fp32 partial tile PARTIALS[pid_k] (SPLIT_K × M × N); the last to take
    a ticket (TICKETS: one zeroed int32 per output tile) sums the partials in order and runs the
    epilogue. ROWS_16B as in `sparse_linear_kernel`.

        grid = (cdiv(M, BLOCK_M), cdiv(N, BLOCK_N), SPLIT_K)
        sparse_linear_splitk_kernel[grid](y, x, w, y, partials, tickets, M, N, K, x.stride(0), w.stride(0),
                                          y.stride(0), BLOCK_M=8, BLOCK_N=64, BLOCK_K=256, SPLIT_K=2,
                                          HAS_BIAS=False, ACTIVATION="none")
    """
    stride_xm, stride_wn = _row_strides(stride_xm, stride_wn, ROWS_16B, ROWS_64)
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    pid_k = tl.program_id(2)
    acc = _split_k_slice(X, W, M, N, K, stride_xm, stride_wn, pid_m, pid_n, pid_k, BLOCK_M, BLOCK_N, BLOCK_K, SPLIT_K)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    inside = (rm[:, None] < M) & (rn[None, :] < N)
    tile_offsets = rm[:, None] * N + rn[None, :]
    tl.store(PARTIALS + pid_k * M * N + tile_offsets, acc, mask=inside)
    tile = pid_m * tl.num_programs(1) + pid_n
    ticket = tl.atomic_add(TICKETS + tile, 1, sem="acq_rel")  # publishes this partial, sees the others
    if ticket == SPLIT_K - 1:
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for s in tl.static_range(SPLIT_K):
            acc += tl.load(PARTIALS + s * M * N + tile_offsets, mask=inside, other=0.0)
        acc = _bias_activate(acc, BIAS, N, pid_n, BLOCK_N, HAS_BIAS, ACTIVATION)
        tl.store(Y + rm[:, None] * stride_ym + rn[None, :], acc.to(Y.dtype.element_ty), mask=inside)


def default_linear_config(m: int, n: int, k: int, device_type: str = "cuda") -> LinearConfig:
    """The tiles bench/linear.py measured best on the H100 (bench/results/linear-current-*.md)."""
    if device_type == "cpu":
        return LinearConfig(16, 32, 32, num_stages=1)
    if m <= 16:  # long K slices per CTA: the fixed cost per K step dominates small weights
        if n >= 8192:
            return LinearConfig(16, 64, 256, 4, 3)
        return LinearConfig(16, 32, 512, 4, 4) if k >= 8192 else LinearConfig(16, 32, 1024, 4, 3)
    if m >= 1024:  # prefill: 1.17-1.33x F.linear at 2048 tokens on Llama-2-7B shapes
        return LinearConfig(128, 256, 64, 8, 4)
    return _medium_m_config(m, n, k)


def _medium_m_config(m: int, n: int, k: int) -> LinearConfig:
    """17-1023 tokens: 128 weight rows a CTA over 64-token tiles, or 128-token tiles once they
    alone make 64 CTAs (32-token tiles up to 32 tokens); K split in two where the tiles make
    well under a wave (under one for K >= 8192) and K is long enough for each half. The 64- and
    128-token tiles take BLOCK_K = 128 on wgmma (`convert_tt_to_ttg.WIDE_KMAJOR16_MIN_N`):
    `bench/linear_mid_sweep.py --cold` (NOTES stop 31 run 2, H100) measured them at
    1.02-1.42x F.linear on four Llama shapes at M = 128-512, where the BLOCK_K = 64 tiles ran
    0.81-1.22x.

        >>> _medium_m_config(128, 4096, 4096)
        LinearConfig(block_m=64, block_n=128, block_k=128, num_warps=4, num_stages=4, split_k=2)
        >>> _medium_m_config(512, 11008, 4096)
        LinearConfig(block_m=128, block_n=128, block_k=128, num_warps=8, num_stages=4, split_k=1)
        >>> _medium_m_config(32, 4096, 4096).block_k
        64
    """
    row_tiles = -(-n // 128)
    block_m = 128 if m >= 128 and -(-m // 128) * row_tiles >= 64 else 64 if m > 32 else 32
    ctas = -(-m // block_m) * row_tiles
    few = ctas < 100 or (ctas < SM_COUNT and k >= 8192)
    split_k = 2 if few and k >= 2048 else 1
    if block_m == 32:
        return LinearConfig(32, 128, 64, 4, 4, split_k)
    return LinearConfig(block_m, 128, 128, 8 if block_m == 128 else 4, 4, split_k)


def quantized_decode_config(m: int, n: int, k: int, dtype: torch.dtype | None = None) -> LinearConfig:
    """The tiles bench/quant_decode.py measured best for quantized weights on the H100
    (bench/results/quant-decode-current-*.md, NOTES stop 17): 8-token tiles up to 8 tokens (the
    dequantized W tile is the mma's A, the tokens its n = 8), 64 or 128 weight rows a CTA, and
    split-K when long rows leave fewer than ~256 programs; BLOCK_K is then fitted to the groups
    (`quantized_linear_config`). `dtype`: the tokens' (sparse_linear passes it): fp16 tokens
    over more than 4096 rows keep a third stage in the 8x64x512 tile, measured 2-9% faster for
    4-bit 11008-22016 x 4096 at one token in a graph, 8-bit 1-6% (NOTES stop 33 runs 5-7); bf16
    (its 8-bit tile would spill) and the fused SwiGLU kernel's two weight rings (None) keep two,
    unmeasured; 32000x4096 keeps its table's tile.

        >>> quantized_decode_config(1, 8192, 28672)
        LinearConfig(block_m=8, block_n=64, block_k=256, num_warps=4, num_stages=3, split_k=2)
        >>> quantized_decode_config(1, 11008, 4096, torch.float16).num_stages
        3
    """
    if m > 16:
        if n >= 14336:
            return LinearConfig(64, 128, 128, 8, 3)
        return LinearConfig(32, 64, 256, 4, 3, split_k=2 if k >= 8192 else 1)
    if k <= 4096 and (n <= 4096 or m <= 8):
        return LinearConfig(8, 64, 512, 4, 3 if dtype == torch.float16 and m <= 8 and n > 4096 else 2)
    if m <= 8 and n >= 16384 and k < 16384:
        return LinearConfig(8, 128, 256, 4, 3)
    tiles = -(-n // 64)
    split = 1
    while k >= 8192 and split < 4 and tiles * split * 2 <= 256:
        split *= 2
    return LinearConfig(8 if m <= 8 else 16, 64, 256, 4, 3, split_k=split)


QUANT_WGMMA_FROM = 128
"""Tokens from which a quantized weight on Hopper takes `quantized_prefill_config` (register-A
wgmma): at 128 tokens it ran 0.95-1.40x F.linear where the mma.sp tiles ran 0.77-0.98x
(bench/linear_mid_sweep.py --scheme, H100, stop 24)."""


def quantized_prefill_config(m: int, n: int, k: int, dtype: torch.dtype | None = None) -> LinearConfig:
    """Tiles for a quantized weight at prefill on sm_90a: 128 tokens x 128 weight rows a CTA over
    two warpgroups (each one m64n128k32 wgmma per k32 step of the dequantized tile), BLOCK_K
    128 (one group of w4g128 / w8g128; `quantized_linear_config` widens it for larger groups)
    and three stages, four for fp16 activations (`dtype`), whose loop keeps a wgmma group in
    flight (`quant_wgmma_options`: copies two steps ahead); no spills per ptxas. K split in two
    where up to 256 tokens leave the tiles under half a wave (4096x4096 at 128 tokens: 32).
    bench/dispatch_table.py times the other candidates of `dispatch_measure`.

        >>> quantized_prefill_config(2048, 4096, 4096)
        LinearConfig(block_m=128, block_n=128, block_k=128, num_warps=8, num_stages=3, split_k=1, quant_wgmma=True)
        >>> quantized_prefill_config(2048, 4096, 4096, torch.float16).num_stages
        4
        >>> quantized_prefill_config(128, 4096, 4096).split_k, quantized_prefill_config(128, 11008, 4096).split_k
        (2, 1)
    """
    tiles = -(-m // 128) * -(-n // 128)
    split_k = 2 if m <= 256 and tiles < SM_COUNT // 2 and k >= 2048 else 1
    return LinearConfig(128, 128, 128, 8, 4 if dtype == torch.float16 else 3, split_k, quant_wgmma=True)


def quantized_default_config(m: int, n: int, k: int, w: QuantizedSparseTensor, device: torch.device) -> LinearConfig:
    """The default tiles of a quantized `w` at M tokens on `device`: the decode tiles up to 64
    tokens, on Hopper the register-A wgmma tiles from `QUANT_WGMMA_FROM` tokens, else the 16-bit
    kernel's; BLOCK_K fitted to the groups (`quantized_linear_config`).

        >>> import sparsecc
        >>> w = sparsecc.compress(sparsecc.prune_2to4(torch.randn(64, 256).half()), quant="w4g128")
        >>> quantized_default_config(4, 64, 256, w, torch.device("cpu")).block_k
        128
    """
    cfg = default_linear_config(m, n, k, device.type)
    if device.type == "cuda":
        if m <= 64:
            cfg = quantized_decode_config(m, n, k, w.dtype)
        elif m >= QUANT_WGMMA_FROM and has_quant_wgmma(device):
            cfg = quantized_prefill_config(m, n, k, w.dtype)
    return quantized_linear_config(cfg, w)


def has_quant_wgmma(device: torch.device) -> bool:
    """Whether `device` runs the register-A wgmma kernel of quantized weights (compute
    capability 9.0, compiled for sm_90a)."""
    return device.type == "cuda" and torch.cuda.get_device_capability(device) == (9, 0)


def quantized_linear_config(cfg: LinearConfig, w: QuantizedSparseTensor) -> LinearConfig:
    """`cfg` with BLOCK_K fitted to the quantization groups of `w`: a default tile's BLOCK_K
    rounded up to a multiple of the group G (at least G), but no wider than W's K rounded up to
    a power of two (block shapes are powers of two, so G must be one too: a ValueError
    otherwise). Per-row schemes (`w8c`) take any BLOCK_K, so `cfg` is returned unchanged.

        >>> import sparsecc
        >>> w = sparsecc.compress(sparsecc.prune_2to4(torch.randn(64, 256).half()), quant="w4g128")
        >>> quantized_linear_config(LinearConfig(16, 32, 32), w).block_k
        128
        >>> quantized_linear_config(LinearConfig(16, 32, 1024), w).block_k
        256
    """
    group = w.scheme.group
    if group is None:
        return cfg
    block_k = -(-max(cfg.block_k, group) // group) * group
    widest = max(1 << (w.shape[1] - 1).bit_length(), group)  # K's power of two, a multiple of G
    return replace(cfg, block_k=min(block_k, widest))


def _check_config(cfg: LinearConfig, w: SparseTensor | QuantizedSparseTensor) -> None:
    """A user config whose BLOCK_K does not cover whole quantization groups of `w`, or whose
    split_k is not a positive int, is an error."""
    if isinstance(cfg.split_k, bool) or not isinstance(cfg.split_k, int) or cfg.split_k < 1:
        raise ValueError(f"sparse_linear: config split_k must be a positive int, got {cfg.split_k!r}")
    if not isinstance(cfg.quant_wgmma, bool):
        raise ValueError(f"sparse_linear: config quant_wgmma must be a bool, got {cfg.quant_wgmma!r}")
    if cfg.cta_pairs or cfg.pingpong:
        name = "cta_pairs" if cfg.cta_pairs else "pingpong"
        raise ValueError(f"sparse_linear: config {name} is for 8-bit weights (sparse_linear_8bit); "
                         "16-bit and quantized weights run without it")
    if isinstance(w, QuantizedSparseTensor):
        why = w.scheme.check_tile(cfg.block_k)
        if why is not None:
            raise ValueError(f"sparse_linear: config block_k={cfg.block_k} does not fit the weight "
                             f"({w.encoding}): {why}")


def _check(x: Any, w: Any, bias: Any, activation: str) -> None:
    if not isinstance(w, (SparseTensor, QuantizedSparseTensor)):
        raise TypeError(f"sparse_linear: w must be a sparsecc.SparseTensor or QuantizedSparseTensor "
                        f"(sparsecc.compress(weight), sparsecc.compress(weight, quant=\"w4g128\")), "
                        f"got {type(w).__name__}")
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"sparse_linear: x must be a torch.Tensor, got {type(x).__name__}")
    if x.dtype != w.dtype:
        raise TypeError(f"sparse_linear: x is {x.dtype} but the weight is {w.dtype}")
    if x.shape[-1] != w.shape[1]:
        raise ValueError(f"sparse_linear: x has {x.shape[-1]} features, the weight expects {w.shape[1]} "
                         f"(weight {tuple(w.shape)} = out x in)")
    if x.device != w.device:
        raise ValueError(f"sparse_linear: x is on {x.device}, the weight on {w.device}")
    if bias is not None and (not isinstance(bias, torch.Tensor) or tuple(bias.shape) != (w.shape[0],)):
        raise ValueError(f"sparse_linear: bias must be a tensor of shape ({w.shape[0]},)")
    if activation not in ACTIVATIONS:
        raise ValueError(f"sparse_linear: activation must be one of {ACTIVATIONS}, got {activation!r}")


def sparse_linear(x: torch.Tensor, w: SparseTensor | QuantizedSparseTensor, bias: torch.Tensor | None = None,
                  activation: str = "none", config: LinearConfig | None = None,
                  dispatch: str | None = None) -> torch.Tensor:
    """`act(x @ W.T + bias)` for a 2:4 SparseTensor W (out × in); x is (..., in), fp16/bf16 like
    W; the result is (..., out) in x's dtype. CUDA tensors run the sparsecc kernel, CPU tensors
    the interpreter (exact, slow).

    W may be a `QuantizedSparseTensor` (4- or 8-bit codes and scales): the result is then
    `act(x @ W.to_dense().T + bias)`, W dequantized tile by tile in the kernel; x must have W's
    logical dtype (`w.dtype`). The default tile's BLOCK_K is fitted to the scheme's group
    (`quantized_linear_config`); a `config` whose block_k is not a multiple of the group is a
    ValueError.

        w4 = sparsecc.compress(sparsecc.prune_2to4(weight), quant="w4g128")  # fp16 weight, K % 128 == 0
        y = sparse_linear(x, w4, bias, activation="relu")

    On CUDA, without a `config`, the dispatcher (`sparsecc.ops.dispatch`) picks the kernel (and
    its tiles, from the measured table), or for quantized W the 16-bit kernel on dequantized
    values, or decompression and F.linear, per shape; `dispatch` ("auto", "sparse",
    "sparse16", "dense"; None: the global setting) forces one, on the CPU too.
    """
    _check(x, w, bias, activation)
    if dispatch is not None:
        _dispatch.resolve(dispatch)  # a bad value is an error also where nothing is computed
    if config is not None:
        _check_config(config, w)
    lead = x.shape[:-1]
    x2 = x.reshape(-1, x.shape[-1])
    if x2.stride(-1) != 1 or x2.data_ptr() % 16:
        x2 = x2.contiguous()
    m, k = x2.shape
    n = w.shape[0]
    y = torch.empty((m, n), dtype=x.dtype, device=x.device)
    if m == 0 or n == 0:
        return y.reshape(*lead, n)
    cfg = config
    if cfg is None:  # the CPU runs the interpreter unless a path is forced
        scheme = _dispatch.scheme_of(w)
        mode = _dispatch.choose(m, n, k, w.dtype, scheme, x.device, dispatch).mode
        if mode != "sparse":
            return _linear_other(x2, w, bias, activation, mode).reshape(*lead, n)
        picked = _dispatch.table_config(m, n, k, w.dtype, scheme, x.device)
        cfg = table_linear_config(picked) if picked is not None else None
        if cfg is not None and isinstance(w, QuantizedSparseTensor):
            cfg = quantized_linear_config(cfg, w)
    if cfg is None:
        if isinstance(w, QuantizedSparseTensor):
            cfg = quantized_default_config(m, n, k, w, x.device)
        else:
            cfg = default_linear_config(m, n, k, x.device.type)
    b = bias.to(x.dtype).contiguous() if bias is not None else y
    launch_linear(y, x2, w, b, cfg, has_bias=bias is not None, activation=activation)
    return y.reshape(*lead, n)


def _linear_other(x: torch.Tensor, w: SparseTensor | QuantizedSparseTensor, bias: torch.Tensor | None,
                  activation: str, mode: str) -> torch.Tensor:
    """`act(x @ W.T + bias)` (x: M x K) the dispatcher's sparse16 way (W's 16-bit kept values
    through the 16-bit kernel) or dense way (W decompressed, F.linear)."""
    quantized = isinstance(w, QuantizedSparseTensor)
    bias = bias.to(x.dtype) if bias is not None else None
    arrays = (w.values, w.meta, w.scales if quantized else None, w.zeros if quantized else None, None,
              w.scheme.bits if quantized else 16, w.shape[1], w.dtype)
    if mode == "sparse16":
        kept = weight16(*arrays, False)
        return sparse_linear(x, SparseTensor(kept, w.meta, tuple(w.shape)), bias, activation, dispatch="sparse")
    y = torch.nn.functional.linear(x, weight16(*arrays, True), bias)
    return _dispatch.activate(y, activation)


def launch_linear(y: torch.Tensor, x: torch.Tensor, w: SparseTensor | QuantizedSparseTensor, bias: torch.Tensor,
                  cfg: LinearConfig, has_bias: bool, activation: str) -> None:
    """One launch of the linear kernel for `cfg` (split-K when `cfg.split_k` > 1, stream-K when
    `cfg.stream_k`) writing
    `y` (M × N); `x` is M × K with unit column stride, `bias` any tensor when `has_bias` is
    False. No checks: `sparse_linear` is the checked entry point; benchmarks call this to time
    one config.

        y = torch.empty(x.shape[0], w.shape[0], dtype=x.dtype, device=x.device)
        launch_linear(y, x, w, y, LinearConfig(8, 64, 256, 4, 3, split_k=2), has_bias=False, activation="none")
    """
    if cfg.stream_k:
        launch_linear_stream_k(y, x, w, bias, cfg, has_bias, activation)
        return
    m, k = x.shape
    n = w.shape[0]
    grid_m, grid_n = (m + cfg.block_m - 1) // cfg.block_m, (n + cfg.block_n - 1) // cfg.block_n
    consts = launch_constants(x, w, cfg, has_bias, activation)
    if cfg.split_k <= 1:
        sparse_linear_kernel[(grid_m, grid_n)](y, x, w, bias, m, n, k, x.stride(0), w.stride(0), y.stride(0),
                                               **consts)
        return
    partials, tickets = split_k_scratch("sparse_linear", cfg, m, n, grid_m * grid_n, y.device)
    sparse_linear_splitk_kernel[(grid_m, grid_n, cfg.split_k)](
        y, x, w, bias, partials, tickets, m, n, k, x.stride(0), w.stride(0), y.stride(0),
        SPLIT_K=cfg.split_k, **consts)


def reference_linear(x: torch.Tensor, w: SparseTensor | QuantizedSparseTensor, bias: torch.Tensor | None = None,
                     activation: str = "none") -> torch.Tensor:
    """The same result computed by torch on the decompressed (for a QuantizedSparseTensor:
    dequantized, `w.to_dense()`) weight, with fp32 accumulation."""
    y = torch.nn.functional.linear(x.float(), w.to_dense().float(), None if bias is None else bias.float())
    if activation == "relu":
        y = torch.relu(y)
    elif activation == "gelu_tanh":
        y = torch.nn.functional.gelu(y, approximate="tanh")
    elif activation == "silu":
        y = torch.nn.functional.silu(y)
    return y.to(x.dtype)
