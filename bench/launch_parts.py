"""Where the µs of one `kernel[grid](...)` launch go on this machine (the target is ≤ 10 µs).

Each variant runs `--launches` times per round; rounds alternate the variants (so a noisy
neighbour hits them all alike) and the table gives each one's best and median round:
  kernel[grid]             the user's call, as bench/host.py times it (and with the ctypes launcher)
  kernel[grid], no driver  the same with the driver call replaced by a no-op (Python part only)
  fast_key / pack / stream the pieces of that Python part
  raw C launch             pack + cuLaunchKernel in lib/launch.c
  raw ctypes launch        pack_into + cuLaunchKernel through ctypes
  bare ctypes              cuLaunchKernel through ctypes with prebuilt params (the floor here)

    python bench/launch_parts.py [--launches 10000] [--rounds 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402

from bench.host import tiny_kernel  # noqa: E402
from sparsecc.runtime import driver, launcher, native  # noqa: E402


def timed(fn, n: int, sync: bool) -> float:
    if sync:
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    if sync:
        torch.cuda.synchronize()
    return (time.perf_counter() - t0) / n * 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--launches", type=int, default=10_000)
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    x = torch.zeros(1024, device="cuda")
    tiny_kernel[(8,)](x, 1024, BLOCK=128)
    torch.cuda.synchronize()
    ck = next(c for c in tiny_kernel.cache.values() if c.target is not None)
    plan = launcher.plan_for(ck)
    dev = x.get_device()
    c_raw = plan.raw_launch(dev)
    k = plan.kernels[dev]
    ct_raw = k.raw_launcher(plan.block, plan.shared_bytes, native=False)
    stream = torch.cuda.current_stream().cuda_stream
    values = [x.data_ptr(), 1024]
    cu = driver.libcuda_launch()
    flat, kw, a = [x, 1024], {"BLOCK": 128}, (x, 1024)

    def noop(gx, gy, gz, vals, s):
        return None

    def launch_with(raw):
        """kernel[grid] with the plan's driver call swapped for `raw` for this one launch."""
        def go():
            plan.raw[dev] = raw
            try:
                tiny_kernel[(8,)](x, 1024, BLOCK=128)
            finally:
                plan.raw[dev] = c_raw
        return go

    without_driver, through_ctypes = launch_with(noop), launch_with(ct_raw)

    variants = {
        "kernel[grid]": (lambda: tiny_kernel[(8,)](x, 1024, BLOCK=128), True),
        "kernel[grid] through the ctypes launcher": (through_ctypes, True),
        "kernel[grid], no driver call (Python part)": (without_driver, False),
        "  fast_key": (lambda: tiny_kernel.fast_key(a, kw), False),
        "  pack (checks + data_ptr)": (lambda: plan.pack(flat, dev), False),
        "  current raw stream": (lambda: launcher._raw_stream(dev), False),
        "raw C launch (pack + cuLaunchKernel)": (lambda: c_raw(8, 1, 1, values, stream), True),
        "raw ctypes launch (pack_into + cuLaunchKernel)": (lambda: ct_raw(8, 1, 1, values, stream), True),
        "bare ctypes cuLaunchKernel, prebuilt params": (
            lambda: cu(k._handle, 8, 1, 1, plan.block[0], 1, 1, plan.shared_bytes, stream,
                       k._params_addr, None), True),
    }
    rounds: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(args.rounds):
        for name, (fn, sync) in variants.items():
            rounds[name].append(timed(fn, args.launches, sync))
    print(f"C launcher: {'loaded' if native.load() else native.why_not()}")
    print("| µs per call | best round | median round |\n|---|---|---|")
    for name, ts in rounds.items():
        print(f"| {name} | {min(ts):.2f} | {statistics.median(ts):.2f} |")


if __name__ == "__main__":
    main()
