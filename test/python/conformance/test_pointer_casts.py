"""`.to()` with pointers (tutorial 08's `tl.load(ptrs + g).to(tl.pointer_type(tl.float16))`): an
int64 address to a pointer, a pointer to int64 and back, a pointer to a pointer of another
element type; on the interpreter against torch, assembled for sm_80 and sm_90a, on the GPU."""

from __future__ import annotations

import pytest
import torch

import sparsecc
import sparsecc.language as tl
from sparsecc.frontend.errors import CompilationError


@sparsecc.jit
def gather_rows(Table, Out, n, BLOCK: tl.constexpr):
    """Out[g, :n] = the first n float32 of the tensor whose address is Table[g]."""
    g = tl.program_id(0)
    base = tl.load(Table + g).to(tl.pointer_type(tl.float32))
    offs = tl.arange(0, BLOCK)
    x = tl.load(base + offs, mask=offs < n, other=0.0)
    tl.store(Out + g * BLOCK + offs, x * 2.0 + g, mask=offs < n)


@sparsecc.jit
def per_element_addresses(Addrs, Out, n, BLOCK: tl.constexpr):
    """A tensor of addresses: each element its own pointer."""
    offs = tl.arange(0, BLOCK)
    m = offs < n
    ptrs = tl.load(Addrs + offs, mask=m, other=0).to(tl.pointer_type(tl.float32))
    tl.store(Out + offs, tl.load(ptrs, mask=m), mask=m)


@sparsecc.jit
def round_trip_and_bits(X, Out, Bits, Addr, n, BLOCK: tl.constexpr):
    """ptr -> int64 -> ptr, and a float32 pointer read as int32 (the same address)."""
    offs = tl.arange(0, BLOCK)
    m = offs < n
    addr = X.to(tl.int64)
    tl.store(Addr, addr)
    again = (addr + 4 * 3).to(tl.pointer_type(tl.float32))  # 3 elements on
    tl.store(Out + offs, tl.load(again + offs, mask=m & (offs + 3 < n), other=-1.0), mask=m)
    as_int = X.to(tl.pointer_type(tl.int32))
    tl.store(Bits + offs, tl.load(as_int + offs, mask=m), mask=m)


def _check_gather(device: str) -> None:
    lens = [5, 37, 64]
    srcs = [torch.randn(k + 3, generator=torch.Generator().manual_seed(k)).to(device) for k in lens]
    table = torch.tensor([s.data_ptr() for s in srcs], dtype=torch.int64, device=device)
    out = torch.full((3, 64), float("nan"), device=device)
    gather_rows[(3,)](table, out, 5, BLOCK=64)
    for g, s in enumerate(srcs):
        torch.testing.assert_close(out[g, :5], s[:5] * 2 + g)
    assert out[:, 5:].isnan().all()  # masked off: never written


def _check_per_element(device: str) -> None:
    src = torch.randn(100, generator=torch.Generator().manual_seed(1)).to(device)
    perm = torch.randperm(100, generator=torch.Generator().manual_seed(2))[:50].to(device)
    addrs = src.data_ptr() + perm * 4
    out = torch.full((50,), float("nan"), device=device)
    per_element_addresses[(1,)](addrs, out, 50, BLOCK=64)
    torch.testing.assert_close(out, src[perm])


def _check_round_trip(device: str) -> None:
    x = torch.randn(40, generator=torch.Generator().manual_seed(3)).to(device)
    out = torch.full_like(x, float("nan"))
    bits = torch.full((40,), -7, dtype=torch.int32, device=device)
    addr = torch.zeros(1, dtype=torch.int64, device=device)
    round_trip_and_bits[(1,)](x, out, bits, addr, 40, BLOCK=64)
    torch.testing.assert_close(out[:37], x[3:])
    assert (out[37:] == -1).all()
    assert torch.equal(bits, x.view(torch.int32))
    if device == "cuda":
        assert addr.item() == x.data_ptr()


