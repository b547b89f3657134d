"""A GEMM that wraps its tile indices with `% M` / `% N` instead of masking them (FlagGems' `mm`
style: 1-D grid with a group swizzle, an i64 program id, unmasked loads in a K loop peeled at
the last whole block, the store masked by `(rm < M)[:, None] & (rn < N)[None, :]`) with a 2:4
operand (issue 29: once refused, "rows of sparse pointers wrapped with % the bound").

Two things were missing: the bound of a widened wrap (`rn % extsi(splat(N))`) was not seen to
be `N` (so `N: i32:16` did not help), and the store-mask proof did not read the i64 index nor
the `(rn < N)[None, :]` form. A ragged N or M is now accepted when the wrapped rows are never
stored, and is correct on the interpreter; a store that does not mask them is still refused,
naming the bound and the `i32:16` way out."""

from __future__ import annotations

import pytest
import torch

import sparsecc
import sparsecc.language as tl
from sparsecc.frontend.errors import CompilationError


@sparsecc.jit
def wrapped_mm(a_ptr, b_ptr, c_ptr, M, N, K, s_am, s_ak, s_bk, s_bn, s_cm, s_cn,
               BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr,
               WIDE: tl.constexpr, MASK_AFTER_EXPAND: tl.constexpr, MASK_N: tl.constexpr):
    pid = tl.program_id(0)
    if WIDE:
        pid = pid.to(tl.int64)
    tiles_m = tl.cdiv(M, BM)
    tiles_n = tl.cdiv(N, BN)
    per_group = GROUP * tiles_n
    first_m = (pid // per_group) * GROUP
    group_rows = min(tiles_m - first_m, GROUP)
    pid_m = first_m + pid % group_rows
    pid_n = (pid % per_group) // group_rows
    rows = (pid_m * BM + tl.arange(0, BM)) % M
    cols = (pid_n * BN + tl.arange(0, BN)) % N
    last_full = tl.cdiv(K, BK) * BK - BK
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, last_full, BK):
        ks = k0 + tl.arange(0, BK)
        a = tl.load(a_ptr + rows[:, None] * s_am + ks[None, :] * s_ak)
        b = tl.load(b_ptr + ks[:, None] * s_bk + cols[None, :] * s_bn)
        acc += tl.dot(a, b)
    ks = last_full + tl.arange(0, BK)
    a = tl.load(a_ptr + rows[:, None] * s_am + ks[None, :] * s_ak, mask=ks[None, :] < K, other=0.0)
    b = tl.load(b_ptr + ks[:, None] * s_bk + cols[None, :] * s_bn, mask=ks[:, None] < K, other=0.0)
    acc += tl.dot(a, b)
    # the indices again, unwrapped, for the store
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    if MASK_AFTER_EXPAND:
        keep = (rm[:, None] < M) & (rn[None, :] < N)
    else:
        keep = (rm < M)[:, None] & (rn < N)[None, :]
    if not MASK_N:  # columns past N are stored, where a wrapped column's garbage would land
        keep = (rm < M)[:, None] & (rn < N + BN)[None, :]
    tl.store(c_ptr + rm[:, None] * s_cm + rn[None, :] * s_cn, acc.to(c_ptr.dtype.element_ty), mask=keep)


BLOCKS = {"BM": 32, "BN": 32, "BK": 32, "GROUP": 4}


