"""sparse_mm (default config) vs torch.mm on a few shapes, one line each: for A/B runs of
compiler switches (e.g. SPARSECC_WGMMA_UNROLL=0/1) in separate processes.

    python bench/quick_mm.py [label] [MxNxK,MxNxK,...]
"""

from __future__ import annotations

import sys

import torch
import triton.testing

from sparsecc.ops.sparse_mm import sparse_mm
from sparsecc.runtime.compress import compress, prune_2to4

SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192), (16384, 16384, 16384), (8192, 4096, 28672),
          (8192, 16, 8192), (8192, 128, 8192)]
label = sys.argv[1] if len(sys.argv) > 1 else ""
if len(sys.argv) > 2:
    SHAPES = [tuple(int(x) for x in shape.split("x")) for shape in sys.argv[2].split(",")]
for dtype in (torch.float16, torch.bfloat16):
    for m, n, k in SHAPES:
        dense = prune_2to4(torch.randn(m, k, device="cuda", dtype=dtype))
        a, b = compress(dense), torch.randn(k, n, device="cuda", dtype=dtype)
        out = sparse_mm(a, b)
        ref = dense.float() @ b.float()
        err = ((out.float() - ref).abs().max() / ref.abs().max()).item()
        ms = triton.testing.do_bench(lambda a=a, b=b: sparse_mm(a, b), warmup=50, rep=300)
        dn = triton.testing.do_bench(lambda d=dense, b=b: torch.mm(d, b), warmup=50, rep=300)
        f = 2 * m * n * k / 1e9
        print(f"{label:8} {str(dtype)[6:]:9} {m}x{n}x{k:<6} {f / ms:7.1f} TFLOP/s  cuBLAS {f / dn:7.1f}  "
              f"{dn / ms:5.2f}x  relerr {err:.1e}", flush=True)
