"""The pieces every sparse_mm and linear kernel shares: tile order, operand block pointers, the K
loop, the epilogue store and activation (`@sparsecc.jit` helpers, inlined into each kernel), and
sparse_mm's launch config type.

`sparsecc.ops.sparse_mm` (fp16 / bf16), `sparsecc.ops.sparse_mm_8bit` (int8 / fp8) and the linear
kernels (`sparse_linear`, `sparse_linear_8bit`, `stream_k`, `sparse_glu`) build their kernels from
them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

import sparsecc
import sparsecc.language as tl
from sparsecc.defaults import NUM_CTAS, NUM_STAGES, NUM_WARPS

__all__ = ["MMConfig", "check_out", "is_column_major", "kernel_stride_bn"]


@sparsecc.jit
def _tile_coords(tile, num_m, num_n, GROUP_M: tl.constexpr):
    # grouped tile order: GROUP_M row-tiles share the same B column panel while it is in L2
    if GROUP_M == 1:  # plain row-major order: one division
        return tile // num_n, tile % num_n
    per_group = GROUP_M * num_n
    first_m = (tile // per_group) * GROUP_M
    group_rows = min(num_m - first_m, GROUP_M)
    return first_m + (tile % per_group) % group_rows, (tile % per_group) // group_rows


@sparsecc.jit
def _operand_ptrs(A, B, M, N, K, stride_am, stride_bk, stride_bn, tile_m, tile_n,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, B_KMAJOR: tl.constexpr):
    # the first K step's A and B tiles of output tile (tile_m, tile_n)
    a_ptr = tl.make_block_ptr(A, shape=(M, K), strides=(stride_am, 1),
                              offsets=(tile_m * BLOCK_M, 0), block_shape=(BLOCK_M, BLOCK_K),
                              order=(1, 0))
    b_ptr = tl.make_block_ptr(B, shape=(K, N), strides=(stride_bk, stride_bn),
                              offsets=(0, tile_n * BLOCK_N), block_shape=(BLOCK_K, BLOCK_N),
                              order=(0, 1) if B_KMAJOR else (1, 0))
    return a_ptr, b_ptr


@sparsecc.jit
def _store_tile(D, acc, M, N, stride_dm, stride_dn, tile_m, tile_n,
                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    d_ptr = tl.make_block_ptr(D, shape=(M, N), strides=(stride_dm, stride_dn),
                              offsets=(tile_m * BLOCK_M, tile_n * BLOCK_N),
                              block_shape=(BLOCK_M, BLOCK_N), order=(1, 0))
    tl.store(d_ptr, acc.to(D.dtype.element_ty), boundary_check=(0, 1))


@sparsecc.jit
def _accumulate_k(acc, x_ptr, w_ptr, steps, BLOCK_K: tl.constexpr):
    """The K loop of the sparse_mm and sparse_linear kernels: `steps` times, acc += the x tile
    (BLOCK_M x BLOCK_K) @ the W tile (BLOCK_K x BLOCK_N, W's K x N view), both block pointers
    then moved BLOCK_K along K; zero padding past the edges. Inlined where it is called.

        acc = _accumulate_k(acc, x_ptr, w_ptr, tl.cdiv(K, BLOCK_K), BLOCK_K)
    """
    for _ in range(0, steps):
        x = tl.load(x_ptr, boundary_check=(0, 1), padding_option="zero")
        w = tl.load(w_ptr, boundary_check=(0, 1), padding_option="zero")
        acc = tl.dot(x, w, acc)
        x_ptr = tl.advance(x_ptr, (0, BLOCK_K))
        w_ptr = tl.advance(w_ptr, (BLOCK_K, 0))
    return acc


@sparsecc.jit
def _split_k_slice(X, W, M, N, K, stride_xm, stride_wn, pid_m, pid_n, pid_k,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, SPLIT_K: tl.constexpr,
                   ACC_INT: tl.constexpr = False):
    """A split-K linear kernel's program `pid_k` of SPLIT_K: the sum (int32 with ACC_INT, else
    fp32) of its contiguous share of K's steps (the last share may be shorter, or empty) for
    output tile (pid_m, pid_n) of X (M x K) @ W's K x N view. Inlined where it is called."""
    steps = tl.cdiv(K, BLOCK_K)
    per_split = tl.cdiv(steps, SPLIT_K)
    first = pid_k * per_split
    x_ptr = tl.make_block_ptr(X, shape=(M, K), strides=(stride_xm, 1), offsets=(pid_m * BLOCK_M, first * BLOCK_K),
                              block_shape=(BLOCK_M, BLOCK_K), order=(1, 0))
    w_ptr = tl.make_block_ptr(W, shape=(K, N), strides=(1, stride_wn), offsets=(first * BLOCK_K, pid_n * BLOCK_N),
                              block_shape=(BLOCK_K, BLOCK_N), order=(0, 1))
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.int32 if ACC_INT else tl.float32)
    return _accumulate_k(acc, x_ptr, w_ptr, tl.minimum(per_split, steps - first), BLOCK_K)


