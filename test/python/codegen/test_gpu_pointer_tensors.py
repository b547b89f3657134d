"""Tensor-of-pointer loads/stores with mask/other (the Triton-tutorial style) on the GPU path.

CPU part: the kernels compile through ptxas for sm_80 and sm_90. GPU part (`gpu` marker): they
run on ragged sizes against torch, writing into NaN-poisoned buffers larger than the masked
region, so an unmasked store shows up as a changed NaN and a missing store as a left NaN.
"""

from __future__ import annotations

import pytest
import torch
from kernels import masked_add_kernel

import sparsecc
import sparsecc.language as tl


@sparsecc.jit
def masked_copy2d(X, Y, M, N, stride_x, stride_y, BM: tl.constexpr, BN: tl.constexpr):
    offs_m = tl.program_id(0) * BM + tl.arange(0, BM)
    offs_n = tl.program_id(1) * BN + tl.arange(0, BN)
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    v = tl.load(X + offs_m[:, None] * stride_x + offs_n[None, :], mask=mask, other=0.0)
    tl.store(Y + offs_m[:, None] * stride_y + offs_n[None, :], v, mask=mask)


VADD_SIG = {"X": "*fp32", "Y": "*fp32", "Z": "*fp32", "n": "i32"}
COPY_SIG = {"X": "*fp16", "Y": "*fp16", "M": "i32", "N": "i32", "stride_x": "i32", "stride_y": "i32"}


def _ptxas_available() -> bool:
    from sparsecc.codegen import ptxas

    try:
        ptxas.find_ptxas()
    except ptxas.ToolNotFoundError:
        return False
    return True


@pytest.mark.parametrize("target", ["sm_80", "sm_90"])
def test_masked_pointer_kernels_compile(target):
    if not _ptxas_available():
        pytest.skip("ptxas not found")
    ck = sparsecc.compile(masked_add_kernel, VADD_SIG, {"BLOCK": 1024}, target=target)
    ptx = ck.asm["ptx"]
    assert "ld.global" in ptx and "st.global" in ptx and "@%p" in ptx  # predicated accesses
    assert ck.asm["cubin"]
    ck = sparsecc.compile(masked_copy2d, COPY_SIG, {"BM": 32, "BN": 64}, target=target)
    assert "ld.global.b16" in ck.asm["ptx"]
    assert ck.asm["cubin"]


@pytest.mark.gpu
@pytest.mark.parametrize("n", [1, 1000, 1024, 4099])
def test_masked_vadd_on_gpu(n):
    gen = torch.Generator().manual_seed(n)
    x = torch.randn(n, generator=gen).cuda()
    y = torch.randn(n, generator=gen).cuda()
    z = torch.full((n + 37,), float("nan"), device="cuda")
    grid = (-(-n // 1024),)
    masked_add_kernel[grid](x, y, z, n, BLOCK=1024)
    torch.cuda.synchronize()
    torch.testing.assert_close(z[:n], x + y, rtol=0, atol=0)
    assert torch.isnan(z[n:]).all(), "masked-off elements were written"


@pytest.mark.gpu
@pytest.mark.parametrize("m,n", [(1, 1), (45, 70), (64, 128), (100, 3)])
def test_masked_copy2d_on_gpu(m, n):
    gen = torch.Generator().manual_seed(1000 * m + n)
    src_full = torch.randn(m, n + 9, generator=gen).half().cuda()
    src = src_full[:, :n]  # row stride n + 9: a strided view
    dst_full = torch.full((m + 5, n + 7), float("nan"), dtype=torch.float16, device="cuda")
    bm, bn = 32, 64
    grid = (-(-m // bm), -(-n // bn))
    masked_copy2d[grid](src, dst_full, m, n, src.stride(0), dst_full.stride(0), BM=bm, BN=bn)
    torch.cuda.synchronize()
    assert torch.equal(dst_full[:m, :n], src)
    untouched = torch.ones_like(dst_full, dtype=torch.bool)
    untouched[:m, :n] = False
    assert torch.isnan(dst_full[untouched]).all(), "masked-off elements were written"
