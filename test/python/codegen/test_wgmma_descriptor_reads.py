"""Which element each wgmma reads, on the CPU: the descriptors the PTX builds, decoded with the
PTX ISA's canonical layouts, against where the kernel's own copies wrote each element.

The kernel is conformance/parity_kernels.py's fused attention forward at head dim 128 on sm_90a,
whose operands need the column-blocked K-major layouts (dot_staging.kmajor_col_blocks): Q (128 x 128,
rows of 256 bytes) is A of Q K^T through a K-major descriptor over two 128-byte column blocks,
K^T (128 x 64, stored as 64 rows of 128 K values) is its B over two K-major column blocks, and V
(64 x 128) is the MN-major B of P @ V. Head dim 64 (one 128-byte atom a row) is checked too.

How: the PTX emulator (test/python/ptx_emulator.py) runs the PTX's integer instructions for every
thread of the CTA (the prologue, then the first loop iteration). A register loaded from global
memory holds a token, the global address it came from; `st.shared` and `cp.async` record, for
every shared word written, the global bytes it holds. Each wgmma's descriptors are then decoded
and every (row, k) of the operand is located by the ISA's canonical layouts
(test/python/wgmma_descriptors.py). The global byte found there
must be the element the dot multiplies: Q[64 g + r, 16 s + k] for A of warpgroup g at step s,
K[n, 16 s + k] for B of Q K^T, V[16 s + k, n] for B of P @ V.
"""

from __future__ import annotations

import os
import re
import sys

import pytest
from ptx_emulator import PtxThread
from wgmma_descriptors import kmajor_addr, mnmajor_addr, swizzle

import sparsecc

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "conformance"))
import parity_kernels as pk  # noqa: E402

ATTN = pk.sparsecc_kernel(pk.attention_kernel)
SIG = {"q_ptr": "*fp16:16", "k_ptr": "*fp16:16", "v_ptr": "*fp16:16", "out_ptr": "*fp16:16", "sm_scale": "fp32",
       "stride_h": "i32:16", "stride_m": "i32:16", "n_ctx": "i32:16"}
BASES = {"q_ptr": 1 << 32, "k_ptr": 2 << 32, "v_ptr": 3 << 32, "out_ptr": 4 << 32}
N_CTX = 512
THREADS = 256


class Token(tuple):
    """A register loaded from global memory: (global byte address of its low byte,)."""


class _TokenThread(PtxThread):
    """A thread whose global loads give Tokens and whose shared memory maps each 4-byte word to
    the Token (the global bytes) it holds."""

    def load(self, space: str, addr: int, nbytes: int) -> object:
        return Token((addr,)) if space == "global" else None  # reads of shared: not modelled

    def store(self, addr: int, value: object, nbytes: int) -> None:
        assert nbytes == 4, "the token model keeps 32-bit words"
        self.shared[addr] = value

    def copy(self, dst: int, src: int, size: int, real: int) -> None:
        for i in range(0, size, 4):
            self.shared[dst + i] = Token((src + i,)) if i < real else None


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
    per_thread = [_TokenThread(tid, params, shared=shared).run(lines, "back_edge") for tid in range(threads)]
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
        pv = [ops for op, ops in mine if isinstance(ops[0], list)]
        assert len(qk) == d // 16 and len(pv) == 64 // 16, [op for op, _ in mine]
        assert all(".m64n64k16." in op for op, ops in mine if isinstance(ops[0], int))
        assert all(f".m64n{d}k16." in op for op, ops in mine if isinstance(ops[0], list))
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
            assert isinstance(ops[0], list) and isinstance(ops[1], int) and ops[-1] == 1
            for k in range(16):
                for n in range(d):
                    assert _element(_global(shared, mnmajor_addr(ops[1], k, n)), "v_ptr", d) == (16 * s + k, n)


def test_dense_gemm_with_256_byte_rows_reads_a_and_b_where_the_copies_wrote():
    """Tutorial 03's matmul at BLOCK_K = 128 (A's rows 256 bytes: two K-major column blocks
    read through the descriptor, as attention's Q; was ldmatrix into registers), B row-major
    (MN-major, N = 128 over two column blocks: LBO), 4 warps: two m64 blocks per warpgroup.
    Unaligned sizes, so the copies are cp.async (TMA's boxes are checked by analysis.tma)."""
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
            stored = swizzle(2048 + r * 128 + 2 * c, 128)
            assert kmajor_addr(desc + 2 * (c // 16), r, c % 16) == stored  # start + 32 bytes a step
    desc = smem_desc_bits(0, lbo=64 * 128, sbo=1024, swizzle="128B")  # K x N = 64 x 128, two blocks
    for k in range(16):
        for n in range(128):
            stored = swizzle((n // 64) * 64 * 128 + k * 128 + 2 * (n % 64), 128)
            assert mnmajor_addr(desc, k, n) == stored
