"""sparse_mm at one shape over a list of explicit configs, next to torch.mm in the same run.

    python bench/tile_sweep.py [M N K] [--configs 128x128x64w4s3,...]
"""

from __future__ import annotations

import os
import sys

import torch
import triton.testing

from sparsecc.ops.sparse_mm import MMConfig, sparse_mm
from sparsecc.runtime.compress import compress, prune_2to4

m, n, k = (int(x) for x in sys.argv[1:4]) if len(sys.argv) >= 4 and sys.argv[1].isdigit() else (8192, 8192, 8192)
CONFIGS = [
    MMConfig(256, 128, 128, group_m=8, num_warps=8, num_stages=2),
    MMConfig(256, 128, 128, group_m=16, num_warps=8, num_stages=2),
    MMConfig(256, 128, 128, group_m=8, num_warps=8, num_stages=3),
    MMConfig(256, 128, 128, group_m=16, num_warps=8, num_stages=3),
    MMConfig(128, 256, 128, group_m=16, num_warps=8, num_stages=2),
    MMConfig(128, 256, 64, group_m=16, num_warps=8, num_stages=3),
]
if "--configs" in sys.argv:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from decode_sweep import parse_config

    CONFIGS = [parse_config(t) for t in sys.argv[sys.argv.index("--configs") + 1].split(",")]
dense = prune_2to4(torch.randn(m, k, device="cuda", dtype=torch.float16))
a, b = compress(dense), torch.randn(k, n, device="cuda", dtype=torch.float16)
ref = dense.float() @ b.float()
f = 2 * m * n * k / 1e9
dn = triton.testing.do_bench(lambda: torch.mm(dense, b), warmup=50, rep=300)
print(f"{m}x{n}x{k} cuBLAS {f / dn:.1f} TFLOP/s")
for cfg in CONFIGS:
    try:
        out = sparse_mm(a, b, config=cfg)
        err = ((out.float() - ref).abs().max() / ref.abs().max()).item()
        ms = triton.testing.do_bench(lambda cfg=cfg: sparse_mm(a, b, config=cfg), warmup=50, rep=300)
        print(f"{cfg}  {f / ms:7.1f} TFLOP/s  {dn / ms:5.2f}x  relerr {err:.1e}", flush=True)
    except Exception as e:  # report and go on
        print(f"{cfg}  FAILED {type(e).__name__}: {str(e)[:150]}", flush=True)
