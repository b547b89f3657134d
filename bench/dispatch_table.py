"""Build the dispatcher's table for this GPU: sparse (best tile config) against the other paths,
per scheme, Llama layer shape and token count (`sparsecc.ops.dispatch`).

For each weight shape N x K (the Llama-2-7B layers of bench/llama_e2e.py first, then Llama-3's)
and M in 1, 4, 16, 64, 128, 256, 512, 2048, 4096, 8192 it times, in CUDA graphs
(`sparsecc.ops.dispatch_measure`): F.linear with the dense weight, the 16-bit 2:4 kernel, and each
scheme's own kernel (fp16 2:4, w4g128, w8g128, fp8), plus per weight the cost of dequantizing /
decompressing it; and writes `sparsecc/ops/dispatch_tables/<GPU>.json`, which the package ships.
A shape whose turn comes after `--budget` seconds is left out (the dispatcher interpolates).

    python bench/dispatch_table.py                       # ~6 minutes on an H100; prints progress
    python bench/dispatch_table.py --quick               # 2 shapes, 5 token counts
    python bench/dispatch_table.py --cold --out cold.json   # each call with a cold L2 (dispatch_measure.cold_l2)
    python bench/dispatch_table.py --check               # CPU: read the shipped tables, print plans
    python bench/dispatch_table.py --layers NVIDIA_H100_80GB_HBM3 --md out.md   # CPU: issue 26's layer table
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import sys
import time

import torch

if __package__ in (None, ""):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import sparsecc  # noqa: E402
from sparsecc.ops import dispatch, dispatch_measure  # noqa: E402

SHAPES = [(4096, 4096), (11008, 4096), (4096, 11008), (32000, 4096),   # Llama-2-7B: qkvo, gate/up, down, lm_head
          (14336, 4096), (4096, 14336), (8192, 8192), (28672, 8192),   # Llama-3 8B / 70B
          (12288, 4096), (22016, 4096)]   # Llama-2-7B with q/k/v and gate/up fused (bench/llama_e2e.py)
QUICK_SHAPES = [(4096, 4096), (11008, 4096)]
SCHEMES = ["nv24", "w4g128", "w8g128", "fp8"]
QUICK_MS = [1, 16, 64, 512, 2048]


def log(line: str) -> None:
    print(f"[dispatch_table] {line}", flush=True)


def check(gpu: str | None) -> int:
    """Read every shipped table (or `gpu`'s) and print the plan of each entry's shape: a CPU
    check that the files parse and what they decide."""
    names = [gpu] if gpu else [p.stem for p in sorted(dispatch.TABLES.glob("*.json"))]
    if not names:
        log(f"no tables in {dispatch.TABLES}: every GPU takes the default rule")
    for name in names:
        entries = dispatch.parse_entries(json.loads(dispatch.shipped_path(name).read_text()))
        log(f"{name}: {len(entries)} entries")
        for e in entries:
            plan = dispatch._plan(name, e.scheme, e.dtype, e.n, e.k, "auto", False, -1)
            bands = ", ".join(f"{dispatch._label(lo, hi)}: {mode}" for (lo, hi, mode) in _bands(plan))
            log(f"  {e.scheme:7s} {e.dtype} {e.n}x{e.k}: {bands}")
    return 0


LAYER_MS = (1, 16, 64, 128, 512, 4096)
LAYER_FLOOR = 0.97  # issue 26: no layer slower than dense by more than 3%


def layer_table(gpu: str) -> str:
    """Markdown: for every scheme and shape of `gpu`'s shipped table and M in LAYER_MS, F.linear's
    time, the time of the path the dispatcher picks (a layer without a dense copy) and their
    ratio; ratios under LAYER_FLOOR are bold. Measured times only: a cell whose M the table did
    not measure is interpolated, as the dispatcher does."""
    doc = json.loads(dispatch.shipped_path(gpu).read_text())
    entries = dispatch.parse_entries(doc)
    how = doc.get("how", "bench/dispatch_table.py")
    timing = ("each call with a cold L2, as a model's layer sees its weight (`--cold`)" if "--cold" in how
              else "calls back to back, the weight re-read from L2 where it fits")
    lines = [f"# Layers, dispatched vs F.linear: {gpu}", "",
             f"From `sparsecc/ops/dispatch_tables/{gpu}.json` (`bench/dispatch_table.py --layers`; the table "
             f"built {doc.get('built', '?')} by `{how}`: {timing}): per cell "
             "F.linear's microseconds / the dispatched path's, as a speed-up (dense time ÷ dispatched time), "
             f"and the path. Bold: under {LAYER_FLOOR}x.", "",
             "| scheme | N x K | " + " | ".join(f"M={m}" for m in LAYER_MS) + " |",
             "|---|---|" + "---|" * len(LAYER_MS)]
    below = 0
    for e in entries:
        cells = []
        for m in LAYER_MS:
            times = dispatch.estimate((e,), e.n, e.k, m, cached=False)
            dense_mm = dispatch._at(e.ms, e.mm, m)
            mode, _ = dispatch._decide(gpu, e.scheme, e.dtype, e.n, e.k, "auto", False, m)
            if dense_mm is None or mode not in times:
                cells.append("—")
                continue
            ratio = dense_mm / times[mode]
            below += ratio < LAYER_FLOOR
            text = f"{ratio:.2f}x {mode}"
            cells.append(f"**{text}**" if ratio < LAYER_FLOOR else text)
        lines.append(f"| {e.scheme} | {e.n}x{e.k} | " + " | ".join(cells) + " |")
    lines += ["", f"{below} cells under {LAYER_FLOOR}x."]
    return "\n".join(lines) + "\n"


def merged_entries(old: list[dict], new: list[dict]) -> list[dict]:
    """`old`'s entries, in `old`'s order, with the token counts `new` measured again (same
    scheme, dtype and shape) replaced and the others kept, then `new`'s other entries.

        >>> merged_entries([{"scheme": "nv24", "dtype": "float16", "n": 1, "k": 2, "m": {"1": 5, "16": 6}}],
        ...                [{"scheme": "nv24", "dtype": "float16", "n": 1, "k": 2, "m": {"1": 0}}])[0]["m"]
        {'1': 0, '16': 6}
    """
    key = lambda e: (e["scheme"], e["dtype"], e["n"], e["k"])  # noqa: E731
    fresh = {key(e): e for e in new}

    def merged(e: dict) -> dict:
        n = fresh.pop(key(e), None)
        if n is None:
            return e
        ms = {**e["m"], **n["m"]}
        return {**e, **n, "m": {m: ms[m] for m in sorted(ms, key=int)}}
    out = [merged(e) for e in old]
    return out + [e for e in new if key(e) in fresh]


def _bands(plan):
    low = 0
    for bound, mode, _ in plan:
        yield low, bound, mode
        low = bound


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help=f"shapes {QUICK_SHAPES}, M {QUICK_MS}")
    p.add_argument("--check", action="store_true", help="no GPU: parse the shipped tables and print their plans")
    p.add_argument("--gpu", default=None, help="with --check: one GPU's table (its file name stem)")
    p.add_argument("--layers", default=None, metavar="GPU",
                   help="no GPU: issue 26's layer table (dispatched path vs F.linear) of GPU's shipped table")
    p.add_argument("--md", default=None, help="with --layers: write the table here (default: print it)")
    p.add_argument("--schemes", default=",".join(SCHEMES), help=f"comma-separated (default {','.join(SCHEMES)})")
    p.add_argument("--ms", default=",".join(map(str, dispatch.BUCKETS)), help="token counts")
    p.add_argument("--shapes", default=None, help="comma-separated NxK (default: the Llama shapes of SHAPES)")
    p.add_argument("--merge", action="store_true",
                   help="keep the entries of --out's existing table that this run does not measure again "
                        "(one shape's rows rebuilt without re-timing the others)")
    p.add_argument("--dtype", choices=("float16", "bfloat16"), default="float16")
    p.add_argument("--budget", type=float, default=420.0, help="seconds; later shapes are skipped (default 420)")
    p.add_argument("--out", default=None, help="the JSON to write (default: the package's table for this GPU)")
    p.add_argument("--cold", action="store_true",
                   help="time every call with a cold L2 (dispatch_measure.cold_l2: as in a model, whose other "
                        "layers evict the weight), not one weight re-read from L2 call after call")
    args = p.parse_args(argv)
    if args.check:
        return check(args.gpu)
    if args.layers:
        text = layer_table(args.layers)
        if args.md:
            with open(args.md, "w") as f:
                f.write(text)
        else:
            print(text, end="")
        return 0
    if not torch.cuda.is_available():
        p.error("needs a CUDA GPU (--check reads the tables on the CPU)")
    gpu = torch.cuda.get_device_name()
    shapes = QUICK_SHAPES if args.quick else SHAPES
    if args.shapes:
        try:
            shapes = [tuple(int(v) for v in s.lower().split("x")) for s in args.shapes.split(",") if s.strip()]
        except ValueError:
            p.error(f"--shapes: expected NxK,NxK,..., got {args.shapes!r}")
    ms = QUICK_MS if args.quick else [int(m) for m in args.ms.split(",") if m]
    schemes = [s.strip() for s in args.schemes.split(",") if s.strip()]
    dtype = getattr(torch, args.dtype)
    out = args.out or str(dispatch.shipped_path(gpu))
    start = time.monotonic()
    deadline = start + args.budget
    log(f"{gpu}: {len(shapes)} shapes x {len(ms)} token counts x {schemes}, {args.dtype}; budget {args.budget:.0f} s")
    entries: list[dict] = []
    skipped = []
    for i, (n, k) in enumerate(shapes):
        if time.monotonic() > deadline:
            skipped.append(f"{n}x{k}")
            log(f"[{i + 1}/{len(shapes)}] {n}x{k}: skipped, the budget is spent")
            continue
        t0 = time.monotonic()
        log(f"[{i + 1}/{len(shapes)}] {n}x{k} ({time.monotonic() - start:.0f} s so far)")
        try:
            with dispatch_measure.cold_l2() if args.cold else contextlib.nullcontext():
                entries += dispatch_measure.measure_shape(schemes, dtype, n, k, ms, "cuda", log, deadline)
        except Exception as e:  # noqa: BLE001 - one shape's failure leaves the others' rows
            log(f"  {n}x{k} failed: {type(e).__name__}: {str(e)[:200]}")
            skipped.append(f"{n}x{k} (failed)")
        log(f"  {n}x{k} done in {time.monotonic() - t0:.0f} s")
    doc = {"gpu": gpu, "built": datetime.date.today().isoformat(), "torch": torch.__version__,
           "sparsecc": sparsecc.__version__, "how": "bench/dispatch_table.py" + (" --quick" if args.quick else "")
           + (" --cold" if args.cold else ""),
           "skipped": skipped, "entries": entries}
    if args.merge and os.path.exists(out):
        old = json.load(open(out))
        doc["entries"] = merged_entries(old["entries"], entries)
        doc["how"] = (f"{old.get('how', 'bench/dispatch_table.py')}; then {doc['how']} --merge of "
                      f"{','.join(schemes)} at M = {','.join(map(str, ms))} on {len(shapes)} shapes")
    dispatch.parse_entries(doc)  # what the dispatcher reads back
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    log(f"wrote {out}: {len(entries)} entries in {time.monotonic() - start:.0f} s"
        + (f"; skipped {', '.join(skipped)}" if skipped else ""))
    dispatch._VERSION[0] += 1
    return check(dispatch.safe_name(gpu)) if not args.out else 0


if __name__ == "__main__":
    sys.exit(main())
