"""The dispatcher's weight conversion (`sparsecc.ops.densify.weight16`): a quantized 2:4 weight's
16-bit kept values (sparse16) and its dense form (dense), old paths against the new kernel, same
run, CUDA graphs (`dispatch_measure.time_us`: several calls per replay, median of replays):

    torch ops  `densify._weight16`: separate torch ops (what the old eager path fell back to past
               dynamo's recompile limit)
    inductor   `torch.compile(_weight16, dynamic=True, fullgraph=True)`, compiled afresh for each
               form (the old eager path at its best: one form, no recompile limit)
    kernel     `weight16`: one sparsecc kernel (`sparsecc.ops.weight16_kernel`)

and, for scale, F.linear at M = 512 with the dense weight. GB/s counts the bytes read (codes,
scales, metadata when dense) and written once.

    python bench/weight16.py [--schemes w4g128,w8g128] [--dtype float16] [NxK ...]
"""

from __future__ import annotations

import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import sparsecc  # noqa: E402
from sparsecc.ops import densify  # noqa: E402
from sparsecc.ops.dispatch_measure import time_us  # noqa: E402

SHAPES = [(4096, 4096), (11008, 4096)]


def _bytes(q: sparsecc.QuantizedSparseTensor, dense: bool) -> int:
    n, k = q.shape
    read = q.values.numel() + q.scales.numel() * 2 + (q.meta.numel() * 2 if dense else 0)
    return read + n * (k if dense else k // 2) * 2


def row(scheme: str, n: int, k: int, dtype: torch.dtype) -> list[str]:
    torch.manual_seed(0)
    w = sparsecc.prune_2to4(torch.randn(n, k, device="cuda", dtype=dtype) * 0.02)
    q = sparsecc.compress(w, quant=scheme)
    x = torch.randn(512, k, device="cuda", dtype=dtype)
    cells = [f"{scheme} {n}x{k}"]
    for dense in (False, True):
        args = (q.values, q.meta, q.scales, q.zeros, None, q.scheme.bits, k, dtype, dense)
        ref = densify._weight16(*args)
        new = densify.weight16(*args)
        assert torch.equal(new.view(torch.int16), ref.view(torch.int16)), "kernel != torch ops"
        torch._dynamo.reset()
        compiled = torch.compile(densify._weight16, dynamic=True, fullgraph=True)
        times = [time_us(lambda a=args: densify._weight16(*a)), time_us(lambda a=args, c=compiled: c(*a)),
                 time_us(lambda a=args: densify.weight16(*a))]
        gbs = _bytes(q, dense) / times[2] / 1e3
        cells += [f"{t:8.1f}" for t in times] + [f"{gbs:6.0f}"]
    dense_w = q.to_dense()
    cells.append(f"{time_us(lambda: torch.nn.functional.linear(x, dense_w)):8.1f}")
    return cells


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("shapes", nargs="*", help="NxK layer shapes (default: 4096x4096 11008x4096)")
    ap.add_argument("--schemes", default="w4g128,w8g128")
    ap.add_argument("--dtype", default="float16", choices=["float16", "bfloat16"])
    args = ap.parse_args()
    shapes = [tuple(int(v) for v in s.split("x")) for s in args.shapes] or SHAPES
    dtype = getattr(torch, args.dtype)
    print(f"# {torch.cuda.get_device_name()}, {args.dtype}, microseconds per call (CUDA graphs)")
    head = ["weight"] + [f"{form} {path}" for form in ("sparse16", "dense")
                         for path in ("torch ops", "inductor", "kernel", "GB/s")] + ["F.linear M=512"]
    print(" | ".join(head))
    for scheme in args.schemes.split(","):
        for n, k in shapes:
            print(" | ".join(row(scheme, n, k, dtype)), flush=True)


if __name__ == "__main__":
    main()
