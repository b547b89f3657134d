"""`y = x @ W.T` with W 2:4 sparse through a user's @sparsecc.jit kernel (W the right operand of
tl.dot, moved to the left by the compiler) against dense `F.linear`, same run (H100).

Llama-shaped weights N×K at M = 1, 16 and 128 tokens; each kernel time is the best of a few tiles
(do_bench_cudagraph medians, CUDA graphs so that launch costs do not hide the GPU time).
`--m 2048,...` picks the token counts; `--peers` adds PyTorch's 2:4 path (`F.linear` with a
`to_sparse_semi_structured` weight, cuSPARSELt) and, at M >= 128, `sparse_mm(W, x.T, out=y.T)`
(the GEMM kernel with W on the left and xᵀ a K-major B, written into y transposed).

    python bench/linear.py [--quick] [--m M,...] [--peers] [NxK ...]
"""

from __future__ import annotations

import os
import sys

import torch
import torch.nn.functional as F
import triton.testing

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "test", "python", "conformance"))

from linear_kernels import linear_block_ptr  # noqa: E402

import sparsecc  # noqa: E402

SHAPES = [(4096, 4096), (14336, 4096), (4096, 14336), (28672, 8192)]
TILES = {"decode": [(16, 32, 256, 4, 4), (16, 64, 256, 4, 3), (16, 64, 128, 4, 4), (16, 128, 128, 4, 3),
                    (16, 16, 256, 4, 4), (16, 32, 512, 4, 3), (16, 32, 128, 4, 6), (16, 32, 1024, 4, 2),
                    (16, 16, 512, 4, 3), (16, 32, 512, 4, 4), (16, 32, 512, 8, 3)],
         "prefill": [(128, 128, 64, 8, 3), (64, 128, 128, 4, 3), (128, 256, 64, 8, 3), (64, 64, 64, 4, 4),
                     (32, 64, 128, 4, 4), (16, 64, 256, 4, 3), (128, 64, 64, 4, 4), (256, 128, 64, 8, 3),
                     (128, 256, 64, 8, 4)]}


def _graph_time(fn) -> float:
    fn()
    torch.cuda.synchronize()
    return triton.testing.do_bench_cudagraph(fn, rep=100, return_mode="median")


def bench(m: int, n: int, k: int) -> tuple[float, float, str]:
    torch.manual_seed(0)
    x = torch.randn(m, k, device="cuda", dtype=torch.float16)
    dense_w = sparsecc.prune_2to4(torch.randn(n, k, device="cuda", dtype=torch.float16))
    w = sparsecc.compress(dense_w)
    y = torch.empty(m, n, device="cuda", dtype=torch.float16)
    ref = F.linear(x, dense_w)
    best = (float("inf"), "")
    for bm, bn, bk, warps, stages in TILES["decode" if m <= 16 else "prefill"]:
        grid = ((m + bm - 1) // bm, (n + bn - 1) // bn)

        def run(bm=bm, bn=bn, bk=bk, warps=warps, stages=stages, grid=grid):
            linear_block_ptr[grid](y, x, w, y, m, n, k, x.stride(0), w.stride(0), y.stride(0),
                                   BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, HAS_BIAS=False, SILU=False,
                                   num_warps=warps, num_stages=stages)

        y.fill_(float("nan"))
        run()
        torch.cuda.synchronize()
        err = (y.float() - ref.float()).abs().max().item()
        assert err < 0.02 * ref.abs().max().item() + 0.1, f"{bm}x{bn}x{bk}: max error {err}"
        t = _graph_time(run)
        if t < best[0]:
            best = (t, f"{bm}x{bn}x{bk}w{warps}s{stages}")
    dense = _graph_time(lambda: F.linear(x, dense_w, out=None))
    return best[0], dense, best[1]


def peers(m: int, n: int, k: int) -> tuple[float, float]:
    """(torch 2:4 µs or nan, sparse_mm(W, x.T) µs or nan) at this shape."""
    from torch.sparse import to_sparse_semi_structured

    from sparsecc.ops import sparse_mm

    torch.manual_seed(0)
    x = torch.randn(m, k, device="cuda", dtype=torch.float16)
    dense_w = sparsecc.prune_2to4(torch.randn(n, k, device="cuda", dtype=torch.float16))
    ref = F.linear(x, dense_w)
    try:
        semi = to_sparse_semi_structured(dense_w)
        torch.testing.assert_close(F.linear(x, semi), ref, rtol=1e-2, atol=1e-1)
        t_torch = _graph_time(lambda: F.linear(x, semi))
    except Exception as e:  # noqa: BLE001 - a peer that cannot run this shape is a table entry
        print(f"torch 2:4 {m}x{n}x{k}: {type(e).__name__}: {str(e)[:120]}")
        t_torch = float("nan")
    t_mm = float("nan")
    if m >= 128:
        w = sparsecc.compress(dense_w)
        y = torch.empty(m, n, device="cuda", dtype=torch.float16)
        sparse_mm(w, x.t(), out=y.t())
        torch.testing.assert_close(y, ref, rtol=1e-2, atol=1e-1)
        t_mm = _graph_time(lambda: sparse_mm(w, x.t(), out=y.t()))
    return t_torch, t_mm


def main(argv: list[str]) -> None:
    ms = [1, 16] if "--quick" in argv else [1, 16, 128]
    if "--m" in argv:
        ms = [int(v) for v in argv[argv.index("--m") + 1].split(",")]
    with_peers = "--peers" in argv
    shapes = [tuple(int(v) for v in a.split("x")) for a in argv if "x" in a and not a.startswith("-")
              and a[0].isdigit() and "," not in a] or SHAPES
    rows = []
    for n, k in shapes:
        for m in ms:
            t, dense, tile = bench(m, n, k)
            row = f"| {m} | {n}x{k} | {t * 1e3:.1f} | {dense * 1e3:.1f} | {dense / t:.2f} | {tile} |"
            if with_peers:
                t_torch, t_mm = peers(m, n, k)
                row += f" {t_torch * 1e3:.1f} | {t_mm * 1e3:.1f} | {dense / min(t, t_mm if t_mm == t_mm else t):.2f} |"
            rows.append(row)
            print(row, flush=True)
    head = "| M | N×K | sparse user kernel µs | F.linear µs | speed-up | tile |"
    if with_peers:
        head += " torch 2:4 µs | sparse_mm(W, xᵀ) µs | best sparsecc speed-up |"
    print(head)
    print("|---" * (head.count("|") - 1) + "|")
    print("\n".join(rows))


if __name__ == "__main__":
    main(sys.argv[1:])
