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
  wrapped to its type's width (16, 32 or 64 bits; `.wide` results are not; `mul.hi` the high
  half of the product and `shr.s` arithmetic, both signed or not as their type); prmt.b32 in its
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
from collections.abc import Callable, MutableMapping

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


# -- instructions compiled to closures --------------------------------------------------------
# Every thread of a CTA runs the same lines, so each distinct instruction is turned once into a
# function of the thread (`_executor`) with its opcode's decisions taken and its operands
# resolved to getters of the register file; a line is decoded once per program (`_program`).
# The semantics are those of the module docstring; the closures only move the string work out
# of the per-thread, per-step path.

Getter = Callable[[dict], object]
"""A source operand: the register file -> its value (None: unknown)."""
Executor = Callable[["PtxThread"], None]
"""One straight-line instruction, applied to a thread."""


@functools.lru_cache(maxsize=1 << 16)
def _getter(tok: str) -> Getter:
    """What `PtxThread.val(tok)` reads: the register (any key of `env`, `{...}` spellings
    included) if it is set, else the integer literal, else a packed `{lo, hi}` pair of 16-bit
    registers, else None."""
    tok = tok.strip()
    if not tok.startswith("{"):
        literal = _literal(tok)
        return lambda env: env.get(tok, literal)
    parts = tuple(_getter(p) for p in tok.strip("{}").split(","))

    def packed(env: dict) -> object:
        if tok in env:
            return env[tok]
        values = [get(env) for get in parts]
        if len(values) == 2 and all(isinstance(v, int) for v in values):
            return (values[0] & 0xFFFF) | (values[1] & 0xFFFF) << 16
        return None
    return packed


def _registers(tok: str) -> tuple[str, ...]:
    """The registers of a destination or source list `{a, b}` (or of one register)."""
    return tuple(r.strip() for r in tok.strip("{}").split(","))


def _address(tok: str) -> Getter:
    """The getter of a `[addr]` operand."""
    return _getter(tok.strip("[]"))


def _unknown(*srcs: object) -> None:
    return None


def _first(*srcs: object) -> object:
    return srcs[0]


def _third_selects(*srcs: object) -> object:
    return srcs[0] if srcs[2] else srcs[1]


def _f16_op(opcode: str) -> Callable[..., int]:
    """add / sub / mul / fma on f16 or f16x2, one rounding per operation."""
    if opcode in _F16X2:
        op = _F16X2[opcode]
        return lambda *s: _halves(op, *s)
    if opcode == "fma.rn.f16x2":  # a * b + c exact in float64, rounded once
        return lambda *s: (f16_bits(_fma(s[0], s[1], s[2]))
                           | f16_bits(_fma(s[0] >> 16, s[1] >> 16, s[2] >> 16)) << 16)
    op = np.add if opcode.startswith("add") else np.subtract
    return lambda *s: f16_bits(op(f16(s[0]), f16(s[1])))


def _setp(opcode: str) -> Callable[..., bool]:
    """setp: `.s32` compares signed; an unknown comparison raises KeyError when it runs."""
    signed = ".s32" in opcode

    def compare(*srcs: int) -> bool:
        if signed:
            srcs = tuple((s & M32) - (1 << 32) if s & (1 << 31) else s for s in srcs)
        return _CMP[opcode.split(".")[1]](*srcs)
    return compare


def _binary(opcode: str, head: str, mask: int | None) -> Callable[..., object]:
    """add sub mul div rem min max and or xor shl shr: wrapped to the width unless `.wide`; a
    `.pred` result is a bool."""
    op, pred = _BIN[head], ".pred" in opcode
    if mask is None or ".wide" in opcode:
        return (lambda *s: bool(op(*s))) if pred else op
    return (lambda *s: bool(op(*s) & mask)) if pred else (lambda *s: op(*s) & mask)


def _integer_op(opcode: str, head: str) -> Callable[..., object]:
    """The value of a non-f16 arithmetic instruction on known sources (`_unknown` for the float
    arithmetic and conversions that are not modelled)."""
    floating, mask = _integer_kind(opcode)
    if floating:
        return _unknown
    if head in ("cvt", "cvta"):
        return _first
    if head == "setp":
        return _setp(opcode)
    if head == "selp":
        return _third_selects
    if head == "mad":
        width = M64 if ".wide" in opcode else mask or M64
        return lambda *s: (s[0] * s[1] + s[2]) & width
    if head == "prmt":
        return prmt
    if head == "lop3":
        return lop3
    if head == "mul" and ".hi." in opcode and mask is not None:  # the high half of the product
        return lambda a, b: (_as_signed(a, mask) * _as_signed(b, mask) if ".s" in opcode else a * b) >> mask.bit_length() & mask
    if head == "shr" and ".s" in opcode and mask is not None:  # arithmetic: the sign bit shifts in
        return lambda a, b: (_as_signed(a, mask) >> b) & mask
    if head in _BIN:
        return _binary(opcode, head, mask)
    return _unknown


