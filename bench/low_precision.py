"""int8 and fp8 2:4 GEMMs and tf32 1:2 ones against their peers, same run (H100): `y = x @ W.T`, W (N x K) 2:4.

sparsecc runs `sparse_mm(W, x.T)` (W on the left as stored, x.T read K-major: no copy) and
returns yᵀ; the peers are dense `torch._scaled_mm` (fp8, rowwise scales, bf16 out) and
`torch._int_mm` (int8, int32 out), and cuSPARSELt through torch (`torch._cslt_sparse_mm`) where
this torch has it. Times are `do_bench_cudagraph` medians (CUDA graphs: no launch costs);
TFLOP/s (TOPS for int8) = 2·M·N·K / time. Every sparsecc config is checked against a dense
reference before it is timed.

    python bench/low_precision.py [--quick] [--out bench/results/low-precision-current.md]
"""

from __future__ import annotations

import argparse
import os
import sys

import torch
import triton.testing

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import sparsecc  # noqa: E402
from sparsecc.ops import MMConfig, sparse_mm  # noqa: E402

SHAPES = {  # (M, N, K) of y = x @ W.T: M tokens, N out features, K in features
    "fp8": [(4096, 4096, 4096), (8192, 8192, 8192), (16384, 8192, 8192), (16, 8192, 8192), (128, 8192, 8192)],
    "int8": [(4096, 4096, 4096), (8192, 8192, 8192)],
    "tf32": [(4096, 4096, 4096), (8192, 8192, 8192)],
}
QUICK = {"fp8": [(4096, 4096, 4096), (16, 8192, 8192)], "int8": [(4096, 4096, 4096)], "tf32": [(8192, 8192, 8192)]}

# sparse_mm computes W @ x.T: its "M" is N (out features) and its "N" is M (tokens)
CONFIGS = {
    "large": [MMConfig(128, 256, 128, num_warps=8, num_stages=4), MMConfig(256, 128, 128, num_warps=8, num_stages=4),
              MMConfig(256, 128, 128, num_warps=8, num_stages=5), MMConfig(256, 128, 64, num_warps=8, num_stages=5),
              MMConfig(128, 256, 64, num_warps=8, num_stages=5),
              # BLOCK_K 256: K-major B in two 128-byte column blocks (two atoms along K)
              MMConfig(256, 128, 256, num_warps=8, num_stages=3), MMConfig(128, 128, 256, num_warps=4, num_stages=4),
              MMConfig(128, 128, 256, num_warps=8, num_stages=4)],
    "mid": [MMConfig(64, 128, 128, num_warps=4, num_stages=4), MMConfig(128, 128, 128, num_warps=8, num_stages=4),
            MMConfig(64, 64, 128, num_warps=4, num_stages=4), MMConfig(128, 64, 128, num_warps=4, num_stages=4),
            MMConfig(128, 128, 128, num_warps=4, num_stages=5), MMConfig(64, 128, 256, num_warps=4, num_stages=3),
            MMConfig(128, 128, 256, num_warps=8, num_stages=3), MMConfig(64, 64, 256, num_warps=4, num_stages=4),
            MMConfig(128, 64, 256, num_warps=4, num_stages=4)],
    "tf32": [MMConfig(256, 128, 32, num_warps=8, num_stages=5), MMConfig(128, 256, 32, num_warps=8, num_stages=4),
             MMConfig(128, 256, 32, num_warps=8, num_stages=5), MMConfig(256, 128, 64, num_warps=8, num_stages=3),
             MMConfig(128, 128, 64, num_warps=4, num_stages=4), MMConfig(128, 128, 64, num_warps=8, num_stages=4),
             MMConfig(256, 64, 64, num_warps=8, num_stages=4), MMConfig(128, 128, 128, num_warps=8, num_stages=2)],
    "decode": [MMConfig(32, 16, 256, num_warps=4, num_stages=4), MMConfig(32, 16, 512, num_warps=4, num_stages=3),
               MMConfig(64, 16, 512, num_warps=4, num_stages=3), MMConfig(32, 16, 1024, num_warps=4, num_stages=2),
               # wgmma + TMA (BLOCK_K 128: K-major rows of one 128-byte atom), deep rings
               MMConfig(64, 16, 128, num_warps=4, num_stages=8), MMConfig(128, 16, 128, num_warps=4, num_stages=6),
               MMConfig(128, 16, 128, num_warps=8, num_stages=8)],
}


