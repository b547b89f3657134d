"""Integer division and remainder by a constant in PTX (`sparsecc.codegen.constant_division`):
no `div` or `rem` instruction for a constant divisor, because ptxas keeps a real division
(MUFU.RCP and a correction step, or a 64-bit subroutine call) even for an immediate one, in
every trip of the TMA rings' phase `i / stages` and in every kernel's prologue. Checked line by
line on the PTX emulator (ptx_emulator.py) against Python's arithmetic (every width, both
signednesses, edge and random inputs), with ptxas, and by the interpreter's values for a kernel
(the semantics the lowering keeps); a divisor known only at run time still divides."""

from __future__ import annotations

import random
import re

import pytest
import torch
from ptx_emulator import PtxThread, decode
from ptxas_tools import needs_ptxas

import sparsecc
import sparsecc.language as tl
from sparsecc.codegen import ptxas
from sparsecc.codegen.constant_division import constant_division_lines


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


def test_constant_divisors_leave_no_division_instruction():
    ptx = _ptx()
    assert re.search(r"shr\.b32 %r\d+, %r\d+, 3;", ptx), "u // 8 is a shift by 3"
    assert re.search(r"and\.b32 %r\d+, %r\d+, 7;", ptx), "u % 8 is a mask of 7"
    assert re.search(r"mul\.hi\.s32 %r\d+, %r\d+, 1431655766;", ptx), "// 3 multiplies by its magic number"
    assert not re.search(r"(div|rem)\.[su]32 %r\d+, %r\d+, -?\d+;", ptx), "a division by an immediate is left"
    by_register = re.findall(r"(div|rem)\.([su])32 %r\d+, %r\d+, %r\d+;", ptx)
    assert by_register and set(by_register) == {("rem", "s")}, "only `i % n` divides, by a register"


def _evaluate(lines: list[str], w: int, x: int) -> int:
    """What the emitted lines leave in %d for %x = x (as a w-bit pattern), on the PTX emulator."""
    t = PtxThread()
    t.env["%x"] = x & ((1 << w) - 1)
    for line in lines:
        assert decode(line) is not None, line
        t.execute(line)
    return t.env["%d"]


def _lines(opcode: str, letter: str, w: int, d: int) -> list[str]:
    names = iter(f"%t{i}" for i in range(10))
    return constant_division_lines(opcode, letter, w, "%d", "%x", d, names.__next__)


def _inputs(w: int, letter: str, d: int) -> list[int]:
    lo, hi = (-(1 << (w - 1)), (1 << (w - 1)) - 1) if letter == "s" else (0, (1 << w) - 1)
    edges = {lo, lo + 1, hi, hi - 1, 0, 1, 2, d - 1, d, d + 1, -1, -d, -d - 1, -d + 1,
             hi - hi % d, hi - hi % d - 1, lo + d, 2 * d - 1}
    g = random.Random(w * 1000 + d)
    samples = [g.randint(lo, hi) for _ in range(1500)] + [g.randint(-4 * d, 4 * d) for _ in range(300)]
    return sorted(v for v in edges | set(samples) if lo <= v <= hi)


DIVISORS = [1, 2, 3, 5, 6, 7, 10, 16, 24, 25, 100, 125, 256, 641, 1000, 4096, 6700417, 65535, 65537,
            (1 << 31) - 1, 1 << 30, 3 << 29, (1 << 32) - 1, 1 << 40, 10**15 + 37, (1 << 63) - 25, (1 << 64) - 1]


@pytest.mark.parametrize("w", [16, 32, 64])
@pytest.mark.parametrize("letter", ["u", "s"])
def test_every_sequence_matches_the_arithmetic(w, letter):
    checked = 0
    for d in DIVISORS:
        if d >= 1 << (w - (letter == "s")):
            with pytest.raises(ValueError, match="does not fit"):
                _lines("div", letter, w, d)
            continue
        div, rem = _lines("div", letter, w, d), _lines("rem", letter, w, d)
        assert len(div) <= 6 and len(rem) <= 8 and not any(ln.startswith(("div", "rem")) for ln in div + rem)
        for x in _inputs(w, letter, d):
            q = abs(x) // d * (1 if x >= 0 else -1)  # PTX (and Triton) truncate toward zero
            mask = (1 << w) - 1
            assert _evaluate(div, w, x) == q & mask, (letter, w, d, x)
            assert _evaluate(rem, w, x) == (x - q * d) & mask, (letter, w, d, x)
            checked += 1
    assert checked > 10000


@needs_ptxas
def test_every_sequence_assembles():
    """Each form (both opcodes, both signednesses, 16/32/64 bits, power-of-two, small, large and
    negative-magic divisors) in one kernel, which ptxas accepts: the immediates fit their types."""
    body, regs = [], {16: "%rs", 32: "%r", 64: "%rd"}
    n = 0
    for w, prefix in regs.items():
        for letter in ("u", "s"):
            for d in (3, 7, 16, 641, (1 << (w - 1)) - 1):
                for opcode in ("div", "rem"):
                    names = iter(f"{prefix}{100 + n * 10 + i}" for i in range(10))
                    body += constant_division_lines(opcode, letter, w, f"{prefix}{100 + n * 10 + 9}", f"{prefix}1",
                                                    d, names.__next__)
                    body.append(f"add.u{w} {prefix}2, {prefix}2, {prefix}{100 + n * 10 + 9};")
                    n += 1
    ptx = ("\n".join([".version 8.0", ".target sm_90a", ".address_size 64",
                      ".visible .entry k(.param .u64 p)", "{", ".reg .b16 %rs<1000>;", ".reg .b32 %r<1000>;",
                      ".reg .b64 %rd<1000>;", "mov.u32 %r1, %tid.x;", "cvt.u16.u32 %rs1, %r1;",
                      "cvt.u64.u32 %rd1, %r1;", "mov.u16 %rs2, 0;", "mov.u32 %r2, 0;", "mov.u64 %rd2, 0;"])
           + "\n" + "\n".join(body) + "\nld.param.u64 %rd3, [p];\nst.global.u16 [%rd3], %rs2;\n"
           "st.global.u32 [%rd3+4], %r2;\nst.global.u64 [%rd3+8], %rd2;\nret;\n}\n")
    sass = ptxas.dump_sass(ptxas.assemble(ptx, "sm_90a"))
    assert "MUFU.RCP" not in sass and "CALL" not in sass, "a division survived into the SASS"


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
