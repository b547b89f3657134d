"""A sparse right operand (`y = x @ W.T`, W 2:4 along K): sparse-operand-to-lhs computes the
transposed product with W on the left and no copy; interpreter against torch (decode and prefill
M, ragged N and K, bias + SiLU epilogue), assembly for sm_80 and sm_90a, the H100."""

from __future__ import annotations

import pytest
import torch
from linear_kernels import (
    linear_block_ptr,
    linear_deferred_store,
    linear_pointers,
    linear_trans,
    linear_while_k,
)

import sparsecc


def _problem(m: int, n: int, k: int, dtype: torch.dtype, device: str, seed: int):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(m, k, generator=g).to(dtype).to(device)
    dense_w = sparsecc.prune_2to4(torch.randn(n, k, generator=g).to(dtype)).to(device)
    bias = torch.randn(n, generator=g).to(dtype).to(device)
    y = torch.full((m, n), float("nan"), dtype=dtype, device=device)
    return x, dense_w, sparsecc.compress(dense_w), bias, y


def _check(y, ref):
    assert torch.isfinite(y).all(), "some outputs were never written"
    tol = 1e-2 if y.dtype == torch.float16 else 2e-2
    torch.testing.assert_close(y.float().cpu(), ref.float().cpu(), rtol=tol, atol=tol * ref.abs().max().item())


