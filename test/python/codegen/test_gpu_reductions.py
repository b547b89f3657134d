"""Reductions in registers on the GPU (`gpu` marker) against torch: the row kernels (softmax,
layer norm, RMSNorm: 4096 fp16 values per row, 4 and 8 warps, ragged rows), every reduction
of a ragged 2-D tile along either axis (sum, max, min, argmax, argmin with ties, tl.reduce
with a @jit combine function), a two-operand tl.reduce, xor_sum, keep_dims, and reductions of
a tl.dot result (an mma layout). Outputs start NaN- or -7-poisoned."""

from __future__ import annotations

import pytest
import torch
from reduction_kernels import (
    dot_rowmax_kernel,
    layernorm_kernel,
    reduce2d_kernel,
    rmsnorm_kernel,
    row_stats_kernel,
    softmax_kernel,
)

pytestmark = pytest.mark.gpu


def _outs(n: int, count: int, dtype: torch.dtype) -> list[torch.Tensor]:
    fill = float("nan") if dtype.is_floating_point else -7
    return [torch.full((n,), fill, dtype=dtype, device="cuda") for _ in range(count)]


@pytest.mark.parametrize("num_warps", [4, 8])
@pytest.mark.parametrize("n, block", [(4096, 4096), (3000, 4096), (781, 1024)])
def test_row_kernels(n: int, block: int, num_warps: int) -> None:
    torch.manual_seed(n + num_warps)
    rows = 37
    x = torch.randn(rows, n, dtype=torch.float16, device="cuda") * 3
    w = torch.rand(n, dtype=torch.float16, device="cuda") + 0.5
    b = torch.randn(n, dtype=torch.float16, device="cuda")
    y = torch.full_like(x, float("nan"))
    softmax_kernel[(rows,)](y, x, n, n, BLOCK=block, num_warps=num_warps)
    torch.testing.assert_close(y.float(), torch.softmax(x.float(), 1), rtol=2e-3, atol=2e-5)
    y.fill_(float("nan"))
    layernorm_kernel[(rows,)](y, x, w, b, n, n, 1e-5, BLOCK=block, num_warps=num_warps)
    want = torch.nn.functional.layer_norm(x.float(), (n,), w.float(), b.float(), 1e-5)
    torch.testing.assert_close(y.float(), want, rtol=1e-2, atol=1e-2)
    y.fill_(float("nan"))
    rmsnorm_kernel[(rows,)](y, x, w, n, n, 1e-5, BLOCK=block, num_warps=num_warps)
    want = x.float() * torch.rsqrt(x.float().pow(2).mean(1, keepdim=True) + 1e-5) * w.float()
    torch.testing.assert_close(y.float(), want, rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("num_warps", [1, 4, 8])
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("m, n, bm, bn", [(64, 64, 64, 64), (45, 61, 64, 64), (7, 200, 8, 256), (130, 3, 256, 4)])
def test_reduce2d(m: int, n: int, bm: int, bn: int, axis: int, num_warps: int) -> None:
    torch.manual_seed(m * 7 + n + axis)
    x = torch.randn(m, n, device="cuda")
    x[0, :] = x[0, 0]  # ties: the smallest index wins
    x[:, 0] = x[0, 0]
    k = m if axis == 1 else n
    s, mx, mn, p = _outs(k, 4, torch.float32)
    amax, amin = _outs(k, 2, torch.int32)
    one = x.clone()
    one.clamp_(-1.05, 1.05)  # keep the product finite
    reduce2d_kernel[(1,)](one, s, mx, mn, amax, amin, p, m, n, AXIS=axis, BM=bm, BN=bn, num_warps=num_warps)
    torch.testing.assert_close(s, one.sum(axis), rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(mx, one.amax(axis))
    torch.testing.assert_close(mn, one.amin(axis))
    assert amax.tolist() == one.argmax(axis).tolist()
    assert amin.tolist() == one.argmin(axis).tolist()
    torch.testing.assert_close(p, one.prod(axis), rtol=1e-4, atol=1e-30)


@pytest.mark.parametrize("num_warps", [4, 8])
def test_row_stats(num_warps: int) -> None:
    torch.manual_seed(11)
    rows, n, block = 9, 1000, 1024
    x = torch.randn(rows, n, device="cuda")
    x[1, 7] = x[1, 900] = 9.0
    x[2, 500] = float("nan")  # with indices, NaN is order-dependent (as in Triton): row 2 is skipped
    val, pmax, psum = _outs(rows, 3, torch.float32)
    idx, xor = _outs(rows, 2, torch.int32)
    keep = torch.full((rows, block), float("nan"), device="cuda")
    row_stats_kernel[(rows,)](x, val, idx, pmax, psum, xor, keep, n, BLOCK=block, num_warps=num_warps)
    ok = torch.arange(rows, device="cuda") != 2
    torch.testing.assert_close(val[ok], x.amax(1)[ok])
    assert idx[1] == 7
    assert idx[ok].tolist() == x.argmax(1)[ok].tolist()
    z = torch.nan_to_num(x, nan=0.0)
    bits = x.view(torch.int32)
    want = bits[:, 0].clone()
    for j in range(1, n):
        want ^= bits[:, j]
    assert torch.equal(xor, want)
    torch.testing.assert_close(pmax[ok], z.abs().amax(1)[ok])
    torch.testing.assert_close(psum[ok], z.sum(1)[ok], rtol=1e-4, atol=1e-4)
    zp = torch.cat([x, torch.zeros(rows, block - n, device="cuda")], 1)
    torch.testing.assert_close(keep[ok], (zp - zp.sum(1, keepdim=True))[ok], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("num_warps", [4, 8])
@pytest.mark.parametrize("bm, bn, k", [(64, 64, 32), (128, 64, 64), (16, 16, 16)])
def test_dot_result_reductions(bm: int, bn: int, k: int, num_warps: int) -> None:
    torch.manual_seed(bm + bn + k)
    a = torch.randn(bm, k, dtype=torch.float16, device="cuda")
    b = torch.randn(k, bn, dtype=torch.float16, device="cuda")
    mx, sm = _outs(bm, 1, torch.float32)[0], _outs(bn, 1, torch.float32)[0]
    arg = _outs(bm, 1, torch.int32)[0]
    dot_rowmax_kernel[(1,)](a, b, mx, sm, arg, K=k, BM=bm, BN=bn, num_warps=num_warps)
    c = a.float() @ b.float()
    torch.testing.assert_close(mx, c.amax(1), rtol=1e-3, atol=1e-3)
    torch.testing.assert_close(sm, c.sum(0), rtol=1e-3, atol=1e-2)
    top2 = c.topk(2, dim=1).values
    clear = (top2[:, 0] - top2[:, 1]) > 1e-2  # rows whose maximum is not a near-tie
    assert arg[clear].tolist() == c.argmax(1)[clear].tolist()
