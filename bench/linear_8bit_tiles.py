"""Tile sweep of the 8-bit 2:4 linear kernel (`sparse_linear_8bit`, fp8 or int8), against dense
fp16 `F.linear`, same run: which tile `default_config_linear_8bit` should pick per token count.

Each cell is timed as the dispatcher's table times a layer (`sparsecc.ops.dispatch_measure`:
CUDA graphs, medians; with `--cold`, a cold L2 before each call), the per-token quantization of
x included, on a random 2:4 weight quantized per row. Prints one markdown row per (N x K, M):
F.linear, the default pick, each candidate tile, the best one and its speed-up over dense.

    python bench/linear_8bit_tiles.py [--dtype fp8|int8] [--m 256,512,2048] [--shapes 4096x4096,...]
                                      [--cold] [--budget 240]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import sparsecc  # noqa: E402
from sparsecc.nn.quantize import quantize_rows  # noqa: E402
from sparsecc.ops import dispatch_measure  # noqa: E402
from sparsecc.ops.sparse_linear import LinearConfig  # noqa: E402
from sparsecc.ops.sparse_linear_8bit import (  # noqa: E402
    default_config_linear_8bit,
    reference_linear_8bit,
    sparse_linear_8bit,
)

SHAPES = [(4096, 4096), (11008, 4096), (4096, 11008), (4096, 14336), (28672, 8192)]
MS = [256, 512, 1024, 2048, 4096]
TILES = [LinearConfig(64, 128, 256, num_warps=4, num_stages=4), LinearConfig(128, 256, 128, num_warps=8, num_stages=3),
         LinearConfig(128, 128, 128, num_warps=4, num_stages=3), LinearConfig(128, 128, 128, num_warps=8, num_stages=3),
         LinearConfig(128, 128, 256, num_warps=8, num_stages=3), LinearConfig(64, 256, 128, num_warps=4, num_stages=3),
         LinearConfig(128, 256, 128, num_warps=8, num_stages=4)]


def name(c: LinearConfig) -> str:
    return f"{c.block_m}x{c.block_n}x{c.block_k}w{c.num_warps}s{c.num_stages}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dtype", choices=("fp8", "int8"), default="fp8")
    ap.add_argument("--m", default=",".join(map(str, MS)), help="token counts")
    ap.add_argument("--shapes", default=",".join(f"{n}x{k}" for n, k in SHAPES), help="NxK weights (out x in)")
    ap.add_argument("--cold", action="store_true", help="a cold L2 before each call (dispatch_measure.cold_l2)")
    ap.add_argument("--budget", type=float, default=240.0, help="seconds after which no new shape starts")
    args = ap.parse_args(argv)
    if not torch.cuda.is_available():
        ap.error("needs a CUDA GPU")
    qdtype = torch.float8_e4m3fn if args.dtype == "fp8" else torch.int8
    ms = [int(v) for v in args.m.split(",")]
    shapes = [tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",")]
    start = time.monotonic()
    print(f"# {torch.cuda.get_device_name()}, {args.dtype} 2:4 linear tiles vs F.linear (us{', cold L2' if args.cold else ''})\n")
    print("| N x K | M | F.linear | default | " + " | ".join(name(c) for c in TILES) + " | best | best vs dense |")
    print("|---" * (len(TILES) + 6) + "|")
    with dispatch_measure.cold_l2() if args.cold else contextlib.nullcontext(), torch.no_grad():
        for n, k in shapes:
            if time.monotonic() - start > args.budget:
                print(f"| {n}x{k} | skipped: the budget is spent |")
                continue
            g = torch.Generator(device="cuda").manual_seed(n + k)
            weight = sparsecc.prune_2to4(torch.randn(n, k, dtype=torch.float16, device="cuda", generator=g) * 0.05)
            q, sw = quantize_rows(weight, qdtype)
            w8 = sparsecc.compress(q)
            for m in ms:
                x = torch.randn(m, k, dtype=torch.float16, device="cuda", generator=g)
                dense = dispatch_measure.time_us(lambda x=x, w=weight: torch.nn.functional.linear(x, w))
                want = reference_linear_8bit(x, w8, sw).float()
                default = default_config_linear_8bit(m, n, k)
                times: dict[str, float] = {}
                for cfg in [default, *TILES]:
                    label = "default" if cfg is default else name(cfg)
                    try:
                        y = sparse_linear_8bit(x, w8, sw, config=cfg)
                        err = ((y.float() - want).abs().max() / want.abs().max()).item()
                        if err > 1e-2:
                            print(f"  !! {label}: relative error {err:.3g}")
                            continue
                        times[label] = dispatch_measure.time_us(
                            lambda x=x, w8=w8, sw=sw, cfg=cfg: sparse_linear_8bit(x, w8, sw, config=cfg))
                    except Exception as e:  # noqa: BLE001 - a tile that does not compile is reported, the rest go on
                        print(f"  {label}: {type(e).__name__}: {str(e).splitlines()[0][:140]}")
                best = min((t, lbl) for lbl, t in times.items() if lbl != "default")
                cells = [f"{times[name(c)]:.1f}" if name(c) in times else "-" for c in TILES]
                print(f"| {n}x{k} | {m} | {dense:.1f} | {times.get('default', float('nan')):.1f} ({name(default)}) | "
                      + " | ".join(cells) + f" | {best[1]} | {dense / best[0]:.2f}x |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
