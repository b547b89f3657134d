"""`tl.map_elementwise` (Triton 3.5+): a scalar @jit function with per-element control flow mapped
over tensors, with `pack`, several results, broadcast and scalar arguments; on the interpreter
against torch, assembled for sm_80 and sm_90a, on the GPU (marked gpu) against torch."""

from __future__ import annotations

import pytest
import torch

import sparsecc
import sparsecc.language as tl
from sparsecc.frontend.errors import CompilationError


@sparsecc.jit
def compare(x, y):
    if x < y:
        return -1
    elif x == y:
        return 0
    else:
        return 1


@sparsecc.jit
def divmod2(a0, a1, b0, b1):
    return a0 // b0, a1 // b1, a0 % b0, a1 % b1


@sparsecc.jit
def selu(x, alpha):
    if x > 0:
        return x
    else:
        return alpha * (tl.exp(x) - 1)


@sparsecc.jit
def ints(X, Y, Z, Q, R, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(X + offs, mask=m, other=1)
    y = tl.load(Y + offs, mask=m, other=1)
    tl.store(Z + offs, tl.map_elementwise(compare, x, y), mask=m)
    q, r = tl.map_elementwise(divmod2, x, y, pack=2)
    tl.store(Q + offs, q, mask=m)
    tl.store(R + offs, r, mask=m)


@sparsecc.jit
def floats(X, Out, Row, alpha, n, BLOCK: tl.constexpr):
    """A 2-D tile, a scalar argument and a row broadcast against it."""
    rows = tl.arange(0, 4)
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = (offs < n)[None, :] & (rows < 4)[:, None]
    x = tl.load(X + rows[:, None] * n + offs[None, :], mask=m, other=0.0)
    tl.store(Out + rows[:, None] * n + offs[None, :], tl.map_elementwise(selu, x, alpha), mask=m)
    row = tl.load(X + offs, mask=offs < n, other=0.0)
    tl.store(Row + rows[:, None] * n + offs[None, :], tl.map_elementwise(compare, x, row[None, :]), mask=m)


def _check_ints(device: str, n: int = 300) -> None:
    g = torch.Generator().manual_seed(n)
    x = torch.randint(-50, 50, (n,), generator=g, dtype=torch.int32)
    y = torch.randint(1, 9, (n,), generator=g, dtype=torch.int32) * torch.where(torch.rand(n, generator=g) > 0.5, 1, -1).int()
    y[:20] = x[:20]  # ties
    z, q, r = [torch.full((n,), 99, dtype=torch.int32, device=device) for _ in range(3)]
    ints[(triton_cdiv(n, 128),)](x.to(device), y.to(device), z, q, r, n, BLOCK=128)
    assert torch.equal(z.cpu(), (x > y).int() - (x < y).int())
    assert torch.equal(q.cpu(), torch.div(x, y, rounding_mode="trunc"))  # C division, as Triton's //
    assert torch.equal(r.cpu(), torch.fmod(x, y))


def _check_floats(device: str, n: int = 200) -> None:
    x = torch.randn(4, n, generator=torch.Generator().manual_seed(n))
    out = torch.full((4, n), float("nan"), device=device)
    row = torch.full((4, n), 99, dtype=torch.int32, device=device)
    floats[(triton_cdiv(n, 64),)](x.to(device), out, row, 1.5, n, BLOCK=64)
    torch.testing.assert_close(out.cpu(), torch.where(x > 0, x, 1.5 * (torch.exp(x) - 1)), rtol=1e-5, atol=1e-6)
    assert torch.equal(row.cpu(), (x > x[0]).int() - (x < x[0]).int())


def triton_cdiv(a: int, b: int) -> int:
    return (a + b - 1) // b


@pytest.mark.parametrize("check", [_check_ints, _check_floats])
def test_map_elementwise_on_the_interpreter(check, monkeypatch):
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    check("cpu")


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_map_elementwise_assembles(target):
    ck = sparsecc.compile(ints, {"X": "*i32", "Y": "*i32", "Z": "*i32", "Q": "*i32", "R": "*i32", "n": "i32"},
                          {"BLOCK": 128}, target=target)
    assert isinstance(ck.asm["cubin"], bytes)
    assert "tt.map_elementwise" in ck.asm["ttir"]
    ck = sparsecc.compile(floats, {"X": "*fp32", "Out": "*fp32", "Row": "*i32", "alpha": "fp32", "n": "i32"},
                          {"BLOCK": 64}, target=target)
    assert isinstance(ck.asm["cubin"], bytes)


def test_map_elementwise_errors_name_the_problem():
    @sparsecc.jit
    def not_jit(X, n: tl.constexpr):
        x = tl.load(X + tl.arange(0, n))
        tl.store(X + tl.arange(0, n), tl.map_elementwise(abs, x))

    with pytest.raises(CompilationError, match=r"tl.map_elementwise's scalar_fn must be a @sparsecc.jit function") as e:
        sparsecc.compile(not_jit, {"X": "*fp32"}, {"n": 16})
    assert "test_map_elementwise.py:" in str(e.value)

    @sparsecc.jit
    def odd_pack(X, n: tl.constexpr):
        x = tl.load(X + tl.arange(0, n))
        q, r = tl.map_elementwise(divmod2, x, x, pack=3)
        tl.store(X + tl.arange(0, n), q + r)

    with pytest.raises(CompilationError, match=r"pack=3 does not divide the 16 elements"):
        sparsecc.compile(odd_pack, {"X": "*i32"}, {"n": 16})


@pytest.mark.gpu
@pytest.mark.parametrize("check", [_check_ints, _check_floats])
def test_map_elementwise_on_the_gpu(check):
    check("cuda")
