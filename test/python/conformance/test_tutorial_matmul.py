"""Triton's tutorial matmul with A 2:4 sparse, unchanged but for the import and decorator, on the
CPU interpreter (which runs the decomposed IR) against torch, ragged shapes included; and the
same kernels assembled for sm_80 and sm_90a (sparse HMMA/HGMMA in the SASS)."""

from __future__ import annotations

import pytest
import torch
from tutorial_kernels import masked_matmul_kernel, matmul_kernel

import sparsecc

SHAPES = [(64, 64, 128), (100, 72, 96), (33, 17, 64), (128, 40, 160)]
INT_ARGS = ["M", "N", "K", "stride_am", "stride_ak", "stride_bk", "stride_bn", "stride_cm", "stride_cn"]


def test_the_tutorial_kernel_has_one_source():
    """`matmul_kernel` is parity_kernels.py's tutorial 03 (the source the parity benchmark hands
    Triton too) with `tl` bound to sparsecc's language, not a copy of it."""
    import parity_kernels as pk

    import sparsecc.language

    assert matmul_kernel.fn.__code__ is pk.matmul_kernel.__code__
    assert matmul_kernel.fn.__globals__["tl"] is sparsecc.language


def _problem(m: int, n: int, k: int, seed: int):
    g = torch.Generator().manual_seed(seed)
    dense = sparsecc.prune_2to4(torch.randn(m, k, generator=g).to(torch.float16))
    b = torch.randn(k, n, generator=g).to(torch.float16)
    out = torch.full((m, n), float("nan"), dtype=torch.float16)
    return dense, sparsecc.compress(dense), b, out


def _check(out: torch.Tensor, dense: torch.Tensor, b: torch.Tensor) -> None:
    ref = dense.float() @ b.float()
    assert torch.isfinite(out).all(), "some outputs were never written"
    torch.testing.assert_close(out.float(), ref, rtol=1e-2, atol=1e-2 * ref.abs().max().item())


@pytest.fixture
def interpret(monkeypatch):
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")


@pytest.mark.parametrize("m, n, k", SHAPES)
def test_tutorial_matmul_with_a_sparse(m, n, k, interpret):
    dense, a, b, out = _problem(m, n, k, seed=m + n + k)
    bm, bn, bk = 32, 32, 64
    grid = (triton_cdiv(m, bm) * triton_cdiv(n, bn),)
    matmul_kernel[grid](a, b, out, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                        out.stride(0), out.stride(1), BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn,
                        BLOCK_SIZE_K=bk, GROUP_SIZE_M=2)
    _check(out, dense, b)


@pytest.mark.parametrize("m, n, k", SHAPES[1:3])
def test_masked_matmul_variants(m, n, k, interpret):
    dense, a, b, out = _problem(m, n, k, seed=7 * m + k)
    grid = (triton_cdiv(m, 32), triton_cdiv(n, 16))
    masked_matmul_kernel[grid](a, b, out, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                               out.stride(0), out.stride(1), BLOCK_M=32, BLOCK_N=16, BLOCK_K=32)
    _check(out, dense, b)


def triton_cdiv(x: int, y: int) -> int:
    return (x + y - 1) // y


def _signature(kernel, unit_k: bool = False) -> dict[str, str]:
    names = kernel.arg_names
    ints = {n: "i32" for n in names[3:12]}
    if unit_k:  # as kernel[grid] specializes contiguous tensors' unit strides
        ints.update(stride_ak="i32:1", stride_bn="i32:1", stride_cn="i32:1")
    return {names[0]: "*fp16:NV24", names[1]: "*fp16", names[2]: "*fp16", **ints}


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_tutorial_matmul_assembles_to_sparse_mma(target):
    from sparsecc.codegen.ptxas import ToolNotFoundError, dump_sass

    ck = sparsecc.compile(matmul_kernel, _signature(matmul_kernel, unit_k=True),
                          {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8},
                          target=target)
    ptx = ck.asm["ptx"]
    wgmma = "wgmma.mma_async.sp" in ptx
    assert wgmma or "mma.sp::ordered_metadata" in ptx
    assert "tt.reshape" not in ck.asm["ttir-decomposed"] and "tt.reduce" not in ck.asm["ttir-decomposed"]
    try:
        sass = dump_sass(ck.asm["cubin"])
    except ToolNotFoundError as e:
        pytest.skip(f"no cuobjdump: {e}")
    assert ("HGMMA.SP" if wgmma else "HMMA.SP") in sass


def test_a_runtime_stride_along_the_compressed_dim_is_named():
    from sparsecc.frontend.errors import CompilationError

    sig = _signature(matmul_kernel)  # stride_ak an 'i32' (not the constant 1)
    with pytest.raises(CompilationError, match="scaled by 'stride_ak': K must be contiguous") as info:
        sparsecc.compile(matmul_kernel, sig, {"BLOCK_SIZE_M": 32, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 64,
                                              "GROUP_SIZE_M": 8})
    assert "a_ptrs = a_ptr + (offs_am[:, None] * stride_am" in str(info.value)


