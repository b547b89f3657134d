"""Fused attention forward with a 2:4 K (issue 29): on the interpreter against torch (N_CTX not
a multiple of the query block), assembled for sm_80 and sm_90a, and on the GPU (marked gpu); the
tutorial's per-head base offset on a 2:4 K is one located error that says what to write instead,
and the same kernel runs with a dense K."""

from __future__ import annotations

import math

import pytest
import torch
from attention_kernels import attn_fwd_head_base, attn_fwd_head_rows

import sparsecc


def _problem(z, h, n, d, device, seed):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(z, h, n, d, generator=g).half().to(device)
    k = sparsecc.prune_2to4(torch.randn(z, h, n, d, generator=g).half().reshape(-1, d)).reshape(z, h, n, d).to(device)
    v = torch.randn(z, h, n, d, generator=g).half().to(device)
    return q, k, v


def _reference(q, k, v, scale):
    s = (q.float() @ k.float().transpose(-1, -2)) * scale
    return torch.softmax(s, dim=-1) @ v.float()


def _launch(kernel, q, k_arg, k_strides, v, out, scale, bm, bn, **opts):
    z, h, n, d = q.shape
    grid = (triton_cdiv(n, bm), z * h)
    kernel[grid](q, k_arg, v, out, scale, q.stride(0), q.stride(1), q.stride(2), *k_strides,
                 v.stride(0), v.stride(1), v.stride(2), out.stride(0), out.stride(1), out.stride(2), h, n,
                 BLOCK_M=bm, BLOCK_N=bn, HEAD_DIM=d, **opts)


def triton_cdiv(x: int, y: int) -> int:
    return (x + y - 1) // y


def _sparse_k(k):
    """K as one 2-D (Z*H*N) x D 2:4 tensor, and the (z, h, n) strides of its rows."""
    z, h, n, d = k.shape
    ks = sparsecc.compress(k.reshape(-1, d))
    return ks, (h * n * ks.stride(0), n * ks.stride(0), ks.stride(0))


@pytest.mark.parametrize("z, h, n, d", [(1, 2, 48, 32), (2, 1, 80, 64)])
def test_attention_with_a_sparse_k_on_the_interpreter(z, h, n, d, monkeypatch):
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    q, k, v = _problem(z, h, n, d, "cpu", seed=n + d)
    out = torch.full_like(q, float("nan"))
    scale = 1 / math.sqrt(d)
    ks, strides = _sparse_k(k)
    _launch(attn_fwd_head_rows, q, ks, strides, v, out, scale, bm=32, bn=16)
    ref = _reference(q, k, v, scale)
    assert torch.isfinite(out).all()
    torch.testing.assert_close(out.float(), ref, rtol=1e-2, atol=1e-2)


def test_the_dense_kernels_agree_on_the_interpreter(monkeypatch):
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    q, k, v = _problem(1, 2, 40, 32, "cpu", seed=5)
    scale = 0.2
    ref = _reference(q, k, v, scale)
    out = torch.full_like(q, float("nan"))
    _launch(attn_fwd_head_base, q, k, (k.stride(0), k.stride(1), k.stride(2)), v, out, scale, bm=16, bn=16)
    torch.testing.assert_close(out.float(), ref, rtol=1e-2, atol=1e-2)


def _sig(kernel, k: str) -> dict[str, str]:
    names = kernel.arg_names[:19]
    sig = {n: "i32" for n in names}
    sig.update(Q="*fp16", K=k, V="*fp16", Out="*fp16", sm_scale="fp32")
    return sig


@pytest.mark.parametrize("target, form", [("sm_90a", "mma_async.sp"), ("sm_80", "mma.sp::ordered_metadata")])
def test_attention_with_a_sparse_k_assembles(target, form):
    ck = sparsecc.compile(attn_fwd_head_rows, _sig(attn_fwd_head_rows, "*fp16:NV24"),
                          {"BLOCK_M": 64, "BLOCK_N": 64, "HEAD_DIM": 64}, target=target)
    assert form in ck.asm["ptx"] and ck.asm["cubin"]


def test_a_per_head_base_on_a_sparse_k_is_a_located_error():
    from sparsecc.frontend.errors import CompilationError

    with pytest.raises(CompilationError, match="a scalar offset on a sparse pointer .* fold the head into the rows") as e:
        sparsecc.compile(attn_fwd_head_base, _sig(attn_fwd_head_base, "*fp16:NV24"),
                         {"BLOCK_M": 64, "BLOCK_N": 64, "HEAD_DIM": 64})
    assert "k = tl.load(K + k_off + cols[:, None] * stride_kn" in str(e.value)


@pytest.mark.gpu
@pytest.mark.parametrize("z, h, n, d", [(2, 4, 256, 64), (1, 3, 1024, 128), (2, 2, 272, 64)])
def test_attention_with_a_sparse_k_on_the_gpu(z, h, n, d):
    q, k, v = _problem(z, h, n, d, "cuda", seed=n + h)
    scale = 1 / math.sqrt(d)
    ks, strides = _sparse_k(k)
    ref = _reference(q, k, v, scale)
    out = torch.full_like(q, float("nan"))
    for bm, bn, warps in [(64, 64, 4), (128, 64, 8)]:
        out.fill_(float("nan"))
        _launch(attn_fwd_head_rows, q, ks, strides, v, out, scale, bm=bm, bn=bn, num_warps=warps)
        torch.cuda.synchronize()
        assert torch.isfinite(out).all()
        torch.testing.assert_close(out.float(), ref, rtol=1e-2, atol=1e-2)
