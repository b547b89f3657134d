"""The parity benchmark's kernels (bench/parity.py), written once in Triton's language; the
tests compile the same sources (tutorial_kernels.matmul_kernel is tutorial 03 below, the attention
and row kernels are checked by the codegen tests), and the benchmarks import them from here.

Each function below is plain Triton source (`import triton.language as tl`, no decorator) that
uses only the `tl.*` names sparsecc also has. `triton_kernel(fn)` decorates it with
`triton.jit`; `sparsecc_kernel(fn)` decorates a copy of it whose `tl` is `sparsecc.language`
(the same code object, so the same source, file and line numbers). Nothing else differs
between the two compiles, which is the point of the comparison:

    add = triton_kernel(add_kernel), sparsecc_kernel(add_kernel)

Compute is in fp32 for fp16 inputs (`.to(tl.float32)`), as Triton users write it.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

try:  # the kernels are Triton's source; without triton (CI), sparsecc's language stands in
    import triton.language as tl
except ImportError:  # pragma: no cover - depends on the environment
    import sparsecc.language as tl  # type: ignore[no-redef]

# --------------------------------------------------------------------------------------
# Memory-bound kernels
# --------------------------------------------------------------------------------------


def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    """Tutorial 01: out = x + y."""
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


def swiglu_kernel(a_ptr, b_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    """out = silu(a) * b, elementwise (the gate of a SwiGLU MLP)."""
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    a = tl.load(a_ptr + offsets, mask=mask).to(tl.float32)
    b = tl.load(b_ptr + offsets, mask=mask).to(tl.float32)
    out = a * tl.sigmoid(a) * b
    tl.store(out_ptr + offsets, out.to(tl.float16), mask=mask)


def softmax_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    """Tutorial 02, one row per program."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * in_row_stride + cols, mask=mask, other=-float("inf")).to(tl.float32)
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    y = num / tl.sum(num, axis=0)
    tl.store(out_ptr + row * out_row_stride + cols, y.to(tl.float16), mask=mask)


def layer_norm_kernel(x_ptr, y_ptr, w_ptr, b_ptr, row_stride, n_cols, eps, BLOCK_SIZE: tl.constexpr):
    """Layer norm forward, one row per program, the row in one block."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * row_stride + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / n_cols
    xc = tl.where(mask, x - mean, 0.0)
    var = tl.sum(xc * xc, axis=0) / n_cols
    rstd = 1 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=mask).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=mask).to(tl.float32)
    y = xc * rstd * w + b
    tl.store(y_ptr + row * row_stride + cols, y.to(tl.float16), mask=mask)


def rms_norm_kernel(x_ptr, y_ptr, w_ptr, row_stride, n_cols, eps, BLOCK_SIZE: tl.constexpr):
    """RMSNorm forward, one row per program: y = x / sqrt(mean(x^2) + eps) * w."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * row_stride + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=mask).to(tl.float32)
    tl.store(y_ptr + row * row_stride + cols, (x * rstd * w).to(tl.float16), mask=mask)


def cross_entropy_kernel(logits_ptr, target_ptr, loss_ptr, row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    """Cross-entropy forward, one row per program: logsumexp(row) - row[target]."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    row_ptr = logits_ptr + row * row_stride
    x = tl.load(row_ptr + cols, mask=mask, other=-float("inf")).to(tl.float32)
    m = tl.max(x, axis=0)
    lse = m + tl.log(tl.sum(tl.exp(x - m), axis=0))
    target = tl.load(target_ptr + row)
    picked = tl.load(row_ptr + target).to(tl.float32)
    tl.store(loss_ptr + row, lse - picked)


# --------------------------------------------------------------------------------------
# Compute-bound kernels
# --------------------------------------------------------------------------------------


def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm,
                  stride_cn, BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr,
                  BLOCK_SIZE_K: tl.constexpr, GROUP_SIZE_M: tl.constexpr):
    """Tutorial 03 (pointer form, grouped 1-D grid). With a 2:4 A, sparsecc's signature says
    `*fp16:NV24` for a_ptr; the source is the same."""
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_am = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
    offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_SIZE_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0.0)
        accumulator = tl.dot(a, b, accumulator)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk
    c = accumulator.to(tl.float16)
    offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptrs, c, mask=c_mask)


def attention_kernel(q_ptr, k_ptr, v_ptr, out_ptr, sm_scale, stride_h, stride_m, n_ctx,
                     HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """Fused attention forward (tutorial 06's online softmax, pointer form, not causal):
    q, k, v, out are (batch*heads, n_ctx, HEAD_DIM) with the same strides; n_ctx % BLOCK_N == 0."""
    start_m = tl.program_id(0)
    head = tl.program_id(1)
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    base = head * stride_h
    q = tl.load(q_ptr + base + offs_m[:, None] * stride_m + offs_d[None, :])
    kt_ptrs = k_ptr + base + offs_n[None, :] * stride_m + offs_d[:, None]
    v_ptrs = v_ptr + base + offs_n[:, None] * stride_m + offs_d[None, :]
    m_i = tl.zeros((BLOCK_M,), dtype=tl.float32) - float("inf")
    l_i = tl.zeros((BLOCK_M,), dtype=tl.float32) + 1.0
    acc = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504
    for _ in range(0, n_ctx, BLOCK_N):
        kt = tl.load(kt_ptrs)
        qk = tl.dot(q, kt) * qk_scale
        m_ij = tl.maximum(m_i, tl.max(qk, axis=1))
        p = tl.exp2(qk - m_ij[:, None])
        alpha = tl.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None]
        v = tl.load(v_ptrs)
        acc = tl.dot(p.to(tl.float16), v, acc)
        m_i = m_ij
        kt_ptrs += BLOCK_N * stride_m
        v_ptrs += BLOCK_N * stride_m
    acc = acc / l_i[:, None]
    tl.store(out_ptr + base + offs_m[:, None] * stride_m + offs_d[None, :], acc.to(tl.float16))


# --------------------------------------------------------------------------------------
# One source, two compilers
# --------------------------------------------------------------------------------------


def with_language(fn: Callable[..., Any], language: types.ModuleType) -> Callable[..., Any]:
    """A copy of `fn` (same code, so same source and line numbers) whose global `tl` is
    `language`: how one kernel source is handed to a second compiler.

        sparse_add = sparsecc.jit(with_language(add_kernel, sparsecc.language))
    """
    scope = dict(fn.__globals__)
    scope["tl"] = language
    copy = types.FunctionType(fn.__code__, scope, fn.__name__, fn.__defaults__, fn.__closure__)
    copy.__annotations__ = dict(fn.__annotations__)
    copy.__doc__ = fn.__doc__
    copy.__module__ = fn.__module__
    copy.__qualname__ = fn.__qualname__
    return copy


def triton_kernel(fn: Callable[..., Any]) -> Any:
    """`triton.jit(fn)`: the source as Triton compiles it."""
    import triton

    return triton.jit(fn)


def sparsecc_kernel(fn: Callable[..., Any]) -> Any:
    """`sparsecc.jit` of the same source with `tl` bound to `sparsecc.language`."""
    import sparsecc
    import sparsecc.language

    return sparsecc.jit(with_language(fn, sparsecc.language))
