"""Kernels in the style of real code that use Triton's scans, sorts and gathers
(`tl.cumsum`, `tl.cumprod`, `tl.associative_scan`, `tl.gather`, `tl.flip`, `tl.sort`,
`tl.topk`, `tl.bitonic_merge`, `tl.histogram`, `tl.reduce_or`, `tl.softmax`), for
test_scans.py."""

from __future__ import annotations

import sparsecc
import sparsecc.language as tl


@sparsecc.jit
def cumsum_kernel(X, Y, m, n, stride, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, AXIS: tl.constexpr,
                  REVERSE: tl.constexpr):
    """Running sums of a ragged (m, n) tile along AXIS; masked-off elements load as 0."""
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < m) & (cols[None, :] < n)
    x = tl.load(X + rows[:, None] * stride + cols[None, :], mask=mask, other=0.0)
    y = tl.cumsum(x, axis=AXIS, reverse=REVERSE)
    tl.store(Y + rows[:, None] * stride + cols[None, :], y, mask=mask)


@sparsecc.jit
def cumsum_1d_kernel(X, Y, n, BLOCK: tl.constexpr):
    """Running sum of an int32 vector (method form), and the running product of its sign."""
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(X + offs, mask=mask, other=0)
    tl.store(Y + offs, x.cumsum(0), mask=mask)


@sparsecc.jit
def cumprod_kernel(X, Y, n, BLOCK: tl.constexpr, REVERSE: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(X + offs, mask=mask, other=1.0)
    tl.store(Y + offs, tl.cumprod(x, 0, reverse=REVERSE), mask=mask)


@sparsecc.jit
def _linear_combine(a1, b1, a2, b2):
    """(a1, b1) then (a2, b2) of h -> a h + b: not commutative, so the order is checked."""
    return a1 * a2, b1 * a2 + b2


@sparsecc.jit
def linear_recurrence_kernel(A, B, H, n, BLOCK: tl.constexpr, REVERSE: tl.constexpr):
    """h[t] = a[t] h[t-1] + b[t], h[-1] = 0 (a gated linear recurrence, as in Mamba-style scans)."""
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(A + offs, mask=mask, other=1.0)
    b = tl.load(B + offs, mask=mask, other=0.0)
    _, h = tl.associative_scan((a, b), 0, _linear_combine, reverse=REVERSE)
    tl.store(H + offs, h, mask=mask)


@sparsecc.jit
def _max_combine(a, b):
    return tl.maximum(a, b)


@sparsecc.jit
def running_max_kernel(X, Y, m, n, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """Running maximum along the rows of an fp16 tile (method form, custom combine)."""
    rows = tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < m) & (cols[None, :] < n)
    x = tl.load(X + rows[:, None] * n + cols[None, :], mask=mask, other=-1000.0)
    tl.store(Y + rows[:, None] * n + cols[None, :], x.associative_scan(1, _max_combine), mask=mask)


@sparsecc.jit
def gather_kernel(X, IDX, Y, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    """y[i, j] = x[i, idx[i, j]] for an (M, N) source and an (M, K) index (an embedding-style pick)."""
    rows = tl.arange(0, M)
    x = tl.load(X + rows[:, None] * N + tl.arange(0, N)[None, :])
    idx = tl.load(IDX + rows[:, None] * K + tl.arange(0, K)[None, :])
    tl.store(Y + rows[:, None] * K + tl.arange(0, K)[None, :], tl.gather(x, idx, 1))


@sparsecc.jit
def gather0_kernel(X, IDX, Y, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    """y[i, j] = x[idx[i, j], j]: a gather along axis 0 (method form)."""
    x = tl.load(X + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :])
    idx = tl.load(IDX + tl.arange(0, K)[:, None] * N + tl.arange(0, N)[None, :])
    tl.store(Y + tl.arange(0, K)[:, None] * N + tl.arange(0, N)[None, :], x.gather(idx, 0))


@sparsecc.jit
def flip_kernel(X, Y, M: tl.constexpr, N: tl.constexpr, DIM: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    tl.store(Y + offs, tl.flip(tl.load(X + offs), DIM))


@sparsecc.jit
def sort_kernel(X, Y, M: tl.constexpr, N: tl.constexpr, DESCENDING: tl.constexpr):
    """Each row of an (M, N) tile sorted."""
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    tl.store(Y + offs, tl.sort(tl.load(X + offs), descending=DESCENDING))


@sparsecc.jit
def topk_kernel(X, Y, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    """The K largest of each row, largest first (a MoE router's top-k)."""
    x = tl.load(X + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :])
    tl.store(Y + tl.arange(0, M)[:, None] * K + tl.arange(0, K)[None, :], tl.topk(x, K))


@sparsecc.jit
def bitonic_merge_kernel(X, Y, N: tl.constexpr, DESCENDING: tl.constexpr):
    """An ascending then a descending half (a bitonic sequence) merged into one sorted row."""
    offs = tl.arange(0, N)
    x = tl.load(X + offs)
    tl.store(Y + offs, tl.bitonic_merge(x, descending=DESCENDING))


@sparsecc.jit
def histogram_kernel(X, H, n, BLOCK: tl.constexpr, BINS: tl.constexpr):
    """Counts of the values 0..BINS-1 among the first n (others are dropped), added to H."""
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + tl.program_id(0) * BLOCK + offs, mask=tl.program_id(0) * BLOCK + offs < n, other=0)
    h = tl.histogram(x, BINS, mask=tl.program_id(0) * BLOCK + offs < n)
    tl.atomic_add(H + tl.arange(0, BINS), h)


@sparsecc.jit
def reduce_or_kernel(X, Y, M: tl.constexpr, N: tl.constexpr):
    x = tl.load(X + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :])
    tl.store(Y + tl.arange(0, M), tl.reduce_or(x, 1))


@sparsecc.jit
def softmax_kernel(X, Y, M: tl.constexpr, N: tl.constexpr):
    """Softmax of each row: `dim=1` (tl.softmax's default is 0)."""
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    tl.store(Y + offs, tl.softmax(tl.load(X + offs), 1))
