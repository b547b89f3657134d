"""A PTX emulator for CPU tests: one thread of emitted PTX, run line by line on Python ints, to
check what the code computes without a GPU. Used by codegen/test_wgmma_descriptor_reads.py
(which element each wgmma reads), codegen/test_quant_wgmma_fragments.py (the dequantized A
fragments of wgmma) and codegen/test_quant_fragments.py (lower_quant's inline-asm templates).

The subset it executes; any other instruction leaves its destination None ("unknown"), and an
unknown operand makes the result unknown too:

- control: labels, `bra`, guards `@%p` / `@!%p` (the predicate must be known). `run` starts at
  the top and stops at the first `$L__loopN:` label (`until="loop"`: the prologue) or at that
  loop's back edge (`until="back_edge"`: the prologue and the first pass of the body);
  `run_phase` runs on to the next barrier or mbarrier wait, so that the threads of a CTA can run
  a whole K loop in lockstep.
- memory: `ld.param`; `ld.global` / `ld.shared` and `st.shared`, scalar or `{...}` vectors;
  `st.global` is recorded (`global_stores`: address, value, bytes), not written;
  `cp.async.{ca,cg}.shared.global` with its optional src-size (the rest zero-filled);
  `mbarrier.try_wait` succeeds (the run is sequential: every copy has landed). Memories are dicts
  address -> byte; a subclass changes what loads, stores and copies hold (`load`, `store`, `copy`).
- integers: mov (any value, unchanged; into `{lo, hi}`: unpacked), integer cvt and cvta (the value unchanged), setp (`.s32`
  compares signed), selp, mad, add sub mul div rem min max and or xor shl shr, each result
  wrapped to its type's width (16, 32 or 64 bits; `.wide` results are not); prmt.b32 in its
  default mode; lop3.b32.
- f16: add / sub / mul / fma `.f16x2` and `add.rn.f16` / `sub.rn.f16`, one rounding per operation
  as the hardware does (numpy float16); `{lo, hi}` operands pack two 16-bit registers.
- wgmma.mma_async: not computed; recorded as (opcode, values of its operands after the
  destination, a `{...}` list as a list) for the test to check.

Not executed (unknown results): other float arithmetic, conversions to or from floats, shuffles,
ldmatrix and stmatrix; barriers and fences are no-ops.

    t = PtxThread(tid=0, params={"x_ptr": 1 << 32}, glob=image, shared={})
    wgmmas = t.run([ln.strip() for ln in ptx.splitlines()], until="back_edge")
"""

from __future__ import annotations

import functools
import re
from collections.abc import MutableMapping

import numpy as np

INSN = re.compile(r"^(@!?%\w+\s+)?([\w.:]+)\s*(.*?);$")
"""One instruction line (stripped): (guard, opcode, operands)."""

M32, M64 = (1 << 32) - 1, (1 << 64) - 1
_MASK = {"16": 0xFFFF, "32": M32, "64": M64}
_CMP = {"lt": lambda a, b: a < b, "lo": lambda a, b: a < b, "le": lambda a, b: a <= b, "ls": lambda a, b: a <= b,
        "gt": lambda a, b: a > b, "hi": lambda a, b: a > b, "ge": lambda a, b: a >= b, "hs": lambda a, b: a >= b,
        "eq": lambda a, b: a == b, "ne": lambda a, b: a != b}
_BIN = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b, "and": lambda a, b: a & b,
        "or": lambda a, b: a | b, "xor": lambda a, b: a ^ b, "shl": lambda a, b: a << b, "shr": lambda a, b: a >> b,
        "div": lambda a, b: a // b, "rem": lambda a, b: a % b, "min": min, "max": max}
_F16X2 = {"sub.f16x2": np.subtract, "mul.rn.f16x2": np.multiply, "add.rn.f16x2": np.add}
_NO_OPS = ("wgmma", "cp", "bar", "fence", "st", "ld", "ldmatrix", "stmatrix", "ret", "mbarrier")

Wgmma = tuple[str, list]
"""A recorded wgmma.mma_async: (opcode, operand values)."""


def split_operands(rest: str) -> list[str]:
    """The operands of an instruction, with `{...}` lists kept whole."""
    out, depth, cur = [], 0, ""
    for ch in rest:
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
            continue
        depth += ch == "{"
        depth -= ch == "}"
        cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def prmt(a: int, b: int, c: int) -> int:
    """PTX prmt.b32 (default mode): result byte i is byte (c >> 4i) & 7 of {b, a}, or the
    replicated sign of that byte when bit 3 of the selector nibble is set."""
    pool = ((b & M32) << 32 | (a & M32)).to_bytes(8, "little")
    out = 0
    for i in range(4):
        nib = (c >> (4 * i)) & 0xF
        byte = pool[nib & 7]
        if nib & 8:
            byte = 0xFF if byte & 0x80 else 0
        out |= byte << (8 * i)
    return out