def _as_signed(v: int, mask: int) -> int:
    """`v` (a bit pattern of `mask`'s width) as a two's-complement integer."""
    v &= mask
    return v - (mask + 1) if v > mask >> 1 else v


@functools.lru_cache(maxsize=1 << 12)
def _operation(opcode: str, head: str) -> Callable[..., object]:
    """The value an arithmetic instruction writes, from its source values as arguments: a `mov`
    copies any value; for the rest the caller checks first that every source is a known
    integer (else the result is unknown, None)."""
    if head == "mov":
        return _first
    if opcode in _F16X2 or opcode in ("add.rn.f16", "sub.rn.f16", "fma.rn.f16x2"):
        return _f16_op(opcode)
    return _integer_op(opcode, head)


def _ld_param(args: tuple[str, ...]) -> Executor:
    dst, name = args[0], args[1].strip("[]")

    def run(t: PtxThread) -> None:
        t.env[dst] = t.params[name]
    return run


def _ld(opcode: str, args: tuple[str, ...]) -> Executor:
    """ld.global / ld.shared of one register or a `{...}` vector, through `PtxThread.load`."""
    addr_of, dsts = _address(args[1]), _registers(args[0])
    space = "global" if ".global" in opcode else "shared"

    def run(t: PtxThread) -> None:
        addr = addr_of(t.env)
        assert isinstance(addr, int), f"{opcode} {args}: unknown address"
        width = _width(opcode)
        for i, r in enumerate(dsts):
            t.env[r] = t.load(space, addr + i * width, width)
    return run


def _st(opcode: str, args: tuple[str, ...]) -> Executor:
    """st.shared writes the thread's shared memory; st.global is recorded, not written."""
    addr_of, srcs = _address(args[0]), _registers(args[1])
    if ".shared" in opcode:
        def put(t: PtxThread, addr: int, value: object, width: int) -> None:
            t.store(addr, value, width)
    else:
        def put(t: PtxThread, addr: int, value: object, width: int) -> None:
            t.global_stores.append((addr, value, width))

    def run(t: PtxThread) -> None:
        addr = addr_of(t.env)
        assert isinstance(addr, int), f"{opcode} {args}: unknown address"
        width = _width(opcode)
        for i, r in enumerate(srcs):
            put(t, addr + i * width, t.env.get(r), width)
    return run


def _cp_async(opcode: str, args: tuple[str, ...]) -> Executor:
    dst_of, src_of = _address(args[0]), _address(args[1])
    real_of = _getter(args[3]) if len(args) > 3 else None

    def run(t: PtxThread) -> None:
        dst, src = dst_of(t.env), src_of(t.env)
        size = int(args[2])
        real = real_of(t.env) if real_of is not None else size
        assert isinstance(dst, int) and isinstance(src, int) and isinstance(real, int), f"{opcode} {args}"
        t.copy(dst, src, size, real)
    return run


def _wgmma(opcode: str, args: tuple[str, ...]) -> Executor:
    """wgmma.mma_async: recorded with its operands after the destination (a `{...}` list as the
    list of its values)."""
    operands = tuple((True, tuple(_getter(r) for r in a.strip("{}").split(","))) if a.startswith("{")
                     else (False, _getter(a)) for a in args[1:])

    def run(t: PtxThread) -> None:
        env = t.env
        t.wgmmas.append((opcode, [[get(env) for get in g] if is_list else g(env)
                                  for is_list, g in operands]))
    return run


def _mov_unpack(opcode: str, args: tuple[str, ...]) -> Executor:
    """mov into `{lo, hi}`: the integer unpacked into the parts; any value also stays under the
    `{...}` spelling, which a later `mov` packing the same parts reads back (a subclass's
    non-integer)."""
    whole, src = args[0], _getter(args[1])
    parts = tuple(p.strip() for p in whole.strip("{}").split(","))

    def run(t: PtxThread) -> None:
        env = t.env
        value = env[whole] = src(env)
        bits = _width(opcode) * 8 // len(parts)
        for i, part in enumerate(parts):
            env[part] = (value >> (bits * i)) & ((1 << bits) - 1) if isinstance(value, int) else None
    return run


