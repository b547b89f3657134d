"""`sparse_swiglu(x, w, bias)`: `silu(x @ Wg.T + bg) * (x @ Wu.T + bu)` in one launch, for W a 2:4
weight whose rows are the gate rows then the up rows (`[Wg | Wu]`, two equal halves: the fused
gate/up projection of a Llama MLP, `sparsecc.nn.parallel.fuse_linears([gate, up])`). The output
is half W's rows wide.

Each program computes one output tile twice over, from the gate rows and from the up rows of the
same columns, and multiplies them in its epilogue: the SwiGLU activation costs no launch and no
round trip of the gate/up product through memory (at decode, one kernel a layer fewer). Under
tensor parallelism (`FusedColwiseParallel` over the two halves) each rank's shard is again
`[its gate rows | its up rows]`, so the same kernel runs on the shard.

    w = sparsecc.compress(sparsecc.prune_2to4(torch.cat([gate.weight, up.weight])))
    h = sparse_swiglu(x, w)        # == silu(x @ gate.weight.T) * (x @ up.weight.T), pruned

W may be a `QuantizedSparseTensor` (the compiler dequantizes each W tile). The half must be a
multiple of 16 rows (the up rows then start on a 16-row metadata block).
"""

from __future__ import annotations

import functools
from dataclasses import replace

import torch

import sparsecc
import sparsecc.language as tl
from sparsecc.ops import dispatch as _dispatch
from sparsecc.ops.linear_config import SM_COUNT, LinearConfig, table_linear_config
from sparsecc.ops.sparse_linear import (
    _check_config,
    default_linear_config,
    quantized_decode_config,
    quantized_linear_config,
)
from sparsecc.runtime.quant_tensor import QuantizedSparseTensor
from sparsecc.runtime.sparse_tensor import SparseTensor

__all__ = ["reference_swiglu", "sparse_swiglu", "sparse_swiglu_kernel", "swiglu_config"]


