"""The register-A wgmma of quantized weights (`quant_wgmma`), on the CPU: the PTX that sparse_linear's
kernel compiles to, evaluated with real data for every thread of a CTA, must hand each
`wgmma.mma_async.sp` the A registers that the PTX ISA's register-A layout names, holding the
dequantized kept values the interpreter's `tt.dequantize` computes (`runtime.quant_codec`), bit
for bit, and B descriptors that read the tokens tile x^T.

How: a small evaluator (in the manner of test_wgmma_descriptor_reads.py, but on values rather
than tokens) runs each thread through the prologue and the first K iteration: global memory
holds the weight's codes, scales and zero points and the tokens as bytes; `cp.async` and
`st.shared` fill a byte image of shared memory; the integer and the f16x2 instructions of the
dequantization (`prmt`, `lop3`, `sub.f16x2`, `mul.rn.f16x2`, ...) are computed exactly (numpy
float16 rounds as the hardware does: one rounding per operation). At each wgmma the four A
registers of thread (warp w of its warpgroup, lane 4g + t) are decoded with the ISA's layout
(ptx_wgmma's docstring): a0 = A[16w + g][2t : 2t + 2], a1 = A[16w + g + 8][2t : 2t + 2],
a2 = A[16w + g][2t + 8 : 2t + 10], a3 = A[16w + g + 8][2t + 8 : 2t + 10] of the warpgroup's
m64 block of compressed values at that k32 step, lower column in the low half.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
from test_quant_fragments import prmt
from test_wgmma_descriptor_reads import _BIN, _CMP, _INSN, _split, kmajor_addr

import sparsecc
from sparsecc.ops.sparse_linear import QUANT_WGMMA_OPTIONS, sparse_linear_kernel
from sparsecc.runtime.quant_codec import dequantize_tile

BLOCK_M, BLOCK_K = 128, 128  # tokens, K: quantized_prefill_config's tile (BLOCK_N weight rows: 128 or 256)
THREADS = 256
M, N, K = 160, 256, 512  # program (0, 0) sees whole tiles; K four iterations (one or two are evaluated)
BASE = {"Y": 1 << 32, "X": 2 << 32, "W_values": 3 << 32, "W_meta": 4 << 32, "W_scales": 5 << 32,
        "W_zeros": 6 << 32, "BIAS": 7 << 32}
_M32, _M64 = (1 << 32) - 1, (1 << 64) - 1


def _f16(bits: int) -> np.float16:
    return np.array([bits & 0xFFFF], dtype=np.uint16).view(np.float16)[0]


def _bits(x: np.float16) -> int:
    return int(np.array([x], dtype=np.float16).view(np.uint16)[0])


def _halves(op, a: int, b: int) -> int:
    lo = _bits(op(_f16(a), _f16(b)))
    hi = _bits(op(_f16(a >> 16), _f16(b >> 16)))
    return lo | hi << 16


def _lop3(a: int, b: int, c: int, lut: int) -> int:
    out = 0
    for i in range(8):
        if lut >> i & 1:
            out |= (a if i & 4 else ~a) & (b if i & 2 else ~b) & (c if i & 1 else ~c)
    return out & _M32


class _Overlay(dict):
    """Writes kept apart, reads falling through to `base`."""

    def __init__(self, base: dict[int, int]):
        super().__init__()
        self.base = base

    def get(self, key: int, default: int = 0) -> int:
        return super().get(key, self.base.get(key, default))


class _Thread:
    """One thread's registers; memories shared by the CTA."""

    def __init__(self, tid: int, params: dict[str, int], glob: dict[int, int], shared: dict[int, int],
                 own: bool = False):
        self.env: dict[str, object] = {"%tid.x": tid, "%ctaid.x": 0, "%ctaid.y": 0, "%ctaid.z": 0, "smem": 0}
        self.params, self.glob = params, glob
        # `own`: this thread's shared writes go to a view of its own over the CTA's image, so
        # a copy it issues for a later K step (into a slot another thread has yet to read in
        # this sequential run) hides nothing from the others
        self.shared = _Overlay(shared) if own else shared

    def val(self, tok: str) -> object:
        tok = tok.strip()
        if tok in self.env:
            return self.env[tok]
        if re.fullmatch(r"-?\d+", tok):
            return int(tok)
        if re.fullmatch(r"0[xX][0-9a-fA-F]+", tok):
            return int(tok, 16)
        if tok.startswith("{"):  # a packed pair {lo, hi} of 16-bit registers
            parts = [self.val(p) for p in tok.strip("{}").split(",")]
            if all(isinstance(p, int) for p in parts) and len(parts) == 2:
                return (parts[0] & 0xFFFF) | (parts[1] & 0xFFFF) << 16
        return None

    def load(self, mem: dict[int, int], addr: int, nbytes: int) -> int:
        return int.from_bytes(bytes(mem.get(addr + i, 0) for i in range(nbytes)), "little")

    def store(self, mem: dict[int, int], addr: int, value: int, nbytes: int) -> None:
        for i, byte in enumerate((value & ((1 << (8 * nbytes)) - 1)).to_bytes(nbytes, "little")):
            mem[addr + i] = byte


