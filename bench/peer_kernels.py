"""Which kernels do the peers launch for one GEMM? Prints the CUDA kernel names (with their
tile, cluster and schedule, which cuBLAS and cuSPARSELt spell out) of one torch.mm and one
torch 2:4 (cuSPARSELt) mm, and marks the torch 2:4 mm with an NVTX range `peer/` so that
`ncu --nvtx --nvtx-include "peer/"` profiles just that launch.

    python bench/peer_kernels.py [M N K]
"""

from __future__ import annotations

import sys

import torch
from torch.profiler import ProfilerActivity, profile

m, n, k = (int(x) for x in sys.argv[1:4]) if len(sys.argv) >= 4 else (8192, 8192, 8192)
dense = torch.randn(m, k, device="cuda", dtype=torch.float16)
dense = dense * (torch.arange(k, device="cuda") % 4 < 2)  # 2:4 along K
b = torch.randn(k, n, device="cuda", dtype=torch.float16)
s24 = torch.sparse.to_sparse_semi_structured(dense)
for _ in range(3):
    torch.mm(s24, b)
    torch.mm(dense, b)
torch.cuda.synchronize()
with profile(activities=[ProfilerActivity.CUDA]) as prof:
    torch.mm(s24, b)
    torch.mm(dense, b)
    torch.cuda.synchronize()
for event in prof.key_averages():
    if event.device_type.name == "CUDA":
        print(f"{event.key}  ({event.device_time_total:.0f} us)")
torch.cuda.nvtx.range_push("peer")
torch.mm(s24, b)
torch.cuda.nvtx.range_pop()
torch.cuda.synchronize()
