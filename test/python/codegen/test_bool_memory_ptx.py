"""Bool tensors on the GPU are 0/1 bytes (passes/bool_memory.py): the PTX of a kernel that loads
and stores through `*i1` pointers must address one byte per element. Regression: `X + offs`
through a `*i1` pointer was scaled by the i1 element size, 0 bytes, so every thread read and
wrote element 0 (the GPU test `test_bool_tensors_and_arguments_on_the_gpu` saw wrong values).

The addresses are checked by evaluating the kernel's integer and predicate instructions for
every thread of the block (a small straight-line PTX evaluator: loads give unknown values)."""

from __future__ import annotations

import re

import pytest
from kernels import bools

import sparsecc
import sparsecc.language as tl

BLOCK = 128
BASES = [(k + 1) << 32 for k in range(8)]  # the pointer parameters: far apart, so each access names its tensor


@sparsecc.jit
def bool_scalar(X, Out):
    tl.store(Out + 3, tl.load(X + 5) | tl.load(X + 2))


_INSN = re.compile(r"^(@!?%\w+\s+)?([\w.]+)\s*(.*?);$")
_CMP = {"lt": lambda a, b: a < b, "lo": lambda a, b: a < b, "le": lambda a, b: a <= b, "ls": lambda a, b: a <= b,
        "gt": lambda a, b: a > b, "hi": lambda a, b: a > b, "ge": lambda a, b: a >= b, "hs": lambda a, b: a >= b,
        "eq": lambda a, b: a == b, "ne": lambda a, b: a != b}
_BIN = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b, "and": lambda a, b: a & b,
        "or": lambda a, b: a | b, "xor": lambda a, b: a ^ b, "shl": lambda a, b: a << b, "shr": lambda a, b: a >> b}


def _accesses(ptx: str, tid: int, ctaid: int, params: dict[str, int]) -> list[tuple[str, int, bool]]:
    """(instruction, byte address, predicate) of every global access one thread makes; the
    integer and predicate instructions are evaluated, anything else leaves its result unknown."""
    env: dict[str, object] = {"%tid.x": tid, "%ctaid.x": ctaid}

    def val(tok: str) -> object:
        tok = tok.strip()
        if tok in env:
            return env[tok]
        if re.fullmatch(r"-?\d+", tok):
            return int(tok)
        return None

    out = []
    for line in ptx.splitlines():
        m = _INSN.match(line.strip())
        if not m:
            continue
        guard, opcode, rest = m.group(1), m.group(2), m.group(3)
        args = [a.strip() for a in rest.split(",")] if rest else []
        head = opcode.split(".")[0]
        if head == "ld" and ".param" in opcode:
            env[args[0]] = params[args[1].strip("[]")]
            continue
        if head in ("ld", "st") and ".global" in opcode:
            addr = next(a for a in args if a.startswith("["))
            p = True if guard is None else env.get(guard.strip().lstrip("@!"))
            if guard is not None and guard.strip().startswith("@!") and p is not None:
                p = not p
            out.append((opcode, val(addr.strip("[]")), p))
            for a in args[:args.index(addr)] if head == "ld" else []:  # the loaded registers
                env[a.strip("{} ")] = None
            continue
        if not args:
            continue
        dst, srcs = args[0], [val(a) for a in args[1:]]
        if guard is not None or any(s is None for s in srcs):
            env[dst] = None
        elif head in ("mov", "cvt"):
            env[dst] = srcs[0]
        elif head == "setp":
            env[dst] = _CMP[opcode.split(".")[1]](*srcs)
        elif head == "selp":
            env[dst] = srcs[0] if srcs[2] else srcs[1]
        elif head in _BIN and ".pred" in opcode:
            env[dst] = bool(_BIN[head](*srcs))
        elif head in _BIN:
            env[dst] = _BIN[head](*srcs)
        else:
            env[dst] = None
    return out


def _params(ptx: str, values: list[int]) -> dict[str, int]:
    names = re.findall(r"\.param \.\w+ (\w+)", ptx)
    return dict(zip(names, values, strict=True))


@pytest.mark.parametrize("target", ["sm_90a", "sm_80"])
def test_bool_loads_and_stores_address_one_byte_per_element(target):
    ck = sparsecc.compile(bools, {"X": "*i1", "Y": "*i1", "A": "*fp32", "And": "*i1", "Pick": "*fp32",
                                  "Less": "*i1", "flag": "i1", "n": "i32"}, {"BLOCK": BLOCK}, target=target)
    ptx = ck.asm["ptx"]
    assert isinstance(ck.asm["cubin"], bytes)
    n = 2 * BLOCK + 37  # program 2 is ragged: 37 live elements
    params = _params(ptx, BASES[:6] + [1, n])
    for program, live in ((1, BLOCK), (2, 37)):
        seen: dict[tuple[int, str], list[int]] = {}  # (tensor, ld/st) -> element offsets accessed
        for tid in range(BLOCK):
            for opcode, addr, pred in _accesses(ptx, tid, program, params):
                assert addr is not None, f"{opcode}: the address is not computed from the thread's index"
                if not pred:
                    continue
                k = addr // (1 << 32) - 1
                width = 1 if k in (0, 1, 3, 5) else 4  # the bool tensors are bytes, A and Pick fp32
                assert ".b8" in opcode or width == 4, opcode
                vec = int(re.search(r"\.v(\d)", opcode).group(1)) if ".v" in opcode else 1
                first = (addr - BASES[k]) // width - program * BLOCK
                seen.setdefault((k, opcode[:2]), []).extend(range(first, first + vec))
        expect = list(range(live))
        for k, what in ((0, "ld"), (1, "ld"), (2, "ld")):
            assert sorted(set(seen[(k, what)])) == expect, f"tensor {k}: loads of the wrong elements"
        for k in (3, 4, 5):  # each element stored exactly once, by one thread
            assert sorted(seen[(k, "st")]) == expect, f"tensor {k}: stores of the wrong elements"


def test_scalar_bool_pointer_offsets_are_bytes():
    ck = sparsecc.compile(bool_scalar, {"X": "*i1", "Out": "*i1"}, {}, target="sm_90a")
    ptx = ck.asm["ptx"]
    acc = [(op, addr) for op, addr, pred in _accesses(ptx, 0, 0, _params(ptx, BASES[:2])) if pred]
    assert sorted(addr - BASES[0] for op, addr in acc if op.startswith("ld")) == [2, 5]
    assert [addr - BASES[1] for op, addr in acc if op.startswith("st")] == [3]
    assert all(".b8" in op for op, _ in acc)
