"""Side-by-side GEMM benchmark on one GPU, in one run.

For A sparse (M×K, 2:4 along K) times B dense (K×N), fp16 and bf16, measures TFLOP/s
(2·M·N·K / median time of triton.testing.do_bench) of:
  sparsecc   sparsecc.ops.sparse_mm(autotune=True) (its autotuner's pick among its candidates)
  cuBLAS     dense torch.mm on the same dense-shaped problem
  torch24    torch.sparse.to_sparse_semi_structured(A) @ B (cuSPARSELt on Hopper)
  triton     a dense Triton tl.dot matmul (a few configs, best taken)
and prints one table with ratios to cuBLAS and to torch's 2:4 path; `--out DIR` also writes it
as markdown with the date, GPU name and library versions to DIR/gemm-current-<GPU>.md, after
moving the table that was there into DIR/history/gemm-<its date>-<GPU>.md.

    python bench/gemm.py [--quick] [--dtypes fp16,bf16] [--out bench/results]
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys
import time

import torch

SHAPES_FULL = [
    (4096, 4096, 4096), (8192, 8192, 8192), (16384, 16384, 16384),
    (28672, 4096, 8192), (8192, 4096, 28672),
    (5120, 1, 4096), (5120, 16, 4096), (5120, 128, 4096),
    (8192, 1, 8192), (8192, 16, 8192), (8192, 128, 8192),
]
SHAPES_QUICK = [(4096, 4096, 4096), (8192, 8192, 8192), (5120, 16, 4096), (8192, 128, 8192)]
DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}


def tflops(m: int, n: int, k: int, ms: float) -> float:
    return 2 * m * n * k / (ms * 1e-3) / 1e12


def _triton_matmul():
    """A dense Triton matmul, written here, tried over a few configs."""
    import triton
    import triton.language as tl

    @triton.jit
    def mm_kernel(a, b, c, M, N, K, sam, sbk, scm,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr):
        pid = tl.program_id(0)
        num_m = tl.cdiv(M, BM)
        num_n = tl.cdiv(N, BN)
        group = GROUP * num_n
        first_m = (pid // group) * GROUP
        size_m = min(num_m - first_m, GROUP)
        pm = first_m + ((pid % group) % size_m)
        pn = (pid % group) // size_m
        rm = pm * BM + tl.arange(0, BM)
        rn = pn * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k0 in range(0, tl.cdiv(K, BK)):
            kk = k0 * BK + rk
            av = tl.load(a + rm[:, None] * sam + kk[None, :], mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
            bv = tl.load(b + kk[:, None] * sbk + rn[None, :], mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
            acc = tl.dot(av, bv, acc)
        tl.store(c + rm[:, None] * scm + rn[None, :], acc.to(c.dtype.element_ty),
                 mask=(rm[:, None] < M) & (rn[None, :] < N))

    configs = [(128, 128, 64, 8, 4), (128, 256, 64, 8, 3), (64, 64, 64, 4, 4)]

    def run(a, b, c, cfg):
        bm, bn, bk, warps, stages = cfg
        m, k = a.shape
        n = b.shape[1]
        grid = (triton.cdiv(m, bm) * triton.cdiv(n, bn),)
        mm_kernel[grid](a, b, c, m, n, k, a.stride(0), b.stride(0), c.stride(0),
                        BM=bm, BN=bn, BK=bk, GROUP=8, num_warps=warps, num_stages=stages)

    return configs, run


def bench_shape(m: int, n: int, k: int, dtype: torch.dtype, do_bench) -> dict[str, float | None]:
    import sparsecc
    from sparsecc.ops import sparse_mm
    from sparsecc.ops.sparse_mm import tuned_config

    dense = sparsecc.prune_2to4(torch.randn(m, k, dtype=dtype, device="cuda"))
    b = torch.randn(k, n, dtype=dtype, device="cuda")
    a_sp = sparsecc.compress(dense)
    res: dict[str, float | None] = {}
    ref = torch.mm(dense, b)
    # sparsecc: sparse_mm's autotuner picks among its candidate configs, then the pick is timed.
    best_ms, best_cfg, err = None, None, None
    try:
        best_cfg = tuned_config(a_sp, b)
        out = sparse_mm(a_sp, b, autotune=True)
        err = (out.float() - ref.float()).abs().max().item()
        best_ms = do_bench(lambda: sparse_mm(a_sp, b, autotune=True))
    except Exception as ex:  # said, and the row shows no sparsecc figure
        print(f"  sparsecc failed: {type(ex).__name__}: {str(ex)[:200]}", file=sys.stderr)
    res["sparsecc_err"] = err
    res["sparsecc"] = tflops(m, n, k, best_ms) if best_ms else None
    res["sparsecc_cfg"] = best_cfg
    res["cublas"] = tflops(m, n, k, do_bench(lambda: torch.mm(dense, b)))
    try:
        from torch.sparse import to_sparse_semi_structured

        a_t = to_sparse_semi_structured(dense)
        res["torch24"] = tflops(m, n, k, do_bench(lambda: torch.mm(a_t, b)))
    except Exception as e:  # torch refuses some shapes (e.g. N=1): record that, not crash
        print(f"  torch 2:4 failed at {m}x{n}x{k}: {type(e).__name__}: {str(e)[:80]}", file=sys.stderr)
        res["torch24"] = None
    try:
        configs, run = _triton_matmul()
        c = torch.empty(m, n, dtype=dtype, device="cuda")
        best = None
        for cfg in configs:
            try:
                ms = do_bench(lambda cfg=cfg: run(dense, b, c, cfg))
            except Exception:
                continue
            best = ms if best is None else min(best, ms)
        res["triton"] = tflops(m, n, k, best) if best else None
    except Exception as e:
        print(f"  triton failed: {e}", file=sys.stderr)
        res["triton"] = None
    return res


def _fmt(x: float | None, spec: str = "7.1f") -> str:
    return format(x, spec) if x is not None else "    n/a"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--dtypes", default="fp16,bf16")
    p.add_argument("--out", default=None,
                   help="folder for the markdown table (bench/results: the current table; the one "
                        "it replaces moves to history/)")
    args = p.parse_args(argv)
    if not torch.cuda.is_available():
        print("bench/gemm.py needs a CUDA GPU", file=sys.stderr)
        return 2
    from triton.testing import do_bench

    shapes = SHAPES_QUICK if args.quick else SHAPES_FULL
    rows = []
    if args.out:
        _archive(args.out)
    for dname in args.dtypes.split(","):
        for m, n, k in shapes:
            t0 = time.time()
            r = bench_shape(m, n, k, DTYPES[dname], do_bench)
            rows.append((dname, m, n, k, r))
            print(f"{dname} {m}x{n}x{k}: {r} ({time.time() - t0:.1f}s)", file=sys.stderr, flush=True)
            if args.out:  # keep partial results if the run is cut short
                _write(args.out, rows)
    print(_table(rows))
    if args.out:
        print(f"wrote {_write(args.out, rows)}", file=sys.stderr)
    return 0


def _table(rows: list) -> str:
    import triton

    gpu = torch.cuda.get_device_name()
    versions = f"torch {torch.__version__}, triton {triton.__version__}, CUDA {torch.version.cuda}, python {platform.python_version()}"
    lines = [
        f"# GEMM benchmark, {datetime.date.today().isoformat()}",
        f"GPU: {gpu}; {versions}. TFLOP/s = 2·M·N·K / median time (triton.testing.do_bench); A (M×K) is 2:4 sparse.",
        "",
        "| dtype | M×N×K | sparsecc | cuBLAS dense | torch 2:4 | Triton dense | sparsecc/cuBLAS | sparsecc/torch2:4 | max abs err | sparsecc config |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for dname, m, n, k, r in rows:
        ratio_c = r["sparsecc"] / r["cublas"] if r.get("cublas") and r.get("sparsecc") else None
        ratio_t = r["sparsecc"] / r["torch24"] if r.get("torch24") and r.get("sparsecc") else None
        cfg = r.get("sparsecc_cfg")
        cfg_s = f"{cfg.block_m}×{cfg.block_n}×{cfg.block_k} w{cfg.num_warps} s{cfg.num_stages}" if cfg else "n/a"
        err_s = f"{r['sparsecc_err']:.3g}" if r.get("sparsecc_err") is not None else "n/a"
        lines.append(
            f"| {dname} | {m}×{n}×{k} | {_fmt(r['sparsecc'])} | {_fmt(r['cublas'])} | {_fmt(r['torch24'])} | "
            f"{_fmt(r['triton'])} | {_fmt(ratio_c, '.2f')}× | {_fmt(ratio_t, '.2f')}× | {err_s} | {cfg_s} |"
        )
    return "\n".join(lines)


def _current(folder: str) -> str:
    gpu = torch.cuda.get_device_name().replace(" ", "_")
    return os.path.join(folder, f"gemm-current-{gpu}.md")


def _archive(folder: str) -> None:
    """Move this GPU's current table (if any) to history/, named by the date in its header."""
    current = _current(folder)
    if not os.path.exists(current):
        return
    with open(current) as f:
        date = f.readline().rsplit(",", 1)[-1].strip() or "undated"
    gpu = os.path.basename(current).removeprefix("gemm-current-").removesuffix(".md")
    os.makedirs(os.path.join(folder, "history"), exist_ok=True)
    stem, n = os.path.join(folder, "history", f"gemm-{date}-{gpu}"), 1
    target = f"{stem}.md"
    while os.path.exists(target):
        n += 1
        target = f"{stem}-{n}.md"
    os.replace(current, target)


def _write(folder: str, rows: list) -> str:
    os.makedirs(folder, exist_ok=True)
    path = _current(folder)
    with open(path + ".tmp", "w") as f:
        f.write(_table(rows) + "\n")
    os.replace(path + ".tmp", path)
    return path


if __name__ == "__main__":
    sys.exit(main())
