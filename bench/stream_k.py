"""Stream-K against the data-parallel 2:4 linear kernel and F.linear, same run, cold L2.

For each Llama layer shape N x K and token count M it times `y = x @ W.T` (CUDA graphs,
`dispatch_measure.time_us` inside `cold_l2`): F.linear with the dense fp16 weight, the
dispatched `sparse_linear` (the shipped table's pick), the data-parallel kernel at each tile,
and `sparsecc.ops.stream_k` at each tile. Every sparse result is checked against F.linear
before it is timed.

    python bench/stream_k.py [--ms 128,512,2048] [--tiles 128x256x64w8s4,...] [--scheme w4g128] [NxK ...]
"""

from __future__ import annotations

import argparse
import os
import sys

if __package__ in (None, ""):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from linear_mid_sweep import parse_tiles  # noqa: E402

import sparsecc  # noqa: E402
from sparsecc.ops.dispatch_measure import cold_l2, time_us  # noqa: E402
from sparsecc.ops.sparse_linear import (  # noqa: E402
    launch_linear,
    quantized_linear_config,
    sparse_linear,
)
from sparsecc.ops.stream_k import launch_linear_stream_k  # noqa: E402

SHAPES = ["4096x4096", "11008x4096", "4096x11008", "14336x4096", "28672x8192"]
TILES = "128x256x64w8s4,128x128x64w8s4,128x128x64w4s4"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("shapes", nargs="*", default=SHAPES)
    ap.add_argument("--ms", default="128,256,512,1024,2048")
    ap.add_argument("--tiles", default=TILES)
    ap.add_argument("--scheme", default="", help="a quantized scheme instead of fp16 2:4")
    a = ap.parse_args()
    tiles = parse_tiles(a.tiles)
    rows = []
    with cold_l2():
        for shape in a.shapes:
            n, k = (int(v) for v in shape.split("x"))
            dense_w = sparsecc.prune_2to4(torch.randn(n, k, dtype=torch.float16, device="cuda") * 0.05)
            w = sparsecc.compress(dense_w, quant=a.scheme) if a.scheme else sparsecc.compress(dense_w)
            if a.scheme:
                dense_w = w.to_dense()
            for m in (int(v) for v in a.ms.split(",")):
                x = torch.randn(m, k, dtype=torch.float16, device="cuda")
                ref = F.linear(x, dense_w).float()
                tol = 2e-2 * max(1.0, ref.abs().max().item())
                dense = time_us(lambda x=x, dw=dense_w: F.linear(x, dw))
                line = {"dispatched": time_us(lambda x=x, w=w: sparse_linear(x, w))}
                for cfg in tiles:
                    if a.scheme:
                        cfg = quantized_linear_config(cfg, w)
                    name = f"{cfg.block_m}x{cfg.block_n}x{cfg.block_k}w{cfg.num_warps}s{cfg.num_stages}"
                    for kind, launch in (("dp", launch_linear), ("sk", launch_linear_stream_k)):
                        y = torch.full((m, n), float("nan"), dtype=torch.float16, device="cuda")

                        def run(launch=launch, y=y, x=x, w=w, cfg=cfg) -> None:
                            launch(y, x, w, y, cfg, has_bias=False, activation="none")
                        try:
                            run()
                            err = (y.float() - ref).abs().max().item()
                            if not err <= tol:
                                print(f"  {shape} M={m} {kind} {name}: WRONG max |err| {err:.3g}", flush=True)
                                continue
                            line[f"{kind} {name}"] = time_us(run)
                        except Exception as e:  # noqa: BLE001 - a refused config is a line, not the end
                            print(f"  {shape} M={m} {kind} {name}: {type(e).__name__}: {str(e)[:120]}", flush=True)
                best_dp = min((v, c) for c, v in line.items() if c.startswith("dp"))
                best_sk = min((v, c) for c, v in line.items() if c.startswith("sk"))
                rows.append((shape, m, dense, line["dispatched"], best_dp, best_sk))
                print(f"{shape} M={m}: F.linear {dense:.1f} us | " + ", ".join(f"{c} {v:.1f}" for c, v in line.items()),
                      flush=True)
    print("\n| shape | M | F.linear us | dispatched x | best data-parallel x | best stream-K x |\n|---|---|---|---|---|---|")
    for shape, m, dense, disp, (dp, dpc), (sk, skc) in rows:
        print(f"| {shape} | {m} | {dense:.1f} | {dense / disp:.2f} | {dense / dp:.2f} ({dpc[3:]}) | "
              f"{dense / sk:.2f} ({skc[3:]}) |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
