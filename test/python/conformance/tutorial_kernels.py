"""Triton's tutorial matmul (03-matrix-multiplication) as its users write it (the source in
parity_kernels.py, Triton's own language, compiled by sparsecc), plus the other ways Triton users
write the same addresses. The sparse operand is chosen by the signature (`"*fp16:NV24"`), not by
the kernel."""

from __future__ import annotations

import parity_kernels as pk

import sparsecc
import sparsecc.language as tl

matmul_kernel = pk.sparsecc_kernel(pk.matmul_kernel)
"""Tutorial 03's kernel (pointer form, grouped 1-D grid), from its one source in parity_kernels.py
(Triton's language, as Triton compiles it in the parity benchmark) with `tl` bound to sparsecc's."""


@sparsecc.jit
def tile_pointers(base, rows, cols, stride_r, stride_c):
    """A helper that builds a tile of pointers, as kernels factor it out."""
    return base + rows[:, None] * stride_r + cols[None, :] * stride_c


@sparsecc.jit
def masked_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                         stride_cm, stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                         BLOCK_K: tl.constexpr):
    """Rows masked instead of wrapped, a 2-D grid, the K columns added before the rows, pointers
    from a helper, and the K step as a plain `+=` of a product."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = (a_ptr + rk[None, :] * stride_ak) + rm[:, None] * stride_am
    b_ptrs = tile_pointers(b_ptr, rk, rn, stride_bk, stride_bn)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptrs, mask=(rm[:, None] < M) & (rk[None, :] + k < K), other=0.0)
        b = tl.load(b_ptrs, mask=(rk[:, None] + k < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c_ptrs = tile_pointers(c_ptr, rm, rn, stride_cm, stride_cn)
    tl.store(c_ptrs, acc.to(tl.float16), mask=(rm[:, None] < M) & (rn[None, :] < N))


@sparsecc.jit
def wrapped_rows_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """Rows wrapped with `% M` and every row of the tile stored (c has a multiple of BLOCK_M
    rows): rows past M are observable, so they must read rows 0.. as written."""
    rm = (tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    rn = tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + rm[:, None] * stride_am + rk[None, :]
    b_ptrs = b_ptr + rk[:, None] * stride_bk + rn[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=rk[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=rk[:, None] < K - k * BLOCK_K, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * stride_bk
    rc = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    tl.store(c_ptr + rc[:, None] * stride_cm + rn[None, :], acc.to(tl.float16))
