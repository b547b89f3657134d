"""Launches of torchao's CUTLASS fp8 2:4 GEMM and sparsecc's fp8 GEMM at one shape, for `ncu`
to put side by side: launch shape (grid, cluster, registers, shared memory), stalls, pipes.
Each launches three times (the first compiles); both are checked against the float64 product.

    ncu --section LaunchStats --section SpeedOfLight --section WarpStateStats \\
        -k regex:"linear|sm90|cutlass" -c 4 python bench/fp8_profile.py [M NxK [TILE]]

TILE as `fp8_torchao.py` spells it (128x128x256w8s3); default: the dispatcher's tile.
"""

from __future__ import annotations

import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import sparsecc  # noqa: E402
from bench.fp8_torchao import FP8_SUM, check, parse_tiles, tile_name, torchao_ops  # noqa: E402
from sparsecc.nn.quantize import quantize_rows  # noqa: E402
from sparsecc.ops.quantize_rows import quantize_rows_fused  # noqa: E402
from sparsecc.ops.sparse_linear_8bit import default_config_linear_8bit, launch_linear_8bit  # noqa: E402


def main(argv: list[str]) -> None:
    m, shape, tile = (argv + ["512", "4096x14336", ""][len(argv):])[:3]
    m, (n, k) = int(m), (int(v) for v in shape.split("x"))
    weight = sparsecc.prune_2to4(torch.randn(n, k, dtype=torch.bfloat16, device="cuda") * 0.05)
    q, sw = quantize_rows(weight, torch.float8_e4m3fn)
    w8 = sparsecc.compress(q)
    x = torch.randn(m, k, dtype=torch.bfloat16, device="cuda")
    xq, xs = quantize_rows_fused(x, torch.float8_e4m3fn)
    want = (xq.double() * xs.double()[:, None]) @ (q.double() * sw.double()[:, None]).T
    cfg = parse_tiles(tile)[0] if tile else default_config_linear_8bit(m, n, k)
    y = torch.empty(m, n, dtype=torch.bfloat16, device="cuda")
    for _ in range(3):
        y.fill_(float("nan"))
        launch_linear_8bit(y, xq, xs, w8, sw, None, "none", cfg)
    torch.cuda.synchronize()
    check(f"sparsecc {tile_name(cfg)}", y, want, rel=FP8_SUM)
    ops = torchao_ops()
    if isinstance(ops, str):
        print(ops)
    else:
        gemm, pack = ops
        ao_w, ao_meta = pack(q)
        for _ in range(3):
            got = gemm(xq, xs, ao_w, ao_meta, sw, None, torch.bfloat16)
        check("torchao", got, want, rel=FP8_SUM)
    torch.cuda.synchronize()
    print(f"M={m} {n}x{k}: sparsecc {tile_name(cfg)} and torchao launched, both match")


if __name__ == "__main__":
    main(sys.argv[1:])
