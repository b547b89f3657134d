"""Kernel arguments and tensors of bool, uint8/16/32/64 and fp64 (issue 29): each dtype on the
interpreter against torch (random data with the edge values: the unsigned maxima, values past
the signed range, NaN), assembled for sm_80 and sm_90a, and on the GPU (marked gpu) against
torch and against the interpreter."""

from __future__ import annotations

import pytest
import torch
from kernels import bools

import sparsecc
import sparsecc.language as tl
from sparsecc.frontend.errors import CompilationError


@sparsecc.jit
def select_add(X, Y, Out, s, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(X + offs, mask=m)
    y = tl.load(Y + offs, mask=m)
    tl.store(Out + offs, tl.where(x > y, x - y, y + s), mask=m)


@sparsecc.jit
def doubles(X, Y, Out, Narrow, Ints, Total, s, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(X + offs, mask=m, other=0.0)
    y = tl.load(Y + offs, mask=m, other=1.0)
    r = tl.where(x > y, x * y + s, x / y - s)
    r = tl.maximum(r, -3.0) + tl.sqrt(tl.abs(x)) + tl.floor(y)
    tl.store(Out + offs, r, mask=m)
    tl.store(Narrow + offs, x.to(tl.float32), mask=m)
    tl.store(Ints + offs, x.to(tl.int32) + (x * 0.5).to(tl.float32).to(tl.float64).to(tl.int32), mask=m)
    tl.atomic_add(Total, tl.sum(tl.where(m, x * x, 0.0), axis=0))


UNSIGNED = [torch.uint8, torch.uint16, torch.uint32, torch.uint64]


def _unsigned_inputs(dtype: torch.dtype, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    bits = torch.iinfo(dtype).bits
    g = torch.Generator().manual_seed(bits)
    top = 2**bits - 1
    edges = [top, 2 ** (bits - 1), 2 ** (bits - 1) - 1, 0, 1, top - 1]
    xs = edges + [int(v) for v in torch.randint(0, 2**62, (n - len(edges),), generator=g)]
    ys = [1, 2 ** (bits - 1) + 1, top, top, 0, top] + [int(v) for v in torch.randint(0, 2**62, (n - 6,), generator=g)]
    xs, ys = [v % 2**bits for v in xs], [v % 2**bits for v in ys]
    return xs, ys


def _check_unsigned(dtype: torch.dtype, device: str, n: int = 300) -> None:
    bits = torch.iinfo(dtype).bits
    xs, ys = _unsigned_inputs(dtype, n)
    s = 7
    ref = [(x - y) % 2**bits if x > y else (y + s) % 2**bits for x, y in zip(xs, ys)]

    sdt = getattr(torch, f"int{bits}")  # the signed dtype of the same bits

    def tensor(vals: list[int]) -> torch.Tensor:  # through the signed bits: torch cannot build big uint64s
        return torch.tensor([v - 2**bits if v >= 2 ** (bits - 1) else v for v in vals], dtype=sdt).view(dtype).to(device)

    out = torch.zeros(n, dtype=dtype, device=device)
    select_add[(triton_cdiv(n, 128),)](tensor(xs), tensor(ys), out, s, n, BLOCK=128)
    signed = out.cpu().view(sdt).tolist()
    assert [v % 2**bits for v in signed] == ref, dtype


def _check_bools(device: str, n: int = 300) -> None:
    g = torch.Generator().manual_seed(5)
    x, y = torch.rand(n, generator=g) > 0.5, torch.rand(n, generator=g) > 0.3
    a = torch.rand(n, generator=g)
    outs = [torch.zeros(n, dtype=torch.bool, device=device), torch.full((n,), float("nan"), device=device),
            torch.ones(n, dtype=torch.bool, device=device)]
    for flag in (False, True):
        bools[(triton_cdiv(n, 128),)](x.to(device), y.to(device), a.to(device), outs[0], outs[1], outs[2], flag, n,
                                       BLOCK=128)
        assert torch.equal(outs[0].cpu(), (x & y) | flag)
        assert torch.equal(outs[1].cpu(), torch.where(x, a, -a))
        assert torch.equal(outs[2].cpu(), a < 0.5)
        assert outs[0].cpu().view(torch.uint8).max() <= 1  # stored as 0/1 bytes, as torch.bool is


def _check_doubles(device: str, n: int = 300) -> None:
    g = torch.Generator().manual_seed(6)
    x = torch.randn(n, generator=g, dtype=torch.float64) * 4
    y = torch.randn(n, generator=g, dtype=torch.float64) * 4 + 1e-9  # values f32 cannot hold exactly
    x[:3] = torch.tensor([1.0 + 2**-40, -2.5, 123456789.123456789], dtype=torch.float64)
    s = 0.25
    out = torch.full((n,), float("nan"), dtype=torch.float64, device=device)
    narrow = torch.full((n,), float("nan"), device=device)
    ints = torch.full((n,), -7, dtype=torch.int32, device=device)
    total = torch.zeros(1, dtype=torch.float64, device=device)
    doubles[(triton_cdiv(n, 128),)](x.to(device), y.to(device), out, narrow, ints, total, s, n, BLOCK=128)
    sf = torch.tensor(s, dtype=torch.float32).double()  # a Python float argument is fp32, as in Triton
    r = torch.where(x > y, x * y + sf, x / y - sf)
    r = torch.maximum(r, torch.tensor(-3.0, dtype=torch.float64)) + x.abs().sqrt() + y.floor()
    torch.testing.assert_close(out.cpu(), r, rtol=1e-14, atol=1e-14)
    assert out[0].item() != float(torch.tensor(out[0].item()).float())  # really computed in fp64
    assert torch.equal(narrow.cpu(), x.float())
    assert torch.equal(ints.cpu(), x.to(torch.int32) + (x * 0.5).float().double().to(torch.int32))
    torch.testing.assert_close(total.cpu(), (x * x).sum().reshape(1), rtol=1e-12, atol=0)


def triton_cdiv(a: int, b: int) -> int:
    return (a + b - 1) // b


@pytest.mark.parametrize("dtype", UNSIGNED, ids=lambda d: str(d)[6:])
def test_unsigned_tensors_on_the_interpreter(dtype, monkeypatch):
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    _check_unsigned(dtype, "cpu")


def test_bool_tensors_and_arguments_on_the_interpreter(monkeypatch):
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    _check_bools("cpu")


def test_fp64_tensors_on_the_interpreter(monkeypatch):
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    _check_doubles("cpu")


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_every_dtype_assembles(target):
    for u in ("u8", "u16", "u32", "u64"):
        ck = sparsecc.compile(select_add, {"X": f"*{u}", "Y": f"*{u}", "Out": f"*{u}", "s": "i32", "n": "i32"},
                              {"BLOCK": 128}, target=target)
        assert isinstance(ck.asm["cubin"], bytes), u
    ck = sparsecc.compile(bools, {"X": "*i1", "Y": "*i1", "A": "*fp32", "And": "*i1", "Pick": "*fp32",
                                  "Less": "*i1", "flag": "i1", "n": "i32"}, {"BLOCK": 128}, target=target)
    ptx = ck.asm["ptx"]
    assert "ld.global.u8" in ptx or "ld.global.b8" in ptx or "ld.global.s8" in ptx, "bools load as bytes"
    assert isinstance(ck.asm["cubin"], bytes)
    ck = sparsecc.compile(doubles, {"X": "*fp64", "Y": "*fp64", "Out": "*fp64", "Narrow": "*fp32", "Ints": "*i32",
                                    "Total": "*fp64", "s": "fp32", "n": "i32"}, {"BLOCK": 128}, target=target)
    ptx = ck.asm["ptx"]
    assert "div.rn.f64" in ptx and "sqrt.rn.f64" in ptx and "atom" in ptx and ".add.f64" in ptx
    assert isinstance(ck.asm["cubin"], bytes)


def test_fp64_without_a_gpu_form_is_a_located_error():
    @sparsecc.jit
    def exp64(X, n: tl.constexpr):
        x = tl.load(X + tl.arange(0, n))
        tl.store(X + tl.arange(0, n), tl.exp(x))

    with pytest.raises(CompilationError, match=r"math.exp on f64: the GPU \(PTX\) lowering computes math in f32") as e:
        sparsecc.compile(exp64, {"X": "*fp64"}, {"n": 32}, target="sm_90a")
    assert "test_argument_dtypes.py:" in str(e.value)

    @sparsecc.jit
    def dot64(X, n: tl.constexpr):
        x = tl.load(X + tl.arange(0, n)[:, None] * n + tl.arange(0, n)[None, :])
        tl.store(X + tl.arange(0, n)[:, None] * n + tl.arange(0, n)[None, :], tl.dot(x, x))

    with pytest.raises(CompilationError, match=r"tl.dot operands must be .*got fp64"):
        sparsecc.compile(dot64, {"X": "*fp64"}, {"n": 32}, target="sm_90a")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", UNSIGNED, ids=lambda d: str(d)[6:])
def test_unsigned_tensors_on_the_gpu(dtype):
    _check_unsigned(dtype, "cuda", 3000)


@pytest.mark.gpu
def test_bool_tensors_and_arguments_on_the_gpu():
    _check_bools("cuda", 3000)


@pytest.mark.gpu
def test_fp64_tensors_on_the_gpu():
    _check_doubles("cuda", 3000)
