"""The byte picking of the fragment dequantization (`lower_quant.CHUNK_TEMPLATE`), on the CPU: a
small emulator of the PTX it emits (prmt, and, shr) checks, for every thread t of a quad and
random 16-byte code chunks, that the thread gets the f16 pairs 1024 + code of exactly the kept
columns its mma.sp A fragment holds (2t, 2t + 1 and 8 + 2t, 9 + 2t of each 16-column step). The
GPU suite runs the same code on the tensor cores; this keeps CI from missing a wrong selector."""

from __future__ import annotations

import random
import re

import pytest

from sparsecc.codegen.lower_quant import CHUNK_SELECTOR, CHUNK_TEMPLATE


def prmt(a: int, b: int, c: int) -> int:
    """PTX prmt.b32 (default mode): result byte i is byte (c >> 4i) & 7 of {b, a}, or the
    replicated sign of that byte when bit 3 of the selector nibble is set."""
    pool = ((b & 0xFFFFFFFF) << 32 | (a & 0xFFFFFFFF)).to_bytes(8, "little")
    out = 0
    for i in range(4):
        nib = (c >> (4 * i)) & 0xF
        byte = pool[nib & 7]
        if nib & 8:
            byte = 0xFF if byte & 0x80 else 0
        out |= byte << (8 * i)
    return out


def _run(template: str, args: list[int], outputs: int) -> list[int]:
    """Emulate `template` with $0..$(outputs-1) as results and the rest as `args`."""
    regs: dict[str, int] = {f"${outputs + i}": v for i, v in enumerate(args)}

    def val(tok: str) -> int:
        return int(tok, 0) if tok[0].isdigit() else regs[tok]

    for line in template.splitlines():
        line = line.strip().rstrip(";")
        if not line or line in "{}" or line.startswith(".reg"):
            continue
        op, rest = line.split(None, 1)
        dst, *src = [t.strip() for t in rest.split(",")]
        if op == "prmt.b32":
            regs[dst] = prmt(val(src[0]), val(src[1]), val(src[2]))
        elif op == "and.b32":
            regs[dst] = val(src[0]) & val(src[1])
        elif op == "shr.b32":
            regs[dst] = (val(src[0]) & 0xFFFFFFFF) >> val(src[1])
        else:
            raise AssertionError(f"the emulator does not know {op}")
    return [regs[f"${i}"] for i in range(outputs)]


def _pair(lo: int, hi: int) -> int:
    return (0x6400 | lo) | (0x6400 | hi) << 16


@pytest.mark.parametrize("bits", [4, 8])
def test_each_thread_gets_its_fragment_columns(bits):
    rng = random.Random(bits)
    a, b = CHUNK_SELECTOR[bits]
    for _ in range(200):
        chunk = bytes(rng.randrange(256) for _ in range(16))
        words = [int.from_bytes(chunk[4 * i:4 * i + 4], "little") for i in range(4)]
        for t in range(4):
            got = _run(CHUNK_TEMPLATE[bits], [*words, t * a + b], 16 // bits)
            if bits == 4:  # byte j holds kept columns 2j (low nibble) and 2j + 1 of the chunk
                want = [_pair(chunk[j] & 0xF, chunk[j] >> 4) for j in (t, 4 + t, 8 + t, 12 + t)]
            else:  # byte j is kept column j
                want = [_pair(chunk[2 * t], chunk[2 * t + 1]), _pair(chunk[8 + 2 * t], chunk[9 + 2 * t])]
            assert got == want, f"{bits}-bit codes, thread t = {t}"


def test_the_templates_use_only_what_the_emulator_knows():
    for template in CHUNK_TEMPLATE.values():
        ops = set(re.findall(r"^\s*([a-z][\w.]*)\s", template, re.M))
        assert ops <= {"prmt.b32", "and.b32", "shr.b32"}, ops