@pytest.mark.parametrize("check", [_check_gather, _check_per_element, _check_round_trip])
def test_pointer_casts_on_the_interpreter(check, monkeypatch):
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    check("cpu")


def test_an_address_of_no_tensor_is_an_interpreter_error(monkeypatch):
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    table = torch.tensor([16], dtype=torch.int64)
    with pytest.raises(Exception, match=r"address 0x10 is in no live torch tensor's memory"):
        gather_rows[(1,)](table, torch.empty(64), 5, BLOCK=64)


def test_a_load_past_the_addressed_storage_is_an_interpreter_error(monkeypatch):
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    src = torch.randn(3)
    table = torch.tensor([src.data_ptr()], dtype=torch.int64)
    with pytest.raises(Exception, match="out-of-bounds load"):
        gather_rows[(1,)](table, torch.empty(64), 5, BLOCK=64)


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_pointer_casts_assemble(target):
    for kernel, sig in [(gather_rows, {"Table": "*i64", "Out": "*fp32", "n": "i32"}),
                        (per_element_addresses, {"Addrs": "*i64", "Out": "*fp32", "n": "i32"}),
                        (round_trip_and_bits, {"X": "*fp32", "Out": "*fp32", "Bits": "*i32", "Addr": "*i64",
                                               "n": "i32"})]:
        ck = sparsecc.compile(kernel, sig, {"BLOCK": 64}, target=target)
        assert isinstance(ck.asm["cubin"], bytes)


def test_pointer_cast_errors_name_the_conversion():
    @sparsecc.jit
    def from_i32(T, n: tl.constexpr):
        p = tl.load(T).to(tl.pointer_type(tl.float32))
        tl.store(p, 1.0)

    with pytest.raises(CompilationError, match=r"only a 64-bit integer \(tl.int64 or tl.uint64\) converts to a "
                                               r"pointer, got i32") as e:
        sparsecc.compile(from_i32, {"T": "*i32"}, {"n": 1})
    assert "test_pointer_casts.py:" in str(e.value)

    @sparsecc.jit
    def to_float(T, n: tl.constexpr):
        tl.store(T, T.to(tl.float32))

    with pytest.raises(CompilationError, match=r"a pointer converts only to tl.int64 or tl.uint64"):
        sparsecc.compile(to_float, {"T": "*fp32"}, {"n": 1})

    @sparsecc.jit
    def sparse(T, Out, n: tl.constexpr):
        tl.store(Out, T.to(tl.int64))

    with pytest.raises(CompilationError, match=r"2:4-sparse pointer's address is not a plain address"):
        sparsecc.compile(sparse, {"T": "*fp16:NV24", "Out": "*i64"}, {"n": 1})


@pytest.mark.gpu
@pytest.mark.parametrize("check", [_check_gather, _check_per_element, _check_round_trip])
def test_pointer_casts_on_the_gpu(check):
    check("cuda")


@pytest.mark.gpu
@pytest.mark.parametrize("check", [_check_gather, _check_per_element])
def test_pointer_casts_interpreted_on_gpu_tensors(check, monkeypatch):
    """The interpreter on CUDA tensors: the addressed storages are copied and written back."""
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    check("cuda")


def test_masked_off_null_addresses_are_never_resolved(monkeypatch):
    """`tl.load(addrs, mask=m, other=0)` gives masked-off lanes the address 0: the cast must accept
    them (only an access through them would be an error), even in the first lane."""
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    src = torch.randn(64, generator=torch.Generator().manual_seed(4))
    addrs = src.data_ptr() + torch.arange(64) * 4
    addrs[:7] = 0
    out = torch.full((64,), float("nan"))

    @sparsecc.jit
    def skip_nulls(Addrs, Out, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        a = tl.load(Addrs + offs, mask=offs < n)
        ptrs = a.to(tl.pointer_type(tl.float32))
        tl.store(Out + offs, tl.load(ptrs, mask=a != 0, other=-1.0), mask=offs < n)

    skip_nulls[(1,)](addrs, out, 64, BLOCK=64)
    assert (out[:7] == -1).all() and torch.equal(out[7:], src[7:])
