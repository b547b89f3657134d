"""Which element each wgmma reads, on the CPU: the descriptors the PTX builds, decoded with the
PTX ISA's canonical layouts, against where the kernel's own copies wrote each element.

The kernel is bench/parity_kernels.py's fused attention forward at head dim 128 on sm_90a, whose
operands need the column-blocked K-major layouts (dot_staging.kmajor_col_blocks): Q (128 x 128,
rows of 256 bytes) is A of Q K^T through a K-major descriptor over two 128-byte column blocks,
K^T (128 x 64, stored as 64 rows of 128 K values) is its B over two K-major column blocks, and V
(64 x 128) is the MN-major B of P @ V. Head dim 64 (one 128-byte atom a row) is checked too.

How: a small evaluator runs the PTX's integer instructions for every thread of the CTA (the
prologue, then the first loop iteration, honouring forward branches). A register loaded from
global memory holds a token, the global address it came from; `st.shared` and `cp.async` record,
for every shared word written, the global bytes it holds. Each wgmma's descriptors are then
decoded (start address, LBO, SBO, swizzle: bits 13:0, 29:16, 45:32, 63:62) and every (row, k)
of the operand is located by the ISA's canonical layout (in 16-byte units T; 128B swizzle):

    K-major  ((8, m), (T, 2k)) : ((8T, SBO), (1, T))      row r, K element k of the step
    MN-major ((T, 8, m), (8, k)) : ((1, T, LBO), (8T, SBO))  N element n, K element k

the swizzle XOR-ing the 16-byte chunk bits 6:4 of the shared address with bits 9:7 (the
absolute address: the dynamic shared memory starts at 0 here). The global byte found there
must be the element the dot multiplies: Q[64 g + r, 16 s + k] for A of warpgroup g at step s,
K[n, 16 s + k] for B of Q K^T, V[16 s + k, n] for B of P @ V.
"""

from __future__ import annotations

import os
import re
import sys

import pytest

import sparsecc

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "bench"))
import parity_kernels as pk  # noqa: E402

ATTN = pk.sparsecc_kernel(pk.attention_kernel)
SIG = {"q_ptr": "*fp16:16", "k_ptr": "*fp16:16", "v_ptr": "*fp16:16", "out_ptr": "*fp16:16", "sm_scale": "fp32",
       "stride_h": "i32:16", "stride_m": "i32:16", "n_ctx": "i32:16"}
BASES = {"q_ptr": 1 << 32, "k_ptr": 2 << 32, "v_ptr": 3 << 32, "out_ptr": 4 << 32}
N_CTX = 512
THREADS = 256

_INSN = re.compile(r"^(@!?%\w+\s+)?([\w.:]+)\s*(.*?);$")
_MASK = {"32": (1 << 32) - 1, "64": (1 << 64) - 1}
_CMP = {"lt": lambda a, b: a < b, "lo": lambda a, b: a < b, "le": lambda a, b: a <= b, "ls": lambda a, b: a <= b,
        "gt": lambda a, b: a > b, "hi": lambda a, b: a > b, "ge": lambda a, b: a >= b, "hs": lambda a, b: a >= b,
        "eq": lambda a, b: a == b, "ne": lambda a, b: a != b}
_BIN = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b, "and": lambda a, b: a & b,
        "or": lambda a, b: a | b, "xor": lambda a, b: a ^ b, "shl": lambda a, b: a << b, "shr": lambda a, b: a >> b,
        "div": lambda a, b: a // b, "rem": lambda a, b: a % b, "min": min, "max": max}


class Token(tuple):
    """A register loaded from global memory: (global byte address of its low byte,)."""


def _split(rest: str) -> list[str]:
    """Operands, with `{...}` lists kept whole."""
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


