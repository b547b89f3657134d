"""Experiment (stop 10): is the PERSISTENT kernel held back by its per-step integer divisions?

The same flat (tile, K step) loop as sparse_mm's PERSISTENT form, but with the tile-grid sizes
as constexprs (powers of two at 4096³ / 8192³: every division becomes a shift) and a grouped
order without the partial-group divisor. Compared with the per-tile and PERSISTENT sparse_mm in
one run. Only valid for shapes whose M, N, K are multiples of the tile and num_m of GROUP_M.

    python bench/persistent_constdiv.py [MxNxK,...]
"""

from __future__ import annotations

import dataclasses
import sys

import torch
import triton.testing

import sparsecc
import sparsecc.language as tl
from sparsecc.ops.sparse_mm import _args, _operand_ptrs, _store_tile, default_config, sparse_mm
from sparsecc.runtime.compress import compress, prune_2to4


@sparsecc.jit
def _coords(tile, NUM_N: tl.constexpr, GROUP_M: tl.constexpr):
    per_group = GROUP_M * NUM_N
    r = tile % per_group
    return (tile // per_group) * GROUP_M + r % GROUP_M, r // GROUP_M


@sparsecc.jit
def pers_const(D, A, B, M, N, K, stride_am, stride_bk, stride_bn, stride_dm, stride_dn,
               BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
               GROUP_M: tl.constexpr, NUM_M: tl.constexpr, NUM_N: tl.constexpr, K_TILES: tl.constexpr):
    pid = tl.program_id(0)
    programs = tl.num_programs(0)
    num_tiles = NUM_M * NUM_N
    my_tiles = (num_tiles - pid + programs - 1) // programs
    pid_m, pid_n = _coords(min(pid, num_tiles - 1), NUM_N, GROUP_M)
    a_ptr, b_ptr = _operand_ptrs(A, B, M, N, K, stride_am, stride_bk, stride_bn, pid_m, pid_n,
                                 BLOCK_M, BLOCK_N, BLOCK_K, False)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for step in range(0, my_tiles * K_TILES):
        a = tl.load(a_ptr, boundary_check=(0, 1), padding_option="zero")
        b = tl.load(b_ptr, boundary_check=(0, 1), padding_option="zero")
        acc = tl.dot(a, b, acc)
        t = step // K_TILES
        ends = step - t * K_TILES == K_TILES - 1
        tile = pid + t * programs
        next_tile = min(tile + programs, num_tiles - 1)
        tile_m, tile_n = _coords(tile, NUM_N, GROUP_M)
        next_m, next_n = _coords(next_tile, NUM_N, GROUP_M)
        dk = (1 - K_TILES) * BLOCK_K if ends else BLOCK_K
        dm = (next_m - tile_m) * BLOCK_M if ends else 0
        dn = (next_n - tile_n) * BLOCK_N if ends else 0
        a_ptr = tl.advance(a_ptr, (dm, dk))
        b_ptr = tl.advance(b_ptr, (dk, dn))
        if ends:
            _store_tile(D, acc, M, N, stride_dm, stride_dn, tile_m, tile_n, BLOCK_M, BLOCK_N)
            acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)


def main() -> None:
    shapes = [(4096, 4096, 4096), (8192, 8192, 8192)]
    if len(sys.argv) > 1:
        shapes = [tuple(int(x) for x in s.split("x")) for s in sys.argv[1].split(",")]
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    print("| dtype | M×N×K | per tile | persistent | persistent, constant divisors | cuBLAS |\n|---|---|---|---|---|---|")
    for dtype in (torch.float16, torch.bfloat16):
        for m, n, k in shapes:
            dense = prune_2to4(torch.randn(m, k, device="cuda", dtype=dtype))
            a, b = compress(dense), torch.randn(k, n, device="cuda", dtype=dtype)
            ref = dense.float() @ b.float()
            cfg = default_config(m, n, k, dtype)
            nm, nn, kt = m // cfg.block_m, n // cfg.block_n, k // cfg.block_k
            d = torch.empty(m, n, device="cuda", dtype=dtype)
            grid = (min(sms, nm * nn),)

            def const(a=a, b=b, d=d, cfg=cfg, nm=nm, nn=nn, kt=kt, grid=grid):
                pers_const[grid](*_args(d, a, b), BLOCK_M=cfg.block_m, BLOCK_N=cfg.block_n, BLOCK_K=cfg.block_k,
                                 GROUP_M=cfg.group_m, NUM_M=nm, NUM_N=nn, K_TILES=kt,
                                 num_warps=cfg.num_warps, num_stages=cfg.num_stages)
                return d

            flops = 2 * m * n * k / 1e9
            row = []
            for fn in (lambda a=a, b=b, cfg=cfg: sparse_mm(a, b, config=dataclasses.replace(cfg, persistent=False)),
                       lambda a=a, b=b, cfg=cfg: sparse_mm(a, b, config=dataclasses.replace(cfg, persistent=True)),
                       const, lambda d=dense, b=b: torch.mm(d, b)):
                d.fill_(float("nan"))
                out = fn()
                err = ((out.float() - ref).abs().max() / ref.abs().max()).item()
                assert err < 1e-2, f"{m}x{n}x{k}: relative error {err}"
                row.append(flops / triton.testing.do_bench(fn, warmup=50, rep=300))
            print(f"| {str(dtype)[6:]} | {m}x{n}x{k} | " + " | ".join(f"{v:.0f}" for v in row) + " |", flush=True)


if __name__ == "__main__":
    main()
