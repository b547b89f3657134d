"""Probe: the sgemm kernel (test/python/sgemm_ir.py) lowered with mma.sp (sm_90) vs wgmma.sp
(sm_90a) configs: correctness on ragged shapes, then TFLOP/s at large and decode shapes next
to torch.mm in the same run. One device call; prints a table last."""

from __future__ import annotations

import os
import sys
import time

import torch
import triton.testing

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "test", "python"))
from test_gpu_lower import build_kernel, run_case  # noqa: E402

from sparsecc.runtime.compress import compress, prune_2to4  # noqa: E402
from sparsecc.runtime.driver import load_kernel  # noqa: E402

CONFIGS = [  # (target, BM, BN, BK, warps, stages)
    ("sm_90a", 256, 128, 64, 8, 4),
    ("sm_90a", 256, 128, 128, 8, 3),
    ("sm_90a", 128, 256, 128, 8, 3),
    ("sm_90a", 256, 128, 64, 8, 5),
    ("sm_90a", 128, 256, 64, 8, 5),
]
DECODE = [("sm_90", 32, 16, 256, 4, 4), ("sm_90a", 64, 16, 512, 4, 3), ("sm_90", 32, 16, 256, 4, 8),
          ("sm_90a", 64, 16, 256, 4, 6), ("sm_90a", 128, 16, 256, 8, 4), ("sm_90", 16, 16, 512, 4, 4),
          ("sm_90a", 64, 64, 128, 4, 4), ("sm_90a", 64, 64, 256, 4, 3), ("sm_90a", 128, 64, 128, 8, 4)]
BIG = [(8192, 8192, 8192), (4096, 4096, 4096)]
SMALL = [(5120, 16, 4096), (8192, 16, 8192), (8192, 128, 8192)]


def bench(cfg, shape, dtype=torch.float16):
    target, bm, bn, bk, nw, ns = cfg
    t0 = time.time()
    cubin, meta = build_kernel(bm, bn, bk, "f16", nw, ns, target)
    ct = time.time() - t0
    m, n, k = shape
    a = prune_2to4(torch.randn(m, k, device="cuda", dtype=dtype))
    b = torch.randn(k, n, device="cuda", dtype=dtype)
    st = compress(a)
    d = torch.empty((m, n), device="cuda", dtype=dtype)
    kern = load_kernel(cubin, meta["name"], [kind for _, kind in meta["params"]], shared_bytes=meta["shared"])
    grid = ((m + bm - 1) // bm * ((n + bn - 1) // bn), 1, 1)
    grid = ((m + bm - 1) // bm, (n + bn - 1) // bn, 1)
    args = [d, st.values, st.meta, b, m, n, k]
    fn = lambda: kern.launch(grid, (meta["threads"], 1, 1), args)  # noqa: E731
    ms = triton.testing.do_bench(fn, warmup=50, rep=200)
    ref = a @ b
    err = ((d.float() - ref.float()).abs().max() / ref.float().abs().max()).item()
    dense = triton.testing.do_bench(lambda: torch.mm(a, b), warmup=50, rep=200)
    fl = 2 * m * n * k
    return fl / ms / 1e9, fl / dense / 1e9, err, meta["resources"], ct


def main() -> None:
    rows, wrong = [], []
    for cfg in CONFIGS + DECODE:
        for shape in [(200, 136, 192), (37, 70, 96), (1000, 520, 4096)]:
            for dt in ("f16", "bf16"):
                try:
                    e = run_case(cfg[1:], dt, shape, target=cfg[0])
                    ok = e == e and e < (2e-2 if dt == "bf16" else 4e-3)
                except Exception as ex:  # report and go on
                    e, ok = f"{type(ex).__name__}: {str(ex)[:200]}", False
                if not ok:
                    wrong.append(f"WRONG {cfg} {dt} {shape}: {e}")
                    print(wrong[-1], flush=True)
    for cfg_list, shapes in ((CONFIGS, BIG), (DECODE, SMALL)):
        for shape in shapes:
            for cfg in cfg_list:
                try:
                    tf, dense, err, res, ct = bench(cfg, shape)
                    rows.append(f"{'x'.join(map(str, shape)):>16} {str(cfg):38} {tf:7.1f} {dense:7.1f} {tf / dense:5.2f}x "
                                f"err={err:.1e} regs={res['registers']} spill={res['spill_stores']} compile={ct:.1f}s")
                except Exception as ex:
                    rows.append(f"{'x'.join(map(str, shape)):>16} {str(cfg):38} FAILED {type(ex).__name__}: {str(ex)[:200]}")
                print(rows[-1], flush=True)
    print("\nshape | config | sparsecc TFLOP/s | torch.mm | ratio")
    print("\n".join(rows))
    print(f"correctness: {len(wrong)} wrong")


if __name__ == "__main__":
    main()