def _run(lines: list[str], tid: int, params: dict[str, int], shared: dict[int, object]) -> list[tuple[str, list]]:
    """Evaluate one thread through the prologue and the first loop iteration; fill `shared`
    (word address -> Token) from its st.shared / cp.async; return its wgmmas (text, operands)."""
    env: dict[str, object] = {"%tid.x": tid, "%ctaid.x": 0, "%ctaid.y": 0, "smem": 0}
    wgmmas: list[tuple[str, list]] = []

    def val(tok: str) -> object:
        tok = tok.strip()
        if tok in env:
            return env[tok]
        if re.fullmatch(r"-?\d+", tok):
            return int(tok)
        if re.fullmatch(r"0[xX][0-9a-fA-F]+", tok):
            return int(tok, 16)
        return None

    pc, in_loop = 0, False
    while pc < len(lines):
        line = lines[pc]
        pc += 1
        if line.startswith("$L__loop") and line.endswith(":") and "end" not in line:
            in_loop = True
            continue
        m = _INSN.match(line)
        if not m:
            continue
        guard, opcode, rest = m.group(1), m.group(2), m.group(3)
        args = _split(rest) if rest else []
        head = opcode.split(".")[0]
        taken = True
        if guard is not None:
            p = env.get(guard.strip().lstrip("@!"))
            assert isinstance(p, bool), f"thread {tid}: unknown predicate in {line!r}"
            taken = (not p) if guard.strip().startswith("@!") else p
        if head == "bra":
            if not taken:
                continue
            if in_loop and "$L__loop" in args[0] and "end" not in args[0]:
                return wgmmas  # the back edge: one iteration done
            pc = lines.index(args[0] + ":")
            continue
        if not taken:
            continue
        if head == "ld" and ".param" in opcode:
            env[args[0]] = params[args[1].strip("[]")]
        elif head == "ld" and ".global" in opcode:
            addr = val(args[1].strip("[]"))
            assert isinstance(addr, int), line
            regs = [r.strip() for r in args[0].strip("{}").split(",")]
            width = 16 // len(regs) if ".v" in opcode else int(re.search(r"b(\d+)", opcode).group(1)) // 8
            for i, r in enumerate(regs):
                env[r] = Token((addr + i * width,))
        elif head == "st" and ".shared" in opcode:
            addr = val(args[0].strip("[]"))
            regs = [r.strip() for r in args[1].strip("{}").split(",")]
            assert isinstance(addr, int) and ".b32" in opcode, line
            for i, r in enumerate(regs):
                shared[addr + 4 * i] = env.get(r)
        elif opcode.startswith("cp.async.cg.shared.global") or opcode.startswith("cp.async.ca.shared.global"):
            dst, src = val(args[0].strip("[]")), val(args[1].strip("[]"))
            assert isinstance(dst, int) and isinstance(src, int), line
            for i in range(0, int(args[2]), 4):
                shared[dst + i] = Token((src + i,))
        elif head == "wgmma" and ".mma_async" in opcode:
            ops = [val(a) if not a.startswith("{") else a for a in args[1:]]
            wgmmas.append((opcode, ops))
        elif not args or head in ("wgmma", "cp", "bar", "fence", "st", "ld"):
            continue
        else:
            dst, srcs = args[0], [val(a) for a in args[1:]]
            bits = re.search(r"\.[usb](32|64)$", opcode)
            if head == "mov" and isinstance(srcs[0], Token):
                env[dst] = srcs[0]
            elif any(not isinstance(s, int | bool) for s in srcs):
                env[dst] = None
            elif head in ("mov", "cvt"):
                env[dst] = srcs[0]
            elif head == "setp":
                env[dst] = _CMP[opcode.split(".")[1]](*srcs)
            elif head == "selp":
                env[dst] = srcs[0] if srcs[2] else srcs[1]
            elif head == "mad":
                env[dst] = srcs[0] * srcs[1] + srcs[2]
            elif head in _BIN:
                r = _BIN[head](*srcs)
                if bits and ".wide" not in opcode and isinstance(r, int):
                    r &= _MASK[bits.group(1)]
                env[dst] = bool(r) if ".pred" in opcode else r
            else:
                env[dst] = None
    raise AssertionError("the loop's back edge was never reached")