def _time(fn) -> float:
    fn()
    torch.cuda.synchronize()
    return triton.testing.do_bench_cudagraph(fn, rep=100, return_mode="median")


def _tflops(m: int, n: int, k: int, ms: float) -> float:
    return 2 * m * n * k / ms / 1e9


def _data(kind: str, m: int, n: int, k: int):
    g = torch.Generator(device="cuda").manual_seed(m + n + k)
    if kind == "tf32":
        x = torch.randn(m, k, device="cuda", generator=g)
        w = sparsecc.prune_1to2(torch.randn(n, k, device="cuda", generator=g))
    elif kind == "int8":
        x = torch.randint(-128, 128, (m, k), device="cuda", dtype=torch.int8, generator=g)
        w = sparsecc.prune_2to4(torch.randint(-128, 128, (n, k), device="cuda", dtype=torch.int8, generator=g))
    else:
        x = (torch.randn(m, k, device="cuda", generator=g)).to(torch.float8_e4m3fn)
        w = sparsecc.prune_2to4((torch.randn(n, k, device="cuda", generator=g)).to(torch.float8_e4m3fn))
    sx = torch.rand(m, 1, device="cuda", generator=g) + 0.5  # rowwise scales: x per token, W per feature
    sw = torch.rand(1, n, device="cuda", generator=g) + 0.5
    return x, w, sx, sw


def _cslt(w: torch.Tensor, x: torch.Tensor, out_dtype: torch.dtype):
    """A cuSPARSELt y = x @ W.T through torch, or None where this torch lacks it for the dtype."""
    try:
        wc = torch._cslt_compress(w)
        fn = lambda: torch._cslt_sparse_mm(wc, x.t(), out_dtype=out_dtype, transpose_result=True)  # noqa: E731
        fn()
        return fn
    except Exception as e:  # noqa: BLE001 - report and go on: a missing peer is not a failure here
        print(f"  cuSPARSELt {w.dtype} -> {out_dtype}: unavailable ({str(e).splitlines()[0][:90]})")
        return None


def _ours(kind: str, w_sparse, x: torch.Tensor, sx, sw, ref: torch.Tensor, scaled: bool, m: int):
    """(best ms, config) of sparse_mm over the candidate tiles; each is checked first."""
    group = "tf32" if kind == "tf32" else ("decode" if m <= 16 else ("mid" if m <= 256 else "large"))
    best = (float("inf"), None)
    for cfg in CONFIGS[group]:
        def run(cfg=cfg):
            if scaled:
                return sparse_mm(w_sparse, x.t(), torch.bfloat16, config=cfg, scale_a=sw.reshape(-1), scale_b=sx.reshape(-1))
            return sparse_mm(w_sparse, x.t(), config=cfg)
        try:
            out = run().float()
        except Exception as e:  # noqa: BLE001 - a config that does not compile is skipped, loudly
            print(f"  {cfg}: {type(e).__name__}: {str(e).splitlines()[0][:120]}")
            continue
        err = (out - ref).abs().max().item()
        tol = 0 if (kind == "int8" and not scaled) else (0.004 if kind == "tf32" else 0.02) * ref.abs().max().item()
        if err > tol:
            print(f"  {cfg}: WRONG, max error {err:.4g} (tolerance {tol:.4g})")
            continue
        t = _time(run)
        if t < best[0]:
            best = (t, cfg)
    return best


