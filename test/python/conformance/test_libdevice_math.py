"""The libdevice names sparsecc builds from primitives (asin, atan2, sinh, log1p, rint, isnan, ...;
sparsecc/frontend/libdevice_builtins.py): each on the interpreter against torch (in float64) on
random data plus the edge values (0, -0, +-inf, NaN, the polynomial switch points), the PTX
assembled for sm_80 and sm_90a, the same kernels on the GPU (marked gpu)."""

from __future__ import annotations

import math

import pytest
import torch

import sparsecc
import sparsecc.language as tl
from sparsecc.frontend.errors import CompilationError
from sparsecc.language.extra.cuda import libdevice


@sparsecc.jit
def unary(X, Out, n, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(X + offs, mask=m, other=0.5)
    if OP == "asin":
        r = libdevice.asin(x)
    elif OP == "acos":
        r = libdevice.acos(x)
    elif OP == "atan":
        r = libdevice.atan(x)
    elif OP == "tan":
        r = libdevice.tan(x)
    elif OP == "sinh":
        r = libdevice.sinh(x)
    elif OP == "cosh":
        r = libdevice.cosh(x)
    elif OP == "asinh":
        r = libdevice.asinh(x)
    elif OP == "acosh":
        r = libdevice.acosh(x)
    elif OP == "atanh":
        r = libdevice.atanh(x)
    elif OP == "log1p":
        r = libdevice.log1p(x)
    elif OP == "expm1":
        r = libdevice.expm1(x)
    elif OP == "exp10":
        r = libdevice.exp10(x)
    elif OP == "log10":
        r = libdevice.log10(x)
    elif OP == "cbrt":
        r = libdevice.cbrt(x)
    elif OP == "erfc":
        r = libdevice.erfc(x)
    elif OP == "trunc":
        r = libdevice.trunc(x)
    elif OP == "round":
        r = libdevice.round(x)
    elif OP == "rint":
        r = libdevice.rint(x)
    elif OP == "nearbyint":
        r = libdevice.nearbyint(x)
    elif OP == "saturatef":
        r = libdevice.saturatef(x)
    else:
        r = libdevice.rcp_rn(x)
    tl.store(Out + offs, r, mask=m)


@sparsecc.jit
def binary(X, Y, Out, n, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(X + offs, mask=m, other=0.5)
    y = tl.load(Y + offs, mask=m, other=0.5)
    if OP == "atan2":
        r = libdevice.atan2(x, y)
    elif OP == "hypot":
        r = libdevice.hypot(x, y)
    elif OP == "copysign":
        r = libdevice.copysign(x, y)
    elif OP == "fmod":
        r = libdevice.fmod(x, y)
    elif OP == "fmax":
        r = libdevice.fmax(x, y)
    elif OP == "mod":
        r = x % y
    else:
        r = libdevice.fmin(x, y)
    tl.store(Out + offs, r, mask=m)


@sparsecc.jit
def float_tests(X, Nan, Inf, Fin, Sign, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(X + offs, mask=m, other=0.5)
    tl.store(Nan + offs, libdevice.isnan(x), mask=m)
    tl.store(Inf + offs, libdevice.isinf(x), mask=m)
    tl.store(Fin + offs, libdevice.finitef(x), mask=m)
    tl.store(Sign + offs, libdevice.signbit(x), mask=m)


def _half_even(x: torch.Tensor) -> torch.Tensor:
    return torch.round(x)  # torch.round rounds halves to even


def _round_away(x: torch.Tensor) -> torch.Tensor:
    return torch.sign(x) * torch.floor(x.abs() + 0.5)  # halves away from zero (x is float64)


# name -> (torch reference on float64, input range (low, high), relative tolerance)
UNARY = {
    "asin": (torch.asin, (-1.0, 1.0), 4e-6),
    "acos": (torch.acos, (-1.0, 1.0), 4e-6),
    "atan": (torch.atan, (-20.0, 20.0), 4e-6),
    "tan": (torch.tan, (-1.4, 1.4), 1e-4),
    "sinh": (torch.sinh, (-12.0, 12.0), 2e-5),
    "cosh": (torch.cosh, (-12.0, 12.0), 2e-5),
    "asinh": (torch.asinh, (-30.0, 30.0), 1e-5),
    "acosh": (torch.acosh, (1.0, 30.0), 1e-5),
    "atanh": (torch.atanh, (-1.0, 1.0), 1e-5),
    "log1p": (torch.log1p, (-0.9, 3.0), 1e-5),
    "expm1": (torch.expm1, (-3.0, 3.0), 2e-5),
    "exp10": (lambda x: torch.pow(10.0, x), (-5.0, 5.0), 2e-5),
    "log10": (torch.log10, (1e-3, 1e3), 1e-5),
    "cbrt": (lambda x: torch.copysign(x.abs().pow(1 / 3), x), (-100.0, 100.0), 1e-5),
    "erfc": (torch.erfc, (-3.0, 3.0), 1e-5),
    "trunc": (torch.trunc, (-10.0, 10.0), 0.0),
    "round": (_round_away, (-10.0, 10.0), 0.0),
    "rint": (_half_even, (-10.0, 10.0), 0.0),
    "nearbyint": (_half_even, (-10.0, 10.0), 0.0),
    "saturatef": (lambda x: torch.nan_to_num(x, nan=0.0).clamp(0, 1), (-0.5, 1.5), 0.0),
    "rcp_rn": (lambda x: 1 / x, (-4.0, 4.0), 0.0),
}
EDGES = {
    "asin": [0.0, -0.0, 0.5, -0.5, 0.49999997, 1.0, -1.0, 1.5, float("nan")],
    "acos": [0.0, 0.5, -0.5, 1.0, -1.0, -1.5, float("nan")],
    "atan": [0.0, -0.0, 0.41421357, 1.0, 2.4142137, float("inf"), float("-inf"), 1e30, float("nan")],
    "sinh": [0.0, -0.0, 1.0, -1.0, 0.999, 89.0, float("inf"), float("-inf"), float("nan")],
    "cosh": [0.0, 1.0, 89.0, float("-inf"), float("nan")],
    "asinh": [0.0, -0.0, 1e-4, 0.5, 4096.0, 1e30, -1e30, float("inf"), float("nan")],
    "acosh": [1.0, 1.0001, 4096.0, 1e30, 0.5, -2.0, float("inf"), float("nan")],
    "atanh": [0.0, -0.0, 1e-5, 1 / 3, 0.34, 1.0, -1.0, 2.0, float("nan")],
    "log1p": [0.0, -0.0, 1e-6, -1e-6, 0.5, -0.5, -1.0, -2.0, float("inf"), float("nan")],
    "expm1": [0.0, 1e-6, -1e-6, 0.5, -0.5, -100.0, float("-inf"), float("nan")],
    "cbrt": [0.0, -0.0, 27.0, -8.0, 1e-30, float("inf"), float("-inf"), float("nan")],
    "trunc": [0.0, -0.0, -0.5, 2.5, -2.5, 1e20, 8388609.0, float("inf"), float("nan")],
    "round": [0.5, -0.5, 1.5, 2.5, -2.5, 0.49999997, -0.3, 8388609.0, 1e20, float("-inf"), float("nan")],
    "rint": [0.5, -0.5, 1.5, 2.5, -2.5, 3.5, 0.49999997, 8388609.0, 1e20, float("inf"), float("nan")],
    "saturatef": [float("nan"), float("inf"), float("-inf"), 0.0, 1.0],
    "rcp_rn": [0.0, -0.0, float("inf"), 3.0],
}


def _ordered_zeros(fn, larger: bool):
    """torch.fmax/fmin with -0.0 < +0.0, as libdevice's fmaxf/fminf (PTX max/min.f32: "if both
    inputs are 0.0, +0.0 > -0.0"); torch returns its first operand when the two compare equal."""

    def ref(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        both = (x == 0) & (y == 0)
        neg = torch.signbit(x) & torch.signbit(y) if larger else torch.signbit(x) | torch.signbit(y)
        return torch.where(both, torch.where(neg, -0.0, 0.0).to(x.dtype), fn(x, y))

    return ref


BINARY = {
    "atan2": (torch.atan2, 4e-6),
    "hypot": (torch.hypot, 2e-6),
    "copysign": (torch.copysign, 0.0),
    "fmod": (torch.fmod, 0.0),
    "fmax": (_ordered_zeros(torch.fmax, True), 0.0),
    "fmin": (_ordered_zeros(torch.fmin, False), 0.0),
}
_SPECIAL = [0.0, -0.0, 1.0, -1.0, float("inf"), float("-inf"), float("nan"), 1e30, -1e-30, 3.0]


def _unary_inputs(op: str, n: int) -> torch.Tensor:
    lo, hi = UNARY[op][1]
    g = torch.Generator().manual_seed(len(op) * 7 + n)
    x = torch.rand(n, generator=g, dtype=torch.float64) * (hi - lo) + lo
    edges = torch.tensor(EDGES.get(op, []), dtype=torch.float64)
    return torch.cat([edges, x.float().double()])[:n].float()


def _close(out: torch.Tensor, ref: torch.Tensor, rtol: float, what: str) -> None:
    torch.testing.assert_close(out.cpu(), ref.float(), rtol=rtol, atol=max(rtol, 1e-7), equal_nan=True, msg=lambda m: f"{what}: {m}")
    # zeros keep their sign (asin(-0) is -0, trunc(-0.5) is -0)
    zero = ref == 0
    assert torch.equal(torch.signbit(out.cpu()[zero]), torch.signbit(ref.float()[zero])), what


def _check_unary(op: str, device: str, n: int, dtype: torch.dtype = torch.float32) -> None:
    ref_fn, _, rtol = UNARY[op]
    x = _unary_inputs(op, n).to(dtype)
    out = torch.full((n,), float("nan"), dtype=dtype, device=device)
    unary[(triton_cdiv(n, 128),)](x.to(device), out, n, OP=op, BLOCK=128)
    ref = ref_fn(x.double())
    if dtype != torch.float32:
        ref, rtol = ref.to(dtype).double(), 8e-3
    _close(out.float(), ref, rtol, f"libdevice.{op} {dtype}")


def _binary_inputs(n: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(n)
    x = torch.randn(n, generator=g) * 5
    y = torch.randn(n, generator=g) * 5
    sp = torch.tensor(_SPECIAL)
    xs, ys = torch.meshgrid(sp, sp, indexing="ij")  # every pair of special values
    return torch.cat([xs.reshape(-1), x])[:n], torch.cat([ys.reshape(-1), y])[:n]


_FMOD_HARD = [(2.0**30, 3.0), (3.4e38, 1.4e-45), (-3.4e38, 1.1754942e-38), (1e30, 7.0), (16777218.0, 3.0),
              (1.4e-45, 3e-45), (-5e-39, 1e-45), (1e-38, 3e-39), (7.0, 7.0), (-8.0, 2.0), (3.0000002, 1.0000001)]
"""Quotients far past 2**24 (where x - trunc(x / y) * y is wrong), subnormals, exact multiples."""


def _fmod_inputs(n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The special pairs and normal randoms, then random bit patterns (every exponent: huge
    quotients, subnormals, the odd NaN and inf) and `_FMOD_HARD`."""
    x, y = _binary_inputs(n)
    g = torch.Generator().manual_seed(n + 1)
    bits = torch.randint(-(2**31), 2**31, (2, n // 2), generator=g, dtype=torch.int64).to(torch.int32)
    hx, hy = (torch.tensor(v) for v in zip(*_FMOD_HARD))
    keep = n - n // 2 - len(_FMOD_HARD)
    return (torch.cat([x[:keep], bits[0].view(torch.float32), hx]),
            torch.cat([y[:keep], bits[1].view(torch.float32), hy]))


def _check_binary(op: str, device: str, n: int) -> None:
    ref_fn, rtol = BINARY[op]
    x, y = _fmod_inputs(n) if op == "fmod" else _binary_inputs(n)
    out = torch.full((n,), float("nan"), device=device)
    binary[(triton_cdiv(n, 128),)](x.to(device), y.to(device), out, n, OP=op, BLOCK=128)
    ref = ref_fn(x.double(), y.double())
    if op == "fmod":  # exact for every quotient (CUDA's __nv_fmodf), unlike '%'
        assert ((x.double() / y.double()).abs() >= 2**24).sum() > n // 10
    _close(out, ref, rtol, f"libdevice.{op}")


def _check_tests(device: str, n: int) -> None:
    x = torch.cat([torch.tensor(_SPECIAL + [-float("nan"), -0.0]), torch.randn(n, generator=torch.Generator().manual_seed(3))])[:n]
    outs = [torch.full((n,), -7, dtype=torch.int32, device=device) for _ in range(4)]
    float_tests[(triton_cdiv(n, 128),)](x.to(device), *outs, n, BLOCK=128)
    refs = [x.isnan(), x.isinf(), x.isfinite(), torch.signbit(x)]
    for name, o, r in zip(["isnan", "isinf", "finitef", "signbit"], outs, refs):
        assert torch.equal(o.cpu(), r.to(torch.int32)), name


def triton_cdiv(a: int, b: int) -> int:
    return (a + b - 1) // b


@pytest.mark.parametrize("op", list(UNARY))
def test_unary_libdevice_on_the_interpreter(op, monkeypatch):
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    _check_unary(op, "cpu", 1000)


@pytest.mark.parametrize("op", ["asin", "atan", "sinh", "round", "log1p"])
def test_unary_libdevice_in_half_precision_on_the_interpreter(op, monkeypatch):
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    _check_unary(op, "cpu", 300, torch.float16)


@pytest.mark.parametrize("op", list(BINARY))
def test_binary_libdevice_on_the_interpreter(op, monkeypatch):
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    _check_binary(op, "cpu", 1000)


def test_libdevice_tests_on_the_interpreter(monkeypatch):
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    _check_tests("cpu", 300)


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_libdevice_assembles(target):
    for op in UNARY:
        for dt in ("fp32", "bf16"):
            ck = sparsecc.compile(unary, {"X": f"*{dt}", "Out": f"*{dt}", "n": "i32"}, {"OP": op, "BLOCK": 128},
                                  target=target)
            assert isinstance(ck.asm["cubin"], bytes), op
    for op in BINARY:
        ck = sparsecc.compile(binary, {"X": "*fp32", "Y": "*fp32", "Out": "*fp32", "n": "i32"},
                              {"OP": op, "BLOCK": 128}, target=target)
        assert isinstance(ck.asm["cubin"], bytes), op
    ck = sparsecc.compile(float_tests, {"X": "*fp32", "Nan": "*i32", "Inf": "*i32", "Fin": "*i32", "Sign": "*i32",
                                  "n": "i32"}, {"BLOCK": 128}, target=target)
    assert isinstance(ck.asm["cubin"], bytes)


def test_libdevice_refuses_fp64_and_ints_by_name():
    with pytest.raises(CompilationError, match=r"libdevice.asin on fp64: sparsecc computes it in fp32 only") as e:
        sparsecc.compile(unary, {"X": "*fp64", "Out": "*fp64", "n": "i32"}, {"OP": "asin", "BLOCK": 128})
    assert "test_libdevice_math.py:25:" in str(e.value)
    with pytest.raises(CompilationError, match=r"libdevice.atan needs a floating-point input, got tensor<128xi32>"):
        sparsecc.compile(unary, {"X": "*i32", "Out": "*i32", "n": "i32"}, {"OP": "atan", "BLOCK": 128})


def test_asin_is_accurate_to_an_ulp_or_two(monkeypatch):
    """The fitted polynomials, not just loose tolerances: asin on a dense grid in [-1, 1]."""
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    x = torch.linspace(-1, 1, 4096)
    out = torch.empty_like(x)
    unary[(32,)](x, out, 4096, OP="asin", BLOCK=128)
    ref = torch.asin(x.double())
    ulp = (out.double() - ref).abs() / torch.clamp(ref.abs(), min=1e-30) / 2**-24
    assert ulp.max().item() < 4, ulp.max().item()
    assert math.isclose(out[-1].item(), math.pi / 2, rel_tol=1e-7)


def test_libdevice_fmod_is_exact_for_large_quotients(monkeypatch):
    """libdevice.fmod is C's fmodf for every quotient, on both back ends: it is built from integer
    steps (no division), which the interpreter runs as the GPU does; `%` (Triton's frem, a
    division first) is another function on the GPU. Regression: libdevice.fmod was `%`."""
    ck = sparsecc.compile(binary, {"X": "*fp32", "Y": "*fp32", "Out": "*fp32", "n": "i32"},
                          {"OP": "fmod", "BLOCK": 128}, target="sm_90a")
    assert "div.rn.f32" not in ck.asm["ptx"] and "cvt.rzi" not in ck.asm["ptx"] and "rem.s64" in ck.asm["ptx"]
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    x, y = (torch.tensor(v) for v in zip(*_FMOD_HARD))
    out = torch.full_like(x, float("nan"))
    binary[(1,)](x, y, out, len(x), OP="fmod", BLOCK=128)
    assert out[0].item() == 1.0  # 2**30 = 3 * 357913941 + 1 (x - trunc(x / y) * y gives -32)
    ref = torch.fmod(x.double(), y.double()).float()
    assert torch.equal(out, ref) and torch.equal(torch.signbit(out), torch.signbit(ref))


def _check_min_max_zeros(device: str) -> None:
    """-0.0 < +0.0 for libdevice.fmin/fmax, tl.minimum/maximum (both NaN modes) and tl.min/max,
    as the PTX min/max.f32 the GPU runs (torch returns the first of two equal operands)."""
    z = torch.tensor([0.0, -0.0, 0.0, -0.0, 1.0, float("nan")])
    x, y = z.repeat_interleave(6), z.repeat(6)  # every ordered pair
    n = len(x)
    for op in ("fmax", "fmin"):
        out = torch.full((n,), float("nan"), device=device)
        binary[(1,)](x.to(device), y.to(device), out, n, OP=op, BLOCK=128)
        _close(out, BINARY[op][0](x.double(), y.double()), 0.0, op)
    outs = [torch.full((n,), float("nan"), device=device) for _ in range(4)]
    red = torch.full((4, 2), float("nan"), device=device)
    min_max_zeros[(1,)](x.to(device), y.to(device), *outs, red, n, BLOCK=64)
    big, small = BINARY["fmax"][0](x.double(), y.double()), BINARY["fmin"][0](x.double(), y.double())
    nan = x.isnan() | y.isnan()
    for o, ref, what in ((outs[0], big, "maximum"), (outs[1], small, "minimum"),
                         (outs[2], torch.where(nan, float("nan"), big), "maximum(ALL)"),
                         (outs[3], torch.where(nan, float("nan"), small), "minimum(ALL)")):
        _close(o, ref, 0.0, f"tl.{what}")
    # rows: (+0, -0), (-0, +0), (-0, -0), (+0, +0) and the max/min of each
    want = torch.tensor([[0.0, -0.0], [0.0, -0.0], [-0.0, -0.0], [0.0, 0.0]])
    assert torch.equal(torch.signbit(red.cpu()), torch.signbit(want)) and torch.equal(red.cpu(), want)


@sparsecc.jit
def min_max_zeros(X, Y, Max, Min, MaxN, MinN, Red, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(X + offs, mask=m, other=0.0)
    y = tl.load(Y + offs, mask=m, other=0.0)
    tl.store(Max + offs, tl.maximum(x, y), mask=m)
    tl.store(Min + offs, tl.minimum(x, y), mask=m)
    tl.store(MaxN + offs, tl.maximum(x, y, propagate_nan=tl.PropagateNan.ALL), mask=m)
    tl.store(MinN + offs, tl.minimum(x, y, propagate_nan=tl.PropagateNan.ALL), mask=m)
    rows = tl.arange(0, 4)[:, None]
    cols = tl.arange(0, 32)[None, :]
    pos = (cols % 2 == 0) & (rows != 2) | (rows == 3)  # row 0: +0 first, row 1: -0 first, 2: all -0, 3: all +0
    pos = tl.where(rows == 1, cols % 2 == 1, pos)
    zeros = tl.where(pos, 0.0, -0.0)
    tl.store(Red + tl.arange(0, 4) * 2, tl.max(zeros, axis=1))
    tl.store(Red + tl.arange(0, 4) * 2 + 1, tl.min(zeros, axis=1))


def test_min_max_order_signed_zeros_on_the_interpreter(monkeypatch):
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    _check_min_max_zeros("cpu")


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_min_max_zeros_kernel_assembles(target):
    ck = sparsecc.compile(min_max_zeros, {"X": "*fp32", "Y": "*fp32", "Max": "*fp32", "Min": "*fp32",
                                          "MaxN": "*fp32", "MinN": "*fp32", "Red": "*fp32", "n": "i32"},
                          {"BLOCK": 64}, target=target)
    assert isinstance(ck.asm["cubin"], bytes)


@pytest.mark.gpu
def test_min_max_order_signed_zeros_on_the_gpu():
    _check_min_max_zeros("cuda")


@pytest.mark.gpu
def test_mod_operator_divides_first_on_the_gpu():
    """`x % y` on floats is Triton's frem on the GPU, x - trunc(x / y) * y (one fma): exact only
    while |x / y| < 2**24; libdevice.fmod is exact (test_binary_libdevice_on_the_gpu[fmod])."""
    x, y = _fmod_inputs(3000)
    q = torch.trunc(x / y)  # the fp32 quotient (div.rn), as the GPU
    ok = x.isfinite() & y.isfinite() & (y != 0) & q.isfinite()
    x, y, q = x[ok], y[ok], q[ok]
    n = len(x)
    out = torch.full((n,), float("nan"), device="cuda")
    binary[(triton_cdiv(n, 128),)](x.cuda(), y.cuda(), out, n, OP="mod", BLOCK=128)
    frem = (x.double() - q.double() * y.double()).float()  # the fma's one rounding, to within an ulp
    torch.testing.assert_close(out.cpu(), frem, rtol=2**-23, atol=1e-45)
    large = (x.double() / y.double()).abs() >= 2**24
    exact = torch.fmod(x.double(), y.double()).float()  # (torch.fmod in fp32 on the CPU is not exact either)
    assert (out.cpu()[large] != exact[large]).any()  # where it is not fmod


@pytest.mark.gpu
@pytest.mark.parametrize("op", list(UNARY))
def test_unary_libdevice_on_the_gpu(op):
    _check_unary(op, "cuda", 5000)


@pytest.mark.gpu
@pytest.mark.parametrize("op", list(BINARY))
def test_binary_libdevice_on_the_gpu(op):
    _check_binary(op, "cuda", 5000)


@pytest.mark.gpu
def test_libdevice_tests_on_the_gpu():
    _check_tests("cuda", 3000)


@pytest.mark.parametrize("op", ["rcp_rn", "atan2", "acosh", "hypot"])
def test_libdevice_divides_correctly_rounded(op):
    """The compositions divide with div.rn, not '/''s div.full (which is 2 ulp): rcp_rn must be
    correctly rounded, and the others' error bounds assume it (a GPU run caught rcp_rn off by an
    ulp once '/' became div.full)."""
    kernel, sig = (binary, {"X": "*fp32", "Y": "*fp32", "Out": "*fp32", "n": "i32"}) if op in BINARY else \
        (unary, {"X": "*fp32", "Out": "*fp32", "n": "i32"})
    ptx = str(sparsecc.compile(kernel, sig, {"OP": op, "BLOCK": 128}, target="sm_90a").asm["ptx"])
    assert "div.full" not in ptx, op
    if op == "rcp_rn":
        assert "div.rn.f32" in ptx