def _no_op(t: PtxThread) -> None:
    return None


def _arithmetic(opcode: str, head: str, args: tuple[str, ...]) -> Executor:
    """The destination gets `_operation`'s value of the sources, or None when one is not a
    known integer (a `mov` copies whatever it reads)."""
    dst, srcs, op = args[0], args[1:], _operation(opcode, head)
    typed = head != "mov"
    toks = [tok.strip() for tok in srcs]
    if 1 <= len(toks) <= 3 and not any(tok.startswith("{") for tok in toks):
        return _arithmetic_of_registers(dst, toks, op, typed)
    gets = tuple(_getter(a) for a in srcs)

    def run(t: PtxThread) -> None:
        values = [get(t.env) for get in gets]
        known = not typed or all(isinstance(v, int) for v in values)
        t.env[dst] = op(*values) if known else None
    return run


def _arithmetic_of_registers(dst: str, toks: list[str], op: Callable[..., object], typed: bool) -> Executor:
    """`_arithmetic` for one to three plain operands (registers or literals), each read inline
    as `PtxThread.val` reads it (`env.get(register, its literal value or None)`): the hot path,
    with no getter call or list per step."""
    keys = [(tok, _literal(tok)) for tok in toks]
    if len(keys) == 1:
        (k0, l0), = keys

        def run1(t: PtxThread) -> None:
            env = t.env
            a = env.get(k0, l0)
            env[dst] = op(a) if not typed or isinstance(a, int) else None
        return run1
    if len(keys) == 2:
        (k0, l0), (k1, l1) = keys

        def run2(t: PtxThread) -> None:
            env = t.env
            a, b = env.get(k0, l0), env.get(k1, l1)
            env[dst] = op(a, b) if not typed or (isinstance(a, int) and isinstance(b, int)) else None
        return run2
    (k0, l0), (k1, l1), (k2, l2) = keys

    def run3(t: PtxThread) -> None:
        env = t.env
        a, b, c = env.get(k0, l0), env.get(k1, l1), env.get(k2, l2)
        known = not typed or (isinstance(a, int) and isinstance(b, int) and isinstance(c, int))
        env[dst] = op(a, b, c) if known else None
    return run3


@functools.lru_cache(maxsize=1 << 16)
def _executor(opcode: str, args: tuple[str, ...]) -> Executor:
    """The function that runs one straight-line instruction (no `bra`) on a thread."""
    head = opcode.split(".")[0]
    if head == "ld" and ".param" in opcode:
        return _ld_param(args)
    if head == "ld" and (".global" in opcode or ".shared" in opcode):
        return _ld(opcode, args)
    if head == "st" and (".shared" in opcode or ".global" in opcode):
        return _st(opcode, args)
    if opcode.startswith("cp.async.c") and ".shared.global" in opcode:
        return _cp_async(opcode, args)
    if head == "wgmma" and ".mma_async" in opcode:
        return _wgmma(opcode, args)
    if not args or head in _NO_OPS:
        return _no_op
    if head == "mov" and args[0].startswith("{"):
        return _mov_unpack(opcode, args)
    return _arithmetic(opcode, head, args)


class _Insn:
    """A decoded instruction line: its guard register (and whether `@!` negates it), opcode,
    operands, what kind of control it is, and its executor (built when it first runs, so a line
    that never runs is never compiled)."""

    __slots__ = ("line", "guard", "negated", "opcode", "args", "wait", "branch", "back_edge", "barrier",
                 "plain", "fn")

    def __init__(self, line: str, guard: str | None, opcode: str, args: tuple[str, ...]):
        self.line, self.opcode, self.args = line, opcode, args
        self.guard = None if guard is None else guard.strip().lstrip("@!")
        self.negated = guard is not None and guard.strip().startswith("@!")
        self.wait = opcode.startswith("mbarrier.try_wait")
        self.branch = opcode.split(".")[0] == "bra"
        target = args[0] if self.branch and args else ""
        self.back_edge = "$L__loop" in target and "end" not in target
        self.barrier = opcode.startswith("bar.sync")
        self.plain = self.guard is None and not self.wait and not self.branch
        """Runs unconditionally and goes on to the next line: only its executor to call."""
        self.fn: Executor | None = None

    def executor(self) -> Executor:
        if self.fn is None:
            self.fn = _executor(self.opcode, self.args)
        return self.fn


