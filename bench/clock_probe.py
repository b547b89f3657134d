"""Is a large GEMM limited by power? Runs each contender back to back for a few seconds while
`nvidia-smi` samples the SM clock, the board power and the active throttle reasons.

ncu (which locks clocks at ~1.40 GHz) measured sparse_mm 8192³ faster than the free-running
benchmark did, which suggests the free-running GPU drops below 1.40 GHz under this load.
This probe reads the clock directly instead of guessing; it changes no setting.

    python bench/clock_probe.py [M N K] [--seconds 3]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import time
from collections.abc import Callable

import torch

from sparsecc.ops.sparse_mm import sparse_mm
from sparsecc.runtime.compress import compress, prune_2to4

QUERY = "clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active"


def _sample_while(run: Callable[[], None], seconds: float) -> tuple[list[str], float]:
    """Run `run` back to back for `seconds` while nvidia-smi samples every 100 ms; returns the
    samples taken in the steady second half and the mean time of one call (ms)."""
    proc = subprocess.Popen(["nvidia-smi", f"--query-gpu={QUERY}", "--format=csv,noheader,nounits",
                             "-lms", "100"], stdout=subprocess.PIPE, text=True)
    start = time.perf_counter()
    calls = 0
    half_calls, half_start = 0, start
    while (now := time.perf_counter()) - start < seconds:
        run()
        calls += 1
        if now - start > seconds / 2:
            if half_calls == 0:
                torch.cuda.synchronize()
                half_start = time.perf_counter()
            half_calls += 1
    torch.cuda.synchronize()
    half_time = time.perf_counter() - half_start
    proc.terminate()
    out, _ = proc.communicate()
    lines = [x.strip() for x in out.splitlines() if x.strip()]
    return lines[len(lines) // 2:], half_time / max(half_calls - 1, 1) * 1e3


def _summary(lines: list[str]) -> tuple[float, float, float, str]:
    clocks, powers, temps, reasons = [], [], [], set()
    for line in lines:
        parts = [p.strip() for p in line.split(",")]
        try:
            clocks.append(float(parts[0]))
            powers.append(float(parts[1]))
            temps.append(float(parts[2]))
        except (ValueError, IndexError):
            continue
        reasons.add(parts[3] if len(parts) > 3 else "?")
    med = statistics.median
    return med(clocks or [0]), med(powers or [0]), med(temps or [0]), " ".join(sorted(reasons))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("shape", nargs="*", type=int, default=[8192, 8192, 8192])
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args()
    m, n, k = args.shape
    rows = []
    for name, dtype in (("fp16", torch.float16), ("bf16", torch.bfloat16)):
        dense = prune_2to4(torch.randn(m, k, device="cuda", dtype=dtype))
        a = compress(dense)
        b = torch.randn(k, n, device="cuda", dtype=dtype)
        s24 = torch.sparse.to_sparse_semi_structured(dense)
        contenders = {
            "sparsecc": lambda a=a, b=b: sparse_mm(a, b),
            "torch 2:4": lambda s24=s24, b=b: torch.mm(s24, b),
            "cuBLAS": lambda dense=dense, b=b: torch.mm(dense, b),
        }
        for who, run in contenders.items():
            run()
            torch.cuda.synchronize()
            lines, ms = _sample_while(run, args.seconds)
            clock, power, temp, reasons = _summary(lines)
            rows.append((name, who, 2 * m * n * k / (ms * 1e-3) / 1e12, clock, power, temp, reasons))
            time.sleep(1.0)
    print(f"\n{m}x{n}x{k}: steady second half of {args.seconds} s back-to-back runs")
    print("| dtype | kernel | TFLOP/s | SM MHz | W | °C | event reasons |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r[0]} | {r[1]} | {r[2]:.0f} | {r[3]:.0f} | {r[4]:.0f} | {r[5]:.0f} | {r[6]} |")


if __name__ == "__main__":
    main()