def lop3(a: int, b: int, c: int, lut: int) -> int:
    """PTX lop3.b32: bit by bit, the bit of `lut` that (a, b, c) index."""
    out = 0
    for i in range(8):
        if lut >> i & 1:
            out |= (a if i & 4 else ~a) & (b if i & 2 else ~b) & (c if i & 1 else ~c)
    return out & M32


def f16(bits: int) -> np.float16:
    """The float16 whose bits are the low 16 of `bits`."""
    return np.array([bits & 0xFFFF], dtype=np.uint16).view(np.float16)[0]


def f16_bits(x: np.float16) -> int:
    return int(np.array([x], dtype=np.float16).view(np.uint16)[0])


def _halves(op, a: int, b: int) -> int:
    """An f16x2 operation: `op` on the low halves and on the high halves."""
    return f16_bits(op(f16(a), f16(b))) | f16_bits(op(f16(a >> 16), f16(b >> 16))) << 16


def _fma(a: int, b: int, c: int) -> np.float16:
    """One half of fma.rn.f16x2: the exact a * b + c of three f16s, rounded once."""
    return np.float16(float(f16(a)) * float(f16(b)) + float(f16(c)))


@functools.lru_cache(maxsize=1 << 16)
def _literal(tok: str) -> int | None:
    """An integer literal's value (decimal or 0x hex), else None."""
    if re.fullmatch(r"-?\d+", tok):
        return int(tok)
    if re.fullmatch(r"0[xX][0-9a-fA-F]+", tok):
        return int(tok, 16)
    return None


@functools.cache
def _integer_kind(opcode: str) -> tuple[bool, int | None]:
    """(whether the opcode computes on floats, the mask of its integer result width or None)."""
    bits = re.search(r"\.[usb](16|32|64)$", opcode)
    return bool(re.search(r"\.f(16|32|64)", opcode)), _MASK[bits.group(1)] if bits else None


@functools.cache
def _width(opcode: str) -> int:
    """Bytes of one element of a load or store (`.b32`, `.v4.b16`, ...)."""
    return int(re.search(r"[bsuf](8|16|32|64)$", opcode).group(1)) // 8


@functools.lru_cache(maxsize=1 << 16)
def decode(line: str) -> tuple[str | None, str, tuple[str, ...]] | None:
    """A stripped line as (guard, opcode, operands), or None for directives, labels and the rest.
    Cached: every thread of a CTA decodes the same lines."""
    m = INSN.match(line)
    if m is None or line.startswith("."):
        return None
    rest = m.group(3)
    return m.group(1), m.group(2), tuple(split_operands(rest)) if rest else ()