def test_launching_with_a_non_unit_k_stride_names_it(interpret):
    from sparsecc.frontend.errors import CompilationError

    dense, a, b, out = _problem(32, 32, 64, seed=3)
    with pytest.raises(CompilationError, match="stride_ak"):
        matmul_kernel[(1,)](a, b, out, 32, 32, 64, a.stride(0), 2, b.stride(0), b.stride(1),
                            out.stride(0), out.stride(1), BLOCK_SIZE_M=32, BLOCK_SIZE_N=32,
                            BLOCK_SIZE_K=64, GROUP_SIZE_M=1)


GPU_SHAPES = [(256, 256, 512), (300, 136, 208), (1000, 520, 1024), (16, 4096, 4096)]


@pytest.mark.gpu
@pytest.mark.parametrize("sparse", [True, False])
@pytest.mark.parametrize("m, n, k", GPU_SHAPES)
def test_tutorial_matmul_on_the_gpu(m, n, k, sparse):
    torch.manual_seed(m + n + k)
    dense = sparsecc.prune_2to4(torch.randn(m, k, device="cuda", dtype=torch.float16))
    a = sparsecc.compress(dense) if sparse else dense
    b = torch.randn(k, n, device="cuda", dtype=torch.float16)
    out = torch.full((m, n), float("nan"), device="cuda", dtype=torch.float16)
    for bm, bn, bk, warps in [(128, 128, 64, 8), (64, 64, 64, 4)]:
        out.fill_(float("nan"))
        grid = (triton_cdiv(m, bm) * triton_cdiv(n, bn),)
        matmul_kernel[grid](a, b, out, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                            out.stride(0), out.stride(1), BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn,
                            BLOCK_SIZE_K=bk, GROUP_SIZE_M=8, num_warps=warps)
        torch.cuda.synchronize()
        _check(out.cpu(), dense.cpu(), b.cpu())


@pytest.mark.gpu
@pytest.mark.parametrize("m, n, k", GPU_SHAPES[:3])
def test_masked_matmul_variants_on_the_gpu(m, n, k):
    torch.manual_seed(m * 3 + k)
    dense = sparsecc.prune_2to4(torch.randn(m, k, device="cuda", dtype=torch.float16))
    a = sparsecc.compress(dense)
    b = torch.randn(k, n, device="cuda", dtype=torch.float16)
    out = torch.full((m, n), float("nan"), device="cuda", dtype=torch.float16)
    grid = (triton_cdiv(m, 64), triton_cdiv(n, 32))
    masked_matmul_kernel[grid](a, b, out, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                               out.stride(0), out.stride(1), BLOCK_M=64, BLOCK_N=32, BLOCK_K=64)
    torch.cuda.synchronize()
    _check(out.cpu(), dense.cpu(), b.cpu())


def test_the_tutorial_k_loop_is_raised_to_block_pointers():
    ck = sparsecc.compile(matmul_kernel, _signature(matmul_kernel, unit_k=True),
                          {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8})
    text = ck.asm["ttir-decomposed"]
    assert text.count("tt.make_tensor_ptr") == 4  # A's values and metadata, B, C
    assert "tt.addptr" not in text


def test_wrapped_rows_that_are_stored_keep_their_pointers(interpret):
    from tutorial_kernels import wrapped_rows_kernel

    # M a multiple of 16: whole metadata row groups wrap, rows past M read rows 0.. as written
    m, n, k = 48, 16, 96
    dense, a, b, _ = _problem(m, n, k, seed=11)
    out = torch.full((64, n), float("nan"), dtype=torch.float16)
    wrapped_rows_kernel[(2,)](a, b, out, m, n, k, a.stride(0), b.stride(0), out.stride(0),
                              BLOCK_M=32, BLOCK_N=16, BLOCK_K=32)
    rows = torch.arange(64) % m
    _check(out, dense[rows], b)
    sig = {"a_ptr": "*fp16:NV24", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32:16", "N": "i32",
           "K": "i32", "stride_am": "i32", "stride_bk": "i32", "stride_cm": "i32"}
    blocks = {"BLOCK_M": 32, "BLOCK_N": 16, "BLOCK_K": 32}
    decomposed = sparsecc.compile(wrapped_rows_kernel, sig, blocks).asm["ttir-decomposed"]
    assert "a_ptrs_values" in decomposed  # A stays a tensor of pointers
    # a ragged M would wrap inside a 16-row metadata group: a located error, not wrong rows
    from sparsecc.frontend.errors import CompilationError

    with pytest.raises(CompilationError, match="wrapped with % 'M'.*multiple of 16"):
        sparsecc.compile(wrapped_rows_kernel, sig | {"M": "i32"}, blocks)