def _run(m: int, n: int, k: int, sparse: str, dtype: torch.dtype, device: str, wide: bool = True,
         after_expand: bool = False) -> None:
    g = torch.Generator().manual_seed(7 * m + 3 * n + k)
    x = torch.randn(m, k, generator=g).to(dtype)
    w = torch.randn(n, k, generator=g).to(dtype)
    if sparse == "A":
        x = sparsecc.prune_2to4(x)
    else:
        w = sparsecc.prune_2to4(w)
    ref = x.float() @ w.float().T
    xa = sparsecc.compress(x.to(device)) if sparse == "A" else x.to(device)
    wb = sparsecc.compress(w.to(device)) if sparse == "B" else w.to(device)
    c = torch.full((m, n), float("nan"), dtype=dtype, device=device)
    # B = W.T (K x N): stride_bk = 1, stride_bn = K
    grid = (-(-m // 32) * -(-n // 32),)
    wrapped_mm[grid](xa, wb, c, m, n, k, k, 1, 1, k, n, 1, **BLOCKS, WIDE=wide, MASK_AFTER_EXPAND=after_expand,
                     MASK_N=True)
    assert torch.isfinite(c.float()).all(), "some outputs were never written"
    tol = 1e-2 if dtype == torch.float16 else 3e-2
    torch.testing.assert_close(c.float().cpu(), ref, rtol=tol, atol=tol * ref.abs().max().item())


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("m, n, k", [(45, 80, 96), (45, 70, 96), (64, 17, 128), (33, 100, 64)],
                         ids=["n80", "n70", "n17", "n100"])
def test_sparse_b_wrapped_columns_on_the_interpreter(m, n, k, dtype, monkeypatch):
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    _run(m, n, k, "B", dtype, "cpu")


@pytest.mark.parametrize("wide", [True, False], ids=["i64", "i32"])
@pytest.mark.parametrize("after_expand", [True, False], ids=["offs[:,None]<N", "(offs<N)[:,None]"])
def test_both_index_widths_and_mask_forms(wide, after_expand, monkeypatch):
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    _run(40, 70, 96, "B", torch.float16, "cpu", wide=wide, after_expand=after_expand)


@pytest.mark.parametrize("m", [83, 96])
def test_sparse_a_wrapped_rows_on_the_interpreter(m, monkeypatch):
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    _run(m, 72, 96, "A", torch.float16, "cpu")


def _sig(sparse: str, n: str) -> dict[str, str]:
    return {"a_ptr": "*fp16:NV24" if sparse == "A" else "*fp16", "b_ptr": "*fp16:NV24" if sparse == "B" else "*fp16",
            "c_ptr": "*fp16", "M": "i32", "N": n, "K": "i32:16", "s_am": "i32:16", "s_ak": "i32:1",
            "s_bk": "i32:1", "s_bn": "i32:16", "s_cm": "i32", "s_cn": "i32:1"}


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("n", ["i32", "i32:16"], ids=["ragged-N", "N-multiple-of-16"])
@pytest.mark.parametrize("wide", [True, False], ids=["i64", "i32"])
def test_sparse_b_wrapped_columns_assemble(target, n, wide):
    ck = sparsecc.compile(wrapped_mm, _sig("B", n), {**BLOCKS, "WIDE": wide, "MASK_AFTER_EXPAND": False,
                                                     "MASK_N": True}, target=target)
    assert isinstance(ck.asm["cubin"], bytes) and ck.asm["cubin"]
    assert "mma.sp" in ck.asm["ptx"] or "wgmma" in ck.asm["ptx"]


@pytest.mark.parametrize("wide", [True, False], ids=["i64", "i32"])
def test_stored_wrapped_columns_are_still_refused(wide):
    """Columns past N are stored here, and with N ragged their metadata is another column's."""
    consts = {**BLOCKS, "WIDE": wide, "MASK_AFTER_EXPAND": False, "MASK_N": False}
    with pytest.raises(CompilationError, match=r"wrapped with % 'N'.*offs_cn\[None, :\] < N` for a 2:4 B.*"
                                               r"launch with 'N' a multiple of 16.*'i32:16'") as info:
        sparsecc.compile(wrapped_mm, _sig("B", "i32"), consts)
    assert "b = tl.load(b_ptr + ks[:, None] * s_bk + cols[None, :] * s_bn" in str(info.value)
    # the way out it offers works: N a multiple of 16 wraps whole metadata groups
    sparsecc.compile(wrapped_mm, _sig("B", "i32:16"), consts)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("sparse, m, n, k", [("B", 300, 250, 256), ("B", 128, 512, 192), ("A", 257, 160, 128)])
def test_wrapped_indices_on_the_gpu(sparse, m, n, k, dtype):
    _run(m, n, k, sparse, dtype, "cuda")
