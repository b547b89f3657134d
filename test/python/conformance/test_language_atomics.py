"""tl.atomic_max/min/and/or/xor/xchg/cas (and atomic_add's new types): tensors of pointers with
masks and colliding addresses, scalar pointers, sem/scope; the interpreter against a sequential
reference on random data, the PTX assembled for sm_80 and sm_90a, the GPU against the same
reference. Also the atomic_add of a dot result without a mask, whose GPU lowering raised the IR
library's ValueError (issue 29)."""

from __future__ import annotations

import re

import pytest
import torch

import sparsecc
import sparsecc.language as tl
from sparsecc.frontend.errors import CompilationError


@sparsecc.jit
def rmw(Mem, Val, Old, n, slots, KIND: tl.constexpr, BLOCK: tl.constexpr):
    """Each element hits slot `offs % slots` (so several hit the same one), under a mask."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    v = tl.load(Val + offs, mask=m, other=0)
    p = Mem + offs % slots
    if KIND == "max":
        old = tl.atomic_max(p, v, mask=m)
    elif KIND == "min":
        old = tl.atomic_min(p, v, mask=m, sem="acq_rel", scope="cta")
    elif KIND == "and":
        old = tl.atomic_and(p, v, mask=m)
    elif KIND == "or":
        old = tl.atomic_or(p, v, mask=m, sem="release")
    elif KIND == "xor":
        old = tl.atomic_xor(p, v, mask=m)
    elif KIND == "add":
        old = tl.atomic_add(p, v, mask=m)
    else:
        old = tl.atomic_xchg(p, v, mask=m, sem="acquire")
    tl.store(Old + offs, old, mask=m)


_COMBINE = {"max": max, "min": min, "and": lambda a, v: a & v, "or": lambda a, v: a | v,
            "xor": lambda a, v: a ^ v, "add": lambda a, v: a + v}


def _reduce(kind: str, mem: torch.Tensor, vals: torch.Tensor, slots: int) -> torch.Tensor:
    """The final memory of any order of the atomics (all kinds but xchg commute)."""
    out = mem.clone()
    for i, v in enumerate(vals.tolist()):
        s = i % slots
        a = out[s].item()
        out[s] = _COMBINE[kind](a, v)
    return out


KINDS = ["max", "min", "and", "or", "xor", "xchg"]
TYPES = {"max": [torch.int32, torch.int64, torch.float32], "min": [torch.int32, torch.int64, torch.float32],
         "and": [torch.int32, torch.int64], "or": [torch.int32, torch.int64], "xor": [torch.int32, torch.int64],
         "xchg": [torch.int32, torch.int64, torch.float32], "add": [torch.int64, torch.float16]}
CASES = [(k, d) for k in [*KINDS, "add"] for d in TYPES[k]]


def _values(dtype: torch.dtype, n: int, g: torch.Generator) -> torch.Tensor:
    if dtype.is_floating_point:
        return (torch.randn(n, generator=g) * 100).to(dtype)
    if dtype == torch.int64:
        return torch.randint(-2**40, 2**40, (n,), generator=g, dtype=dtype)
    return torch.randint(-2**30, 2**30, (n,), generator=g, dtype=dtype)


def _check(kind: str, dtype: torch.dtype, device: str, n: int = 1000, slots: int = 37) -> None:
    g = torch.Generator().manual_seed(n + len(kind))
    if kind == "add" and dtype == torch.float16:
        vals = torch.randint(-8, 8, (n,), generator=g).to(dtype)  # exact in fp16 in any order
        mem = torch.randint(-8, 8, (slots,), generator=g).to(dtype)
    else:
        vals, mem = _values(dtype, n, g), _values(dtype, slots, g)
    old = torch.full((n,), 3, dtype=dtype)
    mem_d, old_d = mem.clone().to(device), old.to(device)
    rmw[((n + 127) // 128,)](mem_d, vals.to(device), old_d, n, slots, KIND=kind, BLOCK=128)
    got, olds = mem_d.cpu(), old_d.cpu()
    if kind == "xchg":  # memory holds one of the values written there; olds + final = initial + writes
        for s in range(slots):
            seen = sorted([mem[s].item(), *vals[s::slots].tolist()])
            assert sorted([*olds[s::slots].tolist(), got[s].item()]) == seen, s
        return
    assert torch.equal(got, _reduce(kind, mem, vals, slots)), kind
    # each old value is the memory some order of the atomics showed: for the monotone kinds,
    # the old value of an element is never past the final one
    if kind == "max":
        assert bool((olds <= got[torch.arange(n) % slots]).all())
    if kind == "min":
        assert bool((olds >= got[torch.arange(n) % slots]).all())


@pytest.mark.parametrize("kind, dtype", CASES, ids=[f"{k}-{str(d)[6:]}" for k, d in CASES])
def test_atomics_on_the_interpreter(kind, dtype, monkeypatch):
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    _check(kind, dtype, "cpu", n=300)


def test_interpreter_old_values_are_in_element_order(monkeypatch):
    """Elements hitting one address run one after the other: each sees the previous result."""
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    mem = torch.tensor([0], dtype=torch.int32)
    vals = torch.tensor([5, 3, 9, 1], dtype=torch.int32)
    old = torch.full((4,), -1, dtype=torch.int32)
    rmw[(1,)](mem, vals, old, 4, 1, KIND="max", BLOCK=4)
    assert old.tolist() == [0, 5, 5, 9] and mem.item() == 9


def test_float_max_orders_negative_values(monkeypatch):
    """The integer trick's cases: negative into positive, negative into negative, -0.0 vs +0.0."""
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    mem = torch.tensor([1.0, -5.0, -5.0, 0.0])
    vals = torch.tensor([-2.0, -3.0, -7.0, -0.0])
    old = torch.zeros(4)
    rmw[(1,)](mem, vals, old, 4, 4, KIND="max", BLOCK=4)
    assert mem.tolist() == [1.0, -3.0, -5.0, 0.0] and old.tolist() == [1.0, -5.0, -5.0, 0.0]