def _width(opcode: str) -> int:
    return int(re.search(r"[bsuf](8|16|32|64)$", opcode).group(1)) // 8


def _run(lines: list[str], t: _Thread, phase: str) -> list[tuple[str, list]]:
    """Run thread `t` from the start; phase "copy": up to the loop (the prologue's copies), phase
    "loop": through the first pass of the loop body, returning its wgmmas (opcode, [A registers' values,
    B descriptor])."""
    env = t.env
    wgmmas: list[tuple[str, list]] = []
    pc, in_loop = 0, False
    while pc < len(lines):
        line = lines[pc]
        pc += 1
        if line.startswith("$L__loop") and line.endswith(":") and "end" not in line:
            if phase == "copy":
                return wgmmas
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
            assert isinstance(p, bool), f"unknown predicate in {line!r}"
            taken = (not p) if guard.strip().startswith("@!") else p
        if opcode.startswith("mbarrier.try_wait"):
            env[args[0]] = True  # the sequential run has every copy landed already
            continue
        if head == "bra":
            if not taken:
                continue
            if in_loop and "$L__loop" in args[0] and "end" not in args[0]:
                return wgmmas
            pc = lines.index(args[0] + ":")
            continue
        if not taken:
            continue
        if head == "ld" and ".param" in opcode:
            env[args[0]] = t.params[args[1].strip("[]")]
        elif head == "ld" and (".global" in opcode or ".shared" in opcode):
            mem = t.glob if ".global" in opcode else t.shared
            addr = t.val(args[1].strip("[]"))
            assert isinstance(addr, int), line
            regs = [r.strip() for r in args[0].strip("{}").split(",")]
            width = _width(opcode)
            for i, r in enumerate(regs):
                env[r] = t.load(mem, addr + i * width, width)
        elif head == "st" and ".shared" in opcode:
            addr = t.val(args[0].strip("[]"))
            regs = [r.strip() for r in args[1].strip("{}").split(",")]
            assert isinstance(addr, int), line
            width = _width(opcode)
            for i, r in enumerate(regs):
                v = env.get(r)
                if isinstance(v, int):
                    t.store(t.shared, addr + i * width, v, width)
        elif opcode.startswith("cp.async.c") and ".shared.global" in opcode:
            dst, src = t.val(args[0].strip("[]")), t.val(args[1].strip("[]"))
            size = int(args[2])
            real = t.val(args[3]) if len(args) > 3 else size  # src-size: the rest is zero-filled
            assert isinstance(dst, int) and isinstance(src, int) and isinstance(real, int), line
            for i in range(size):
                t.shared[dst + i] = t.glob.get(src + i, 0) if i < real else 0
        elif head == "wgmma" and ".mma_async" in opcode:
            a = [t.val(r) for r in args[1].strip("{}").split(",")]
            wgmmas.append((opcode, [a, t.val(args[2])]))
        elif not args or head in ("wgmma", "cp", "bar", "fence", "st", "ld", "ldmatrix", "stmatrix", "ret"):
            continue
        else:
            dst, srcs = args[0], [t.val(a) for a in args[1:]]
            if any(not isinstance(s, int | bool) for s in srcs):
                env[dst] = None
                continue
            bits = re.search(r"\.[usb](16|32|64)$", opcode)
            mask = {"16": 0xFFFF, "32": _M32, "64": _M64}[bits.group(1)] if bits else None
            if head in ("mov", "cvt", "cvta"):
                env[dst] = srcs[0]
            elif head == "setp":
                signed = ".s" in opcode
                vals = [s - (1 << 32) if signed and ".s32" in opcode and s >> 31 else s for s in srcs]
                env[dst] = _CMP[opcode.split(".")[1]](*vals)
            elif head == "selp":
                env[dst] = srcs[0] if srcs[2] else srcs[1]
            elif head == "mad":
                env[dst] = (srcs[0] * srcs[1] + srcs[2]) & (mask or _M64)
            elif head == "prmt":
                env[dst] = prmt(*srcs)
            elif head == "lop3":
                env[dst] = _lop3(*srcs)
            elif opcode in ("sub.f16x2", "mul.rn.f16x2", "add.rn.f16x2"):
                op = {"sub": np.subtract, "mul": np.multiply, "add": np.add}[head]
                env[dst] = _halves(op, *srcs)
            elif opcode == "add.rn.f16":
                env[dst] = _bits(np.add(_f16(srcs[0]), _f16(srcs[1])))
            elif head in _BIN:
                r = _BIN[head](*srcs)
                if mask is not None and ".wide" not in opcode and isinstance(r, int):
                    r &= mask
                env[dst] = bool(r) if ".pred" in opcode else r
            else:
                env[dst] = None
    raise AssertionError("the loop's back edge was never reached")