def _fields(desc: int) -> tuple[int, int, int, int]:
    """(start, LBO, SBO in bytes, swizzle row width in bytes) of a wgmma matrix descriptor."""
    assert desc >= 0 and desc >> 64 == 0
    start = (desc & 0x3FFF) << 4
    lbo = ((desc >> 16) & 0x3FFF) << 4
    sbo = ((desc >> 32) & 0x3FFF) << 4
    assert (desc >> 49) & 7 == 0, "base offset"
    width = {0: 16, 1: 128, 2: 64, 3: 32}[desc >> 62]
    return start, lbo, sbo, width


def _swizzle(addr: int, width: int) -> int:
    """The hardware swizzle of a `width`-byte mode on an absolute shared address."""
    if width == 16:
        return addr
    return addr ^ (((addr >> 7) & (width // 16 - 1)) << 4)


def kmajor_addr(desc: int, r: int, k: int, esz: int = 2) -> int:
    """Shared byte read for row r (M or N) and K element k of one k16 step, K-major operand."""
    start, _lbo, sbo, width = _fields(desc)
    assert width == 128, "the model covers the 128-byte swizzle (what these tiles use)"
    t = 16 // esz  # elements in 16 bytes
    off = ((r % 8) * 8 * t + k % t + (k // t) * t) * esz + (r // 8) * sbo
    return _swizzle(start + off, width)


def mnmajor_addr(desc: int, k: int, n: int, esz: int = 2) -> int:
    """Shared byte read for K element k of one k16 step and N element n, MN-major operand."""
    start, lbo, sbo, width = _fields(desc)
    assert width == 128
    t = 16 // esz
    off = (n % t + ((n // t) % 8) * t + (k % 8) * 8 * t) * esz + (n // (8 * t)) * lbo + (k // 8) * sbo
    return _swizzle(start + off, width)


def _global(shared: dict[int, object], addr: int) -> int:
    tok = shared.get(addr & ~3)
    assert isinstance(tok, Token), f"shared byte {addr} was never written by a copy"
    return tok[0] + (addr & 3)


def _element(gaddr: int, name: str, d: int) -> tuple[int, int]:
    """(row, col) of the element of `name` (rows of d elements) at global byte `gaddr`."""
    off = gaddr - BASES[name]
    assert 0 <= off < (1 << 32) and off % 2 == 0, f"read {gaddr:#x}: not an element of {name}"
    return divmod(off // 2, d)


def _compile(d: int):
    return sparsecc.compile(ATTN, SIG, {"HEAD_DIM": d, "BLOCK_M": 128, "BLOCK_N": 64}, target="sm_90a",
                            num_warps=8, num_stages=3)


def _evaluate(ptx: str, args: list[int], threads: int) -> tuple[dict[int, object], list[list[tuple[str, list]]]]:
    """(shared word -> Token, each thread's wgmmas) of program (0, 0) with these arguments."""
    lines = [ln.strip() for ln in ptx.splitlines()]
    names = re.findall(r"\.param \.\w+ (\w+)", ptx)
    params = dict(zip(names, args, strict=True))
    shared: dict[int, object] = {}
    per_thread = [_run(lines, tid, params, shared) for tid in range(threads)]
    for g in range(threads // 128):  # a warpgroup's threads name the same tiles
        for tid in range(128 * g, 128 * (g + 1)):
            assert [w[1][:2] for w in per_thread[tid]] == [w[1][:2] for w in per_thread[128 * g]], tid
    return shared, per_thread


@pytest.mark.parametrize("d", [128, 64])
def test_attention_wgmma_descriptors_read_the_elements_the_copies_wrote(d):
    values = dict(BASES, sm_scale=0, stride_h=N_CTX * d, stride_m=d, n_ctx=N_CTX)
    shared, per_thread = _evaluate(_compile(d).asm["ptx"], [values[k] for k in SIG], THREADS)
    for g in range(THREADS // 128):
        mine = per_thread[128 * g]
        qk = [ops for op, ops in mine if isinstance(ops[0], int)]
        pv = [ops for op, ops in mine if isinstance(ops[0], str)]
        assert len(qk) == d // 16 and len(pv) == 64 // 16, [op for op, _ in mine]
        assert all(".m64n64k16." in op for op, ops in mine if isinstance(ops[0], int))
        assert all(f".m64n{d}k16." in op for op, ops in mine if isinstance(ops[0], str))
        for s, ops in enumerate(qk):  # Q K^T: A (Q) and B (K^T) through K-major descriptors
            a_desc, b_desc = ops[0], ops[1]
            assert isinstance(b_desc, int) and ops[-2:] == [0, 0], "K-major A and B: no transpose"
            for r in range(64):
                for k in range(16):
                    assert _element(_global(shared, kmajor_addr(a_desc, r, k)), "q_ptr", d) == (64 * g + r, 16 * s + k)
            for n in range(64):
                for k in range(16):
                    assert _element(_global(shared, kmajor_addr(b_desc, n, k)), "k_ptr", d) == (n, 16 * s + k)
        for s, ops in enumerate(pv):  # P @ V: P in registers, V an MN-major B (imm-trans-b 1)
            assert ops[0].startswith("{") and isinstance(ops[1], int) and ops[-1] == 1
            for k in range(16):
                for n in range(d):
                    assert _element(_global(shared, mnmajor_addr(ops[1], k, n)), "v_ptr", d) == (16 * s + k, n)


def test_dense_gemm_with_256_byte_rows_reads_a_and_b_where_the_copies_wrote():
    """Tutorial 03's matmul at BLOCK_K = 128 (A's rows 256 bytes: two K-major column blocks
    read through the descriptor, as attention's Q; was ldmatrix into registers), B row-major
    (MN-major, N = 128 over two column blocks: LBO), 4 warps: two m64 blocks per warpgroup.
    Unaligned sizes, so the copies are cp.async (TMA's boxes are checked by analysis.tma)."""
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "conformance"))
    from tutorial_kernels import matmul_kernel

    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32",
           "stride_am": "i32", "stride_ak": "i32:1", "stride_bk": "i32", "stride_bn": "i32:1", "stride_cm": "i32",
           "stride_cn": "i32:1"}
    ck = sparsecc.compile(matmul_kernel, sig, {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 128,
                                               "GROUP_SIZE_M": 8}, target="sm_90a", num_warps=4, num_stages=2)
    assert "colBlock = 64" in ck.asm["ttgir"] and "ldmatrix" not in ck.asm["ptx"]
    size = 512
    args = [BASES["q_ptr"], BASES["k_ptr"], BASES["out_ptr"], size, size, size, size, 1, size, 1, size, 1]
    shared, per_thread = _evaluate(ck.asm["ptx"], args, 128)
    steps = per_thread[0]
    assert len(steps) == 2 * 128 // 16 and all(".m64n128k16." in op for op, _ in steps)
    for idx, (_, ops) in enumerate(steps):
        s, i = divmod(idx, 2)  # k16 step s, m64 block i
        assert isinstance(ops[0], int) and isinstance(ops[1], int) and ops[-2:] == [0, 1]
        for r in range(64):
            for k in range(16):
                assert _element(_global(shared, kmajor_addr(ops[0], r, k)), "q_ptr", size) == (64 * i + r, 16 * s + k)
        for k in range(16):
            for n in range(128):
                assert _element(_global(shared, mnmajor_addr(ops[1], k, n)), "k_ptr", size) == (16 * s + k, n)


def test_the_model_reads_a_canonical_tile_as_stored():
    """The decoder itself, on a tile laid out by hand as the ISA draws it: 64 rows of one
    128-byte atom each (K-major), element (r, c) at r * 128 + 2c before the swizzle."""
    from sparsecc.dialects.ptx_wgmma import smem_desc_bits

    desc = smem_desc_bits(2048, lbo=16, sbo=1024, swizzle="128B")
    for r in range(64):
        for c in range(64):
            stored = _swizzle(2048 + r * 128 + 2 * c, 128)
            assert kmajor_addr(desc + 2 * (c // 16), r, c % 16) == stored  # start + 32 bytes a step
    desc = smem_desc_bits(0, lbo=64 * 128, sbo=1024, swizzle="128B")  # K x N = 64 x 128, two blocks
    for k in range(16):
        for n in range(128):
            stored = _swizzle((n // 64) * 64 * 128 + k * 128 + 2 * (n % 64), 128)
            assert mnmajor_addr(desc, k, n) == stored
