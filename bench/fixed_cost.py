"""Per-kernel fixed cost vs K-step rate, sparsecc next to cuSPARSELt (torch's 2:4 path) and
cuBLAS, in alternating rounds of one run.

For each (M, N) it times K = 2048 ... 16384 and fits time = fixed + K * per_k (least squares
over the medians of the rounds). `fixed` is what a kernel pays whatever its K (CTA start,
pipeline fill, epilogue, last-wave tail); `rate` = 2·M·N / per_k is the K loop's TFLOP/s. A
kernel behind its peer in `rate` loses in the main loop, one behind in `fixed` in the per-tile
work around it. Last, the full-size shapes alone, alternating, for the ours/peer ratio.

    python bench/fixed_cost.py [--rounds R] [--rep MS] [--ks 2048,4096] [--dtype fp16|bf16] [MxN,...]

With one K (`--ks 8192`) it is a plain alternating A/B: the median of the rounds per kernel and
the ratio of each kernel's median to sparsecc's. A first, untimed round brings the GPU to its
steady (power-capped) clock before anything counts.
"""

from __future__ import annotations

import argparse
import statistics

import torch
import triton.testing

from sparsecc.ops.sparse_mm import sparse_mm
from sparsecc.runtime.compress import compress, prune_2to4

KS = (2048, 4096, 8192, 16384)
DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}


def _contenders(m: int, n: int, k: int, dtype: torch.dtype) -> dict:
    from torch.sparse import to_sparse_semi_structured

    dense = prune_2to4(torch.randn(m, k, device="cuda", dtype=dtype))
    a, b = compress(dense), torch.randn(k, n, device="cuda", dtype=dtype)
    a_t = to_sparse_semi_structured(dense)
    ref = dense.float() @ b.float()
    err = ((sparse_mm(a, b).float() - ref).abs().max() / ref.abs().max()).item()
    assert err < 1e-2, f"sparse_mm wrong at {m}x{n}x{k}: relerr {err}"
    return {"sparsecc": lambda: sparse_mm(a, b), "torch24": lambda: torch.mm(a_t, b),
            "cublas": lambda: torch.mm(dense, b)}


def _fit(ks: list[int], ms: list[float]) -> tuple[float, float]:
    """Least-squares (intercept, slope) of ms over ks."""
    mk, mt = statistics.fmean(ks), statistics.fmean(ms)
    slope = sum((k - mk) * (t - mt) for k, t in zip(ks, ms)) / sum((k - mk) ** 2 for k in ks)
    return mt - slope * mk, slope


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("shapes", nargs="?", default="4096x4096,8192x8192")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--rep", type=int, default=150, help="ms of do_bench per measurement")
    parser.add_argument("--ks", default=",".join(map(str, KS)))
    parser.add_argument("--dtype", default="fp16", choices=DTYPES)
    args = parser.parse_args()
    ks = [int(k) for k in args.ks.split(",")]
    dtype = DTYPES[args.dtype]
    rows = []
    for shape in args.shapes.split(","):
        m, n = (int(x) for x in shape.split("x"))
        times: dict[str, dict[int, list[float]]] = {}
        for k in ks:
            fns = _contenders(m, n, k, dtype)
            for rnd in range(args.rounds + 1):
                for name, fn in fns.items():
                    ms = triton.testing.do_bench(fn, warmup=25, rep=args.rep)
                    if rnd:  # round 0 only warms the GPU up
                        times.setdefault(name, {}).setdefault(k, []).append(ms)
            del fns
            torch.cuda.empty_cache()
        ours = statistics.median(times["sparsecc"][ks[-1]])
        for name, by_k in times.items():
            med = [statistics.median(by_k[k]) for k in ks]
            fixed, per_k = _fit(ks, med) if len(ks) > 1 else (float("nan"), float("nan"))
            at = " ".join(f"{2 * m * n * k / t / 1e9:6.1f}" for k, t in zip(ks, med))
            rounds = " ".join(f"{2 * m * n * ks[-1] / t / 1e9:.0f}" for t in by_k[ks[-1]])
            rows.append((args.dtype, f"{m}x{n}", name, fixed * 1e3, 2 * m * n / per_k / 1e9, at,
                         f"{ours / med[-1]:.3f}", rounds))
            print(*rows[-1], flush=True)
    print(f"\n| dtype | MxN | kernel | fixed µs | K-loop TFLOP/s | TFLOP/s at K = {', '.join(map(str, ks))} "
          f"| speed vs sparsecc (K = {ks[-1]}) | rounds at K = {ks[-1]} |")
    print("|---|---|---|---|---|---|---|---|")
    for row in rows:
        d, mn, name, fixed, rate, at, ratio, rounds = row
        print(f"| {d} | {mn} | {name} | {fixed:7.1f} | {rate:7.1f} | {at} | {ratio} | {rounds} |")


if __name__ == "__main__":
    main()
