"""The register-A wgmma of quantized weights (`quant_wgmma`), on the CPU: the PTX that sparse_linear's
kernel compiles to, evaluated with real data for every thread of a CTA, must hand each
`wgmma.mma_async.sp` the A registers that the PTX ISA's register-A layout names, holding the
dequantized kept values the interpreter's `tt.dequantize` computes (`runtime.quant_codec`), bit
for bit, and B descriptors that read the tokens tile x^T.

How: the PTX emulator (test/python/ptx_emulator.py, on values where test_wgmma_descriptor_reads.py
tracks tokens) runs each thread through the prologue and the first K iteration: global memory
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
from ptx_emulator import PtxThread
from wgmma_descriptors import kmajor_addr

import sparsecc
from sparsecc.ops.linear_config import QUANT_WGMMA_PLAIN, QUANT_WGMMA_RING, quant_wgmma_options
from sparsecc.ops.sparse_linear import sparse_linear_kernel
from sparsecc.runtime.quant_codec import dequantize_tile

BLOCK_M, BLOCK_K = 128, 128  # tokens, K: quantized_prefill_config's tile (BLOCK_N weight rows: 128 or 256)
THREADS = 256
M, N, K = 160, 256, 512  # program (0, 0) sees whole tiles; K four iterations (one or two are evaluated)
BASE = {"Y": 1 << 32, "X": 2 << 32, "W_values": 3 << 32, "W_meta": 4 << 32, "W_scales": 5 << 32,
        "W_zeros": 6 << 32, "BIAS": 7 << 32}


class _Overlay(dict):
    """Writes kept apart, reads falling through to `base`."""

    def __init__(self, base: dict[int, int]):
        super().__init__()
        self.base = base

    def get(self, key: int, default: int = 0) -> int:
        return super().get(key, self.base.get(key, default))


def _thread(tid: int, params: dict[str, int], glob: dict[int, int], shared: dict[int, int],
            own: bool = False) -> PtxThread:
    """One thread over the CTA's memories. `own`: this thread's shared writes go to a view of its
    own over the CTA's image, so a copy it issues for a later K step (into a slot another thread
    has yet to read in this sequential run) hides nothing from the others."""
    return PtxThread(tid, params, glob, _Overlay(shared) if own else shared)


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


PLAIN = QUANT_WGMMA_PLAIN
SHIPPED = quant_wgmma_options(torch.float16)
OVERLAP = QUANT_WGMMA_RING
"""The overlapped form of these tiles (the default is the plain loop): each pass of the loop body
holds two K steps with fragment registers of their own."""


def _compiled(scheme: str, block_n: int, opts: dict[str, bool], stages: int = 3):
    """sparse_linear's quant_wgmma kernel for a random weight of `scheme`: (weight, x, PTX lines,
    parameter values, global memory image)."""
    w = _weight(scheme, torch.float16)
    x = torch.randn(M, K, dtype=torch.float16)
    sig = {"Y": "*fp16", "X": "*fp16", "W": f"*fp16:NV24.{scheme}", "BIAS": "*fp16", "M": "i32", "N": "i32",
           "K": "i32", "stride_xm": "i32", "stride_wn": "i32", "stride_ym": "i32"}
    ck = sparsecc.compile(sparse_linear_kernel, sig, {"BLOCK_M": BLOCK_M, "BLOCK_N": block_n, "BLOCK_K": BLOCK_K,
                          "HAS_BIAS": False, "ACTIVATION": "none"}, target="sm_90a", num_warps=8, num_stages=stages,
                          quant_wgmma=True, **opts)
    ptx = ck.asm["ptx"]
    assert "prmt.b32 %fq0" in ptx and "wgmma.mma_async.sp" in ptx and "mma.sp." not in ptx
    arrays = {"X": x, "W_values": w.values, "W_meta": w.meta, "W_scales": w.scales}
    if w.zeros is not None:
        arrays["W_zeros"] = w.zeros
    names = re.findall(r"\.param \.\w+ (\w+)", ptx)
    values = {**BASE, "M": M, "N": N, "K": K, "stride_xm": K, "stride_wn": w.stride(0), "stride_ym": N}
    params = dict(zip(names, [values[name] for name, _ in ck.metadata["params"]], strict=True))
    return w, x, [ln.strip() for ln in ptx.splitlines()], params, _global_image(arrays)


def _check_a(scheme: str, tid: int, steps: list, block_n: int, want: np.ndarray) -> None:
    """Thread `tid`'s wgmmas, K step after K step, hold the dequantized kept values the ISA's
    register-A layout names for it."""
    rep = block_n // 128  # m64 blocks a warpgroup owns
    per_k = BLOCK_K // 32 * rep  # wgmmas a K step
    group, warp, lane = tid // 128, (tid // 32) % 4, tid % 32
    g, q = lane // 4, lane % 4
    for idx, (_, (a, *_)) in enumerate(steps):
        j, within = divmod(idx, per_k)  # K step (BLOCK_K columns) j
        s, i = divmod(within, rep)  # its k32 step s, m64 block i
        row = 64 * group + 16 * warp + 128 * i + g
        spots = [(row, 2 * q), (row + 8, 2 * q), (row, 2 * q + 8), (row + 8, 2 * q + 8)]
        for reg, (r, c) in zip(a, spots):
            col = BLOCK_K // 2 * j + 16 * s + c
            assert isinstance(reg, int), f"thread {tid} step {j}.{s}: an A register was not computed"
            assert (reg & 0xFFFF, reg >> 16) == (want[r, col], want[r, col + 1]), \
                f"{scheme}: thread {tid} step {j}.{s} A[{r}][{col}:{col + 2}]"


@pytest.mark.parametrize("scheme, block_n, opts", [
    ("w4g128", 128, {}), ("w8g128", 128, {}), ("w4g128z", 256, {}), ("w8g64z", 128, {}),
    ("w4g128", 128, OVERLAP), ("w8g128z", 256, OVERLAP), ("w8g64z", 128, {"register_scales": False})], ids=str)
def test_each_thread_hands_wgmma_its_dequantized_a_fragments(scheme, block_n, opts):
    """BLOCK_N = 256: each warp dequantizes two m16 tiles, rows 16 w' and 128 + 16 w' (w' its
    warp in the CTA), the warpgroup's two m64 blocks. With `OVERLAP` the mbarrier ring and the
    loop unrolled by two (the dequantization of one K step overlapping the wgmmas of the one
    before): the first pass covers K steps 0 and 1."""
    w, x, lines, params, glob = _compiled(scheme, block_n, opts)
    shared: dict[int, int] = {}
    threads = [_thread(tid, params, glob, shared) for tid in range(THREADS)]
    for t in threads:  # every thread's prologue copies land before any thread reads (bar.sync)
        t.run(lines, "loop")
    threads = [_thread(tid, params, glob, shared, own=True) for tid in range(THREADS)]
    kept = dequantize_tile(w.values, w.scales, w.zeros, w.scheme.bits, torch.float16)  # N x K/2
    want = kept.view(torch.int16).numpy().astype(np.int64) & 0xFFFF
    xbits = x.view(torch.int16).numpy().astype(np.int64) & 0xFFFF
    smem = np.zeros(max(shared) + 1, dtype=np.uint8)
    for addr, byte in shared.items():
        smem[addr] = byte
    for tid, t in enumerate(threads):
        steps = t.run(lines, "back_edge")
        rep = block_n // 128  # m64 blocks a warpgroup owns
        per_k = BLOCK_K // 32 * rep  # wgmmas a K step
        passes = 2 if opts.get("wgmma_unroll") else 1
        assert [op for op, _ in steps] == [steps[0][0]] * (per_k * passes) and ".m64n128k32.f32.f16.f16" in steps[0][0]
        _check_a(scheme, tid, steps, block_n, want)
        if tid % 128 == 0:  # B: the tokens tile, K-major (x rows), the step's 32 values of K
            for idx, (_, (_, b_desc, *_)) in enumerate(steps):
                j, within = divmod(idx, per_k)
                s = within // rep
                assert isinstance(b_desc, int)
                for n in range(0, BLOCK_M, 7):
                    for k in range(32):
                        addr = kmajor_addr(b_desc, n, k)
                        got = int(smem[addr]) | int(smem[addr + 1]) << 8
                        assert got == xbits[n, BLOCK_K * j + 32 * s + k], f"B of step {j}.{s}: token {n}, k {k}"


@pytest.mark.parametrize("scheme, block_n, opts, stages", [
    ("w4g128", 128, PLAIN, 3), ("w8g64z", 128, PLAIN, 3), ("w4g128z", 128, OVERLAP, 3),
    ("w4g128", 128, SHIPPED, 4), ("w8g128z", 128, SHIPPED, 4), ("w8g64z", 128, {**SHIPPED, "register_scales": False}, 4)],
    ids=str)
def test_every_k_step_dequantizes_with_its_own_scales(scheme, block_n, opts, stages):
    """All K / BLOCK_K = 4 iterations, the CTA's 256 threads in lockstep from one barrier or
    mbarrier wait to the next (`PtxThread.run_phase`): the scales (and zero points) of each step
    are the ones each thread loaded into registers one iteration earlier (`register_scales`:
    the accumulator layout, a thread's own fragment rows), or with the switch off the ones the
    loop body's copies bring into the ring (a synchronous ld.global + st.shared each: a
    BLOCK_N x BLOCK_K/G tile is too narrow for cp.async), in the CTA-barrier form and in the
    mbarrier ring unrolled by two; every wgmma must get the dequantized values of its own K
    step; so in the fp16 loop as shipped (`SHIPPED`: four stages, unrolled, a group kept in
    flight through the barrier)."""
    w, _, lines, params, glob = _compiled(scheme, block_n, opts, stages)
    assert any("ld.global.b16" in ln for ln in lines)  # the scales: in registers, or too narrow for cp.async
    shared: dict[int, int] = {}
    threads = [_thread(tid, params, glob, shared) for tid in range(THREADS)]
    running = list(threads)
    while running:
        running = [t for t in running if t.run_phase(lines)]
    kept = dequantize_tile(w.values, w.scales, w.zeros, w.scheme.bits, torch.float16)
    want = kept.view(torch.int16).numpy().astype(np.int64) & 0xFFFF
    per_k = BLOCK_K // 32 * (block_n // 128)
    for tid, t in enumerate(threads):
        assert len(t.wgmmas) == per_k * K // BLOCK_K, f"thread {tid}: {len(t.wgmmas)} wgmmas"
        _check_a(scheme, tid, t.wgmmas, block_n, want)
