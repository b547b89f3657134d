"""The byte picking of the fragment dequantization (`lower_quant.CHUNK_TEMPLATE`), on the CPU: the
PTX emulator (test/python/ptx_emulator.py) runs the PTX it emits (prmt, and, shr) and checks, for
every thread t of a quad and random 16-byte code chunks, that the thread gets the f16 pairs 1024 +
code of exactly the kept columns its mma.sp A fragment holds (2t, 2t + 1 and 8 + 2t, 9 + 2t of each
16-column step). The GPU suite runs the same code on the tensor cores; this keeps CI from missing a
wrong selector."""

from __future__ import annotations

import random
import re

import pytest
from ptx_emulator import PtxThread

from sparsecc.codegen.lower_quant import CHUNK_SELECTOR, CHUNK_TEMPLATE


def _run(template: str, args: list[int], outputs: int) -> list[int]:
    """Emulate `template` with $0..$(outputs-1) as results and the rest as `args`."""
    t = PtxThread()
    t.env.update({f"${outputs + i}": v for i, v in enumerate(args)})
    for line in template.splitlines():
        t.execute(line.strip())
    return [t.env[f"${i}"] for i in range(outputs)]


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