def _row(label: str, m: int, n: int, k: int, dense: tuple[float, str] | None, best: tuple[float, MMConfig | None],
         peer) -> str:
    """One table row: the dense time and its op's name (None: no dense peer), sparsecc's best,
    and cuSPARSELt's time (timed here; `peer` None: unavailable)."""
    t_ours, cfg = best
    t_cs = _time(peer) if peer else float("nan")
    dense_col = f"{_tflops(m, n, k, dense[0]):.0f} ({dense[1]})" if dense else "—"
    ratio = f"{dense[0] / t_ours:.2f}×" if dense else "—"
    return (f"| {label} | {m}×{n}×{k} | {dense_col} | {_tflops(m, n, k, t_cs):.0f} | "
            f"**{_tflops(m, n, k, t_ours):.0f}** | {ratio} | {_cfg(cfg)} |")


def bench(kind: str, m: int, n: int, k: int) -> list[str]:
    x, w, sx, sw = _data(kind, m, n, k)
    ws = sparsecc.compress(w)
    if kind == "fp8":
        ref = (x.float() @ w.float().t() * sx * sw).t()
        t_dense = _time(lambda: torch._scaled_mm(x, w.t(), scale_a=sx, scale_b=sw, out_dtype=torch.bfloat16))
        best = _ours(kind, ws, x, sx, sw, ref, True, m)
        return [_row("fp8 e4m3 → bf16 (rowwise)", m, n, k, (t_dense, "`_scaled_mm`"), best,
                     _cslt(w, x, torch.bfloat16))]
    ref = (x.double() @ w.double().t()).t().float()
    if kind == "tf32":
        torch.backends.cuda.matmul.allow_tf32 = True
        t_dense = _time(lambda: torch.mm(x, w.t()))
        best = _ours(kind, ws, x, sx, sw, ref, False, m)
        return [_row("tf32 (1:2) → fp32", m, n, k, (t_dense, "`torch.mm`, tf32"), best, _cslt(w, x, torch.float32))]
    t_dense = _time(lambda: torch._int_mm(x, w.t())) if m > 16 else float("nan")
    best = _ours(kind, ws, x, sx, sw, ref, False, m)
    rows = [_row("int8 → int32", m, n, k, (t_dense, "`_int_mm`"), best, _cslt(w, x, torch.int32))]
    ref_s = (x.double() @ w.double().t() * sx.double() * sw.double()).t().float()
    best = _ours(kind, ws, x, sx, sw, ref_s, True, m)
    rows.append(_row("int8 → bf16 (rowwise)", m, n, k, None, best, _cslt(w, x, torch.bfloat16)))
    return rows


def _cfg(c: MMConfig | None) -> str:
    return "none passed" if c is None else f"{c.block_m}×{c.block_n}×{c.block_k} w{c.num_warps} s{c.num_stages}"


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--quick", action="store_true")
    p.add_argument("--out", default=None)
    p.add_argument("--only", default=None, help="kind:MxNxK,... (e.g. fp8:128x8192x8192,tf32:8192x8192x8192)")
    args = p.parse_args()
    shapes = QUICK if args.quick else SHAPES
    if args.only:
        shapes = {}
        for item in args.only.split(","):
            kind, dims = item.split(":")
            shapes.setdefault(kind, []).append(tuple(int(d) for d in dims.split("x")))
    head = ["| type | M×N×K | dense | cuSPARSELt 2:4 | sparsecc 2:4 | vs dense | sparsecc tile |",
            "|---|---|---|---|---|---|---|"]
    rows = []
    for kind in ("fp8", "int8", "tf32"):
        for m, n, k in shapes.get(kind, []):
            rows += bench(kind, m, n, k)
            print(rows[-1], flush=True)
    table = "\n".join(head + rows)
    print(f"\n{torch.cuda.get_device_name()}, torch {torch.__version__}; TFLOP/s (TOPS for int8), CUDA graphs\n{table}")
    if args.out:
        with open(args.out, "w") as f:
            f.write(f"# int8 / fp8 2:4 vs peers ({torch.cuda.get_device_name()}, torch {torch.__version__})\n\n"
                    f"`python bench/low_precision.py`: y = x @ W.T, W 2:4; TFLOP/s (TOPS for int8) = 2·M·N·K/time,\n"
                    f"do_bench_cudagraph medians, same run.\n\n{table}\n")


if __name__ == "__main__":
    main()