def _weight(scheme: str, dtype: torch.dtype):
    torch.manual_seed(hash(scheme) % 1000)
    dense = sparsecc.prune_2to4(torch.randn(N, K, dtype=dtype))
    return sparsecc.compress(dense, quant=scheme)


def _global_image(arrays: dict[str, torch.Tensor]) -> dict[int, int]:
    glob: dict[int, int] = {}
    for name, arr in arrays.items():
        data = arr.contiguous().view(torch.uint8).reshape(-1).tolist()
        base = BASE[name]
        glob.update({base + i: b for i, b in enumerate(data)})
    return glob


OVERLAP = QUANT_WGMMA_OPTIONS
"""sparse_linear's compile options for these tiles: each pass of the loop body holds two K steps
with fragment registers of their own."""


@pytest.mark.parametrize("scheme, block_n, opts", [
    ("w4g128", 128, {}), ("w8g128", 128, {}), ("w4g128z", 256, {}), ("w8g64z", 128, {}),
    ("w4g128", 128, OVERLAP), ("w8g128z", 256, OVERLAP)], ids=str)
def test_each_thread_hands_wgmma_its_dequantized_a_fragments(scheme, block_n, opts):
    """BLOCK_N = 256: each warp dequantizes two m16 tiles, rows 16 w' and 128 + 16 w' (w' its
    warp in the CTA), the warpgroup's two m64 blocks. With `OVERLAP` the mbarrier ring and the
    loop unrolled by two (the dequantization of one K step overlapping the wgmmas of the one
    before): the first pass covers K steps 0 and 1."""
    w = _weight(scheme, torch.float16)
    x = torch.randn(M, K, dtype=torch.float16)
    sig = {"Y": "*fp16", "X": "*fp16", "W": f"*fp16:NV24.{scheme}", "BIAS": "*fp16", "M": "i32", "N": "i32",
           "K": "i32", "stride_xm": "i32", "stride_wn": "i32", "stride_ym": "i32"}
    ck = sparsecc.compile(sparse_linear_kernel, sig, {"BLOCK_M": BLOCK_M, "BLOCK_N": block_n, "BLOCK_K": BLOCK_K,
                          "HAS_BIAS": False, "ACTIVATION": "none"}, target="sm_90a", num_warps=8, num_stages=3,
                          quant_wgmma=True, **opts)
    ptx = ck.asm["ptx"]
    assert "prmt.b32 %fq0" in ptx and "wgmma.mma_async.sp" in ptx and "mma.sp." not in ptx
    arrays = {"X": x, "W_values": w.values, "W_meta": w.meta, "W_scales": w.scales}
    if w.zeros is not None:
        arrays["W_zeros"] = w.zeros
    names = re.findall(r"\.param \.\w+ (\w+)", ptx)
    values = {**BASE, "M": M, "N": N, "K": K, "stride_xm": K, "stride_wn": w.stride(0), "stride_ym": N}
    params = dict(zip(names, [values[name] for name, _ in ck.metadata["params"]], strict=True))
    glob, shared = _global_image(arrays), {}
    lines = [ln.strip() for ln in ptx.splitlines()]
    threads = [_Thread(tid, params, glob, shared) for tid in range(THREADS)]
    for t in threads:  # every thread's prologue copies land before any thread reads (bar.sync)
        _run(lines, t, "copy")
    threads = [_Thread(tid, params, glob, shared, own=True) for tid in range(THREADS)]
    kept = dequantize_tile(w.values, w.scales, w.zeros, w.scheme.bits, torch.float16)  # N x K/2
    want = kept.view(torch.int16).numpy().astype(np.int64) & 0xFFFF
    xbits = x.view(torch.int16).numpy().astype(np.int64) & 0xFFFF
    smem = np.zeros(max(shared) + 1, dtype=np.uint8)
    for addr, byte in shared.items():
        smem[addr] = byte
    for tid, t in enumerate(threads):
        steps = _run(lines, t, "loop")
        rep = block_n // 128  # m64 blocks a warpgroup owns
        per_k = BLOCK_K // 32 * rep  # wgmmas a K step
        passes = 2 if opts.get("wgmma_unroll") else 1
        assert [op for op, _ in steps] == [steps[0][0]] * (per_k * passes) and ".m64n128k32.f32.f16.f16" in steps[0][0]
        group, warp, lane = tid // 128, (tid // 32) % 4, tid % 32
        g, q = lane // 4, lane % 4
        for idx, (_, (a, b_desc)) in enumerate(steps):
            j, within = divmod(idx, per_k)  # K step (BLOCK_K columns) j
            s, i = divmod(within, rep)  # its k32 step s, m64 block i
            row = 64 * group + 16 * warp + 128 * i + g
            spots = [(row, 2 * q), (row + 8, 2 * q), (row, 2 * q + 8), (row + 8, 2 * q + 8)]
            for reg, (r, c) in zip(a, spots):
                col = BLOCK_K // 2 * j + 16 * s + c
                assert isinstance(reg, int), f"thread {tid} step {s}: an A register was not computed"
                assert (reg & 0xFFFF, reg >> 16) == (want[r, col], want[r, col + 1]), \
                    f"{scheme}: thread {tid} step {s} A[{r}][{col}:{col + 2}]"
            if tid % 128 == 0:  # B: the tokens tile, K-major (x rows), the step's 32 values of K
                assert isinstance(b_desc, int)
                for n in range(0, BLOCK_M, 7):
                    for k in range(32):
                        addr = kmajor_addr(b_desc, n, k)
                        got = int(smem[addr]) | int(smem[addr + 1]) << 8
                        assert got == xbits[n, BLOCK_K * j + 32 * s + k], f"B of step {j}.{s}: token {n}, k {k}"
