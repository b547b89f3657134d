"""Triton's math beyond tl.math's unary functions: erf, div_rn, sqrt_rn, fdiv, umulhi, float
`%` (C's fmod), fp16/bf16 `/`, libdevice (pow, tanh, fast_expf): the interpreter against torch
on random data, the PTX assembled for sm_80 and sm_90a, the same kernels on the GPU."""

from __future__ import annotations

import pytest
import torch

import sparsecc
import sparsecc.language as tl
from sparsecc.frontend.errors import CompilationError
from sparsecc.language.extra.cuda import libdevice


@sparsecc.jit
def binary_math(X, Y, Out, n, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(X + offs, mask=m, other=1.0)
    y = tl.load(Y + offs, mask=m, other=1.0)
    if OP == "erf":
        r = tl.erf(x)
    elif OP == "gelu":
        r = 0.5 * x * (1 + tl.erf(x * 0.7071067811865476))
    elif OP == "div_rn":
        r = tl.div_rn(x, y)
    elif OP == "fdiv":
        r = tl.fdiv(x, y, ieee_rounding=True)
    elif OP == "sqrt_rn":
        r = tl.sqrt_rn(tl.abs(x))
    elif OP == "sqrt":
        r = tl.sqrt(tl.abs(x))
    elif OP == "fdiv_fast":
        r = tl.fdiv(x, y) + tl.sigmoid(y)
    elif OP == "mod":
        r = x % y
    elif OP == "div":
        r = x / y
    elif OP == "pow":
        r = libdevice.pow(x, y)
    elif OP == "pow_int":
        r = libdevice.pow(x, 3.0) + libdevice.pow(x, 0.0) + libdevice.pow(tl.abs(x), -0.5)
    else:
        r = libdevice.tanh(x) + libdevice.fast_expf(y) + tl.extra.cuda.libdevice.rsqrt(tl.abs(y) + 0.5)
    tl.store(Out + offs, r, mask=m)


def _pow_ref(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return torch.pow(x.double(), y.double()).float()


REFS = {
    "erf": lambda x, y: torch.erf(x),
    "gelu": lambda x, y: torch.nn.functional.gelu(x),
    "div_rn": lambda x, y: x / y,
    "fdiv": lambda x, y: x / y,
    "sqrt_rn": lambda x, y: x.abs().sqrt(),
    "sqrt": lambda x, y: x.abs().sqrt(),
    "fdiv_fast": lambda x, y: x / y + torch.sigmoid(y),
    "mod": lambda x, y: torch.fmod(x, y),
    "div": lambda x, y: x / y,
    "pow": _pow_ref,
    "pow_int": lambda x, y: x.double() ** 3 + 1 + x.abs().double() ** -0.5,
    "libdevice": lambda x, y: torch.tanh(x) + torch.exp(y) + torch.rsqrt(y.abs() + 0.5),
}
TOL = {torch.float32: 2e-6, torch.float16: 1e-3, torch.bfloat16: 8e-3}


def _inputs(op: str, dtype: torch.dtype, device: str, n: int = 1000) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(n + len(op))
    x = torch.randn(n, generator=g) * 3
    y = torch.randn(n, generator=g) * 2
    y = torch.where(y.abs() < 0.25, torch.full_like(y, 0.5), y)  # no huge quotients
    if op == "pow":
        # negative bases with integer and non-integer exponents, zero bases, zero exponents
        y = torch.where(torch.arange(n) % 3 == 0, y.round(), y)
        x = torch.where(torch.arange(n) % 17 == 0, torch.zeros_like(x), x)
        y = torch.where(torch.arange(n) % 19 == 0, torch.zeros_like(y), y)
    return x.to(dtype).to(device), y.to(dtype).to(device)


def _check(op: str, dtype: torch.dtype, device: str, n: int = 1000) -> None:
    x, y = _inputs(op, dtype, device, n)
    out = torch.full_like(x, float("nan"))
    binary_math[((n + 127) // 128,)](x, y, out, n, OP=op, BLOCK=128)
    ref = REFS[op](x.float().cpu(), y.float().cpu()).float().to(dtype).float()
    tol = TOL[dtype]
    scale = 1.0 if op not in ("pow", "pow_int", "libdevice", "fdiv_fast") else 4.0  # ex2/lg2 approximations
    torch.testing.assert_close(out.float().cpu(), ref, rtol=tol * scale, atol=tol * scale, equal_nan=True)


CASES = [(op, torch.float32) for op in REFS] + [(op, dt) for op in ("erf", "mod", "div", "div_rn", "gelu")
                                                for dt in (torch.float16, torch.bfloat16)]


@pytest.mark.parametrize("op, dtype", CASES, ids=[f"{o}-{str(d)[6:]}" for o, d in CASES])
def test_math_on_the_interpreter(op, dtype, monkeypatch):
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    _check(op, dtype, "cpu", n=300)


def test_float_mod_takes_the_dividends_sign(monkeypatch):
    """C's fmod (Triton's frem), not Python's %: -7.5 % 2 is -1.5, 7.5 % -2 is 1.5."""
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    x = torch.tensor([-7.5, 7.5, -7.5, 7.5, 1.0, -0.0])
    y = torch.tensor([2.0, -2.0, -2.0, 2.0, float("inf"), 3.0])
    out = torch.full_like(x, float("nan"))
    binary_math[(1,)](x, y, out, 6, OP="mod", BLOCK=8)
    assert out.tolist() == [-1.5, 1.5, -1.5, 1.5, 1.0, -0.0]


@sparsecc.jit
def int_math(X, Y, Hi, Q, R, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(X + offs, mask=m, other=1)
    y = tl.load(Y + offs, mask=m, other=1)
    tl.store(Hi + offs, tl.umulhi(x, y), mask=m)
    tl.store(Q + offs, x // y, mask=m)
    tl.store(R + offs, x % y, mask=m)


def _umulhi_ref(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    w = x.element_size() * 8
    out = []
    for a, b in zip(x.tolist(), y.tolist()):
        hi = ((a % 2**w) * (b % 2**w)) >> w
        out.append(hi - 2**w if hi >= 2 ** (w - 1) else hi)
    return torch.tensor(out, dtype=x.dtype)


def _check_ints(dtype: torch.dtype, device: str, n: int = 777) -> None:
    g = torch.Generator().manual_seed(n)
    info = torch.iinfo(dtype)
    x = torch.randint(info.min, info.max, (n,), generator=g, dtype=dtype)
    y = torch.randint(info.min, info.max, (n,), generator=g, dtype=dtype)
    y = torch.where(y == 0, torch.ones_like(y), y)
    y[:50] = torch.randint(-9, 9, (50,), generator=g, dtype=dtype) | 1  # small divisors
    outs = [torch.full_like(x, -7).to(device) for _ in range(3)]
    int_math[((n + 127) // 128,)](x.to(device), y.to(device), *outs, n, BLOCK=128)
    assert torch.equal(outs[0].cpu(), _umulhi_ref(x, y))
    # C semantics, as Triton: // truncates toward zero, % takes the dividend's sign
    assert torch.equal(outs[1].cpu(), torch.div(x, y, rounding_mode="trunc"))
    assert torch.equal(outs[2].cpu(), torch.fmod(x, y))


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64])
def test_umulhi_and_c_integer_division_on_the_interpreter(dtype, monkeypatch):
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    _check_ints(dtype, "cpu", n=300)


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_math_assembles(target):
    for dt in ("fp32", "fp16", "bf16"):
        for op in REFS:
            ck = sparsecc.compile(binary_math, {"X": f"*{dt}", "Y": f"*{dt}", "Out": f"*{dt}", "n": "i32"},
                                  {"OP": op, "BLOCK": 128}, target=target)
            assert isinstance(ck.asm["cubin"], bytes), (op, dt)
    ptx = sparsecc.compile(binary_math, {"X": "*fp16", "Y": "*fp16", "Out": "*fp16", "n": "i32"},
                           {"OP": "div", "BLOCK": 128}, target=target).asm["ptx"]
    assert "div.full.f32" in ptx and "cvt.rn.f16.f32" in ptx  # fp16 '/' in f32, rounded once
    ptx = sparsecc.compile(binary_math, {"X": "*fp32", "Y": "*fp32", "Out": "*fp32", "n": "i32"},
                           {"OP": "mod", "BLOCK": 128}, target=target).asm["ptx"]
    assert "cvt.rzi.f32.f32" in ptx and "fma.rn.f32" in ptx
    for it in ("i32", "i64"):
        ck = sparsecc.compile(int_math, {"X": f"*{it}", "Y": f"*{it}", "Hi": f"*{it}", "Q": f"*{it}",
                                         "R": f"*{it}", "n": "i32"}, {"BLOCK": 128}, target=target)
        assert f"mul.hi.u{it[1:]}" in ck.asm["ptx"] and isinstance(ck.asm["cubin"], bytes)


def _div_sqrt_forms(op: str, dt: str) -> list[str]:
    ptx = sparsecc.compile(binary_math, {"X": f"*{dt}", "Y": f"*{dt}", "Out": f"*{dt}", "n": "i32"},
                           {"OP": op, "BLOCK": 128}, target="sm_90a").asm["ptx"]
    return sorted({ln.split()[0] for ln in ptx.splitlines() if ln.strip().startswith(("div.", "sqrt."))})


def test_division_and_sqrt_lower_as_tritons():
    """Triton 3.9's forms: '/', tl.fdiv and tl.sigmoid divide with div.full.f32 (2 ulp), tl.sqrt is
    sqrt.approx.ftz.f32; tl.div_rn, fdiv(ieee_rounding=True) and tl.sqrt_rn are IEEE. (A precise
    div.rn.f32 is a ~10-instruction subroutine: a softmax row paid it per element.)"""
    assert _div_sqrt_forms("div", "fp32") == ["div.full.f32"]
    assert _div_sqrt_forms("div", "fp16") == ["div.full.f32"]  # in f32, rounded once
    assert _div_sqrt_forms("fdiv_fast", "fp32") == ["div.full.f32"]
    assert _div_sqrt_forms("div_rn", "fp32") == ["div.rn.f32"]
    assert _div_sqrt_forms("fdiv", "fp32") == ["div.rn.f32"]
    assert _div_sqrt_forms("sqrt", "fp32") == ["sqrt.approx.ftz.f32"]
    assert _div_sqrt_forms("sqrt_rn", "fp32") == ["sqrt.rn.f32"]
    assert _div_sqrt_forms("mod", "fp32") == ["div.rn.f32"]  # fmod's quotient stays exact


def test_math_errors_name_the_problem():
    @sparsecc.jit
    def floordiv(X, n: tl.constexpr):
        x = tl.load(X + tl.arange(0, n))
        tl.store(X + tl.arange(0, n), x // 2.0)

    with pytest.raises(CompilationError, match=r"'//' is not defined on floating-point values \(as in Triton\)") as e:
        sparsecc.compile(floordiv, {"X": "*fp32"}, {"n": 16})
    assert "x // 2.0" in str(e.value)

    @sparsecc.jit
    def umulhi_f(X, n: tl.constexpr):
        x = tl.load(X + tl.arange(0, n))
        tl.store(X + tl.arange(0, n), tl.umulhi(x, x))

    with pytest.raises(CompilationError, match="tl.umulhi needs int32 or int64 operands, got tensor<16xf32>"):
        sparsecc.compile(umulhi_f, {"X": "*fp32"}, {"n": 16})
    with pytest.raises(CompilationError, match="tl.umulhi needs int32 or int64 operands"):
        sparsecc.compile(umulhi_f, {"X": "*i16"}, {"n": 16})

    @sparsecc.jit
    def fdiv_both(X, n: tl.constexpr):
        x = tl.load(X + tl.arange(0, n))
        tl.store(X + tl.arange(0, n), tl.fdiv(x, x, ieee_rounding=True, approx=True))

    with pytest.raises(CompilationError, match="approx and ieee_rounding cannot both be True"):
        sparsecc.compile(fdiv_both, {"X": "*fp32"}, {"n": 16})

    @sparsecc.jit
    def div_ints(X, n: tl.constexpr):
        x = tl.load(X + tl.arange(0, n))
        tl.store(X + tl.arange(0, n), tl.div_rn(x, x).to(tl.int32))

    with pytest.raises(CompilationError, match="tl.div_rn needs floating-point operands"):
        sparsecc.compile(div_ints, {"X": "*i32"}, {"n": 16})


@pytest.mark.gpu
@pytest.mark.parametrize("op, dtype", CASES, ids=[f"{o}-{str(d)[6:]}" for o, d in CASES])
def test_math_on_the_gpu(op, dtype):
    _check(op, dtype, "cuda", n=5000)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.int32, torch.int64])
def test_umulhi_and_c_integer_division_on_the_gpu(dtype):
    _check_ints(dtype, "cuda", n=3000)
