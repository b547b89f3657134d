"""The byte picking of the fragment dequantization (`lower_quant.CHUNK_TEMPLATE`), on the CPU: the
PTX emulator (test/python/ptx_emulator.py) runs the PTX it emits (prmt, and, shr, lop3) and checks,
for every thread t of a quad and random 16-byte code chunks, that the thread gets the f16 pairs of
exactly the kept columns its mma.sp A fragment holds (2t, 2t + 1 and 8 + 2t, 9 + 2t of each
16-column step): 1024 + code for 8-bit codes, {1024 + lo, 64 + hi} for 4-bit ones, from which
subtracting the offsets (also emulated here, for every code and zero point) leaves `code - zero`
exactly.
The GPU suite runs the same code on the tensor cores; this keeps CI from missing a wrong selector
or a rounding."""

from __future__ import annotations

import random
import re

import numpy as np
import pytest
from ptx_emulator import PtxThread

from sparsecc.codegen import lower_quant
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


def _f16(x: float) -> int:
    return int(np.array([x], dtype=np.float16).view(np.uint16)[0])


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
                want = [(0x6400 | chunk[j] & 0xF) | (0x5400 | chunk[j] & 0xF0) << 16 for j in (t, 4 + t, 8 + t, 12 + t)]
            else:  # byte j is kept column j
                want = [_pair(chunk[2 * t], chunk[2 * t + 1]), _pair(chunk[8 + 2 * t], chunk[9 + 2 * t])]
            assert got == want, f"{bits}-bit codes, thread t = {t}"


@pytest.mark.parametrize("zero", [None, *range(16)])
def test_nibble_pairs_become_code_minus_zero_exactly(zero):
    """Every 4-bit code pair (lo, hi) and zero point (None: the fixed 8): {1024 + lo, 64 + hi}
    less the offsets is {lo - zero, hi - zero} bit for bit, and with a scale the product rounded
    once, as the interpreter's `(code - zero) * scale`."""
    if zero is None:
        offsets, z = lower_quant.NIBBLE_FIXED_OFFSETS, 8
    else:
        (offsets,) = _run(lower_quant.NIBBLE_OFFSETS, [_f16(zero)], 1)
        z = zero
    scale = np.float16(0.0137)
    scales = _f16(scale) * 0x10001
    for lo in range(16):
        for hi in range(16):
            raw = (0x6400 | lo) | (0x5400 | hi << 4) << 16
            (got,) = _run(lower_quant._ZERO_PAIR, [raw, offsets], 1)
            assert got == _f16(lo - z) | _f16(hi - z) << 16, (lo, hi, z)
            (got,) = _run(lower_quant._SCALE_PAIR, [raw, offsets, scales], 1)
            want = [_f16(np.float16(c - z) * scale) for c in (lo, hi)]
            assert got == want[0] | want[1] << 16, (lo, hi, z)


def test_the_templates_use_only_what_the_emulator_knows():
    for template in CHUNK_TEMPLATE.values():
        ops = set(re.findall(r"^\s*([a-z][\w.]*)\s", template, re.M))
        assert ops <= {"prmt.b32", "and.b32", "shr.b32", "lop3.b32"}, ops