@sparsecc.jit
def lock_sum(Lock, Taken, Total, X, BLOCK: tl.constexpr):
    """Each program adds its sum; one that takes the lock (atomic_cas 0 -> 1) also counts itself
    in Taken and releases it (atomic_xchg back to 0)."""
    pid = tl.program_id(0)
    s = tl.sum(tl.load(X + pid * BLOCK + tl.arange(0, BLOCK)), axis=0)
    got = tl.atomic_cas(Lock, 0, 1, sem="acquire")
    if got == 0:
        tl.atomic_add(Taken, 1)
        tl.atomic_xchg(Lock, 0, sem="release")
    tl.atomic_add(Total, s)


def _lock_sum(device: str, programs: int) -> None:
    x = torch.randint(-100, 100, (programs * 64,), dtype=torch.int32, device=device)
    lock, taken, total = (torch.zeros(1, dtype=torch.int32, device=device) for _ in range(3))
    lock_sum[(programs,)](lock, taken, total, x, BLOCK=64)
    assert lock.item() == 0 and total.item() == int(x.sum())
    assert 1 <= taken.item() <= programs
    if device == "cpu":  # programs run one after the other: each finds the lock free
        assert taken.item() == programs


def test_cas_and_xchg_lock_on_the_interpreter(monkeypatch):
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    _lock_sum("cpu", 8)


