"""Tile sweep of the fp16 2:4 linear kernel at medium token counts (M = 64 ... 512), where the
default tiles run below F.linear (dispatch table, H200: 0.54-0.97x): which LinearConfig, if
any, beats dense there. Prints one line per (shape, M) with F.linear, the default pick and the
best candidate, then a summary. CUDA graphs (sparsecc.ops.dispatch_measure.time_us).

    python bench/linear_mid_sweep.py [--shapes 4096x4096,11008x4096] [--ms 64,128,256,512]
                                     [--cold] [--scheme w4g128]

`--cold` times each call with a cold L2 (`dispatch_measure.cold_l2`, as the dispatch table is
timed); `--scheme` sweeps a quantized weight of that scheme instead (BLOCK_K fitted to its
groups), adding the register-A wgmma tiles (`QUANT_CANDIDATES`) on sm_90a.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time

if __package__ in (None, ""):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import sparsecc  # noqa: E402
from sparsecc.ops.dispatch_measure import cold_l2, time_us  # noqa: E402
from sparsecc.ops.sparse_linear import (  # noqa: E402
    LinearConfig,
    default_linear_config,
    quantized_default_config,
    quantized_linear_config,
    sparse_linear,
)

CANDIDATES = [LinearConfig(64, 128, 128, 4, 3), LinearConfig(64, 128, 64, 4, 4), LinearConfig(64, 256, 64, 8, 3),
              LinearConfig(128, 128, 64, 4, 4), LinearConfig(128, 256, 64, 8, 4), LinearConfig(128, 128, 128, 8, 3),
              LinearConfig(32, 128, 128, 4, 4), LinearConfig(64, 64, 128, 4, 4), LinearConfig(128, 256, 64, 8, 3),
              LinearConfig(64, 256, 128, 8, 3), LinearConfig(64, 256, 64, 8, 4), LinearConfig(256, 128, 64, 8, 3),
              LinearConfig(128, 256, 128, 8, 3)]
QUANT_CANDIDATES = [LinearConfig(128, 128, 128, 8, 4, quant_wgmma=True), LinearConfig(64, 256, 128, 8, 3, quant_wgmma=True),
                    LinearConfig(64, 128, 128, 4, 4, quant_wgmma=True), LinearConfig(128, 128, 128, 8, 3, quant_wgmma=True),
                    LinearConfig(64, 256, 128, 8, 4, quant_wgmma=True), LinearConfig(128, 256, 128, 8, 3, quant_wgmma=True)]
"""Register-A wgmma tiles tried for a quantized weight (`--scheme`) on sm_90a."""


def parse_tiles(spec: str) -> list[LinearConfig]:
    """'128x128x64w4s4,128x128x128w8s4qw' -> LinearConfigs (qw: quant_wgmma)."""
    out = []
    for t in spec.split(","):
        qw = t.endswith("qw")
        dims, _, rest = t.removesuffix("qw").partition("w")
        warps, _, stages = rest.partition("s")
        out.append(LinearConfig(*(int(v) for v in dims.split("x")), int(warps), int(stages), quant_wgmma=qw))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default="4096x4096,11008x4096,4096x11008,28672x8192")
    ap.add_argument("--ms", default="64,128,256,512")
    ap.add_argument("--splits", default="1,2")
    ap.add_argument("--budget", type=float, default=300.0)
    ap.add_argument("--cold", action="store_true", help="each call with a cold L2 (dispatch_measure.cold_l2)")
    ap.add_argument("--scheme", default="", help="a quantized scheme (w4g128, w8g128) instead of fp16 2:4")
    ap.add_argument("--tiles", default="", help="only these tiles, BMxBNxBKwWsS[qw],... (with the default pick)")
    a = ap.parse_args()
    with cold_l2() if a.cold else contextlib.nullcontext():
        return sweep(a)


def sweep(a: argparse.Namespace) -> int:
    """The per-(shape, M) lines and the summary table."""
    t0 = time.monotonic()
    rows = []
    for shape in a.shapes.split(","):
        n, k = (int(v) for v in shape.split("x"))
        w = sparsecc.prune_2to4(torch.randn(n, k, dtype=torch.float16, device="cuda") * 0.05)
        ws = sparsecc.compress(w, quant=a.scheme) if a.scheme else sparsecc.compress(w)
        if a.scheme:
            w = ws.to_dense()
        for m in (int(v) for v in a.ms.split(",")):
            if time.monotonic() - t0 > a.budget:
                print(f"budget spent: {shape} M={m} skipped", flush=True)
                continue
            x = torch.randn(m, k, dtype=torch.float16, device="cuda")
            ref = F.linear(x, w)
            dense = time_us(lambda x=x, w=w: F.linear(x, w))
            base = quantized_default_config(m, n, k, ws, ws.device) if a.scheme else default_linear_config(m, n, k)
            tried: list[tuple[float, LinearConfig]] = []
            quant = QUANT_CANDIDATES if a.scheme and torch.cuda.get_device_capability() == (9, 0) else []
            for cfg in [base] + (parse_tiles(a.tiles) if a.tiles else CANDIDATES + quant):
                for s in (int(v) for v in a.splits.split(",")):
                    c = LinearConfig(cfg.block_m, cfg.block_n, cfg.block_k, cfg.num_warps, cfg.num_stages, s,
                                     cfg.quant_wgmma)
                    if a.scheme:
                        c = quantized_linear_config(c, ws)
                    if s > 1 and (k // s < 1024 or any(c == t[1] for t in tried)):
                        continue
                    try:
                        y = sparse_linear(x, ws, config=c, dispatch="sparse")
                        err = (y.float() - ref.float()).abs().max().item()
                        if not err < 5e-2 * max(1.0, ref.abs().max().item()):
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
                              f"{'qw' if c.quant_wgmma else ''}"
                              for t, c in tried[1:4]), flush=True)
    print("\n| shape | M | F.linear us | default x | best x | best config |\n|---|---|---|---|---|---|")
    for shape, m, dense, base_t, best_t, c in rows:
        print(f"| {shape} | {m} | {dense:.1f} | {dense / base_t:.2f} | {dense / best_t:.2f} | "
              f"{c.block_m}x{c.block_n}x{c.block_k} w{c.num_warps} s{c.num_stages} k{c.split_k}"
              f"{' qw' if c.quant_wgmma else ''} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
