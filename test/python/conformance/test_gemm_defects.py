"""Issue 29's GEMM defects, each kept as a regression test on real kernels (gemm_kernels.py):
tutorial 09's matmul and torchao's int8 matmul with a 2:4 operand were refused ("rows wrapped
with % group_size_m"), and an 8-bit dot with a row-major dense operand was refused. On the
interpreter against torch (ragged M and N), assembled for sm_80 / sm_89 / sm_90a, and on the
GPU (marked gpu)."""

from __future__ import annotations

import pytest
import torch
from gemm_kernels import int8_matmul_kernel, matmul_kernel_09, stored_wrapped_rows_kernel

import sparsecc
import sparsecc.language as tl

SHAPES = [(100, 72, 128), (33, 17, 64), (48, 40, 192)]


def cdiv(x: int, y: int) -> int:
    return (x + y - 1) // y


@pytest.fixture
def interpret(monkeypatch):
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")


def _close(out: torch.Tensor, ref: torch.Tensor) -> None:
    assert torch.isfinite(out.float()).all(), "some outputs were never written"
    torch.testing.assert_close(out.float().cpu(), ref.float().cpu(), rtol=1e-2, atol=1e-2 * ref.abs().max().item())


# -- tutorial 09 ------------------------------------------------------------------------


def _launch_09(a, b, out, m, n, k, strides_b, bm=32, bn=32, bk=64, **opts):
    grid = (cdiv(m, bm) * cdiv(n, bn),)
    matmul_kernel_09[grid](a, b, out, m, n, k, a.stride(0), a.stride(1), *strides_b, out.stride(0), out.stride(1),
                           BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk, GROUP_SIZE_M=2, **opts)


@pytest.mark.parametrize("m, n, k", SHAPES)
def test_tutorial_09_with_a_sparse(m, n, k, interpret):
    g = torch.Generator().manual_seed(m + n + k)
    dense = sparsecc.prune_2to4(torch.randn(m, k, generator=g).half())
    b = torch.randn(k, n, generator=g).half()
    out = torch.full((m, n), float("nan"), dtype=torch.float16)
    a = sparsecc.compress(dense)
    _launch_09(a, b, out, m, n, k, (b.stride(0), b.stride(1)))
    _close(out, dense.float() @ b.float())


@pytest.mark.parametrize("m, n, k", SHAPES)
def test_tutorial_09_with_b_sparse(m, n, k, interpret):
    # B = W.T, W (N x K) 2:4 along K as an nn.Linear weight is stored: stride_bk = 1
    g = torch.Generator().manual_seed(2 * m + n + k)
    x = torch.randn(m, k, generator=g).half()
    w = sparsecc.prune_2to4(torch.randn(n, k, generator=g).half())
    out = torch.full((m, n), float("nan"), dtype=torch.float16)
    ws = sparsecc.compress(w)
    _launch_09(x, ws, out, m, n, k, (ws.stride(1), ws.stride(0)))
    _close(out, x.float() @ w.float().T)


def _sig_09(sparse: str) -> dict[str, str]:
    names = matmul_kernel_09.arg_names
    sig = {n: "i32" for n in names[3:12]}
    sig.update(stride_ak="i32:1", stride_cn="i32:1")
    sig.update(stride_bk="i32:1") if sparse == "b" else sig.update(stride_bn="i32:1")
    sig.update(a_ptr="*fp16:NV24" if sparse == "a" else "*fp16", b_ptr="*fp16:NV24" if sparse == "b" else "*fp16",
               c_ptr="*fp16")
    return sig


@pytest.mark.parametrize("sparse", ["a", "b"])
@pytest.mark.parametrize("target, form", [("sm_90a", "wgmma.mma_async.sp"), ("sm_80", "mma.sp::ordered_metadata")])
def test_tutorial_09_assembles(sparse, target, form):
    ck = sparsecc.compile(matmul_kernel_09, _sig_09(sparse),
                          {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8}, target=target)
    assert form in ck.asm["ptx"] and ck.asm["cubin"]
    # the clamped rows are raised to block pointers as `% M` is (TMA / cp.async rings)
    assert "tt.addptr" not in ck.asm["ttir-decomposed"]


