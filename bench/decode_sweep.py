"""Decode GEMMs (N <= 16): how close sparse_mm streams A to the HBM bandwidth measured in the same
run, over explicit tiles, plus a split-K proxy (M*S x N x K/S: the same bytes over S times more
CTAs, no reduction) that says what splitting K would buy before it is built.

    python bench/decode_sweep.py [--quick] [--n16] [--shapes MxNxK,...] [--configs 32x16x256w4s4,...]
"""

from __future__ import annotations

import sys

import torch
import triton.testing

from sparsecc.ops.sparse_mm import MMConfig, sparse_mm
from sparsecc.runtime.compress import compress, prune_2to4

SHAPES = [(5120, 16, 4096), (8192, 16, 8192), (5120, 1, 4096), (8192, 1, 8192)]
if "--n16" in sys.argv:
    SHAPES = SHAPES[:2]
if "--shapes" in sys.argv:  # e.g. --shapes 5120x128x4096,8192x128x8192
    SHAPES = [tuple(int(x) for x in t.split("x")) for t in sys.argv[sys.argv.index("--shapes") + 1].split(",")]
CONFIGS = [
    MMConfig(32, 16, 256, num_warps=4, num_stages=4),
    MMConfig(32, 16, 256, num_warps=4, num_stages=8),
    MMConfig(32, 16, 512, num_warps=4, num_stages=4),
    MMConfig(16, 16, 512, num_warps=2, num_stages=6),
    MMConfig(64, 16, 256, num_warps=4, num_stages=4),
    MMConfig(64, 16, 512, num_warps=4, num_stages=3),
    MMConfig(128, 16, 256, num_warps=8, num_stages=4),
]


def bench(fn) -> float:
    return triton.testing.do_bench(fn, warmup=25, rep=200)


def hbm_bandwidth() -> tuple[float, float]:
    """TB/s of a 1 GiB device copy (read + write) and of a 1 GiB read (sum)."""
    x = torch.empty(1 << 29, dtype=torch.float16, device="cuda").normal_()
    y = torch.empty_like(x)
    copy = 2 * x.numel() * 2 / bench(lambda: y.copy_(x)) / 1e9
    read = x.numel() * 2 / bench(lambda: x.sum()) / 1e9
    return copy, read


def sparse_bytes(m: int, n: int, k: int) -> int:
    """Bytes a decode GEMM must move: values (M*K/2 halves), metadata (M*K/8 bytes), B and D."""
    return m * k + m * k // 8 + 2 * k * n + 2 * m * n


def parse_config(text: str) -> MMConfig:
    """'32x16x256w4s4' -> MMConfig(32, 16, 256, num_warps=4, num_stages=4); a 'g16' suffix sets
    GROUP_M (default 8), then 'c2' CTA pairs (num_ctas=2), and a last 'p' the persistent form."""
    persistent = text.endswith("p")
    text = text.removesuffix("p")
    text, _, ctas = text.partition("c")
    text, _, group = text.partition("g")
    tile, rest = text.split("w")
    warps, stages = rest.split("s")
    m, n, k = (int(x) for x in tile.split("x"))
    return MMConfig(m, n, k, group_m=int(group or 8), num_warps=int(warps), num_stages=int(stages),
                    num_ctas=int(ctas or 1), persistent=persistent)


def main() -> None:
    # --quick: two tiles, no split-K proxy (A/B runs of compiler switches); --configs a,b,...:
    # these tiles instead (no proxy)
    quick = "--quick" in sys.argv
    configs = [CONFIGS[0], CONFIGS[5]] if quick else CONFIGS
    if "--configs" in sys.argv:
        configs = [parse_config(t) for t in sys.argv[sys.argv.index("--configs") + 1].split(",")]
        quick = True
    copy, read = hbm_bandwidth()
    print(f"HBM: copy {copy:.2f} TB/s, read {read:.2f} TB/s", flush=True)
    rows = []
    for m, n, k in SHAPES:
        dense = prune_2to4(torch.randn(m, k, device="cuda", dtype=torch.float16))
        a, b = compress(dense), torch.randn(k, n, device="cuda", dtype=torch.float16)
        ref = dense.float() @ b.float()
        dn = bench(lambda d=dense, b=b: torch.mm(d, b))
        gb = sparse_bytes(m, n, k) / 1e9
        print(f"{m}x{n}x{k}: cuBLAS {dn * 1e3:6.1f} us ({2 * m * k * 2 / 1e9 / dn:.2f} TB/s dense bytes)", flush=True)
        for cfg in configs:
            try:
                out = sparse_mm(a, b, config=cfg)
                err = ((out.float() - ref).abs().max() / ref.abs().max()).item()
                ms = bench(lambda cfg=cfg, a=a, b=b: sparse_mm(a, b, config=cfg))
                line = (f"  {cfg.block_m}x{cfg.block_n}x{cfg.block_k} w{cfg.num_warps} s{cfg.num_stages}: "
                        f"{ms * 1e3:6.1f} us {gb / ms:5.2f} TB/s ({gb / ms / read:4.0%} of read) "
                        f"{dn / ms:5.2f}x cuBLAS relerr {err:.0e}")
            except Exception as e:  # report and go on
                line = f"  {cfg}: FAILED {type(e).__name__}: {str(e)[:120]}"
            print(line, flush=True)
            rows.append(line)
            if n > 1:  # the same problem with B column-major (x.T): K-major tiles
                bt = b.t().contiguous().t()
                ms = bench(lambda cfg=cfg, a=a, bt=bt: sparse_mm(a, bt, config=cfg))
                print(f"    B column-major: {ms * 1e3:6.1f} us {gb / ms:5.2f} TB/s {dn / ms:5.2f}x cuBLAS", flush=True)
        if n == 16 and not quick:  # split-K proxy: same bytes, S times the CTAs
            for s in (2, 4):
                pa = compress(prune_2to4(torch.randn(m * s, k // s, device="cuda", dtype=torch.float16)))
                pb = torch.randn(k // s, n, device="cuda", dtype=torch.float16)
                for cfg in (CONFIGS[0], CONFIGS[4], CONFIGS[6]):
                    ms = bench(lambda cfg=cfg, pa=pa, pb=pb: sparse_mm(pa, pb, config=cfg))
                    print(f"  split-K proxy S={s} {m * s}x{n}x{k // s} {cfg.block_m}x{cfg.block_n}x{cfg.block_k} "
                          f"w{cfg.num_warps} s{cfg.num_stages}: {ms * 1e3:6.1f} us {gb / ms:5.2f} TB/s "
                          f"{dn / ms:5.2f}x cuBLAS", flush=True)


if __name__ == "__main__":
    main()
