"""`y = x @ dequantize(W).T` with W a quantized 2:4 weight (NV24.w4g128, NV24.w8g128) through
`sparse_linear`'s kernels, against dense fp16 `F.linear` (cuBLAS) and plain 2:4 fp16 (NV24) in the
same run (H100): Llama-shaped N×K at M = 1, 16, 64.

Each kernel time is the best of a few configs (do_bench_cudagraph medians: CUDA graphs, so launch
costs do not hide GPU time): tiles, and split-K (S programs per output tile, the last one
reducing, in the same launch); S = 1 is the plain linear kernel. Every config's output is checked
against torch on the dequantized weight first. The ideal speed-up is the ratio of bytes moved
(fp16 weight vs the compressed one, x and y included), what a kernel streaming the weight at
F.linear's bandwidth would reach. `--splits` prints every config's time, not only the best.

    python bench/quant_decode.py [--quick] [--splits] [--m M,...] [--tiles 8x64x256w4s3k2,...]
                                 [--variants NV24,w4g128] [--out FILE] [NxK ...]
"""

from __future__ import annotations

import sys

import torch
import torch.nn.functional as F
import triton.testing

import sparsecc
from sparsecc.ops.sparse_linear import LinearConfig, launch_linear

SHAPES = [(4096, 4096), (14336, 4096), (4096, 14336), (28672, 8192), (8192, 28672)]
# (BLOCK_M, BLOCK_N, BLOCK_K, warps, stages, split_k)
TILES = {"decode": [(8, 32, 512, 4, 2, 1), (16, 32, 512, 4, 2, 1), (8, 64, 256, 4, 3, 1), (8, 64, 512, 4, 2, 1),
                    (8, 128, 256, 4, 3, 1), (16, 64, 256, 4, 3, 1), (8, 64, 256, 4, 3, 2), (8, 64, 256, 4, 3, 4),
                    (16, 64, 256, 4, 3, 2), (16, 64, 256, 4, 3, 4)],
         "batch": [(64, 64, 128, 4, 3, 1), (32, 64, 256, 4, 3, 1), (64, 64, 128, 4, 3, 2), (32, 64, 256, 4, 3, 2),
                   (64, 128, 128, 8, 3, 1)]}
VARIANTS = ("NV24", "w8g128", "w4g128")


def parse_tile(text: str) -> tuple[int, int, int, int, int, int]:
    """"8x64x256w4s3k2" -> (8, 64, 256, 4, 3, 2) (BLOCK_M x BLOCK_N x BLOCK_K, warps, stages,
    split-K; k1 when left out)."""
    dims, rest = text.split("w")
    warps, rest = rest.split("s")
    stages, _, split = rest.partition("k")
    bm, bn, bk = (int(v) for v in dims.split("x"))
    return bm, bn, bk, int(warps), int(stages), int(split or 1)


def _graph_time(fn) -> float:
    fn()
    torch.cuda.synchronize()
    return triton.testing.do_bench_cudagraph(fn, rep=50, return_mode="median")




def bench(m: int, n: int, k: int, variant: str) -> tuple[float, str, int]:
    torch.manual_seed(0)
    x = torch.randn(m, k, device="cuda", dtype=torch.float16)
    dense_w = sparsecc.prune_2to4(torch.randn(n, k, device="cuda", dtype=torch.float16))
    w = sparsecc.compress(dense_w) if variant == "NV24" else sparsecc.compress(dense_w, quant=variant)
    ref = F.linear(x, w.to_dense())
    y = torch.empty(m, n, device="cuda", dtype=torch.float16)
    best = (float("inf"), "")
    for bm, bn, bk, warps, stages, split in TILES["decode" if m <= 16 else "batch"]:
        cfg = LinearConfig(bm, bn, bk, warps, stages, split)
        name = f"{bm}x{bn}x{bk}w{warps}s{stages}" + (f"k{split}" if split > 1 else "")

        def run(cfg=cfg):
            launch_linear(y, x, w, y, cfg, has_bias=False, activation="none")

        try:
            y.fill_(float("nan"))
            run()
            torch.cuda.synchronize()
            err = (y.float() - ref.float()).abs().max().item()
            assert err < 0.02 * ref.abs().max().item() + 0.1, f"max error {err}"
        except Exception as e:  # noqa: BLE001 - a tile that cannot run is reported, not fatal
            print(f"{variant} {m}x{n}x{k} config {name}: {type(e).__name__}: {str(e)[:160]}", flush=True)
            continue
        t = _graph_time(run)
        if VERBOSE:
            print(f"  {variant} {m}x{n}x{k} {name}: {t * 1e3:.1f} us", flush=True)
        if t < best[0]:
            best = (t, name)
    return best[0], best[1], w.nbytes + 2 * (m * k + m * n)


VERBOSE = False


def main(argv: list[str]) -> None:
    global VERBOSE
    VERBOSE = "--splits" in argv
    ms = [1, 16] if "--quick" in argv else [1, 16, 64]
    out = argv[argv.index("--out") + 1] if "--out" in argv else None
    global VARIANTS
    if "--variants" in argv:
        VARIANTS = tuple(argv[argv.index("--variants") + 1].split(","))
    if "--tiles" in argv:
        tiles = [parse_tile(t) for t in argv[argv.index("--tiles") + 1].split(",")]
        TILES["decode"] = TILES["batch"] = tiles
    if "--m" in argv:
        ms = [int(v) for v in argv[argv.index("--m") + 1].split(",")]
    shapes = [tuple(int(v) for v in a.split("x")) for a in argv
              if a.count("x") == 1 and a.replace("x", "").isdigit()] or SHAPES
    head = ("| M | N×K | F.linear µs | " + " | ".join(f"{v} µs (× dense, ideal)" for v in VARIANTS)
            + " | tiles |")
    rows = []
    for n, k in shapes:
        for m in ms:
            x = torch.randn(m, k, device="cuda", dtype=torch.float16)
            wd = torch.randn(n, k, device="cuda", dtype=torch.float16)
            dense = _graph_time(lambda x=x, wd=wd: F.linear(x, wd))
            dense_bytes = 2 * (n * k + m * k + m * n)
            cells, tiles = [], []
            for v in VARIANTS:
                t, tile, nbytes = bench(m, n, k, v)
                cells.append(f"{t * 1e3:.1f} ({dense / t:.2f}×, {dense_bytes / nbytes:.2f}×)")
                tiles.append(f"{v}:{tile}")
            row = f"| {m} | {n}x{k} | {dense * 1e3:.1f} | " + " | ".join(cells) + f" | {' '.join(tiles)} |"
            rows.append(row)
            print(row, flush=True)
    table = "\n".join([head, "|---" * (head.count("|") - 1) + "|", *rows])
    print(table)
    if out:
        with open(out, "w") as f:
            f.write(table + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
