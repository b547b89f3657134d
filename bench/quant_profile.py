"""Launches of the NV24 and quantized decode kernels at one shape and tile (defaults: M = 1,
28672x8192, 16x64x256 w4 s3, the best tile of bench/quant_decode.py), for `ncu` to compare: what
holds the quantized kernel back. Each variant launches twice (the first compiles).

    ncu --section SpeedOfLight --section WarpStateStats --section InstructionStats \\
        -k regex:linear python bench/quant_profile.py [M NxK BMxBNxBK WARPS STAGES [SPLIT]] [--variants NV24,w4g128] [--qw]

`--qw`: quantized variants on the register-A wgmma kernel (`LinearConfig.quant_wgmma`, sm_90a).
"""

from __future__ import annotations

import sys

import torch

import sparsecc
from sparsecc.ops.sparse_linear import LinearConfig, launch_linear


def main(argv: list[str]) -> None:
    variants = ["NV24", "w4g128"]
    quant_wgmma = "--qw" in argv  # the register-A wgmma kernel (quantized weights, sm_90a)
    argv = [a for a in argv if a != "--qw"]
    if "--variants" in argv:
        i = argv.index("--variants")
        variants = argv[i + 1].split(",")
        argv = argv[:i] + argv[i + 2:]
    m, shape, tile, warps, stages, split = (argv + ["1", "28672x8192", "16x64x256", "4", "3", "1"][len(argv):])[:6]
    m = int(m)
    n, k = (int(v) for v in shape.split("x"))
    cfg = LinearConfig(*(int(v) for v in tile.split("x")), int(warps), int(stages), int(split), quant_wgmma)
    torch.manual_seed(0)
    x = torch.randn(m, k, device="cuda", dtype=torch.float16)
    dense_w = sparsecc.prune_2to4(torch.randn(n, k, device="cuda", dtype=torch.float16))
    y = torch.empty(m, n, device="cuda", dtype=torch.float16)
    for v in variants:
        w = sparsecc.compress(dense_w) if v == "NV24" else sparsecc.compress(dense_w, quant=v)
        for _ in range(2):
            launch_linear(y, x, w, y, cfg, has_bias=False, activation="none")
        torch.cuda.synchronize()
        err = (y.float() - torch.nn.functional.linear(x, w.to_dense()).float()).abs().max().item()
        print(f"{v} {m}x{n}x{k} {cfg}: max error {err:.3g}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