def _launch_block_ptr(x, w, bias, y, bm, bn, bk, has_bias=True, **opts):
    m, k = x.shape
    n = w.shape[0]
    grid = ((m + bm - 1) // bm, (n + bn - 1) // bn)
    linear_block_ptr[grid](y, x, w, bias, m, n, k, x.stride(0), w.stride(0), y.stride(0),
                           BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, HAS_BIAS=has_bias, **opts)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("m, n, k", [(1, 48, 64), (5, 40, 96), (16, 64, 128), (100, 72, 96)])
def test_linear_block_pointers_on_the_interpreter(m, n, k, dtype, monkeypatch):
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    x, dense_w, w, bias, y = _problem(m, n, k, dtype, "cpu", seed=m + n + k)
    _launch_block_ptr(x, w, bias, y, 16, 32, 32)
    _check(y, torch.nn.functional.silu(x.float() @ dense_w.float().T + bias.float()))


@pytest.mark.parametrize("m, n, k", [(1, 48, 64), (33, 40, 96)])
def test_linear_pointer_tensors_on_the_interpreter(m, n, k, monkeypatch):
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    x, dense_w, w, _, y = _problem(m, n, k, torch.float16, "cpu", seed=3 * m + k)
    grid = ((m + 15) // 16, (n + 31) // 32)
    linear_pointers[grid](y, x, w, m, n, k, x.stride(0), w.stride(0), y.stride(0),
                          BLOCK_M=16, BLOCK_N=32, BLOCK_K=32)
    _check(y, x.float() @ dense_w.float().T)


@pytest.mark.parametrize("sparse", [True, False])
@pytest.mark.parametrize("m, n, k", [(1, 48, 64), (40, 72, 96)])
def test_linear_with_tl_trans_on_the_interpreter(m, n, k, sparse, monkeypatch):
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    x, dense_w, w, _, y = _problem(m, n, k, torch.float16, "cpu", seed=5 * m + k)
    grid = ((m + 15) // 16, (n + 31) // 32)
    linear_trans[grid](y, x, w if sparse else dense_w, m, n, k, x.stride(0), dense_w.stride(0), y.stride(0),
                       BLOCK_M=16, BLOCK_N=32, BLOCK_K=32)
    _check(y, x.float() @ dense_w.float().T)


@pytest.mark.parametrize("sparse", [True, False])
def test_tl_trans_is_folded_away(sparse):
    sig = {"Y": "*fp16", "X": "*fp16", "W": "*fp16:NV24" if sparse else "*fp16", "M": "i32", "N": "i32",
           "K": "i32", "stride_xm": "i32", "stride_wn": "i32", "stride_ym": "i32"}
    ck = sparsecc.compile(linear_trans, sig, {"BLOCK_M": 16, "BLOCK_N": 64, "BLOCK_K": 64}, target="sm_90a")
    assert "tt.trans" in ck.asm["ttir"] and "tt.trans" not in ck.asm["ttir-decomposed"]
    assert "tt.trans" not in ck.asm["ttgir"]


def test_the_transposed_dot_has_w_on_the_left():
    sig = {"Y": "*fp16", "X": "*fp16", "W": "*fp16:NV24", "BIAS": "*fp16", "M": "i32", "N": "i32",
           "K": "i32", "stride_xm": "i32", "stride_wn": "i32", "stride_ym": "i32"}
    ck = sparsecc.compile(linear_block_ptr, sig, {"BLOCK_M": 16, "BLOCK_N": 64, "BLOCK_K": 64, "HAS_BIAS": True})
    text = ck.asm["ttir-decomposed"]
    assert "tt.dot %w_values, %x, %w_meta" in text and "sparseIndex = 0" in text
    assert "tensor<64x16xf32>" in text  # the accumulator is N x M


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("bm, bn, bk, warps", [(16, 64, 128, 4), (128, 128, 64, 8)])
def test_linear_assembles_to_sparse_mma(target, bm, bn, bk, warps):
    from sparsecc.codegen.ptxas import ToolNotFoundError, dump_sass

    sig = {"Y": "*fp16", "X": "*fp16", "W": "*fp16:NV24", "BIAS": "*fp16", "M": "i32", "N": "i32:16",
           "K": "i32:16", "stride_xm": "i32:16", "stride_wn": "i32:16", "stride_ym": "i32:16"}
    ck = sparsecc.compile(linear_block_ptr, sig, {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "HAS_BIAS": True},
                          target=target, num_warps=warps)
    ptx = ck.asm["ptx"]
    wgmma = "wgmma.mma_async.sp" in ptx
    assert wgmma or "mma.sp::ordered_metadata" in ptx
    try:
        sass = dump_sass(ck.asm["cubin"])
    except ToolNotFoundError as e:
        pytest.skip(f"no cuobjdump: {e}")
    assert ("HGMMA.SP" if wgmma else "HMMA.SP") in sass


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("m, n, k", [(1, 4096, 4096), (16, 1000, 528), (128, 2048, 1024), (300, 136, 208)])
def test_linear_on_the_gpu(m, n, k, dtype):
    x, dense_w, w, bias, y = _problem(m, n, k, dtype, "cuda", seed=m + n)
    ref = torch.nn.functional.silu(x.float() @ dense_w.float().T + bias.float())
    for bm, bn, bk, warps in [(16, 64, 128, 4), (64, 128, 64, 4), (128, 128, 64, 8)]:
        y.fill_(float("nan"))
        _launch_block_ptr(x, w, bias, y, bm, bn, bk, num_warps=warps)
        torch.cuda.synchronize()
        _check(y, ref)
    y.fill_(float("nan"))
    grid = ((m + 15) // 16, (n + 63) // 64)
    linear_trans[grid](y, x, w, m, n, k, x.stride(0), w.stride(0), y.stride(0), BLOCK_M=16, BLOCK_N=64,
                       BLOCK_K=64)
    torch.cuda.synchronize()
    _check(y, x.float() @ dense_w.float().T)
    y.fill_(float("nan"))
    linear_pointers[grid](y, x, w, m, n, k, x.stride(0), w.stride(0), y.stride(0),
                          BLOCK_M=16, BLOCK_N=64, BLOCK_K=64)
    torch.cuda.synchronize()
    _check(y, x.float() @ dense_w.float().T)


_WHILE_SIG = {"Y": "*fp16", "X": "*fp16", "W": "*fp16:NV24", "M": "i32", "N": "i32:16", "K": "i32:16",
              "stride_xm": "i32:16", "stride_wn": "i32:16", "stride_ym": "i32:16"}


def _launch_while(kernel, x, w, y, bm, bn, bk, programs=3, **opts):
    m, k = x.shape
    n = w.shape[0]
    grid = ((m + bm - 1) // bm, (n + bn - 1) // bn) if kernel is linear_while_k else (programs,)
    kernel[grid](y, x, w, m, n, k, x.stride(0), w.stride(0), y.stride(0), BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,
                 **opts)


@pytest.mark.parametrize("kernel", [linear_while_k, linear_deferred_store])
@pytest.mark.parametrize("m, n, k", [(5, 40, 96), (33, 72, 64)])
def test_while_loops_carry_the_transposed_sum_on_the_interpreter(kernel, m, n, k, monkeypatch):
    """A `while` K loop (its sparse pointer and the sum carried by an scf.while) and a
    persistent loop storing each tile's sum one trip later (the sum carried across trips)."""
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    x, dense_w, w, _, y = _problem(m, n, k, torch.float16, "cpu", seed=7 * m + k)
    _launch_while(kernel, x, w, y, 16, 32, 32)
    _check(y, x.float() @ dense_w.float().T)


@pytest.mark.parametrize("kernel", [linear_while_k, linear_deferred_store])
def test_while_loops_decompose_and_transpose(kernel):
    ck = sparsecc.compile(kernel, _WHILE_SIG, {"BLOCK_M": 16, "BLOCK_N": 64, "BLOCK_K": 64}, target="sm_90a")
    text = ck.asm["ttir-decomposed"]
    assert "tt.dot %w_values, %x, %w_meta" in text or "tt.dot %w_values" in text
    assert "tensor<64x16xf32>" in text and "scf.while" in text  # the while carries the N x M sum
    assert "NV24" not in text.split("tt.func")[1].split("{", 1)[1]  # no sparse type is left in the body


@pytest.mark.parametrize("target, bm, bn, bk, warps", [("sm_80", 16, 64, 64, 4), ("sm_90a", 64, 128, 64, 4),
                                                        ("sm_90a", 128, 128, 64, 8)])
@pytest.mark.parametrize("kernel", [linear_while_k, linear_deferred_store])
def test_while_loops_assemble_to_sparse_mma(kernel, target, bm, bn, bk, warps):
    ck = sparsecc.compile(kernel, _WHILE_SIG, {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk}, target=target,
                          num_warps=warps)
    ptx = ck.asm["ptx"]
    assert ("wgmma.mma_async.sp" if target == "sm_90a" else "mma.sp::ordered_metadata") in ptx
    assert ck.asm["cubin"]


@pytest.mark.gpu
@pytest.mark.parametrize("kernel", [linear_while_k, linear_deferred_store])
@pytest.mark.parametrize("m, n, k", [(1, 4096, 4096), (300, 136, 208), (128, 1000, 528)])
def test_while_loops_on_the_gpu(kernel, m, n, k):
    x, dense_w, w, _, y = _problem(m, n, k, torch.float16, "cuda", seed=m + k)
    ref = x.float() @ dense_w.float().T
    for bm, bn, bk, warps in [(16, 64, 64, 4), (64, 128, 64, 4), (128, 128, 64, 8)]:
        y.fill_(float("nan"))
        _launch_while(kernel, x, w, y, bm, bn, bk, programs=7, num_warps=warps)
        torch.cuda.synchronize()
        _check(y, ref)


def test_pingpong_leaves_a_loop_that_carries_a_tile_alone():
    """`pingpong` asks for two compute groups taking turns; a persistent loop that carries a
    tile's sum to its next trip (every group would need the other's) keeps one group."""
    ck = sparsecc.compile(linear_deferred_store, _WHILE_SIG, {"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 64},
                          target="sm_90a", num_warps=4, tma_extents=True, pingpong=True)
    assert ck.metadata["threads"] in (128, 160)
    assert "ttg.consumer-groups" not in ck.asm["ttgir"]
