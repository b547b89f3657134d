"""The reduction builtins on the interpreter against torch, with Triton's semantics: ragged
tiles, NaN ignored by max/min, the smallest index on ties for argmax/argmin, tl.reduce with
a @jit combine function (one and two operands), xor_sum, sum(dtype=), keep_dims, and the
row kernels (softmax, layer norm, RMSNorm)."""

from __future__ import annotations

import warnings

import pytest
import torch
from reduction_kernels import (
    layernorm_kernel,
    reduce2d_kernel,
    rmsnorm_kernel,
    row_stats_kernel,
    softmax_kernel,
)

import sparsecc
import sparsecc.language as tl


@pytest.fixture(autouse=True)
def _quiet_fallback():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _outs(n: int, count: int, dtype: torch.dtype) -> list[torch.Tensor]:
    """Poisoned outputs: NaN / -7 where the kernel writes nothing."""
    fill = float("nan") if dtype.is_floating_point else -7
    return [torch.full((n,), fill, dtype=dtype) for _ in range(count)]


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("m, n", [(16, 32), (11, 29), (1, 7)])
def test_reduce2d_against_torch(axis: int, m: int, n: int) -> None:
    torch.manual_seed(m * 100 + n + axis)
    x = torch.randn(m, n)
    x[0, :] = x[0, 0]  # ties: argmax/argmin of row 0 must be its first index
    x[:, 0] = x[0, 0]  # and of column 0
    k = m if axis == 1 else n
    s, mx, mn, p = _outs(k, 4, torch.float32)
    amax, amin = _outs(k, 2, torch.int32)
    reduce2d_kernel[(1,)](x, s, mx, mn, amax, amin, p, m, n, AXIS=axis, BM=16, BN=32)
    torch.testing.assert_close(s, x.sum(axis), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(mx, x.amax(axis))
    torch.testing.assert_close(mn, x.amin(axis))
    assert torch.equal(amax.long(), x.argmax(axis)), (amax, x.argmax(axis))
    assert torch.equal(amin.long(), x.argmin(axis)), (amin, x.argmin(axis))
    torch.testing.assert_close(p, x.prod(axis), rtol=1e-4, atol=1e-30)


def test_row_stats_two_operand_reduce_xor_sum_keep_dims() -> None:
    torch.manual_seed(3)
    rows, n, block = 5, 45, 64
    x = torch.randn(rows, n)
    x[1, 7] = x[1, 30] = 9.0  # a tie: index 7 wins
    val, pmax, psum = _outs(rows, 3, torch.float32)
    idx, xor = _outs(rows, 2, torch.int32)
    keep = torch.full((rows, block), float("nan"))
    row_stats_kernel[(rows,)](x, val, idx, pmax, psum, xor, keep, n, BLOCK=block)
    torch.testing.assert_close(val, x.amax(1))
    assert idx.tolist() == x.argmax(1).tolist() and idx[1] == 7
    torch.testing.assert_close(pmax, x.abs().amax(1))
    torch.testing.assert_close(psum, x.sum(1), rtol=1e-5, atol=1e-5)
    bits = x.view(torch.int32)
    want = bits[:, 0].clone()
    for j in range(1, n):
        want ^= bits[:, j]
    assert torch.equal(xor, want)
    z = torch.cat([x, torch.zeros(rows, block - n)], 1)
    torch.testing.assert_close(keep, z - z.sum(1, keepdim=True), rtol=1e-5, atol=1e-5)


@sparsecc.jit
def _nan_kernel(X, MX, MN, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(X + tl.program_id(0) * N + offs)
    tl.store(MX + tl.program_id(0), tl.max(x, axis=0))
    tl.store(MN + tl.program_id(0), tl.min(x, axis=0))


def test_max_min_ignore_nan_as_triton() -> None:
    """Triton's tl.max/min combine with maxnumf/minnumf: a NaN loses to any number; a row of
    NaN gives NaN."""
    x = torch.randn(3, 16)
    x[0, 3] = float("nan")
    x[2, :] = float("nan")
    mx, mn = _outs(3, 2, torch.float32)
    _nan_kernel[(3,)](x, mx, mn, N=16)
    torch.testing.assert_close(mx[:2], torch.stack([x[0][~x[0].isnan()].max(), x[1].max()]))
    torch.testing.assert_close(mn[:2], torch.stack([x[0][~x[0].isnan()].min(), x[1].min()]))
    assert mx[2].isnan() and mn[2].isnan()


@sparsecc.jit
def _dtype_kernel(X, S16, S32, MX, N: tl.constexpr):
    x = tl.load(X + tl.arange(0, N))
    tl.store(S16, tl.sum(x, axis=0))  # int8 sums in int32 (Triton's _pick_sum_dtype)
    tl.store(S32, tl.sum(x, axis=0, dtype=tl.int16))  # wraps in int16
    tl.store(MX, tl.max(x, axis=0) + 1000)  # int8 max reduces in int32: no wrap


def test_sum_dtype_and_narrow_ints() -> None:
    x = torch.full((64,), 100, dtype=torch.int8)
    s32 = torch.zeros(1, dtype=torch.int32)
    s16 = torch.zeros(1, dtype=torch.int16)
    mx = torch.zeros(1, dtype=torch.int32)
    _dtype_kernel[(1,)](x, s32, s16, mx, N=64)
    assert s32.item() == 6400 and s16.item() == 6400 and mx.item() == 1100


@pytest.mark.parametrize("n, block", [(781, 1024), (4096, 4096)])
def test_row_kernels_against_torch(n: int, block: int) -> None:
    torch.manual_seed(n)
    rows = 3
    x = torch.randn(rows, n, dtype=torch.float16)
    w = torch.rand(n, dtype=torch.float16) + 0.5
    b = torch.randn(n, dtype=torch.float16)
    y = torch.full_like(x, float("nan"))
    softmax_kernel[(rows,)](y, x, n, n, BLOCK=block)
    torch.testing.assert_close(y.float(), torch.softmax(x.float(), 1), rtol=2e-3, atol=1e-5)
    layernorm_kernel[(rows,)](y, x, w, b, n, n, 1e-5, BLOCK=block)
    want = torch.nn.functional.layer_norm(x.float(), (n,), w.float(), b.float(), 1e-5)
    torch.testing.assert_close(y.float(), want, rtol=1e-2, atol=1e-2)
    rmsnorm_kernel[(rows,)](y, x, w, n, n, 1e-5, BLOCK=block)
    want = x.float() * torch.rsqrt(x.float().pow(2).mean(1, keepdim=True) + 1e-5) * w.float()
    torch.testing.assert_close(y.float(), want, rtol=1e-2, atol=1e-2)


@sparsecc.jit
def _bad_combine(a, b):
    return a + b, b


@sparsecc.jit
def _bad_reduce_kernel(X, N: tl.constexpr):
    x = tl.load(X + tl.arange(0, N))
    tl.store(X, tl.reduce(x, 0, _bad_combine))


def test_combine_returning_too_many_values_is_one_located_error() -> None:
    from sparsecc.frontend.errors import CompilationError

    with pytest.raises(CompilationError, match=r"combine function returns 2 values for 1 operands") as e:
        sparsecc.compile(_bad_reduce_kernel, signature={"X": "*fp32"}, constexprs={"N": 16})
    assert "test_reductions.py" in str(e.value)


@sparsecc.jit
def _methods_kernel(X, S, M, A, R, N: tl.constexpr):
    x = tl.load(X + tl.arange(0, N)[:, None] * N + tl.arange(0, N)[None, :])
    tl.store(S + tl.arange(0, N), x.sum(1))
    tl.store(M + tl.arange(0, N), x.max(axis=0))
    tl.store(A + tl.arange(0, N), x.argmin(0))
    tl.store(R, x.reduce(None, _mul_combine_local))


@sparsecc.jit
def _mul_combine_local(a, b):
    return a * b


def test_method_forms() -> None:
    torch.manual_seed(5)
    x = torch.rand(8, 8) + 0.5
    s, m = _outs(8, 2, torch.float32)
    (a,) = _outs(8, 1, torch.int32)
    (r,) = _outs(1, 1, torch.float32)
    _methods_kernel[(1,)](x, s, m, a, r, N=8)
    torch.testing.assert_close(s, x.sum(1))
    torch.testing.assert_close(m, x.amax(0))
    assert a.tolist() == x.argmin(0).tolist()
    torch.testing.assert_close(r, x.prod().reshape(1), rtol=1e-4, atol=0)


def test_dot_result_reductions() -> None:
    from reduction_kernels import dot_rowmax_kernel

    torch.manual_seed(9)
    a = torch.randn(32, 16, dtype=torch.float16)
    b = torch.randn(16, 32, dtype=torch.float16)
    mx, sm = _outs(32, 2, torch.float32)
    (arg,) = _outs(32, 1, torch.int32)
    dot_rowmax_kernel[(1,)](a, b, mx, sm, arg, K=16, BM=32, BN=32)
    c = a.float() @ b.float()
    torch.testing.assert_close(mx, c.amax(1), rtol=1e-3, atol=1e-3)
    torch.testing.assert_close(sm, c.sum(0), rtol=1e-3, atol=1e-3)
    assert arg.tolist() == c.argmax(1).tolist()


@sparsecc.jit
def _not_jit_combine_kernel(X, N: tl.constexpr):
    x = tl.load(X + tl.arange(0, N))
    tl.store(X, tl.reduce(x, 0, tl.maximum))


def test_combine_fn_must_be_jit() -> None:
    from sparsecc.frontend.errors import CompilationError

    with pytest.raises(CompilationError, match=r"combine_fn must be a @sparsecc.jit function"):
        sparsecc.compile(_not_jit_combine_kernel, signature={"X": "*fp32"}, constexprs={"N": 16})
