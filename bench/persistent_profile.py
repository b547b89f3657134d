"""One sparse_mm launch to profile under ncu: per tile (`tile`) or PERSISTENT (`persistent`).
Warms up twice, then runs the measured launch (ncu --launch-skip 2 --launch-count 1).

    ncu -k regex:sparse_mm --launch-skip 2 --launch-count 1 --section SpeedOfLight ... \
        python bench/persistent_profile.py persistent 4096x4096x4096
"""

from __future__ import annotations

import dataclasses
import sys

import torch

from sparsecc.ops.sparse_mm import default_config, sparse_mm
from sparsecc.runtime.compress import compress, prune_2to4

form = sys.argv[1] if len(sys.argv) > 1 else "tile"
m, n, k = (int(x) for x in (sys.argv[2] if len(sys.argv) > 2 else "4096x4096x4096").split("x"))
dense = prune_2to4(torch.randn(m, k, device="cuda", dtype=torch.float16))
a, b = compress(dense), torch.randn(k, n, device="cuda", dtype=torch.float16)
cfg = dataclasses.replace(default_config(m, n, k, torch.float16), persistent=form == "persistent")
for _ in range(3):
    out = sparse_mm(a, b, config=cfg)
torch.cuda.synchronize()
err = ((out.float() - dense.float() @ b.float()).abs().max()).item()
print(f"{form} {m}x{n}x{k} {cfg}: max abs err {err:.3g}")