@sparsecc.jit
def cas_slots(Mem, Cmp, Val, Old, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    old = tl.atomic_cas(Mem + offs, tl.load(Cmp + offs, mask=m, other=0), tl.load(Val + offs, mask=m, other=0))
    tl.store(Old + offs, old, mask=m)


@pytest.mark.parametrize("dtype", [torch.int32, torch.float32, torch.int64, torch.float16])
def test_cas_on_the_interpreter(dtype, monkeypatch):
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    _check_cas(dtype, "cpu")


def test_cas_prints_the_compare_value_before_the_new_one():
    """Regression (wrong results on the H100 for every dtype): PTX's `atom.cas d, [a], b, c`
    compares with b and stores c; the printer had the two swapped."""
    sig = {"Mem": "*i32:16", "Cmp": "*i32:16", "Val": "*i32:16", "Old": "*i32:16", "n": "i32:16"}
    ptx = sparsecc.compile(cas_slots, sig, {"BLOCK": 64}, target="sm_90a").asm["ptx"]
    regs = {}
    for line in ptx.splitlines():  # the registers each vector load fills, by its address
        if "ld.global.v4.b32" in line:
            regs[len(regs)] = re.findall(r"%r\d+", line.split("{")[1].split("}")[0])
    cmp_regs, val_regs = regs[0], regs[1]  # Cmp is loaded first, then Val
    cas = [ln for ln in ptx.splitlines() if "atom.acq_rel.gpu.global.cas.b32" in ln]
    assert len(cas) == 4
    for line, c, v in zip(cas, cmp_regs, val_regs):
        assert line.rstrip(";").split(", ")[-2:] == [c, v], line
    # 64 elements over 128 threads: two threads hold each one, and only the thread that issued
    # the atomic has its old value; the store of the old values is that thread's alone
    # (regression: the copy's thread stored garbage over it on the H100)
    (store,) = [ln for ln in ptx.splitlines() if "st.global" in ln]
    (load_pred,) = {ln.split()[0] for ln in ptx.splitlines() if "ld.global.v4" in ln}
    assert store.split()[0] != load_pred, store


def _check_cas(dtype: torch.dtype, device: str, n: int = 256) -> None:
    g = torch.Generator().manual_seed(7)
    mem = torch.randint(0, 4, (n,), generator=g).to(dtype)
    cmp = torch.randint(0, 4, (n,), generator=g).to(dtype)
    val = torch.randint(10, 20, (n,), generator=g).to(dtype)
    old = torch.full((n,), -1).to(dtype)
    m, o = mem.clone().to(device), old.to(device)
    cas_slots[(n // 64,)](m, cmp.to(device), val.to(device), o, n, BLOCK=64)
    assert torch.equal(o.cpu(), mem)
    assert torch.equal(m.cpu(), torch.where(mem == cmp, val, mem))


@sparsecc.jit
def dot_into_pointers(A, B, C, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """A dot's result added through a tensor of pointers with no mask (each program once)."""
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.dot(tl.load(A + rm[:, None] * BK + rk[None, :]), tl.load(B + rk[:, None] * BN + rn[None, :]))
    tl.atomic_add(C + rm[:, None] * BN + rn[None, :], acc)


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_unmasked_atomic_add_of_a_dot_compiles(target):
    """Regression: the lowering built ptx.atom.global.add without its (empty) mask operand group
    ("ValueError: Expected 3 operand, but got 2") when no mask and no replica guard applied."""
    ck = sparsecc.compile(dot_into_pointers, {"A": "*fp16", "B": "*fp16", "C": "*fp32"},
                          {"BM": 64, "BN": 64, "BK": 32}, target=target)
    assert "atom.acq_rel.gpu.global.add.f32" in ck.asm["ptx"] and isinstance(ck.asm["cubin"], bytes)


def _dot_into_pointers(device: str) -> None:
    g = torch.Generator().manual_seed(3)
    a = torch.randn(64, 32, generator=g).half().to(device)
    b = torch.randn(32, 64, generator=g).half().to(device)
    c = torch.randn(64, 64, generator=g).to(device)
    ref = c.cpu() + 3 * (a.float() @ b.float()).cpu()
    dot_into_pointers[(3,)](a, b, c, BM=64, BN=64, BK=32)
    torch.testing.assert_close(c.cpu(), ref, rtol=1e-3, atol=1e-3)


def test_unmasked_atomic_add_of_a_dot_on_the_interpreter(monkeypatch):
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    _dot_into_pointers("cpu")


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_atomics_assemble(target):
    names = {"max": ("max.s32", "max.s64", "max.s32"), "min": ("min.s32", "min.s64", "max.u32"),
             "and": ("and.b32", "and.b64"), "or": ("or.b32", "or.b64"), "xor": ("xor.b32", "xor.b64"),
             "xchg": ("exch.b32", "exch.b64", "exch.b32"), "add": ("add.u64", "add.noftz.f16")}
    sig = {torch.int32: "i32", torch.int64: "i64", torch.float32: "fp32", torch.float16: "fp16"}
    for kind, dtypes in TYPES.items():
        for dtype, instr in zip(dtypes, names[kind]):
            t = sig[dtype]
            ck = sparsecc.compile(rmw, {"Mem": f"*{t}", "Val": f"*{t}", "Old": f"*{t}", "n": "i32", "slots": "i32"},
                                  {"KIND": kind, "BLOCK": 128}, target=target)
            assert f".global.{instr}" in ck.asm["ptx"], (kind, dtype)
            assert isinstance(ck.asm["cubin"], bytes)
    for t in ("i32", "fp32", "i64", "fp16"):
        ck = sparsecc.compile(cas_slots, {"Mem": f"*{t}", "Cmp": f"*{t}", "Val": f"*{t}", "Old": f"*{t}", "n": "i32"},
                              {"BLOCK": 64}, target=target)
        assert "atom.acq_rel.gpu.global.cas.b" in ck.asm["ptx"]
    ck = sparsecc.compile(lock_sum, {"Lock": "*i32", "Taken": "*i32", "Total": "*i32", "X": "*i32"}, {"BLOCK": 64},
                          target=target)
    assert "atom.acquire.gpu.global.cas.b32" in ck.asm["ptx"] and "atom.release.gpu.global.exch.b32" in ck.asm["ptx"]


def test_atomic_errors_name_the_problem():
    sig = {"Mem": "*fp32", "Val": "*fp32", "Old": "*fp32", "n": "i32", "slots": "i32"}
    with pytest.raises(CompilationError, match="tl.atomic_and supports i32, i64 memory, got fp32") as e:
        sparsecc.compile(rmw, sig, {"KIND": "and", "BLOCK": 128})
    assert "tl.atomic_and(p, v, mask=m)" in str(e.value)

    @sparsecc.jit
    def sys_scope(C):
        tl.atomic_max(C, 1, scope="sys")

    with pytest.raises(CompilationError, match="scope='sys' is not supported"):
        sparsecc.compile(sys_scope, {"C": "*i32"}, {})

    @sparsecc.jit
    def bf16_add(C):
        tl.atomic_add(C, 1.0)

    with pytest.raises(CompilationError, match="needs sm_90"):
        sparsecc.compile(bf16_add, {"C": "*bf16"}, {}, target="sm_80")


@pytest.mark.gpu
@pytest.mark.parametrize("kind, dtype", CASES, ids=[f"{k}-{str(d)[6:]}" for k, d in CASES])
def test_atomics_on_the_gpu(kind, dtype):
    _check(kind, dtype, "cuda", n=5000)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.int32, torch.float32, torch.int64, torch.float16])
def test_cas_on_the_gpu(dtype):
    _check_cas(dtype, "cuda", n=4096)


@pytest.mark.gpu
def test_lock_and_dot_atomics_on_the_gpu():
    _lock_sum("cuda", 300)
    _dot_into_pointers("cuda")
