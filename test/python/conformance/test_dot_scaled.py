"""`tl.dot_scaled` (microscaled matmul: e2m1, e4m3, e5m2, bf16, fp16 with e8m0 scales) against a
float64 reference decoded independently here; on the interpreter, assembled for sm_80 and sm_90a,
on the GPU (marked gpu). Also the located errors of its bad arguments and of the fp8 names
sparsecc does not have (float8e4b15, float8e4b8, float8e5b16), which say why."""

from __future__ import annotations

import pytest
import torch

import sparsecc
import sparsecc.language as tl
from sparsecc.frontend.errors import CompilationError


@sparsecc.jit
def mx_kernel(A, AS, B, BS, C, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr, AF: tl.constexpr,
              BF: tl.constexpr, SCALED: tl.constexpr):
    AK: tl.constexpr = K // 2 if AF == "e2m1" else K
    BK: tl.constexpr = K // 2 if BF == "e2m1" else K
    a = tl.load(A + tl.arange(0, M)[:, None] * AK + tl.arange(0, AK)[None, :])
    b = tl.load(B + tl.arange(0, BK)[:, None] * N + tl.arange(0, N)[None, :])
    acc = tl.full((M, N), 1.0, tl.float32)
    if SCALED:
        sa = tl.load(AS + tl.arange(0, M)[:, None] * (K // 32) + tl.arange(0, K // 32)[None, :])
        sb = tl.load(BS + tl.arange(0, N)[:, None] * (K // 32) + tl.arange(0, K // 32)[None, :])
        c = tl.dot_scaled(a, sa, AF, b, sb, BF, acc)
    else:
        c = tl.dot_scaled(a, None, AF, b, None, BF, acc)
    tl.store(C + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :], c)


E2M1 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]


def _e2m1(codes: torch.Tensor) -> torch.Tensor:
    mag = torch.tensor(E2M1, dtype=torch.float64)[(codes & 7).long()]
    return torch.where((codes & 8) != 0, -mag, mag)


def _e4m3(b: torch.Tensor) -> torch.Tensor:
    """e4m3fn by its definition (bias 7, subnormals, 0x7F NaN), not through torch's fp8."""
    b = b.long()
    e, m = (b >> 3) & 15, (b & 7).double()
    mag = torch.where(e == 0, m * 2.0**-9, (1 + m / 8) * torch.exp2((e - 7).double()))
    mag = torch.where((b & 0x7F) == 0x7F, torch.tensor(float("nan"), dtype=torch.float64), mag)
    return torch.where((b & 0x80) != 0, -mag, mag)


def _e5m2(b: torch.Tensor) -> torch.Tensor:
    b = b.long()
    e, m = (b >> 2) & 31, (b & 3).double()
    mag = torch.where(e == 0, m * 2.0**-16, (1 + m / 4) * torch.exp2((e - 15).double()))
    return torch.where((b & 0x80) != 0, -mag, mag)


def _decode(x: torch.Tensor, fmt: str, k_axis: int) -> torch.Tensor:
    if fmt == "e2m1":
        lo, hi = _e2m1(x & 15), _e2m1(x >> 4)
        if k_axis == 1:
            return torch.stack([lo, hi], -1).reshape(x.shape[0], -1)
        return torch.stack([lo, hi], 1).reshape(-1, x.shape[1])
    if fmt in ("bf16", "fp16"):
        return x.double()
    return _e4m3(x) if fmt == "e4m3" else _e5m2(x)


def _operand(fmt: str, rows: int, cols: int, g: torch.Generator) -> torch.Tensor:
    if fmt in ("bf16", "fp16"):
        return torch.randn(rows, cols, generator=g).to(torch.bfloat16 if fmt == "bf16" else torch.float16)
    x = torch.randint(0, 256, (rows, cols), generator=g, dtype=torch.uint8)
    if fmt in ("e4m3", "e5m2"):  # finite values only (e5m2: no inf/NaN exponent, e4m3: no NaN)
        top = 0x78 if fmt == "e5m2" else 0x7F
        x = torch.where((x & 0x7F) >= top, x & 0x8F, x)
    return x


CASES = [("e2m1", "e4m3", True), ("e4m3", "e5m2", True), ("e5m2", "e2m1", True), ("e2m1", "e2m1", True),
         ("bf16", "e4m3", False), ("fp16", "bf16", False)]


def _check(af: str, bf: str, scaled: bool, device: str, m: int = 32, n: int = 16, k: int = 64) -> None:
    g = torch.Generator().manual_seed(len(af + bf) + k)
    a = _operand(af, m, k // 2 if af == "e2m1" else k, g)
    b = _operand(bf, k // 2 if bf == "e2m1" else k, n, g)
    sa = torch.randint(118, 136, (m, k // 32), generator=g, dtype=torch.uint8)
    sb = torch.randint(118, 136, (n, k // 32), generator=g, dtype=torch.uint8)
    c = torch.full((m, n), float("nan"), device=device)
    mx_kernel[(1,)](a.to(device), sa.to(device), b.to(device), sb.to(device), c, M=m, N=n, K=k, AF=af, BF=bf,
                    SCALED=scaled)
    A, B = _decode(a, af, 1), _decode(b, bf, 0)
    if "fp16" in (af, bf):  # Triton's emulation rounds fp16 operands to bf16
        A, B = A.to(torch.bfloat16).double(), B.to(torch.bfloat16).double()
    if scaled:
        A = A * torch.exp2(sa.double() - 127).repeat_interleave(32, 1)
        B = B * torch.exp2(sb.double() - 127).repeat_interleave(32, 1).T
    ref = A @ B + 1
    torch.testing.assert_close(c.cpu().double(), ref, rtol=1e-5, atol=1e-5 * ref.abs().max().item())


@pytest.mark.parametrize("af, bf, scaled", CASES, ids=[f"{a}-{b}" for a, b, _ in CASES])
def test_dot_scaled_on_the_interpreter(af, bf, scaled, monkeypatch):
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    _check(af, bf, scaled, "cpu")


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_dot_scaled_assembles(target):
    for af, bf, scaled in CASES[:3]:
        ck = sparsecc.compile(mx_kernel, {"A": "*u8", "AS": "*u8", "B": "*u8", "BS": "*u8", "C": "*fp32"},
                              dict(M=32, N=16, K=64, AF=af, BF=bf, SCALED=scaled), target=target)
        assert isinstance(ck.asm["cubin"], bytes), (af, bf)


def test_dot_scaled_errors_name_the_problem():
    sig = {"A": "*u8", "AS": "*u8", "B": "*u8", "BS": "*u8", "C": "*fp32"}
    with pytest.raises(CompilationError, match=r"lhs_format must be one of 'e2m1', .* got 'e3m2'") as e:
        sparsecc.compile(mx_kernel, sig, dict(M=32, N=16, K=64, AF="e3m2", BF="e4m3", SCALED=True))
    assert "test_dot_scaled.py:" in str(e.value)
    with pytest.raises(CompilationError, match=r"lhs in format 'bf16' must be bf16, got u8"):
        sparsecc.compile(mx_kernel, sig, dict(M=32, N=16, K=64, AF="bf16", BF="e4m3", SCALED=False))
    with pytest.raises(CompilationError, match=r"a bf16 lhs takes no scale"):
        sparsecc.compile(mx_kernel, {**sig, "A": "*bf16"}, dict(M=32, N=16, K=64, AF="bf16", BF="e4m3", SCALED=True))


@pytest.mark.parametrize("name, why", [("float8e4b15", "pre-sm_89"), ("float8e4b8", "AMD's e4m3 'fnuz'"),
                                       ("float8e5b16", "AMD's e5m2 'fnuz'")])
def test_the_fp8_names_sparsecc_lacks_say_why(name, why, tmp_path, monkeypatch):
    path = tmp_path / f"k8_{name}.py"
    path.write_text("import sparsecc\nimport sparsecc.language as tl\n\n\n@sparsecc.jit\n"
                    f"def k(X):\n    x = tl.load(X)\n    tl.store(X, x.to(tl.{name}).to(tl.float32))\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    module = __import__(f"k8_{name}")
    with pytest.raises(CompilationError) as info:
        sparsecc.compile(module.k, {"X": "*fp32"}, {})
    text = str(info.value)
    assert f"{path}:8:" in text and f"tl.{name} (triton.language.{name}) is not supported by sparsecc yet: " in text
    assert why in text


@pytest.mark.gpu
@pytest.mark.parametrize("af, bf, scaled", CASES, ids=[f"{a}-{b}" for a, b, _ in CASES])
def test_dot_scaled_on_the_gpu(af, bf, scaled):
    _check(af, bf, scaled, "cuda", m=64, n=64, k=128)
