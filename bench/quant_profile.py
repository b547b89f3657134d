"""One launch each of the NV24 and w4g128 decode kernels (M = 1, 4096x4096, the best tiles of
bench/quant_decode.py), for `ncu` to compare: what holds the quantized kernel back.

    ncu --section SpeedOfLight --section WarpStateStats -k regex:linear python bench/quant_profile.py
"""

from __future__ import annotations

import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "test", "python", "conformance"))

from linear_kernels import linear_block_ptr  # noqa: E402

import sparsecc  # noqa: E402


def main() -> None:
    m, n, k = 1, 4096, 4096
    torch.manual_seed(0)
    x = torch.randn(m, k, device="cuda", dtype=torch.float16)
    dense_w = sparsecc.prune_2to4(torch.randn(n, k, device="cuda", dtype=torch.float16))
    y = torch.empty(m, n, device="cuda", dtype=torch.float16)
    for w in (sparsecc.compress(dense_w), sparsecc.compress(dense_w, quant="w4g128")):
        for _ in range(2):  # the first launch compiles
            linear_block_ptr[(1, n // 32)](y, x, w, y, m, n, k, x.stride(0), w.stride(0), y.stride(0),
                                           BLOCK_M=16, BLOCK_N=32, BLOCK_K=512, HAS_BIAS=False,
                                           SILU=False, num_warps=4, num_stages=2)
        torch.cuda.synchronize()
        print(w.encoding, (y.float() - torch.nn.functional.linear(x, w.to_dense()).float()).abs().max().item())


if __name__ == "__main__":
    main()
