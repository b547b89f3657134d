"""User-written sparse GEMMs against sparse_mm and dense cuBLAS, same run (H100).

The Triton tutorial's matmul (tensors of pointers, grouped 1-D grid, `% M`, K-loop masks) with
A 2:4 sparse, its block-pointer twin (`sparsecc.demo.sparse_gemm_kernel`, 2-D grid), sparse_mm
with the autotuner's best candidate, and torch.mm on the dense matrix; do_bench medians,
TFLOP/s = 2·M·N·K / time. Each user kernel gets the tile sparse_mm's default config uses.

    python bench/user_kernels.py [MxNxK ...]
"""

from __future__ import annotations

import os
import sys

import torch
import triton.testing

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "test", "python", "conformance"))

from tutorial_kernels import matmul_kernel  # noqa: E402

import sparsecc  # noqa: E402
from sparsecc.demo import sparse_gemm_kernel  # noqa: E402
from sparsecc.ops import sparse_mm  # noqa: E402
from sparsecc.ops.sparse_mm import default_config  # noqa: E402


def cdiv(x: int, y: int) -> int:
    return (x + y - 1) // y


def bench(m: int, n: int, k: int) -> dict[str, float]:
    torch.manual_seed(0)
    dense = sparsecc.prune_2to4(torch.randn(m, k, device="cuda", dtype=torch.float16))
    a = sparsecc.compress(dense)
    b = torch.randn(k, n, device="cuda", dtype=torch.float16)
    out = torch.empty(m, n, device="cuda", dtype=torch.float16)
    ref = dense @ b
    cfg = default_config(m, n, k, torch.float16)
    bm, bn, bk = cfg.block_m, cfg.block_n, cfg.block_k
    opts = {"num_warps": cfg.num_warps, "num_stages": cfg.num_stages}

    def tutorial() -> None:
        matmul_kernel[(cdiv(m, bm) * cdiv(n, bn),)](
            a, b, out, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1), out.stride(0),
            out.stride(1), BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk, GROUP_SIZE_M=cfg.group_m, **opts)

    def block_ptr() -> None:
        sparse_gemm_kernel[(cdiv(m, bm), cdiv(n, bn))](out, a, b, m, n, k, a.stride(0), b.stride(0),
                                                        out.stride(0), BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, **opts)

    times = {}
    for name, fn in [("tutorial (ptr tensors)", tutorial), ("block pointers", block_ptr),
                     ("sparse_mm (autotuned)", lambda: sparse_mm(a, b, out=out, autotune=True)),
                     ("torch.mm dense", lambda: torch.mm(dense, b, out=out))]:
        out.fill_(float("nan"))
        fn()
        torch.cuda.synchronize()
        err = (out.float() - ref.float()).abs().max().item()
        assert err < 0.05 * ref.abs().max().item() + 1, f"{name}: max error {err}"
        times[name] = triton.testing.do_bench(fn, warmup=50, rep=300, return_mode="median")
    return times


def main(argv: list[str]) -> None:
    shapes = [tuple(int(x) for x in s.split("x")) for s in argv] or [(4096, 4096, 4096), (8192, 8192, 8192)]
    rows = []
    for m, n, k in shapes:
        t = bench(m, n, k)
        flop = 2 * m * n * k
        base = t["torch.mm dense"]
        for name, ms in t.items():
            rows.append(f"| {m}x{n}x{k} | {name} | {ms * 1e3:.1f} | {flop / ms / 1e9:.0f} | {base / ms:.2f} |")
    print("| shape | kernel | µs | TFLOP/s | × torch.mm |\n|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main(sys.argv[1:])