@sparsecc.jit
def _tile_sum(A, B, M, N, K, stride_am, stride_bk, stride_bn, tile_m, tile_n,
              BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, B_KMAJOR: tl.constexpr,
              ACC_INT: tl.constexpr = False):
    # the sum of output tile (tile_m, tile_n) over all of K: fp32, or int32 for int8 operands
    a_ptr, b_ptr = _operand_ptrs(A, B, M, N, K, stride_am, stride_bk, stride_bn, tile_m, tile_n,
                                 BLOCK_M, BLOCK_N, BLOCK_K, B_KMAJOR)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.int32 if ACC_INT else tl.float32)
    return _accumulate_k(acc, a_ptr, b_ptr, tl.cdiv(K, BLOCK_K), BLOCK_K)


@sparsecc.jit
def _activate(acc, ACTIVATION: tl.constexpr):
    """acc through a linear layer's epilogue activation (`sparse_linear.ACTIVATIONS`)."""
    if ACTIVATION == "relu":
        acc = tl.maximum(acc, 0.0)
    elif ACTIVATION == "gelu_tanh":
        acc = 0.5 * acc * (1.0 + tl.tanh(0.7978845608028654 * (acc + 0.044715 * acc * acc * acc)))
    elif ACTIVATION == "silu":
        acc = acc * tl.sigmoid(acc)
    return acc


@sparsecc.jit
def _row_strides(stride_xm, stride_wn, ROWS_16B: tl.constexpr, ROWS_64: tl.constexpr = False):
    """X's and W's row strides, declared multiples of 8 and 16 elements where the host saw them
    so (`ROWS_16B`, `launch_constants`): X's rows and W's kept-value rows then start 16 bytes
    apart and the K loop's tiles can stream by TMA. `ROWS_64`: W's dense rows are multiples of
    64 elements, so the rows of a quantized W's 4- or 8-bit codes start 16 bytes apart too.
    Inlined where it is called."""
    if ROWS_16B:
        stride_xm = tl.multiple_of(stride_xm, 8)
        stride_wn = tl.multiple_of(stride_wn, 16)
    if ROWS_64:
        stride_wn = tl.multiple_of(stride_wn, 64)
    return stride_xm, stride_wn


@sparsecc.jit
def _bias_activate(acc, BIAS, N, pid_n, BLOCK_N: tl.constexpr, HAS_BIAS: tl.constexpr, ACTIVATION: tl.constexpr):
    """A linear layer's fp32 output tile of column block pid_n plus BIAS[N] (where HAS_BIAS),
    through the activation."""
    if HAS_BIAS:
        rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        acc += tl.load(BIAS + rn, mask=rn < N, other=0.0).to(tl.float32)[None, :]
    return _activate(acc, ACTIVATION)


@sparsecc.jit
def _linear_epilogue(Y, BIAS, acc, M, N, stride_ym, pid_m, pid_n,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, HAS_BIAS: tl.constexpr, ACTIVATION: tl.constexpr):
    """A linear kernel's output tile (pid_m, pid_n): acc plus BIAS[N], through the activation,
    stored in Y's dtype (rows and columns past M and N left alone)."""
    acc = _bias_activate(acc, BIAS, N, pid_n, BLOCK_N, HAS_BIAS, ACTIVATION)
    _store_tile(Y, acc, M, N, stride_ym, 1, pid_m, pid_n, BLOCK_M, BLOCK_N)


