"""tl.atomic_add: a split-K sparse GEMM (each program adds its K slice's partial product into a
zeroed fp32 output) and a histogram of int32 counts, on the interpreter, assembled, on the GPU."""

from __future__ import annotations

import pytest
import torch

import sparsecc
import sparsecc.language as tl


@sparsecc.jit
def split_k_gemm(C, A, B, M, N, K, stride_am, stride_bk, stride_cm,
                 BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, SPLIT_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    pid_k = tl.program_id(2)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = pid_k * BLOCK_K + tl.arange(0, BLOCK_K)
    a_ptrs = A + rm[:, None] * stride_am + rk[None, :]
    b_ptrs = B + rk[:, None] * stride_bk + rn[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K * SPLIT_K):
        a = tl.load(a_ptrs, mask=(rm[:, None] < M) & (rk[None, :] + k < K), other=0.0)
        b = tl.load(b_ptrs, mask=(rk[:, None] + k < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * SPLIT_K
        b_ptrs += BLOCK_K * SPLIT_K * stride_bk
    tl.atomic_add(C + rm[:, None] * stride_cm + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@sparsecc.jit
def histogram(X, H, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(X + offs, mask=offs < n, other=0)
    tl.atomic_add(H + x, 1, mask=offs < n)


def _split_k(device: str, m: int, n: int, k: int, tiles=(32, 32, 32), split=3, warps=4) -> None:
    g = torch.Generator().manual_seed(m + k)
    dense = sparsecc.prune_2to4(torch.randn(m, k, generator=g).half()).to(device)
    b = torch.randn(k, n, generator=g).half().to(device)
    c = torch.zeros(m, n, device=device)
    bm, bn, bk = tiles
    grid = ((m + bm - 1) // bm, (n + bn - 1) // bn, split)
    a = sparsecc.compress(dense)
    split_k_gemm[grid](c, a, b, m, n, k, a.stride(0), b.stride(0), c.stride(0), BLOCK_M=bm, BLOCK_N=bn,
                       BLOCK_K=bk, SPLIT_K=split, num_warps=warps)
    ref = dense.float() @ b.float()
    torch.testing.assert_close(c.cpu(), ref.cpu(), rtol=1e-2, atol=1e-2 * ref.abs().max().item())


def _histogram(device: str) -> None:
    x = torch.randint(0, 37, (5000,), dtype=torch.int32, device=device)
    h = torch.zeros(37, dtype=torch.int32, device=device)
    histogram[((5000 + 255) // 256,)](x, h, 5000, BLOCK=256)
    assert torch.equal(h.cpu(), torch.bincount(x.cpu().long(), minlength=37).int())


def test_split_k_on_the_interpreter(monkeypatch):
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    _split_k("cpu", 40, 24, 192)


def test_histogram_on_the_interpreter(monkeypatch):
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    _histogram("cpu")


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_atomics_assemble(target):
    sig = {"C": "*fp32", "A": "*fp16:NV24", "B": "*fp16", "M": "i32", "N": "i32", "K": "i32",
           "stride_am": "i32", "stride_bk": "i32", "stride_cm": "i32"}
    ck = sparsecc.compile(split_k_gemm, sig, {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 64, "SPLIT_K": 4},
                          target=target)
    assert "atom.acq_rel.gpu.global.add.f32" in ck.asm["ptx"] and isinstance(ck.asm["cubin"], bytes)
    ck = sparsecc.compile(histogram, {"X": "*i32", "H": "*i32", "n": "i32"}, {"BLOCK": 256}, target=target)
    assert "atom.acq_rel.gpu.global.add.s32" in ck.asm["ptx"]


def test_atomic_add_errors_name_the_problem():
    from sparsecc.frontend.errors import CompilationError

    with pytest.raises(CompilationError, match=r"tl.atomic_add supports fp32, i32, i64, fp16, bf16, fp64 memory, got i8"):
        sparsecc.compile(histogram, {"X": "*i32", "H": "*i8", "n": "i32"}, {"BLOCK": 256})


@pytest.mark.gpu
def test_split_k_and_histogram_on_the_gpu():
    _split_k("cuda", 300, 136, 1024, tiles=(64, 64, 64), split=4)
    _split_k("cuda", 16, 4096, 4096, tiles=(64, 128, 64), split=8, warps=4)
    _histogram("cuda")


@sparsecc.jit
def tickets(COUNTER, SEEN, FIRST, BLOCK: tl.constexpr):
    """Each program takes a ticket; every thread writes the one it saw (a block of SEEN), and
    the program stores it once more as a scalar (FIRST[pid])."""
    pid = tl.program_id(0)
    ticket = tl.atomic_add(COUNTER, 1, sem="acq_rel")
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    tl.store(SEEN + offs, tl.zeros((BLOCK,), dtype=tl.int32) + ticket)
    tl.store(FIRST + pid, ticket)


def _tickets(device: str, programs: int = 300, block: int = 256) -> None:
    counter = torch.zeros(1, dtype=torch.int32, device=device)
    seen = torch.full((programs * block,), -1, dtype=torch.int32, device=device)
    first = torch.full((programs,), -1, dtype=torch.int32, device=device)
    tickets[(programs,)](counter, seen, first, BLOCK=block, num_warps=4)
    seen, first = seen.cpu().view(programs, block), first.cpu()
    assert counter.item() == programs
    assert torch.equal(seen, first[:, None].expand(-1, block)), "a thread saw another ticket than thread 0"
    assert sorted(first.tolist()) == list(range(programs)), "tickets must be 0..P-1, each once"


def test_tickets_on_the_interpreter(monkeypatch):
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    _tickets("cpu", programs=7, block=32)


def test_scalar_atomic_and_store_assemble():
    ck = sparsecc.compile(tickets, {"COUNTER": "*i32", "SEEN": "*i32", "FIRST": "*i32"}, {"BLOCK": 256},
                          target="sm_90a")
    ptx = ck.asm["ptx"]
    assert "atom.acq_rel.gpu.global.add.s32" in ptx and "st.shared.b32" in ptx
    assert isinstance(ck.asm["cubin"], bytes)


@pytest.mark.gpu
def test_tickets_on_the_gpu():
    if not torch.cuda.is_available():
        pytest.skip("no GPU")
    _tickets("cuda")


def test_atomic_sem_is_checked():
    @sparsecc.jit
    def bad(C):
        tl.atomic_add(C, 1, sem="seq_cst")

    with pytest.raises(sparsecc.CompilationError, match="sem='seq_cst' is not one of"):
        sparsecc.compile(bad, {"C": "*i32"}, {}, target="sm_80")
