"""Experiment (stop 10): what the per-tile kernel's epilogue costs.

sparse_mm's per-tile kernel next to a copy whose tile store sits behind a run-time condition that
is never true (`M < 0`): same main loop, same registers, no epilogue stores. The difference is
the most any faster epilogue could gain. Same run, cuBLAS alongside.

    python bench/epilogue_probe.py [MxNxK,...]
"""

from __future__ import annotations

import sys

import torch
import triton.testing

import sparsecc
import sparsecc.language as tl
from sparsecc.ops.sparse_mm import (
    _args,
    _store_tile,
    _tile_coords,
    _tile_sum,
    default_config,
    sparse_mm,
)
from sparsecc.runtime.compress import compress, prune_2to4


@sparsecc.jit
def no_store(D, A, B, M, N, K, stride_am, stride_bk, stride_bn, stride_dm, stride_dn,
             BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid_m, pid_n = _tile_coords(tl.program_id(0), tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N), GROUP_M)
    acc = _tile_sum(A, B, M, N, K, stride_am, stride_bk, stride_bn, pid_m, pid_n,
                    BLOCK_M, BLOCK_N, BLOCK_K, False)
    if M < 0:  # never: the loop runs, the stores do not
        _store_tile(D, acc, M, N, stride_dm, stride_dn, pid_m, pid_n, BLOCK_M, BLOCK_N)


def main() -> None:
    shapes = [(4096, 4096, 4096), (8192, 8192, 8192), (4096, 4096, 16384)]
    if len(sys.argv) > 1:
        shapes = [tuple(int(x) for x in s.split("x")) for s in sys.argv[1].split(",")]
    print("| dtype | M×N×K | sparse_mm | without its stores | share of the time | cuBLAS |\n|---|---|---|---|---|---|")
    for dtype in (torch.float16, torch.bfloat16):
        for m, n, k in shapes:
            dense = prune_2to4(torch.randn(m, k, device="cuda", dtype=dtype))
            a, b = compress(dense), torch.randn(k, n, device="cuda", dtype=dtype)
            cfg = default_config(m, n, k, dtype)
            d = torch.empty(m, n, device="cuda", dtype=dtype)
            grid = (triton.cdiv(m, cfg.block_m) * triton.cdiv(n, cfg.block_n),)
            out = sparse_mm(a, b)
            assert torch.allclose(out.float(), dense.float() @ b.float(), atol=1.0, rtol=2e-2)
            t_full = triton.testing.do_bench(lambda a=a, b=b: sparse_mm(a, b), warmup=50, rep=300)
            t_none = triton.testing.do_bench(
                lambda a=a, b=b, d=d, cfg=cfg, grid=grid: no_store[grid](
                    *_args(d, a, b), BLOCK_M=cfg.block_m, BLOCK_N=cfg.block_n, BLOCK_K=cfg.block_k,
                    GROUP_M=cfg.group_m, num_warps=cfg.num_warps, num_stages=cfg.num_stages),
                warmup=50, rep=300)
            t_cub = triton.testing.do_bench(lambda d=dense, b=b: torch.mm(d, b), warmup=50, rep=300)
            f = 2 * m * n * k / 1e9
            print(f"| {str(dtype)[6:]} | {m}x{n}x{k} | {f / t_full:.0f} | {f / t_none:.0f} | "
                  f"{1 - t_none / t_full:.1%} | {f / t_cub:.0f} |", flush=True)


if __name__ == "__main__":
    main()
