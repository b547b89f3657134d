"""Row kernels built on reductions (softmax, layer norm, RMSNorm forward; one row per program,
as Triton's tutorials write them), and small kernels for each reduction builtin. Shared by
the interpreter tests, the GPU tests and `bench/reduce_ptx.py`, which compiles the row kernels
with Triton too: they use only what both languages have, through the name `tl`."""

from __future__ import annotations

import sparsecc
import sparsecc.language as tl

ROW_SIGS = {
    "softmax": {"Y": "*fp16", "X": "*fp16", "stride": "i32", "N": "i32"},
    "layernorm": {"Y": "*fp16", "X": "*fp16", "W": "*fp16", "B": "*fp16", "stride": "i32", "N": "i32",
                  "eps": "fp32"},
    "rmsnorm": {"Y": "*fp16", "X": "*fp16", "W": "*fp16", "stride": "i32", "N": "i32", "eps": "fp32"},
}
"""The row kernels' signatures (fp16 rows), by name (the kernel is `<name>_kernel`)."""


@sparsecc.jit
def softmax_kernel(Y, X, stride, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < N
    x = tl.load(X + row * stride + offs, mask=mask, other=-float("inf")).to(tl.float32)
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    y = num / tl.sum(num, axis=0)
    tl.store(Y + row * stride + offs, y, mask=mask)


@sparsecc.jit
def layernorm_kernel(Y, X, W, B, stride, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < N
    x = tl.load(X + row * stride + offs, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / N
    xc = tl.where(mask, x - mean, 0.0)
    var = tl.sum(xc * xc, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    w = tl.load(W + offs, mask=mask)
    b = tl.load(B + offs, mask=mask)
    tl.store(Y + row * stride + offs, xc * rstd * w + b, mask=mask)


@sparsecc.jit
def rmsnorm_kernel(Y, X, W, stride, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < N
    x = tl.load(X + row * stride + offs, mask=mask, other=0.0).to(tl.float32)
    rstd = 1 / tl.sqrt(tl.sum(x * x, axis=0) / N + eps)
    w = tl.load(W + offs, mask=mask)
    tl.store(Y + row * stride + offs, x * rstd * w, mask=mask)


@sparsecc.jit
def _mul_combine(a, b):
    return a * b


@sparsecc.jit
def _max_abs_with_sum(a, sa, b, sb):
    """Combine (largest |value|, running sum) pairs: two operands, two results."""
    return tl.maximum(tl.abs(a), tl.abs(b)), sa + sb


@sparsecc.jit
def reduce2d_kernel(X, OUT_SUM, OUT_MAX, OUT_MIN, OUT_ARGMAX, OUT_ARGMIN, OUT_PROD, M, N,
                    AXIS: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    """Every reduction of one BM x BN fp32 tile along AXIS (ragged: M x N valid, the rest
    filled with each reduction's neutral element)."""
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(X + rm[:, None] * N + rn[None, :], mask=mask, other=0.0)
    neg = tl.where(mask, x, -float("inf"))
    pos = tl.where(mask, x, float("inf"))
    out = rm if AXIS == 1 else rn
    omask = out < (M if AXIS == 1 else N)
    tl.store(OUT_SUM + out, tl.sum(x, axis=AXIS), mask=omask)
    tl.store(OUT_MAX + out, tl.max(neg, axis=AXIS), mask=omask)
    tl.store(OUT_MIN + out, tl.min(pos, axis=AXIS), mask=omask)
    tl.store(OUT_ARGMAX + out, tl.argmax(neg, axis=AXIS), mask=omask)
    tl.store(OUT_ARGMIN + out, tl.argmin(pos, axis=AXIS), mask=omask)
    one = tl.where(mask, x, 1.0)
    tl.store(OUT_PROD + out, tl.reduce(one, AXIS, _mul_combine), mask=omask)


@sparsecc.jit
def row_stats_kernel(X, VAL, IDX, PAIR_MAX, PAIR_SUM, XOR, KEEP, N, BLOCK: tl.constexpr):
    """One row per program: max with index, a two-operand tl.reduce, xor_sum of the bits,
    and a keep_dims sum broadcast back over the row."""
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < N
    x = tl.load(X + row * N + offs, mask=mask, other=-float("inf"))
    v, i = tl.max(x, axis=0, return_indices=True)
    tl.store(VAL + row, v)
    tl.store(IDX + row, i)
    z = tl.where(mask, x, 0.0)
    m, s = tl.reduce((z, z), 0, _max_abs_with_sum)
    tl.store(PAIR_MAX + row, m)
    tl.store(PAIR_SUM + row, s)
    bits = tl.where(mask, z.to(tl.int32, bitcast=True), 0)
    tl.store(XOR + row, tl.xor_sum(bits, axis=0))
    total = tl.sum(z[None, :], axis=1, keep_dims=True)
    tl.store(KEEP + row * BLOCK + offs[None, :], z[None, :] - total)


@sparsecc.jit
def dot_rowmax_kernel(A, B, OUT_MAX, OUT_SUM, OUT_ARG, K: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    """Reductions of a tl.dot result (an mma layout): the row max, row sum and row argmax of
    A @ B for one BM x BN tile (A is BM x K, B is K x BN, fp16, row-major)."""
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, K)
    a = tl.load(A + rm[:, None] * K + rk[None, :])
    b = tl.load(B + rk[:, None] * BN + rn[None, :])
    acc = tl.dot(a, b)
    tl.store(OUT_MAX + rm, tl.max(acc, axis=1))
    tl.store(OUT_SUM + rn, tl.sum(acc, axis=0))
    tl.store(OUT_ARG + rm, tl.argmax(acc, axis=1))