@sparsecc.jit
def _tile_scales(SCALE_X, SCALE_W, M, N, pid_m, pid_n, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """(SCALE_X's BLOCK_M tokens' scales, SCALE_W's BLOCK_N channels' scales) of output tile
    (pid_m, pid_n), fp32 (0 past M and N)."""
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    return tl.load(SCALE_X + rm, mask=rm < M, other=0.0), tl.load(SCALE_W + rn, mask=rn < N, other=0.0)


@sparsecc.jit
def _scaled_tile_epilogue(Y, BIAS, scale_x, scale_w, acc, M, N, stride_ym, pid_m, pid_n,
                          BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, HAS_BIAS: tl.constexpr,
                          ACTIVATION: tl.constexpr):
    """An 8-bit linear kernel's output tile: the codes' sum (int32 or fp32) times the tile's
    token and channel scales (`_tile_scales`) in fp32, then `_linear_epilogue`."""
    out = acc.to(tl.float32) * scale_x[:, None]
    out = out * scale_w[None, :]
    _linear_epilogue(Y, BIAS, out, M, N, stride_ym, pid_m, pid_n, BLOCK_M, BLOCK_N, HAS_BIAS, ACTIVATION)


@sparsecc.jit
def _scaled_linear_epilogue(Y, BIAS, SCALE_X, SCALE_W, acc, M, N, stride_ym, pid_m, pid_n,
                            BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, HAS_BIAS: tl.constexpr,
                            ACTIVATION: tl.constexpr):
    """An 8-bit linear kernel's output tile: the codes' sum (int32 or fp32) times the tokens'
    scales SCALE_X[M] and the weight's SCALE_W[N] in fp32, then `_linear_epilogue` (each scale
    loaded just before its product: `_tile_scales` and `_scaled_tile_epilogue` split it for a
    kernel that loads them before its K loop)."""
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    out = acc.to(tl.float32) * tl.load(SCALE_X + rm, mask=rm < M, other=0.0)[:, None]
    out = out * tl.load(SCALE_W + rn, mask=rn < N, other=0.0)[None, :]
    _linear_epilogue(Y, BIAS, out, M, N, stride_ym, pid_m, pid_n, BLOCK_M, BLOCK_N, HAS_BIAS, ACTIVATION)


@dataclass(frozen=True)
class MMConfig:
    """Tile sizes and launch options of one sparse_mm launch."""

    block_m: int
    block_n: int
    block_k: int
    group_m: int = 8
    num_warps: int = NUM_WARPS
    num_stages: int = NUM_STAGES
    persistent: bool = False
    """One program per SM (at most) walking the tiles, instead of one program per tile."""
    num_ctas: int = NUM_CTAS
    """2: CTA pairs (a cluster) on vertically adjacent tiles load each B tile once between them
    (TMA multicast on sm_90a); the programs come in pairs."""

    def __post_init__(self) -> None:
        for name in ("block_m", "block_n", "block_k", "group_m", "num_warps", "num_stages", "num_ctas"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"MMConfig: {name} must be a positive int, got {value!r}")


def check_out(out: Any, shape: tuple[int, int], dtype: torch.dtype, device: torch.device) -> None:
    if not isinstance(out, torch.Tensor):
        raise TypeError(f"sparse_mm: out must be a torch.Tensor, got {type(out).__name__}")
    if tuple(out.shape) != shape:
        raise ValueError(f"sparse_mm: out has shape {tuple(out.shape)}, expected {shape}")
    if out.dtype != dtype:
        raise TypeError(f"sparse_mm: out has dtype {out.dtype}, expected {dtype}")
    if out.device != device:
        raise ValueError(f"sparse_mm: out is on {out.device} but the operands are on {device}")


def is_column_major(b: torch.Tensor) -> bool:
    """Whether a K x N `b` is stored column-major (K contiguous; one column counts), the form the
    kernels read K-major."""
    k, n = b.shape
    return b.stride(0) == 1 and (n == 1 or b.stride(1) >= k)


def kernel_stride_bn(b: torch.Tensor, k: int, kmajor: bool) -> int:
    """B's N stride as the kernel gets it. Read K-major, one column's N stride addresses
    nothing: K (a multiple of 16) keeps its copies provably 16-byte aligned."""
    return k if kmajor and b.shape[1] == 1 else b.stride(1)
