"""Tile sweep of the fp16 2:4 linear kernel at medium token counts (M = 64 ... 512), where the
default tiles run below F.linear (dispatch table, H200: 0.54-0.97x): which LinearConfig, if
any, beats dense there. Prints one line per (shape, M) with F.linear, the default pick and the
best candidate, then a summary. CUDA graphs (sparsecc.ops.dispatch_measure.time_us).

    python bench/linear_mid_sweep.py [--shapes 4096x4096,11008x4096] [--ms 64,128,256,512]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

if __package__ in (None, ""):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import sparsecc  # noqa: E402
from sparsecc.ops.dispatch_measure import time_us  # noqa: E402
from sparsecc.ops.sparse_linear import LinearConfig, default_linear_config, sparse_linear  # noqa: E402

CANDIDATES = [LinearConfig(64, 128, 128, 4, 3), LinearConfig(64, 128, 64, 4, 4), LinearConfig(64, 256, 64, 8, 3),
              LinearConfig(128, 128, 64, 4, 4), LinearConfig(128, 256, 64, 8, 4), LinearConfig(128, 128, 128, 8, 3),
              LinearConfig(32, 128, 128, 4, 4), LinearConfig(64, 64, 128, 4, 4), LinearConfig(128, 256, 64, 8, 3),
              LinearConfig(64, 256, 128, 8, 3)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default="4096x4096,11008x4096,4096x11008,28672x8192")
    ap.add_argument("--ms", default="64,128,256,512")
    ap.add_argument("--splits", default="1,2")
    ap.add_argument("--budget", type=float, default=300.0)
    a = ap.parse_args()
    t0 = time.monotonic()
    rows = []
    for shape in a.shapes.split(","):
        n, k = (int(v) for v in shape.split("x"))
        w = sparsecc.prune_2to4(torch.randn(n, k, dtype=torch.float16, device="cuda") * 0.05)
        ws = sparsecc.compress(w)
        for m in (int(v) for v in a.ms.split(",")):
            if time.monotonic() - t0 > a.budget:
                print(f"budget spent: {shape} M={m} skipped", flush=True)
                continue
            x = torch.randn(m, k, dtype=torch.float16, device="cuda")
            ref = F.linear(x, w)
            dense = time_us(lambda x=x, w=w: F.linear(x, w))
            base = default_linear_config(m, n, k)
            tried: list[tuple[float, LinearConfig]] = []
            for cfg in [base] + CANDIDATES:
                for s in (int(v) for v in a.splits.split(",")):
                    c = LinearConfig(cfg.block_m, cfg.block_n, cfg.block_k, cfg.num_warps, cfg.num_stages, s)
                    if s > 1 and (k // s < 1024 or any(c == t[1] for t in tried)):
                        continue
                    try:
                        y = sparse_linear(x, ws, config=c, dispatch="sparse")
                        err = (y.float() - ref.float()).abs().max().item()
                        if not err < 5e-2:
                            print(f"  {shape} M={m} {c}: WRONG {err:.3g}", flush=True)
                            continue
                        tried.append((time_us(lambda c=c, x=x, ws=ws: sparse_linear(x, ws, config=c, dispatch="sparse")), c))
                    except Exception as e:  # noqa: BLE001 - a refused config is a line, not the end
                        print(f"  {shape} M={m} {c}: {type(e).__name__}: {str(e).splitlines()[0][:100]}", flush=True)
            tried.sort(key=lambda t: t[0])
            base_t = next((t for t, c in tried if c == base), float("nan"))
            best_t, best_c = tried[0]
            rows.append((shape, m, dense, base_t, best_t, best_c))
            print(f"{shape} M={m}: F.linear {dense:.1f} us, default {base_t:.1f} ({dense / base_t:.2f}x), "
                  f"best {best_t:.1f} ({dense / best_t:.2f}x) {best_c}; next: "
                  + ", ".join(f"{t:.1f} {c.block_m}x{c.block_n}x{c.block_k}w{c.num_warps}s{c.num_stages}k{c.split_k}"
                              for t, c in tried[1:4]), flush=True)
    print("\n| shape | M | F.linear us | default x | best x | best config |\n|---|---|---|---|---|---|")
    for shape, m, dense, base_t, best_t, c in rows:
        print(f"| {shape} | {m} | {dense:.1f} | {dense / base_t:.2f} | {dense / best_t:.2f} | "
              f"{c.block_m}x{c.block_n}x{c.block_k} w{c.num_warps} s{c.num_stages} k{c.split_k} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
