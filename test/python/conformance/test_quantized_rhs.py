"""`y = x @ dequantize(W).T` with W a quantized 2:4 weight (`NV24.w4g128` and kin) through the
Triton-style linear kernels, unchanged: the interpreter and the GPU against torch on the
dequantized weight, block pointers and tensors of pointers, decode and prefill M, ragged N."""

from __future__ import annotations

import pytest
import torch
from linear_kernels import linear_block_ptr, linear_pointers
from tutorial_kernels import matmul_kernel

import sparsecc

SCHEMES = ["w4g128", "w8c", "w4g64z", "w8g128"]


def _problem(m: int, n: int, k: int, scheme: str, dtype: torch.dtype, device: str, seed: int):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(m, k, generator=g).to(dtype).to(device)
    dense_w = sparsecc.prune_2to4(torch.randn(n, k, generator=g).to(dtype))
    w = sparsecc.compress(dense_w, quant=scheme).to(device)
    bias = torch.randn(n, generator=g).to(dtype).to(device)
    y = torch.full((m, n), float("nan"), dtype=dtype, device=device)
    return x, w, bias, y


def _check(y: torch.Tensor, ref: torch.Tensor) -> None:
    assert torch.isfinite(y).all(), "some outputs were never written"
    tol = 1e-2 if y.dtype == torch.float16 else 2e-2
    torch.testing.assert_close(y.float().cpu(), ref.float().cpu(), rtol=tol, atol=tol * ref.abs().max().item())


def _block_ptr(x, w, bias, y, bm, bn, bk, **opts):
    m, k = x.shape
    n = w.shape[0]
    grid = ((m + bm - 1) // bm, (n + bn - 1) // bn)
    linear_block_ptr[grid](y, x, w, bias, m, n, k, x.stride(0), w.stride(0), y.stride(0),
                           BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, HAS_BIAS=True, **opts)
    return torch.nn.functional.silu(x.float() @ w.to_dense().float().T + bias.float())


def _pointers(x, w, y, bm, bn, bk, **opts):
    m, k = x.shape
    n = w.shape[0]
    grid = ((m + bm - 1) // bm, (n + bn - 1) // bn)
    linear_pointers[grid](y, x, w, m, n, k, x.stride(0), w.stride(0), y.stride(0),
                          BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, **opts)
    return x.float() @ w.to_dense().float().T


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("m, n", [(1, 48), (33, 40)])
def test_quantized_linear_on_the_interpreter(scheme, m, n, monkeypatch):
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    x, w, bias, y = _problem(m, n, 256, scheme, torch.float16, "cpu", seed=m + n)
    _check(y, _block_ptr(x, w, bias, y, 16, 32, 128))


def test_quantized_linear_pointers_on_the_interpreter(monkeypatch):
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    x, w, _, y = _problem(5, 40, 256, "w4g64", torch.bfloat16, "cpu", seed=7)
    _check(y, _pointers(x, w, y, 16, 32, 128))


@pytest.mark.gpu
@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("m, n, tile", [(1, 200, (16, 32, 256)), (16, 4096, (16, 64, 256)),
                                        (45, 72, (64, 64, 128))])
def test_quantized_linear_on_the_gpu(scheme, dtype, m, n, tile):
    x, w, bias, y = _problem(m, n, 512, scheme, dtype, "cuda", seed=m * n)
    _check(y, _block_ptr(x, w, bias, y, *tile))


@pytest.mark.gpu
@pytest.mark.parametrize("scheme", ["w4g128", "w8c"])
def test_quantized_linear_pointers_on_the_gpu(scheme):
    x, w, _, y = _problem(5, 100, 384, scheme, torch.float16, "cuda", seed=11)
    _check(y, _pointers(x, w, y, 16, 32, 128))


@pytest.mark.gpu
@pytest.mark.parametrize("scheme", ["w4g64", "w8g128z"])
def test_quantized_left_operand_tutorial_matmul_on_the_gpu(scheme):
    """Triton's tutorial matmul with A quantized 2:4 (A on the left, as stored)."""
    g = torch.Generator().manual_seed(5)
    m, n, k = 300, 136, 512
    a = sparsecc.compress(sparsecc.prune_2to4(torch.randn(m, k, generator=g).half()), quant=scheme).cuda()
    b = torch.randn(k, n, generator=g).half().cuda()
    c = torch.full((m, n), float("nan"), dtype=torch.float16, device="cuda")
    bm, bn, bk = 64, 64, 128
    grid = (((m + bm - 1) // bm) * ((n + bn - 1) // bn),)
    matmul_kernel[grid](a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                        c.stride(0), c.stride(1), BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk,
                        GROUP_SIZE_M=8)
    _check(c, a.to_dense().float() @ b.float())