def test_stored_clamped_rows_are_a_located_error():
    from sparsecc.frontend.errors import CompilationError

    sig = {"a_ptr": "*fp16:NV24", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32",
           "stride_am": "i32", "stride_bk": "i32", "stride_cm": "i32"}
    with pytest.raises(CompilationError, match=r"tl.where\(rows < 'M', rows, 0\).*store the result only under a "
                                               r"mask of the same index, unwrapped, below 'M'") as info:
        sparsecc.compile(stored_wrapped_rows_kernel, sig | {"M": "i32:16"}, {"BLOCK_M": 32, "BLOCK_N": 16, "BLOCK_K": 32})
    assert "a_ptrs = a_ptr + rm[:, None] * stride_am" in str(info.value)
    assert "i32:16" not in str(info.value)  # no multiple of 16 saves a clamp: not offered


# -- torchao's int8 matmul --------------------------------------------------------------


def _int8_problem(m, n, k, seed, b_layout):
    g = torch.Generator().manual_seed(seed)
    dense = sparsecc.prune_2to4(torch.randint(-8, 8, (m, k), generator=g, dtype=torch.int8))
    b = torch.randint(-8, 8, (k, n), generator=g, dtype=torch.int8)
    if b_layout == "col":
        b = b.t().contiguous().t()
    return dense, b, (dense.long() @ b.long()).to(torch.int32)


def _launch_int8(a, b, out, m, n, k, bm=32, bn=32, bk=64, even_k=False, **opts):
    grid = (cdiv(m, bm) * cdiv(n, bn),)
    int8_matmul_kernel[grid](a, b, out, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                             out.stride(0), out.stride(1), BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8,
                             EVEN_K=even_k, ACC_TYPE=tl.int32, **opts)


@pytest.mark.parametrize("even_k", [False, True])
@pytest.mark.parametrize("b_layout", ["row", "col"])
@pytest.mark.parametrize("m, n, k", [(100, 72, 128), (33, 40, 192)])
def test_int8_matmul_with_a_sparse(m, n, k, b_layout, even_k, interpret):
    # EVEN_K: loads unmasked, so A stays a tensor of pointers whose rows wrap `% M` (M ragged):
    # rows past M read other rows' metadata groups, harmless because the store masks them
    dense, b, ref = _int8_problem(m, n, k, m + n + k, b_layout)
    out = torch.full((m, n), -(2**31), dtype=torch.int32)
    _launch_int8(sparsecc.compress(dense), b, out, m, n, k, even_k=even_k)
    assert torch.equal(out, ref)


def _sig_int8(b_layout: str, dtype: str = "i8") -> dict[str, str]:
    names = int8_matmul_kernel.arg_names
    sig = {n: "i32" for n in names[3:12]}
    sig.update(stride_ak="i32:1", stride_cn="i32:1")
    sig.update(stride_bn="i32:1") if b_layout == "row" else sig.update(stride_bk="i32:1")
    sig.update(a_ptr=f"*{dtype}:NV24", b_ptr=f"*{dtype}", c_ptr="*i32")
    return sig


@pytest.mark.parametrize("even_k", [False, True])
@pytest.mark.parametrize("b_layout", ["row", "col"])
@pytest.mark.parametrize("target, bm, form", [("sm_90a", 64, "wgmma.mma_async.sp"),
                                              ("sm_90a", 32, "mma.sp::ordered_metadata"),
                                              ("sm_80", 64, "mma.sp::ordered_metadata")])
def test_int8_matmul_assembles(target, bm, form, b_layout, even_k):
    ck = sparsecc.compile(int8_matmul_kernel, _sig_int8(b_layout),
                          {"BLOCK_M": bm, "BLOCK_N": 64, "BLOCK_K": 64, "GROUP_M": 8, "EVEN_K": even_k,
                           "ACC_TYPE": tl.int32}, target=target)
    assert form in ck.asm["ptx"] and ".s8.s8" in ck.asm["ptx"] and ck.asm["cubin"]


# -- 8-bit dots with a row-major B -------------------------------------------------------


@pytest.mark.parametrize("dtype", ["fp8e4nv", "fp8e5"])
@pytest.mark.parametrize("b_layout", ["row", "col"])
@pytest.mark.parametrize("target, bm, form", [("sm_90a", 64, "wgmma.mma_async.sp"),
                                              ("sm_90a", 32, "mma.sp::ordered_metadata"),
                                              ("sm_89", 64, "mma.sp::ordered_metadata")])
