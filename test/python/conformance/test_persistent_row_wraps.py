"""Tutorial 09's persistent matmul with a 2:4 A wraps its rows (`tl.where(offs_am < M, offs_am, 0)`)
and stores under `offs_cm < M`, where `offs_cm` comes from a second `_compute_pid` call on a
counter `tile_id_c` it carries beside the loop (issue 29: once a false refusal). The row check
(analysis/value_equality.py) proves the counter is the loop's tile id; these tests hold it to
that: the tutorial's form is accepted and correct on ragged sizes, and counters that are NOT the
tile id (one step behind, another step) are still refused."""

from __future__ import annotations

import pytest
import torch

import sparsecc
import sparsecc.language as tl
from sparsecc.frontend.errors import CompilationError


@sparsecc.jit
def _pid(tile_id, num_pid_in_group, num_pid_m, GROUP_SIZE_M: tl.constexpr):
    group_id = tile_id // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    return first_pid_m + (tile_id % group_size_m), (tile_id % num_pid_in_group) // group_size_m


@sparsecc.jit
def persistent(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
               BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP_SIZE_M: tl.constexpr,
               NUM_SMS: tl.constexpr, C_START: tl.constexpr, C_STEP: tl.constexpr):
    start_pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BM)
    num_pid_n = tl.cdiv(N, BN)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    tile_id_c = start_pid - C_START  # the tutorial: NUM_SMS (one step before the first tile)
    for tile_id in tl.range(start_pid, num_pid_m * num_pid_n, NUM_SMS):
        pid_m, pid_n = _pid(tile_id, num_pid_in_group, num_pid_m, GROUP_SIZE_M)
        offs_am = pid_m * BM + tl.arange(0, BM)
        offs_am = tl.where(offs_am < M, offs_am, 0)
        offs_bn = pid_n * BN + tl.arange(0, BN)
        offs_bn = tl.where(offs_bn < N, offs_bn, 0)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for ki in range(tl.cdiv(K, BK)):
            offs_k = ki * BK + tl.arange(0, BK)
            a = tl.load(a_ptr + offs_am[:, None] * stride_am + offs_k[None, :], mask=offs_k[None, :] < K, other=0.0)
            b = tl.load(b_ptr + offs_k[:, None] * stride_bk + offs_bn[None, :], mask=offs_k[:, None] < K, other=0.0)
            acc = tl.dot(a, b, acc)
        tile_id_c += C_STEP  # the tutorial: NUM_SMS
        pid_m, pid_n = _pid(tile_id_c, num_pid_in_group, num_pid_m, GROUP_SIZE_M)
        offs_cm = pid_m * BM + tl.arange(0, BM)
        offs_cn = pid_n * BN + tl.arange(0, BN)
        tl.store(c_ptr + offs_cm[:, None] * stride_cm + offs_cn[None, :], acc.to(tl.float16),
                 mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


SIG = {"a_ptr": "*fp16:NV24", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32",
       "stride_am": "i32", "stride_bk": "i32", "stride_cm": "i32"}
BLOCKS = {"BM": 32, "BN": 32, "BK": 32, "GROUP_SIZE_M": 4, "NUM_SMS": 3}


def _run(device: str, m: int = 83, n: int = 70, k: int = 64) -> None:
    g = torch.Generator().manual_seed(m)
    dense = sparsecc.prune_2to4(torch.randn(m, k, generator=g).half()).to(device)
    b = torch.randn(k, n, generator=g).half().to(device)
    c = torch.full((m, n), float("nan"), dtype=torch.float16, device=device)
    a = sparsecc.compress(dense)
    tiles = -(-m // 32) * -(-n // 32)
    persistent[(min(3, tiles),)](a, b, c, m, n, k, a.stride(0), b.stride(0), c.stride(0), **BLOCKS, C_START=3,
                                 C_STEP=3)
    torch.testing.assert_close(c.float(), dense.float() @ b.float(), rtol=1e-2, atol=1e-2)


def test_the_tutorials_counter_is_the_tile_id(monkeypatch):
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    _run("cpu")


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_the_tutorials_counter_compiles(target):
    ck = sparsecc.compile(persistent, SIG, {**BLOCKS, "C_START": 3, "C_STEP": 3}, target=target)
    assert isinstance(ck.asm["cubin"], bytes)


@pytest.mark.parametrize("start, step", [(0, 3), (3, 6), (6, 3)], ids=["one-step-ahead", "another-step",
                                                                        "one-step-behind"])
def test_a_counter_that_is_not_the_tile_id_is_still_refused(start, step):
    """The stored rows are then another tile's: a row past M of the loaded tile may be stored."""
    with pytest.raises(CompilationError, match=r"rows of sparse pointers wrapped with tl.where\(rows < 'M', rows, 0\)"):
        sparsecc.compile(persistent, SIG, {**BLOCKS, "C_START": start, "C_STEP": step})


@pytest.mark.gpu
def test_the_tutorials_counter_on_the_gpu():
    _run("cuda", m=1000, n=520, k=256)
