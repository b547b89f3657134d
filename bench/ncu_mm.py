"""One sparse_mm launch to profile under ncu (the warm-up launch compiles; profile launch 2):
    ncu --kernel-name sparse_mm_kernel --launch-skip 1 --launch-count 1 python bench/ncu_mm.py [M N K] [TILE]
TILE as decode_sweep's parse_config spells it (e.g. 128x256x64w8s4g16; a last `p` profiles the
persistent form, e.g. 128x256x64w8s4g16p); the default config otherwise.
"""

from __future__ import annotations

import os
import sys

import torch

from sparsecc.ops.sparse_mm import sparse_mm
from sparsecc.runtime.compress import compress, prune_2to4

m, n, k = (int(x) for x in sys.argv[1:4]) if len(sys.argv) >= 4 else (8192, 8192, 8192)
config = None
if len(sys.argv) >= 5:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from decode_sweep import parse_config

    config = parse_config(sys.argv[4])
a = compress(prune_2to4(torch.randn(m, k, device="cuda", dtype=torch.float16)))
b = torch.randn(k, n, device="cuda", dtype=torch.float16)
for _ in range(2):
    sparse_mm(a, b, config=config)
torch.cuda.synchronize()