class _Program:
    """A list of stripped lines, decoded: per line its `_Insn` (None for directives and labels)
    and whether it is the first loop's label (`$L__loopN:`, where `run` stops or enters the
    loop) or a `$L__loop_end` label (where `run_phase` stops); and each label's first line."""

    def __init__(self, lines: tuple[str, ...]):
        self.lines = lines
        self.insns = tuple(self._decode(line) for line in lines)
        self.loop_head = tuple(ln.startswith("$L__loop") and ln.endswith(":") and "end" not in ln
                               for ln in lines)
        self.loop_end = tuple(ln.startswith("$L__loop_end") and ln.endswith(":") for ln in lines)
        self._labels: dict[str, int] = {}
        for i, ln in enumerate(lines):
            self._labels.setdefault(ln, i)

    @staticmethod
    def _decode(line: str) -> _Insn | None:
        insn = decode(line)
        return None if insn is None else _Insn(line, *insn)

    def target(self, insn: _Insn) -> int:
        """The line a `bra` goes to (as `lines.index(label + ":")`)."""
        label = insn.args[0] + ":"
        if label not in self._labels:
            raise ValueError(f"{label!r} is not in list")
        return self._labels[label]


_PROGRAMS: dict[int, tuple[list[str], _Program]] = {}
"""Recent programs by the id of the list of lines the threads were given (with a copy of it, so
a list changed since, or a new list at a reused id, is decoded afresh)."""


def _program(lines: list[str]) -> _Program:
    """`lines` decoded. Every thread of a CTA runs the same list, so it is looked up by identity
    and checked against the copy (a comparison of the same string objects) rather than
    hashed whole for each thread."""
    hit = _PROGRAMS.get(id(lines))
    if hit is not None and hit[0] == lines:
        return hit[1]
    if len(_PROGRAMS) >= 8:
        _PROGRAMS.clear()
    prog = _Program(tuple(lines))
    _PROGRAMS[id(lines)] = (list(lines), prog)
    return prog


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
        self._decoded: tuple[list[str], _Program] | None = None  # run_phase's lines, decoded

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
        return _getter(tok)(self.env)

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

    def _execute(self, opcode: str, args: tuple[str, ...]) -> None:
        _executor(opcode, args)(self)

    def _runs(self, insn: _Insn) -> bool:
        """Whether `insn` runs for this thread. An mbarrier wait is taken as passed (its predicate
        set true, whatever its guard), as a race-free kernel's waits all end."""
        if insn.wait:
            self.env[insn.args[0]] = True
            return True
        if insn.guard is None:
            return True
        p = self.env.get(insn.guard)
        assert isinstance(p, bool), f"thread {self.env['%tid.x']}: unknown predicate in {insn.line!r}"
        return p != insn.negated

    def _program_of(self, lines: list[str]) -> _Program:
        """`lines` decoded; the last list seen is kept, as `run_phase` is called once a phase."""
        if self._decoded is None or self._decoded[0] is not lines:
            self._decoded = (lines, _program(lines))
        return self._decoded[1]

    def run(self, lines: list[str], until: str) -> list[Wgmma]:
        """Run `lines` (stripped) from the top until the first loop's label (`until="loop"`) or its
        back edge (`until="back_edge"`); return the wgmmas executed on the way."""
        assert until in ("loop", "back_edge"), until
        self.wgmmas = []
        prog = self._program_of(lines)
        insns, loop_head = prog.insns, prog.loop_head
        pc, in_loop, end = 0, False, len(insns)
        while pc < end:
            insn = insns[pc]
            pc += 1
            if insn is None:  # a directive or label
                if loop_head[pc - 1]:
                    if until == "loop":
                        return self.wgmmas
                    in_loop = True
                continue
            if not insn.plain:
                if not self._runs(insn) or insn.wait:
                    continue
                if insn.branch:
                    if in_loop and insn.back_edge:
                        return self.wgmmas  # the back edge: one pass done
                    pc = prog.target(insn)
                    continue
            (insn.fn or insn.executor())(self)
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
        prog = self._program_of(lines)
        insns, loop_end = prog.insns, prog.loop_end
        while self.pc < len(insns):
            pc = self.pc
            self.pc += 1
            insn = insns[pc]
            if insn is None:  # a directive or label
                if loop_end[pc]:
                    self.pc = len(insns)
                    return False
                continue
            if not insn.plain:
                if not self._runs(insn):
                    continue
                if insn.wait:
                    return True
                if insn.branch:
                    self.pc = prog.target(insn)
                    continue
            (insn.fn or insn.executor())(self)
            if insn.barrier:
                return True
        return False
