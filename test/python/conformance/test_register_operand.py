"""A dot operand computed in registers (not a plain load) reaches the tensor cores through a
convert to the dot fragment: dense A scaled before a dense dot, on the interpreter and the GPU
(mma and wgmma tiles), against torch."""

from __future__ import annotations

import pytest
import torch

import sparsecc
import sparsecc.language as tl


@sparsecc.jit
def scaled_a_dot(D, A, B, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    a_ptr = tl.make_block_ptr(A, shape=(M, K), strides=(K, 1), offsets=(pid_m * BLOCK_M, 0),
                              block_shape=(BLOCK_M, BLOCK_K), order=(1, 0))
    b_ptr = tl.make_block_ptr(B, shape=(K, N), strides=(N, 1), offsets=(0, pid_n * BLOCK_N),
                              block_shape=(BLOCK_K, BLOCK_N), order=(1, 0))
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for _ in range(0, tl.cdiv(K, BLOCK_K)):
        a = (tl.load(a_ptr, boundary_check=(0, 1), padding_option="zero") * 2.0).to(tl.float16)
        b = tl.load(b_ptr, boundary_check=(0, 1), padding_option="zero")
        acc = tl.dot(a, b, acc)
        a_ptr = tl.advance(a_ptr, (0, BLOCK_K))
        b_ptr = tl.advance(b_ptr, (BLOCK_K, 0))
    d_ptr = tl.make_block_ptr(D, shape=(M, N), strides=(N, 1), offsets=(pid_m * BLOCK_M, pid_n * BLOCK_N),
                              block_shape=(BLOCK_M, BLOCK_N), order=(1, 0))
    tl.store(d_ptr, acc.to(tl.float16), boundary_check=(0, 1))


def _run(device: str, m: int, n: int, k: int, tile: tuple[int, int, int]) -> None:
    g = torch.Generator().manual_seed(m + n + k)
    a = torch.randn(m, k, generator=g).half().to(device)
    b = torch.randn(k, n, generator=g).half().to(device)
    d = torch.full((m, n), float("nan"), dtype=torch.float16, device=device)
    bm, bn, bk = tile
    scaled_a_dot[((m + bm - 1) // bm, (n + bn - 1) // bn)](d, a, b, m, n, k, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk)
    ref = (2 * a.float()) @ b.float()
    assert torch.isfinite(d).all()
    torch.testing.assert_close(d.float().cpu(), ref.cpu(), rtol=1e-2, atol=1e-2 * ref.abs().max().item())


def test_register_operand_on_the_interpreter(monkeypatch):
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    _run("cpu", 40, 24, 96, (32, 16, 32))


@pytest.mark.gpu
@pytest.mark.parametrize("m, n, k, tile", [(100, 72, 256, (32, 32, 64)), (200, 136, 512, (64, 64, 64)),
                                           (128, 128, 256, (128, 128, 64))])
def test_register_operand_on_the_gpu(m, n, k, tile):
    _run("cuda", m, n, k, tile)
