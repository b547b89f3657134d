"""Kernels in the style of real Triton code for control flow, scalar loads and argument kinds
(issue 29): a grouped GEMM that loads each group's size as a scalar and walks its tiles with a
`while`, early returns, store-only `if`s, negative `range` steps and `tl.range` hints."""

from __future__ import annotations

import sparsecc
import sparsecc.language as tl


@sparsecc.jit
def grouped_gemm(A, B, C, m_sizes, G, N, K, NUM_SMS: tl.constexpr, BLOCK_M: tl.constexpr,
                 BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """C[rows of g] = A[rows of g] @ B[g] for groups of m_sizes[g] rows (A, C: (sum M) x K / N
    row-major, B: G x K x N): NUM_SMS programs walk the tiles of every group in turn."""
    tile = tl.program_id(0)
    tiles_before = 0
    row0 = 0
    num_n = tl.cdiv(N, BLOCK_N)
    for g in range(G):
        M = tl.load(m_sizes + g)
        tiles_g = tl.cdiv(M, BLOCK_M) * num_n
        while tile < tiles_before + tiles_g:
            local = tile - tiles_before
            rm = (local // num_n) * BLOCK_M + tl.arange(0, BLOCK_M)
            rn = (local % num_n) * BLOCK_N + tl.arange(0, BLOCK_N)
            rk = tl.arange(0, BLOCK_K)
            acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
            for k in range(0, K, BLOCK_K):
                a = tl.load(A + (row0 + rm)[:, None] * K + (k + rk)[None, :],
                            mask=(rm[:, None] < M) & (k + rk[None, :] < K), other=0.0)
                b = tl.load(B + g * K * N + (k + rk)[:, None] * N + rn[None, :],
                            mask=(k + rk[:, None] < K) & (rn[None, :] < N), other=0.0)
                acc = tl.dot(a, b, acc)
            tl.store(C + (row0 + rm)[:, None] * N + rn[None, :], acc.to(tl.float16),
                     mask=(rm[:, None] < M) & (rn[None, :] < N))
            tile += NUM_SMS
        tiles_before += tiles_g
        row0 += M


@sparsecc.jit
def row_scale(X, Y, scales, n_rows, n_cols, BLOCK: tl.constexpr):
    """Early return for programs past the rows; a scalar load (with mask/other) per row."""
    row = tl.program_id(0)
    if row >= n_rows:
        return
    s = tl.load(scales + row, mask=row < n_rows, other=1.0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + row * n_cols + offs, mask=offs < n_cols, other=0.0)
    tl.store(Y + row * n_cols + offs, x * s, mask=offs < n_cols)


@sparsecc.jit
def scalar_copy(X, Y, n):
    """One element per program through scalar pointers; a store-only `if` on a loaded value."""
    pid = tl.program_id(0)
    x = tl.load(X + pid, mask=pid < n, other=0.0)
    tl.store(Y + pid, x * 2.0 + 1.0, mask=pid < n)
    if x > 0.0:
        tl.store(Y + n + pid, x, mask=pid < n)


@sparsecc.jit
def reverse_weighted_sum(X, Y, n_rows, BLOCK: tl.constexpr, STEP: tl.constexpr):
    """Y = sum over rows i = n_rows-1, n_rows-1-STEP, ... >= 0 of (k + 1) * X[i], k = 0, 1, ...:
    a negative constexpr step over runtime bounds."""
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    k = 0
    for i in range(n_rows - 1, -1, -STEP):
        acc += tl.load(X + i * BLOCK + offs) * (k + 1)
        k += 1
    tl.store(Y + offs, acc)


@sparsecc.jit
def halving_steps(X, Y, n, BLOCK: tl.constexpr):
    """A data-dependent `while`: per program, how many halvings bring |x| below 1 (<= 64)."""
    pid = tl.program_id(0)
    x = tl.abs(tl.load(X + pid, mask=pid < n, other=0.0))
    count = 0
    while (x >= 1.0) & (count < 64):
        x = x * 0.5
        count += 1
    tl.store(Y + pid, count, mask=pid < n)


@sparsecc.jit
def ranged_matmul(C, A, B, M, N, K, stride_am, stride_bk, stride_cm, BLOCK_M: tl.constexpr,
                  BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, STAGES: tl.constexpr):
    """The tutorial's K loop through `tl.range(..., num_stages=STAGES)` and its other hints."""
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = A + rm[:, None] * stride_am + rk[None, :]
    b_ptrs = B + rk[:, None] * stride_bk + rn[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in tl.range(0, tl.cdiv(K, BLOCK_K), num_stages=STAGES, loop_unroll_factor=2, flatten=True,
                      warp_specialize=False, disallow_acc_multi_buffer=True):
        a = tl.load(a_ptrs, mask=(rm[:, None] < M) & (rk[None, :] < K - k * BLOCK_K), other=0.0)
        b = tl.load(b_ptrs, mask=(rk[:, None] < K - k * BLOCK_K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * stride_bk
    tl.store(C + rm[:, None] * stride_cm + rn[None, :], acc.to(tl.float16),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


@sparsecc.jit
def clamp_or_shift(x, lo):
    """A jit helper with an early `return` of a value inside a runtime `if`."""
    if x < lo:
        return lo
    return x + 1.0


@sparsecc.jit
def call_early_return(X, Y, lo, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    s = clamp_or_shift(tl.load(X + pid), lo)
    offs = tl.arange(0, BLOCK)
    tl.store(Y + pid * BLOCK + offs, tl.zeros((BLOCK,), dtype=tl.float32) + s, mask=offs < n)


@sparsecc.jit
def strided_rows(X, Y, stride_x, n_cols, BLOCK: tl.constexpr):
    """Y[row] = 2 X[row] for a view X whose rows are `stride_x` apart (Triton passes the view's
    raw pointer and the kernel uses the strides it is given)."""
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + row * stride_x + offs, mask=offs < n_cols, other=0.0)
    tl.store(Y + row * n_cols + offs, x * 2.0, mask=offs < n_cols)


@sparsecc.jit
def add_scalar(X, Y, n, s, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(Y + offs, tl.load(X + offs, mask=offs < n, other=0.0) + s, mask=offs < n)


@sparsecc.jit
def bool_select(M, X, Y, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = tl.load(M + offs, mask=offs < n, other=0)
    x = tl.load(X + offs, mask=offs < n, other=0.0)
    tl.store(Y + offs, tl.where(m, x, -x), mask=offs < n)


@sparsecc.jit
def fp64_axpy(X, Y, a, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(X + offs, mask=offs < n, other=0.0)
    tl.store(Y + offs, x * a + tl.load(X), mask=offs < n)
