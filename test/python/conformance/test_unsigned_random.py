"""tl.uint8 ... tl.uint64 and Triton's random numbers (issue 29): the interpreter against torch
and a NumPy Philox 4x32-10 written here, the PTX against ptxas, the GPU against the interpreter."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import sparsecc
import sparsecc.language as tl
from sparsecc.frontend.errors import CompilationError

_UNSIGNED = {8: torch.uint8, 16: torch.uint16, 32: torch.uint32, 64: torch.uint64}


@sparsecc.jit
def unsigned_ops(X, Y, Q, R, S, LT, MX, W, F, n, BLOCK: tl.constexpr):
    """Every operation whose result depends on signedness, on unsigned tiles."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(X + offs, mask=m)
    y = tl.load(Y + offs, mask=m, other=1)
    tl.store(Q + offs, x // y, mask=m)
    tl.store(R + offs, x % y, mask=m)
    tl.store(S + offs, x >> 3, mask=m)
    tl.store(LT + offs, (x < y).to(tl.int32) + 2 * (x >= 5).to(tl.int32), mask=m)
    tl.store(MX + offs, tl.maximum(x, y) - tl.minimum(x, y), mask=m)
    tl.store(W + offs, x.to(tl.int64), mask=m)  # zero-extension
    tl.store(F + offs, x.to(tl.float32), mask=m)


def _bits(t: torch.Tensor, w: int) -> np.ndarray:
    """The elements of an unsigned torch tensor as NumPy uint64 (exact for every width)."""
    signed = {8: torch.int8, 16: torch.int16, 32: torch.int32, 64: torch.int64}[w]
    a = t.cpu().view(signed).numpy().astype(np.int64).view(np.uint64)
    return a & np.uint64((1 << w) - 1) if w < 64 else a


def _unsigned_data(w: int, n: int, gen: torch.Generator, device: str) -> torch.Tensor:
    """Random w-bit values with the edges: 0, 1, the top bit alone, all ones."""
    raw = torch.randint(-(2**62), 2**62, (n,), generator=gen, dtype=torch.int64) * 3
    top = 1 << (w - 1) if w < 64 else -(2**63)
    edges = torch.tensor([0, 1, top, (1 << w) - 1 if w < 64 else -1, (1 << (w - 1)) - 1])
    raw[: len(edges)] = edges
    signed = {8: torch.int8, 16: torch.int16, 32: torch.int32, 64: torch.int64}[w]
    return raw.to(signed).view(_UNSIGNED[w]).to(device)


def _run_unsigned_ops(w: int, device: str, n: int = 300) -> None:
    gen = torch.Generator().manual_seed(w)
    x = _unsigned_data(w, n, gen, device)
    signed = {8: torch.int8, 16: torch.int16, 32: torch.int32, 64: torch.int64}[w]
    y = _unsigned_data(w, n, gen, device).view(signed).roll(1)  # torch has few uint16/32/64 ops
    y[y == 0] = 7
    y = y.view(_UNSIGNED[w])
    out = [torch.full((n,), 0x5A, dtype=signed, device=device).view(_UNSIGNED[w]) for _ in range(4)]
    lt = torch.full((n,), -9, dtype=torch.int32, device=device)
    wide = torch.full((n,), -9, dtype=torch.int64, device=device)
    f = torch.full((n,), float("nan"), device=device)
    unsigned_ops[(triton_cdiv(n, 128),)](x, y, *out[:3], lt, out[3], wide, f, n, BLOCK=128)
    a, b = _bits(x, w), _bits(y, w)
    mask = np.uint64((1 << w) - 1) if w < 64 else np.uint64(2**64 - 1)
    assert (_bits(out[0], w) == a // b).all()
    assert (_bits(out[1], w) == a % b).all()
    assert (_bits(out[2], w) == a >> np.uint64(3)).all()
    assert (lt.cpu().numpy() == (a < b).astype(np.int32) + 2 * (a >= 5).astype(np.int32)).all()
    assert (_bits(out[3], w) == (np.maximum(a, b) - np.minimum(a, b)) & mask).all()
    if w < 64:
        assert (wide.cpu().numpy() == a.astype(np.int64)).all()
    else:
        assert (wide.cpu().numpy().view(np.uint64) == a).all()
    assert torch.equal(f.cpu(), torch.from_numpy(a.astype(np.float32)))


def triton_cdiv(a: int, b: int) -> int:
    return (a + b - 1) // b


@pytest.mark.parametrize("w", [8, 16, 32, 64])
def test_unsigned_ops_on_the_interpreter(monkeypatch, w):
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    _run_unsigned_ops(w, "cpu")


@sparsecc.jit
def promote_kernel(U, S, O1, O2, O3, n, BLOCK: tl.constexpr):
    """uint32 op int32 -> uint32; uint32 op int64 -> int64; uint8 op int32 -> int32 (Triton)."""
    offs = tl.arange(0, BLOCK)
    m = offs < n
    u = tl.load(U + offs, mask=m)
    s = tl.load(S + offs, mask=m)
    tl.store(O1 + offs, (u + s) >> 1, mask=m)  # uint32: a logical shift
    tl.store(O2 + offs, (u.to(tl.int64) * 0 + u) + s.to(tl.int64), mask=m)
    tl.store(O3 + offs, (u.to(tl.uint8) + s) >> 1, mask=m)  # int32: an arithmetic shift


def test_promotion_follows_triton(monkeypatch):
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    n = 200
    gen = torch.Generator().manual_seed(3)
    u = _unsigned_data(32, n, gen, "cpu")
    s = torch.randint(-(2**31), 2**31, (n,), generator=gen, dtype=torch.int32)
    o1 = torch.zeros(n, dtype=torch.uint32)
    o2 = torch.zeros(n, dtype=torch.int64)
    o3 = torch.zeros(n, dtype=torch.int32)
    promote_kernel[(1,)](u, s, o1, o2, o3, n, BLOCK=256)
    a = _bits(u, 32).astype(np.int64)
    sv = s.numpy().astype(np.int64)
    assert (_bits(o1, 32).astype(np.int64) == ((a + sv) & 0xFFFFFFFF) >> 1).all()
    assert (o2.numpy() == a + sv).all()
    s32 = ((a & 0xFF) + sv + 2**31) % 2**32 - 2**31
    assert (o3.numpy() == s32 >> 1).all()


def test_mixed_signedness_division_is_refused():
    @sparsecc.jit
    def bad(U, S, Out, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(Out + offs, tl.load(U + offs) // tl.load(S + offs))

    with pytest.raises(CompilationError, match=r"test_unsigned_random.py:\d+:\d+: .*differ in signedness"):
        sparsecc.compile(bad, {"U": "*u32", "S": "*i32", "Out": "*i32"}, {"BLOCK": 32})


def test_negative_literal_next_to_unsigned_is_refused():
    @sparsecc.jit
    def bad(U, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(U + offs, tl.load(U + offs) + -1)

    with pytest.raises(CompilationError, match=r"negative constant \(-1\) next to an unsigned"):
        sparsecc.compile(bad, {"U": "*u32"}, {"BLOCK": 32})


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_unsigned_ptx_forms_assemble(target):
    sig = {"X": "*u32", "Y": "*u32", "Q": "*u32", "R": "*u32", "S": "*u32", "LT": "*i32", "MX": "*u32",
           "W": "*i64", "F": "*fp32", "n": "i32"}
    ck = sparsecc.compile(unsigned_ops, sig, {"BLOCK": 128}, target=target)
    ptx = ck.asm["ptx"]
    for form in ("div.u32", "rem.u32", "shr.u32", "setp.lo.u32", "max.u32", "min.u32", "cvt.rn.f32.u32",
                 "cvt.u64.u32"):
        assert form in ptx, form
    assert "div.s32" not in ptx and "shr.s32" not in ptx
    assert isinstance(ck.asm["cubin"], bytes)


# --------------------------------------------------------------------------------------
# Random numbers
# --------------------------------------------------------------------------------------


def philox_reference(seed: int, c0: np.ndarray, c1: np.ndarray, rounds: int = 10) -> list[np.ndarray]:
    """Philox 4x32 from its definition (Salmon et al. 2011), keyed as Triton keys it: key =
    (seed low word, seed high word), counters = (c0, c1, 0, 0)."""
    m = np.uint64(0xFFFFFFFF)
    c = [c0.astype(np.uint64), c1.astype(np.uint64), np.zeros_like(c0, np.uint64), np.zeros_like(c0, np.uint64)]
    k0, k1 = np.uint64(seed & 0xFFFFFFFF), np.uint64((seed >> 32) & 0xFFFFFFFF)
    for _ in range(rounds):
        p0 = c[0] * np.uint64(0xD2511F53)  # fits in 64 bits: both factors < 2**32
        p2 = c[2] * np.uint64(0xCD9E8D57)
        c = [((p2 >> np.uint64(32)) ^ c[1] ^ k0) & m, p2 & m, ((p0 >> np.uint64(32)) ^ c[3] ^ k1) & m, p0 & m]
        k0 = (k0 + np.uint64(0x9E3779B9)) & m
        k1 = (k1 + np.uint64(0xBB67AE85)) & m
    return c


def uniform_reference(bits: np.ndarray) -> np.ndarray:
    x = bits.astype(np.uint32).view(np.int32)
    x = np.where(x < 0, ~x, x)
    return (x.astype(np.float32) * np.float32(4.6566127342e-10)).astype(np.float32)


@sparsecc.jit
def random_kernel(R0, R1, R2, R3, U, Z, seed, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    r0, r1, r2, r3 = tl.randint4x(seed, offs)
    tl.store(R0 + offs, r0, mask=m)
    tl.store(R1 + offs, r1, mask=m)
    tl.store(R2 + offs, r2, mask=m)
    tl.store(R3 + offs, r3, mask=m)
    tl.store(U + offs, tl.rand(seed, offs), mask=m)
    tl.store(Z + offs, tl.randn(seed, offs), mask=m)


def _run_random(device: str, seed: int, n: int = 1000) -> list[torch.Tensor]:
    outs = [torch.zeros(n, dtype=torch.uint32, device=device) for _ in range(4)]
    u = torch.full((n,), float("nan"), device=device)
    z = torch.full((n,), float("nan"), device=device)
    random_kernel[(triton_cdiv(n, 256),)](*outs, u, z, seed, n, BLOCK=256)
    return [*outs, u, z]


@pytest.mark.parametrize("seed", [0, 12345, 2**31 - 1, 2**40 + 7])
def test_random_matches_philox_reference(monkeypatch, seed):
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    n = 1000
    r0, r1, r2, r3, u, z = _run_random("cpu", seed, n)
    offs = np.arange(n, dtype=np.uint64)
    ref = philox_reference(seed, offs, np.zeros(n, np.uint64))
    for got, want in zip((r0, r1, r2, r3), ref):
        assert (_bits(got, 32) == want).all()
    assert np.array_equal(u.numpy(), uniform_reference(ref[0]))
    u1 = np.maximum(np.float32(1e-7), uniform_reference(ref[0]))
    u2 = uniform_reference(ref[1])
    want_z = np.sqrt(-2.0 * np.log(u1.astype(np.float64))) * np.cos(6.283185307179586 * u2.astype(np.float64))
    assert np.allclose(z.numpy(), want_z, atol=1e-5)
    assert 0.4 < u.mean().item() < 0.6 and abs(z.mean().item()) < 0.15


@sparsecc.jit
def philox_kernel(C0, C1, O0, O1, O2, O3, seed, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    c0 = tl.load(C0 + offs)
    c1 = tl.load(C1 + offs)
    a, b, c, d = tl.philox(seed, c0, c1, c0 * 0, c0 * 0, 7)
    tl.store(O0 + offs, a)
    tl.store(O1 + offs, b)
    tl.store(O2 + offs, c)
    tl.store(O3 + offs, d)


def test_philox_with_counters_and_rounds(monkeypatch):
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    gen = torch.Generator().manual_seed(1)
    c0 = torch.randint(-(2**31), 2**31, (64,), generator=gen, dtype=torch.int32)
    c1 = torch.randint(-(2**31), 2**31, (64,), generator=gen, dtype=torch.int32)
    outs = [torch.zeros(64, dtype=torch.uint32) for _ in range(4)]
    seed = 0xDEADBEEF12345
    philox_kernel[(1,)](c0, c1, *outs, seed, BLOCK=64)
    ref = philox_reference(seed, c0.numpy().view(np.uint32), c1.numpy().view(np.uint32), rounds=7)
    for got, want in zip(outs, ref):
        assert (_bits(got, 32) == want).all()


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_random_assembles(target):
    sig = {"R0": "*u32", "R1": "*u32", "R2": "*u32", "R3": "*u32", "U": "*fp32", "Z": "*fp32",
           "seed": "i32", "n": "i32"}
    ck = sparsecc.compile(random_kernel, sig, {"BLOCK": 256}, target=target)
    assert "mul.hi.u32" in ck.asm["ptx"] and isinstance(ck.asm["cubin"], bytes)


@pytest.mark.gpu
def test_unsigned_ops_on_the_gpu():
    for w in (8, 16, 32, 64):
        _run_unsigned_ops(w, "cuda", n=1000)


@pytest.mark.gpu
def test_random_on_the_gpu_matches_the_interpreter(monkeypatch):
    gpu = _run_random("cuda", 987654321, 5000)
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    cpu = _run_random("cpu", 987654321, 5000)
    for g, c in zip(gpu[:5], cpu[:5]):
        assert torch.equal(g.cpu(), c)  # the integers and the uniforms: bit-exact
    assert torch.allclose(gpu[5].cpu(), cpu[5], atol=1e-5)  # normals: the GPU's sin/cos/log