class PtxThread:
    """One thread's registers (`env`: name -> value) over memories shared with the rest of the CTA.

    `params`: kernel parameter name -> value; `glob` and `shared`: byte address -> byte (missing
    bytes read 0). Subclasses may keep other things in memory by overriding `load`, `store`, `copy`.
    """

    def __init__(self, tid: int = 0, params: dict[str, int] | None = None,
                 glob: MutableMapping[int, int] | None = None, shared: MutableMapping[int, object] | None = None):
        self.env: dict[str, object] = {"%tid.x": tid, "%ctaid.x": 0, "%ctaid.y": 0, "%ctaid.z": 0, "smem": 0}
        self.params = params or {}
        self.glob = {} if glob is None else glob
        self.shared = {} if shared is None else shared
        self.wgmmas: list[Wgmma] = []
        self.global_stores: list[tuple[int, object, int]] = []  # (address, value, bytes) of each st.global
        self.pc = 0  # where `run_phase` goes on

    # -- memory (what a subclass may change) ----------------------------------------------------

    def load(self, space: str, addr: int, nbytes: int) -> object:
        """The value of `nbytes` little-endian bytes at `addr` of "global" or "shared" memory."""
        mem = self.glob if space == "global" else self.shared
        return int.from_bytes(bytes(mem.get(addr + i, 0) for i in range(nbytes)), "little")

    def store(self, addr: int, value: object, nbytes: int) -> None:
        """st.shared of one register (an unknown value writes nothing)."""
        if isinstance(value, int):
            for i, byte in enumerate((value & ((1 << (8 * nbytes)) - 1)).to_bytes(nbytes, "little")):
                self.shared[addr + i] = byte

    def copy(self, dst: int, src: int, size: int, real: int) -> None:
        """cp.async of `size` bytes global `src` -> shared `dst`, the bytes from `real` on zero."""
        for i in range(size):
            self.shared[dst + i] = self.glob.get(src + i, 0) if i < real else 0

    # -- values ---------------------------------------------------------------------------------

    def val(self, tok: str) -> object:
        """A register's value, an integer literal, or a packed `{lo, hi}` pair of 16-bit registers;
        None when unknown."""
        tok = tok.strip()
        if tok in self.env:
            return self.env[tok]
        literal = _literal(tok)
        if literal is not None:
            return literal
        if tok.startswith("{"):
            parts = [self.val(p) for p in tok.strip("{}").split(",")]
            if len(parts) == 2 and all(isinstance(p, int) for p in parts):
                return (parts[0] & 0xFFFF) | (parts[1] & 0xFFFF) << 16
        return None

    def operand(self, tok: str) -> object:
        """An operand as a wgmma record keeps it: a `{...}` list as the list of its values."""
        if tok.startswith("{"):
            return [self.val(r) for r in tok.strip("{}").split(",")]
        return self.val(tok)

    # -- running --------------------------------------------------------------------------------

    def guard_taken(self, guard: str | None, line: str) -> bool:
        if guard is None:
            return True
        p = self.env.get(guard.strip().lstrip("@!"))
        assert isinstance(p, bool), f"thread {self.env['%tid.x']}: unknown predicate in {line!r}"
        return (not p) if guard.strip().startswith("@!") else p

    def execute(self, line: str) -> None:
        """One straight-line instruction (no `bra`); directives and other lines are skipped."""
        insn = decode(line)
        if insn is not None and self.guard_taken(insn[0], line):
            self._execute(insn[1], insn[2])

    def _runnable(self, line: str) -> tuple[str, tuple[str, ...]] | None:
        """(opcode, args) of `line` when it runs for this thread: None for directives, labels and
        an instruction whose guard is not taken. An mbarrier wait is taken as passed (its
        predicate set true, whatever its guard), as a race-free kernel's waits all end."""
        insn = decode(line)
        if insn is None:
            return None
        guard, opcode, args = insn
        if opcode.startswith("mbarrier.try_wait"):
            self.env[args[0]] = True
            return opcode, args
        return (opcode, args) if self.guard_taken(guard, line) else None

    def run(self, lines: list[str], until: str) -> list[Wgmma]:
        """Run `lines` (stripped) from the top until the first loop's label (`until="loop"`) or its
        back edge (`until="back_edge"`); return the wgmmas executed on the way."""
        assert until in ("loop", "back_edge"), until
        self.wgmmas = []
        pc, in_loop = 0, False
        while pc < len(lines):
            line = lines[pc]
            pc += 1
            if line.startswith("$L__loop") and line.endswith(":") and "end" not in line:
                if until == "loop":
                    return self.wgmmas
                in_loop = True
                continue
            insn = self._runnable(line)
            if insn is None:
                continue
            opcode, args = insn
            if opcode.startswith("mbarrier.try_wait"):
                continue
            if opcode.split(".")[0] == "bra":
                if in_loop and "$L__loop" in args[0] and "end" not in args[0]:
                    return self.wgmmas  # the back edge: one pass done
                pc = lines.index(args[0] + ":")
                continue
            self._execute(opcode, args)
        raise AssertionError("the loop's back edge was never reached" if until == "back_edge"
                             else "no loop in the PTX")

    def run_phase(self, lines: list[str]) -> bool:
        """Lockstep running: from where the last phase stopped (`self.pc`, 0 at first) up to the
        next synchronisation, a `bar.sync` (executed) or an mbarrier wait (taken as passed, the
        run resuming after it); False once the first loop's `$L__loop_end` label is reached
        (then nothing more runs). Running every thread of a CTA one phase at a time orders
        their shared-memory accesses as the barriers and mbarriers of a race-free kernel do, so
        the K loop's later iterations read what other threads wrote. Wgmmas accumulate in
        `self.wgmmas` across phases."""
        while self.pc < len(lines):
            line = lines[self.pc]
            self.pc += 1
            if line.startswith("$L__loop_end") and line.endswith(":"):
                self.pc = len(lines)
                return False
            insn = self._runnable(line)
            if insn is None:
                continue
            opcode, args = insn
            if opcode.startswith("mbarrier.try_wait"):
                return True
            if opcode.split(".")[0] == "bra":
                self.pc = lines.index(args[0] + ":")
                continue
            self._execute(opcode, args)
            if opcode.startswith("bar.sync"):
                return True
        return False

    def _execute(self, opcode: str, args: tuple[str, ...]) -> None:
        env, head = self.env, opcode.split(".")[0]
        if head == "ld" and ".param" in opcode:
            env[args[0]] = self.params[args[1].strip("[]")]
        elif head == "ld" and (".global" in opcode or ".shared" in opcode):
            addr = self.val(args[1].strip("[]"))
            assert isinstance(addr, int), f"{opcode} {args}: unknown address"
            width = _width(opcode)
            for i, r in enumerate(r.strip() for r in args[0].strip("{}").split(",")):
                env[r] = self.load("global" if ".global" in opcode else "shared", addr + i * width, width)
        elif head == "st" and ".shared" in opcode:
            addr = self.val(args[0].strip("[]"))
            assert isinstance(addr, int), f"{opcode} {args}: unknown address"
            width = _width(opcode)
            for i, r in enumerate(r.strip() for r in args[1].strip("{}").split(",")):
                self.store(addr + i * width, env.get(r), width)
        elif head == "st" and ".global" in opcode:
            addr = self.val(args[0].strip("[]"))
            assert isinstance(addr, int), f"{opcode} {args}: unknown address"
            width = _width(opcode)
            for i, r in enumerate(r.strip() for r in args[1].strip("{}").split(",")):
                self.global_stores.append((addr + i * width, env.get(r), width))
        elif opcode.startswith("cp.async.c") and ".shared.global" in opcode:
            dst, src = self.val(args[0].strip("[]")), self.val(args[1].strip("[]"))
            size = int(args[2])
            real = self.val(args[3]) if len(args) > 3 else size
            assert isinstance(dst, int) and isinstance(src, int) and isinstance(real, int), f"{opcode} {args}"
            self.copy(dst, src, size, real)
        elif head == "wgmma" and ".mma_async" in opcode:
            self.wgmmas.append((opcode, [self.operand(a) for a in args[1:]]))
        elif not args or head in _NO_OPS:
            return
        elif head == "mov" and args[0].startswith("{"):
            # unpack an integer into the parts; any value also stays under the `{...}` spelling,
            # which a later `mov` packing the same parts reads back (a subclass's non-integer)
            value = env[args[0]] = self.val(args[1])
            parts = [p.strip() for p in args[0].strip("{}").split(",")]
            bits = _width(opcode) * 8 // len(parts)
            for i, part in enumerate(parts):
                env[part] = (value >> (bits * i)) & ((1 << bits) - 1) if isinstance(value, int) else None
        else:
            env[args[0]] = self._compute(opcode, head, [self.val(a) for a in args[1:]])

    def _compute(self, opcode: str, head: str, srcs: list[object]) -> object:
        """The value an arithmetic instruction writes (None: unknown)."""
        if head == "mov":
            return srcs[0]
        if any(not isinstance(s, int | bool) for s in srcs):
            return None
        if opcode in _F16X2:
            return _halves(_F16X2[opcode], *srcs)
        if opcode in ("add.rn.f16", "sub.rn.f16"):
            op = np.add if opcode.startswith("add") else np.subtract
            return f16_bits(op(f16(srcs[0]), f16(srcs[1])))
        if opcode == "fma.rn.f16x2":  # a * b + c exact in float64, rounded once
            a, b, c = srcs
            return f16_bits(_fma(a, b, c)) | f16_bits(_fma(a >> 16, b >> 16, c >> 16)) << 16
        floating, mask = _integer_kind(opcode)
        if floating:
            return None  # other float arithmetic and conversions: not modelled
        if head in ("cvt", "cvta"):
            return srcs[0]
        if head == "setp":
            if ".s32" in opcode:
                srcs = [(s & M32) - (1 << 32) if s & (1 << 31) else s for s in srcs]
            return _CMP[opcode.split(".")[1]](*srcs)
        if head == "selp":
            return srcs[0] if srcs[2] else srcs[1]
        if head == "mad":
            return (srcs[0] * srcs[1] + srcs[2]) & (M64 if ".wide" in opcode else mask or M64)
        if head == "prmt":
            return prmt(*srcs)
        if head == "lop3":
            return lop3(*srcs)
        if head in _BIN:
            r = _BIN[head](*srcs)
            if mask is not None and ".wide" not in opcode:
                r &= mask
            return bool(r) if ".pred" in opcode else r
        return None