@sparsecc.jit
def sparse_swiglu_kernel(Y, X, W, BIAS, M, N, K, stride_xm, stride_wn, stride_ym,
                         BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                         HAS_BIAS: tl.constexpr):
    """Y[M, N] = silu(X @ W[:N].T + BIAS[:N]) * (X @ W[N:2N].T + BIAS[N:]), W (2N x K) 2:4 along K.

    The up rows are reached through the block pointer's offset (N + the tile's first row) in a
    (K, 2N) view of W, not by moving W's base pointer: a sparse pointer's values and metadata
    move by different amounts, which a row offset in the block pointer accounts for."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    x_ptr = tl.make_block_ptr(X, shape=(M, K), strides=(stride_xm, 1), offsets=(pid_m * BLOCK_M, 0),
                              block_shape=(BLOCK_M, BLOCK_K), order=(1, 0))
    g_ptr = tl.make_block_ptr(W, shape=(K, N), strides=(1, stride_wn), offsets=(0, pid_n * BLOCK_N),
                              block_shape=(BLOCK_K, BLOCK_N), order=(0, 1))
    u_ptr = tl.make_block_ptr(W, shape=(K, 2 * N), strides=(1, stride_wn), offsets=(0, N + pid_n * BLOCK_N),
                              block_shape=(BLOCK_K, BLOCK_N), order=(0, 1))
    gate = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    up = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for _ in range(0, tl.cdiv(K, BLOCK_K)):
        x = tl.load(x_ptr, boundary_check=(0, 1), padding_option="zero")
        wg = tl.load(g_ptr, boundary_check=(0, 1), padding_option="zero")
        wu = tl.load(u_ptr, boundary_check=(0, 1), padding_option="zero")
        gate = tl.dot(x, wg, gate)
        up = tl.dot(x, wu, up)
        x_ptr = tl.advance(x_ptr, (0, BLOCK_K))
        g_ptr = tl.advance(g_ptr, (BLOCK_K, 0))
        u_ptr = tl.advance(u_ptr, (BLOCK_K, 0))
    if HAS_BIAS:
        rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        gate += tl.load(BIAS + rn, mask=rn < N, other=0.0).to(tl.float32)[None, :]
        up += tl.load(BIAS + N + rn, mask=rn < N, other=0.0).to(tl.float32)[None, :]
    # the gate's tile columns past N read up rows (or zeros): those outputs are not stored
    y = gate * tl.sigmoid(gate) * up
    y_ptr = tl.make_block_ptr(Y, shape=(M, N), strides=(stride_ym, 1), offsets=(pid_m * BLOCK_M, pid_n * BLOCK_N),
                              block_shape=(BLOCK_M, BLOCK_N), order=(1, 0))
    tl.store(y_ptr, y.to(Y.dtype.element_ty), boundary_check=(0, 1))


SMEM_BYTES = 232448
"""Shared memory one block may use on sm_90 (227 KiB), where the device does not say."""

MAX_ACC = 2048
"""Accumulator elements of one of a program's two tiles (BLOCK_M x BLOCK_N): 16 x 128 or 32 x 64
keep both fp32 accumulators in registers; 64 x 128 spills (ptxas, 4 warps)."""


def _smem_estimate(cfg: LinearConfig, w: SparseTensor | QuantizedSparseTensor) -> float:
    """An upper estimate of the kernel's shared memory (bytes): (stages + 1/2) x one stage's x
    tile and two W tiles (kept values or codes, and metadata: 1/8 byte a weight); within 1.25-1.5x
    of what the compiler allocated for the decode tiles (fp16 and w4g128, 8-64 x 32-128 x 256-1024)."""
    bits = w.scheme.bits if isinstance(w, QuantizedSparseTensor) else 8 * w.values.element_size()
    per_row_k = bits / 16 + 1 / 8  # bytes a weight row takes per K column: half the columns kept, + metadata
    return (cfg.num_stages + 0.5) * cfg.block_k * (2 * cfg.block_m + 2 * cfg.block_n * per_row_k)


@functools.cache
def _device_smem(index: int) -> int:
    """The opt-in shared memory of one block on CUDA device `index` (asked once)."""
    return getattr(torch.cuda.get_device_properties(index), "shared_memory_per_block_optin", SMEM_BYTES)


def swiglu_config(m: int, half: int, k: int, w: SparseTensor | QuantizedSparseTensor,
                  device: torch.device, smem_bytes: int | None = None) -> LinearConfig:
    """The tiles of a SwiGLU launch, from those `sparse_linear` takes for an M x half x K product
    (the measured table's, else the defaults), without split-K, fitted to two tiles a program:
    the accumulators within `MAX_ACC` elements each (BLOCK_N, then BLOCK_M halved), the stages'
    tiles within shared memory (BLOCK_K halved down to 256, then fewer stages, then BLOCK_K
    down to the quantization group or 64), and BLOCK_N halved (down to 32) while the output tiles
    would not fill the SMs once (each program reads two weight tiles: half the programs of the
    unfused product). `smem_bytes`: the block's shared memory (default: the device's opt-in
    limit, 227 KiB on an H100, 163 KiB on an A100).

        swiglu_config(1, 5504, 4096, fp16_weight, torch.device("cuda"))
        # 16 x 32 x 512, 3 stages (the plain kernel's 16 x 32 x 1024 tiles would need 280 KiB)
    """
    quantized = isinstance(w, QuantizedSparseTensor)
    picked = _dispatch.table_config(m, half, k, w.dtype, _dispatch.scheme_of(w), device)
    cfg = table_linear_config(picked) if picked is not None else None
    if cfg is None:
        cfg = default_linear_config(m, half, k, device.type)
        if quantized and device.type == "cuda" and m <= 64:
            cfg = quantized_decode_config(m, half, k)
    if quantized:
        cfg = quantized_linear_config(cfg, w)
    cfg = replace(cfg, split_k=1, stream_k=False)  # one program a tile: the fused kernel has neither form
    if device.type != "cuda":
        return cfg  # the interpreter: no registers or shared memory to fit
    while cfg.block_m * cfg.block_n > MAX_ACC:
        cfg = replace(cfg, block_n=cfg.block_n // 2) if cfg.block_n > 32 else replace(cfg, block_m=cfg.block_m // 2)
    group = w.scheme.group if quantized and w.scheme.group is not None else 16
    smallest_k = max(64, group)
    if smem_bytes is None:
        smem_bytes = _device_smem(device.index if device.index is not None else torch.cuda.current_device())
    while _smem_estimate(cfg, w) > smem_bytes:
        if cfg.block_k > max(256, smallest_k):
            cfg = replace(cfg, block_k=cfg.block_k // 2)
        elif cfg.num_stages > 2:
            cfg = replace(cfg, num_stages=cfg.num_stages - 1)
        elif cfg.block_k > smallest_k:
            cfg = replace(cfg, block_k=cfg.block_k // 2)
        else:
            break
    while cfg.block_n > 32 and -(-m // cfg.block_m) * -(-half // cfg.block_n) < SM_COUNT:
        cfg = replace(cfg, block_n=cfg.block_n // 2)
    return cfg


def _check(x: object, w: object, bias: object) -> None:
    """One clear error for inputs sparse_swiglu cannot take (sparse_linear's checks, and W's rows)."""
    if not isinstance(w, (SparseTensor, QuantizedSparseTensor)):
        raise TypeError(f"sparse_swiglu: w must be a sparsecc.SparseTensor or QuantizedSparseTensor, got "
                        f"{type(w).__name__}")
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"sparse_swiglu: x must be a torch.Tensor, got {type(x).__name__}")
    rows, k = w.shape
    if rows % 32:
        raise ValueError(f"sparse_swiglu: the weight has {rows} rows; it must be [gate rows | up rows], two equal "
                         "halves of a multiple of 16 rows each (the up rows start on a 16-row metadata block)")
    if x.dtype != w.dtype:
        raise TypeError(f"sparse_swiglu: x is {x.dtype} but the weight is {w.dtype}")
    if x.shape[-1] != k:
        raise ValueError(f"sparse_swiglu: x has {x.shape[-1]} features, the weight expects {k} "
                         f"(weight {tuple(w.shape)} = 2 x half rows x in)")
    if x.device != w.device:
        raise ValueError(f"sparse_swiglu: x is on {x.device}, the weight on {w.device}")
    if bias is not None and (not isinstance(bias, torch.Tensor) or tuple(bias.shape) != (rows,)):
        raise ValueError(f"sparse_swiglu: bias must be a tensor of shape ({rows},) (gate's, then up's)")


def sparse_swiglu(x: torch.Tensor, w: SparseTensor | QuantizedSparseTensor, bias: torch.Tensor | None = None,
                  config: LinearConfig | None = None) -> torch.Tensor:
    """`silu(x @ Wg.T + bg) * (x @ Wu.T + bu)` for W = [Wg | Wu] (2·half × in, 2:4; see the module
    docstring) in one launch of `sparse_swiglu_kernel`; x is (..., in) in W's dtype, the result
    (..., half). CUDA tensors run the kernel compiled for the GPU, CPU tensors the interpreter.
    `config` (a LinearConfig without split-K) overrides `swiglu_config`'s tiles.

        w = sparsecc.compress(sparsecc.prune_2to4(torch.cat([gate_w, up_w])), quant="w4g128")
        h = sparse_swiglu(x, w)
    """
    _check(x, w, bias)
    if config is not None:
        _check_config(config, w)
        if config.split_k != 1:
            raise ValueError(f"sparse_swiglu: config split_k must be 1, got {config.split_k}")
        if config.stream_k:
            raise ValueError("sparse_swiglu: config stream_k is not a form of the fused kernel (one program a tile)")
    lead = x.shape[:-1]
    x2 = x.reshape(-1, x.shape[-1])
    if x2.stride(-1) != 1 or x2.data_ptr() % 16:
        x2 = x2.contiguous()
    m, k = x2.shape
    half = w.shape[0] // 2
    y = torch.empty((m, half), dtype=x.dtype, device=x.device)
    if m == 0:
        return y.reshape(*lead, half)
    cfg = config or swiglu_config(m, half, k, w, x.device)
    b = bias.to(x.dtype).contiguous() if bias is not None else y
    grid = (-(-m // cfg.block_m), -(-half // cfg.block_n))
    sparse_swiglu_kernel[grid](y, x2, w, b, m, half, k, x2.stride(0), w.stride(0), y.stride(0),
                               BLOCK_M=cfg.block_m, BLOCK_N=cfg.block_n, BLOCK_K=cfg.block_k,
                               HAS_BIAS=bias is not None, num_warps=cfg.num_warps, num_stages=cfg.num_stages)
    return y.reshape(*lead, half)


def reference_swiglu(x: torch.Tensor, w: SparseTensor | QuantizedSparseTensor,
                     bias: torch.Tensor | None = None) -> torch.Tensor:
    """The same computed by torch on the decompressed (dequantized) weight, fp32 accumulation."""
    y = torch.nn.functional.linear(x.float(), w.to_dense().float(), None if bias is None else bias.float())
    gate, up = y.chunk(2, dim=-1)
    return (torch.nn.functional.silu(gate) * up).to(x.dtype)
