"""Can a decode GEMM hide the next one's start by prefetching its weight into L2?

A probe, not a GEMM. One decoder layer's weight streams at batch 1, as `stream_probe.py`'s
cp.async walk (each CTA 32 rows x all K through a 4-stage ring, no math): four matrices the
sizes of a Llama-7B layer's fp16 2:4 values (q/k/v 12288, o 4096, gate/up 22016, down 4096 rows),
with small torch kernels between them (the norms, attention and activation of a decode step),
all in one CUDA graph. With `--prefetch P`, every CTA of a walk ends by issuing
`cp.async.bulk.prefetch.L2` of its share of the first P MB of the next walk's matrix: the HBM
then streams during the previous walk's tail and the small kernels, which barely use it, and
the next walk starts from L2. Prints the graph's time per layer for each P.

    python bench/l2_prefetch_probe.py
"""

from __future__ import annotations

import torch
import triton.testing

from bench.stream_probe import probe_ptx
from sparsecc.codegen.ptxas import assemble
from sparsecc.runtime.driver import CudaKernel

THREADS = 128
BM, BOXW, NB, STAGES = 32, 128, 1, 4
LAYER_ROWS = (12288, 4096, 22016, 4096)
LAYER_KH = (2048, 2048, 2048, 5504)  # kept fp16 values a row (K / 2)


def prefetching_ptx() -> str:
    """The probe walk with two more parameters (the next matrix, bytes a CTA prefetches of it):
    thread 0 of each CTA prefetches its slice into L2 after its walk."""
    ptx = probe_ptx("cp.async", BM, BOXW, NB, STAGES)
    ptx = ptx.replace(".param .u32 p_ld)", ".param .u32 p_ld, .param .u64 p_next, .param .u32 p_slice)")
    tail = ("st.global.u32 [%rd20], %r50;\n"
            "ld.param.u64 %rd30, [p_next];\nld.param.u32 %r70, [p_slice];\n"
            "setp.eq.u32 %p5, %r70, 0;\n@%p5 bra DONE;\n@!%p1 bra DONE;\n"
            "mul.wide.u32 %rd31, %r4, %r70;\nadd.u64 %rd31, %rd31, %rd30;\n"
            "cp.async.bulk.prefetch.L2.global [%rd31], %r70;\nDONE:\n")
    assert "st.global.u32 [%rd20], %r50;" in ptx
    return ptx.replace("st.global.u32 [%rd20], %r50;\n", tail)


def main() -> None:
    cubin = assemble(prefetching_ptx(), "sm_90a").data
    smem = 1024 + STAGES * BM * BOXW * NB * 2
    kern = CudaKernel(cubin, "probe", ["ptr", "ptr", "ptr", "i32", "i32", "ptr", "i32"], shared_bytes=smem)
    mats = [torch.randn(r, kh, dtype=torch.float16, device="cuda") for r, kh in zip(LAYER_ROWS, LAYER_KH)]
    outs = [torch.empty(r // BM * THREADS, dtype=torch.int32, device="cuda") for r in LAYER_ROWS]
    h = torch.randn(1, 4096, dtype=torch.float16, device="cuda")
    mb = sum(m.numel() * 2 for m in mats) / 1e6

    def small() -> None:  # a norm-like pair of small kernels
        h.mul_(torch.rsqrt(h.float().pow(2).mean() + 1e-6).half())

    def layer(prefetch_mb: float, smalls: int) -> None:
        for i, (m, out) in enumerate(zip(mats, outs)):
            nxt = mats[(i + 1) % len(mats)]
            grid = m.shape[0] // BM
            want = min(int(prefetch_mb * 1e6), nxt.numel() * 2)
            slice_ = want // grid // 16 * 16
            kern.launch((grid, 1, 1), (THREADS, 1, 1),
                        [0, m.data_ptr(), out.data_ptr(), m.shape[1] // (BOXW * NB), m.shape[1], nxt.data_ptr(), slice_],
                        smem)
            for _ in range(smalls):
                small()

    rows = []
    for smalls in (0, 2, 4):
        for p in (0, 4, 8, 16, 24, 32):
            ms = triton.testing.do_bench_cudagraph(lambda p=p, s=smalls: layer(p, s), rep=200)
            rows.append((smalls, p, ms * 1e3))
            print(f"small kernels between walks {smalls}, prefetch {p:2d} MB: {ms * 1e3:7.1f} us a layer "
                  f"({mb / (ms * 1e3):.2f} TB/s over its {mb:.0f} MB)", flush=True)
    small_us = triton.testing.do_bench_cudagraph(lambda: [small() for _ in range(8)], rep=100) * 1e3 / 8
    print(f"one small() alone: {small_us:.1f} us (graph)")
    print("smalls | " + " | ".join(f"P={p}" for p in (0, 4, 8, 16, 24, 32)))
    for s in (0, 2, 4):
        print(f"{s} | " + " | ".join(f"{t:.1f}" for sm, _, t in rows if sm == s))


if __name__ == "__main__":
    main()