def test_fp8_tutorial_matmul_assembles(dtype, b_layout, target, bm, form):
    from tutorial_kernels import matmul_kernel

    names = matmul_kernel.arg_names
    sig = {n: "i32" for n in names[3:12]}
    sig.update(stride_ak="i32:1", stride_cn="i32:1")
    sig.update(stride_bn="i32:1") if b_layout == "row" else sig.update(stride_bk="i32:1")
    sig.update(a_ptr=f"*{dtype}:NV24", b_ptr=f"*{dtype}", c_ptr="*fp16")
    ck = sparsecc.compile(matmul_kernel, sig, {"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 64,
                                               "GROUP_SIZE_M": 8}, target=target)
    ptx = ck.asm["ptx"]
    assert form in ptx and ("e4m3" if dtype == "fp8e4nv" else "e5m2") in ptx and ck.asm["cubin"]
    # a row-major B is transposed into the K-major buffer element by element
    assert ("st.shared.b8" in ptx) == (b_layout == "row")


# -- the GPU ---------------------------------------------------------------------------

GPU_SHAPES = [(300, 136, 256), (1000, 520, 1024), (64, 256, 512)]


@pytest.mark.gpu
@pytest.mark.parametrize("sparse", ["a", "b"])
@pytest.mark.parametrize("m, n, k", GPU_SHAPES)
def test_tutorial_09_on_the_gpu(m, n, k, sparse):
    torch.manual_seed(m + n + k)
    out = torch.full((m, n), float("nan"), device="cuda", dtype=torch.float16)
    for bm, bn, bk, warps in [(128, 128, 64, 8), (64, 64, 64, 4)]:
        out.fill_(float("nan"))
        if sparse == "a":
            dense = sparsecc.prune_2to4(torch.randn(m, k, device="cuda", dtype=torch.float16))
            b = torch.randn(k, n, device="cuda", dtype=torch.float16)
            _launch_09(sparsecc.compress(dense), b, out, m, n, k, (b.stride(0), b.stride(1)), bm, bn, bk,
                       num_warps=warps)
            ref = dense.float() @ b.float()
        else:
            x = torch.randn(m, k, device="cuda", dtype=torch.float16)
            w = sparsecc.prune_2to4(torch.randn(n, k, device="cuda", dtype=torch.float16))
            ws = sparsecc.compress(w)
            _launch_09(x, ws, out, m, n, k, (ws.stride(1), ws.stride(0)), bm, bn, bk, num_warps=warps)
            ref = x.float() @ w.float().T
        torch.cuda.synchronize()
        _close(out, ref)


@pytest.mark.gpu
@pytest.mark.parametrize("even_k", [False, True])
@pytest.mark.parametrize("b_layout", ["row", "col"])
@pytest.mark.parametrize("m, n, k", GPU_SHAPES)
def test_int8_matmul_on_the_gpu(m, n, k, b_layout, even_k):
    dense, b, ref = _int8_problem(m, n, k, m * 3 + k, b_layout)
    a = sparsecc.compress(dense.cuda())
    b = b.cuda() if b_layout == "row" else b.t().contiguous().cuda().t()
    out = torch.full((m, n), -(2**31), dtype=torch.int32, device="cuda")
    for bm, bn, bk, warps in [(128, 128, 64, 8), (64, 64, 128, 4), (32, 64, 64, 4)]:
        out.fill_(-(2**31))
        _launch_int8(a, b, out, m, n, k, bm, bn, bk, even_k=even_k, num_warps=warps)
        torch.cuda.synchronize()
        assert torch.equal(out.cpu(), ref)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float8_e4m3fn, torch.float8_e5m2])
@pytest.mark.parametrize("b_layout", ["row", "col"])
@pytest.mark.parametrize("m, n, k", GPU_SHAPES[:2])
def test_fp8_tutorial_matmul_on_the_gpu(m, n, k, dtype, b_layout):
    from tutorial_kernels import matmul_kernel

    torch.manual_seed(m + k)
    dense = sparsecc.prune_2to4(torch.randn(m, k, device="cuda")).to(dtype)
    b = torch.randn(k, n, device="cuda").to(dtype)
    if b_layout == "col":
        b = b.t().contiguous().t()
    a = sparsecc.compress(dense)
    out = torch.full((m, n), float("nan"), device="cuda", dtype=torch.float16)
    for bm, bn, bk, warps in [(128, 128, 64, 8), (32, 64, 64, 4)]:
        out.fill_(float("nan"))
        grid = (cdiv(m, bm) * cdiv(n, bn),)
        matmul_kernel[grid](a, b, out, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                            out.stride(0), out.stride(1), BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk,
                            GROUP_SIZE_M=8, num_warps=warps)
        torch.cuda.synchronize()
        ref = dense.float() @ b.float()
        torch.testing.assert_close(out.float(), ref, rtol=2e-2, atol=2e-2 * ref.abs().max().item())
