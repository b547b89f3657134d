"""Integer division and remainder by a constant in PTX: unsigned by a power of two as a shift or
a mask, any other constant divisor as an immediate (ptxas then multiplies by its reciprocal),
a divisor only known at run time through a register. A divisor held in a register, even one
set to a constant, made ptxas keep a real division (MUFU.RCP and a correction step) in every
trip of the TMA pipelines' ring-phase computation `i / stages`. Checked on the PTX text, with
ptxas, and by the interpreter's values for the same kernel (the semantics the lowering keeps)."""

from __future__ import annotations

import re

import pytest
import torch
from ptxas_tools import needs_ptxas

import sparsecc
import sparsecc.language as tl
from sparsecc.codegen import ptxas


@sparsecc.jit
def divide_kernel(Y, n):
    i = tl.arange(0, 128)
    u = i.to(tl.uint32)
    q = (u // 8).to(tl.int32) + (u % 8).to(tl.int32) * 100       # unsigned, a power of two
    r = ((i - 64) // 3) * 10000 + ((i - 64) % 5) * 1000000          # signed, other constants
    tl.store(Y + i, q + r + (i % n) * 100000000)                    # a run-time divisor


SIG = {"Y": "*i32", "n": "i32"}


def _ptx(target: str = "sm_90a") -> str:
    return str(sparsecc.compile(divide_kernel, SIG, {}, target=target, num_warps=4).asm["ptx"])


def test_constant_divisors_are_immediates_or_shifts():
    ptx = _ptx()
    assert re.search(r"shr\.b32 %r\d+, %r\d+, 3;", ptx), "u // 8 is a shift by 3"
    assert re.search(r"and\.b32 %r\d+, %r\d+, 7;", ptx), "u % 8 is a mask of 7"
    assert re.search(r"div\.s32 %r\d+, %r\d+, 3;", ptx) and re.search(r"rem\.s32 %r\d+, %r\d+, 5;", ptx)
    by_register = re.findall(r"(div|rem)\.([su])32 %r\d+, %r\d+, %r\d+;", ptx)
    # only `i % n` divides by a register: once for each of a thread's values, as `% 5` does
    assert by_register and set(by_register) == {("rem", "s")}, by_register
    assert len(by_register) == len(re.findall(r"rem\.s32 %r\d+, %r\d+, 5;", ptx))


@needs_ptxas
@pytest.mark.parametrize("target", ["sm_90a", "sm_80"])
def test_the_kernel_assembles(target):
    ptxas.assemble(_ptx(target), target)


def test_the_values_on_the_interpreter(monkeypatch):
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    y = torch.zeros(128, dtype=torch.int32)
    divide_kernel[(1,)](y, 7)
    i = torch.arange(128, dtype=torch.int64)
    s = i - 64
    trunc_div = torch.div(s, 3, rounding_mode="trunc")  # Triton's // and % on signed ints truncate
    trunc_rem = s - torch.div(s, 5, rounding_mode="trunc") * 5
    want = (i // 8) + (i % 8) * 100 + trunc_div * 10000 + trunc_rem * 1000000 + (i % 7) * 100000000
    assert torch.equal(y.long(), want)
