"""sparse_mm one-program-per-tile vs PERSISTENT (one program per SM walking the tiles), same
tile config, side by side with cuBLAS in the same run; checks each result against torch.

    python bench/persistent_ab.py [MxNxK,MxNxK,...]
"""

from __future__ import annotations

import dataclasses
import sys

import torch
import triton.testing

from sparsecc.ops.sparse_mm import default_config, sparse_mm
from sparsecc.runtime.compress import compress, prune_2to4

SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192), (16384, 16384, 16384), (28672, 4096, 8192),
          (8192, 4096, 28672), (8192, 8192, 4096)]
if len(sys.argv) > 1:
    SHAPES = [tuple(int(x) for x in s.split("x")) for s in sys.argv[1].split(",")]

rows = []
for dtype in (torch.float16, torch.bfloat16):
    for m, n, k in SHAPES:
        dense = prune_2to4(torch.randn(m, k, device="cuda", dtype=dtype))
        a, b = compress(dense), torch.randn(k, n, device="cuda", dtype=dtype)
        ref = dense.float() @ b.float()
        base = default_config(m, n, k, dtype)
        flops = 2 * m * n * k / 1e9
        row = [str(dtype)[6:], f"{m}x{n}x{k}"]
        for cfg in (dataclasses.replace(base, persistent=False), dataclasses.replace(base, persistent=True),
                    dataclasses.replace(base, persistent=True, group_m=1)):
            out = sparse_mm(a, b, config=cfg)
            err = ((out.float() - ref).abs().max() / ref.abs().max()).item()
            assert err < 1e-2, f"{m}x{n}x{k} {cfg}: relative error {err}"
            ms = triton.testing.do_bench(lambda a=a, b=b, cfg=cfg: sparse_mm(a, b, config=cfg), warmup=50, rep=300)
            row.append(flops / ms)
        dn = triton.testing.do_bench(lambda d=dense, b=b: torch.mm(d, b), warmup=50, rep=300)
        row.append(flops / dn)
        rows.append(row)
        print(*row, flush=True)

print("\n| dtype | M×N×K | per tile | persistent | gain | persistent, row-major order | gain | cuBLAS |"
      "\n|---|---|---|---|---|---|---|---|")
for dt, shape, tile, pers, raster, cub in rows:
    print(f"| {dt} | {shape} | {tile:.0f} | {pers:.0f} | {pers / tile:.3f}× | {raster:.0f} | {raster / tile:.3f}× "
          f"| {cub:.0f} |")
