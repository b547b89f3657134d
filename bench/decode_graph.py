"""One decoder layer's GEMMs at batch 1 (and 16), back to back in one CUDA graph, per scheme:
what a decode step's GEMMs cost where a model runs them, without the launch and event overheads
that a single kernel's do_bench carries (~8 us each at these sizes).

The Llama-2-7B layer of `llama_e2e.py` (`--fuse on`): q/k/v 12288x4096, o 4096x4096,
gate/up 22016x4096, down 4096x11008, plus the 32000x4096 lm_head, as `SparseLinear` layers
(sparsify_'s dispatch) or as nn.Linear (dense). Prints µs for the five GEMMs, the bytes they
stream and the rate, beside `stream_probe.py`'s rate for a walk with no math (2.66 TB/s in a
graph, NOTES stop 28).

    python bench/decode_graph.py [--schemes dense,nv24,w4g128,w8g128,fp8] [--m 1,16]
    python bench/decode_graph.py --sweep nv24 [--m 1]   # tiles of each shape, timed in a graph
    python bench/decode_graph.py --schemes w4g128 --variant off:SPARSECC_SCALE_AFTER_DOT=0+SPARSECC_NARROW_COPIES=0

`--variant NAME:ENV=V+ENV=V` (repeatable) times each scheme's GEMMs again with those compiler
switches set (`sparsecc.switches`), in the same run, as rows `scheme/NAME`.

`--per-shape nv24,w4g128`: per shape (the five and three larger Llama ones), F.linear and each
scheme's dispatched GEMM, timed as `--sweep` times a tile: the speed-up a layer of that shape
gets inside a model's graph.

`--sweep SCHEME`: per shape, each tile of `SWEEP[SCHEME]` (and the one the dispatcher picks)
timed as distinct weights of that shape back to back in one graph (enough copies to stream
150 MB, so none sits in L2): the per-GEMM time a model sees, split-K's ticket memset included.
"""

from __future__ import annotations

import argparse
import math

import torch
import triton.testing
from torch import nn

import sparsecc
from bench.quant_prefill import switched
from sparsecc.nn import sparsify_
from sparsecc.ops import dispatch
from sparsecc.ops.linear_config import LinearConfig
from sparsecc.ops.sparse_linear import launch_linear, sparse_linear

SHAPES = ((12288, 4096), (4096, 4096), (22016, 4096), (4096, 11008), (32000, 4096))


SWEEP = {
    "nv24": [(16, 64, 256, 4, 3), (16, 64, 256, 4, 2), (16, 64, 128, 4, 4), (16, 32, 256, 4, 4),
             (16, 32, 512, 4, 3), (16, 128, 256, 4, 2), (16, 128, 128, 4, 3), (16, 64, 512, 4, 2),
             (8, 64, 256, 4, 3), (16, 32, 512, 4, 3, 2), (16, 64, 256, 4, 3, 2), (16, 32, 1024, 4, 3)],
    "w4g128": [(8, 64, 512, 4, 2), (8, 64, 256, 4, 3), (8, 32, 512, 4, 2), (8, 32, 256, 4, 3),
               (8, 128, 256, 4, 3), (8, 128, 256, 4, 2), (8, 64, 512, 4, 3), (8, 32, 1024, 4, 2),
               (8, 64, 256, 4, 3, 2), (8, 64, 256, 4, 3, 4), (8, 32, 512, 4, 2, 2), (8, 32, 256, 4, 3, 2),
               (8, 32, 512, 4, 2, 4), (8, 64, 512, 4, 2, 2), (8, 32, 1024, 4, 2, 2), (8, 32, 256, 4, 3, 8),
               (8, 64, 512, 4, 4)],
    # twice the warps an SM: 8 warps a CTA over 128 or 256 weight rows (16 rows a warp at least)
    "w4g128-w8": [(8, 128, 512, 8, 2), (8, 128, 256, 8, 3), (8, 128, 256, 8, 4), (8, 256, 256, 8, 2),
                  (8, 128, 512, 8, 3), (8, 128, 256, 8, 3, 2), (8, 128, 512, 8, 2, 2)],
    # the dispatched tiles with at most 128 registers a thread (a 7th entry: maxnreg), so that 4
    # CTAs of 4 warps share an SM where shared memory allows (168 registers: 3)
    "w4g128-r128": [(8, 64, 512, 4, 2, 1, 128), (8, 32, 1024, 4, 2, 1, 128), (8, 128, 256, 4, 3, 1, 128),
                    (8, 64, 256, 4, 3, 4, 128), (8, 64, 256, 4, 3, 2, 128), (8, 64, 512, 4, 3, 1, 128),
                    (8, 64, 256, 4, 2, 4, 128), (8, 128, 256, 4, 2, 1, 128)],
}
SWEEP["w8g128"] = SWEEP["w4g128"]


def distinct_weights(one: torch.Tensor, scheme: str) -> tuple[list, int]:
    """`one` compressed as `scheme` ("nv24" or a quantization) as many times as stream 150 MB
    (at least twice), so that back to back in a graph none is read from L2; and one copy's bytes."""
    def make() -> object:
        return sparsecc.compress(one) if scheme == "nv24" else sparsecc.compress(one, quant=scheme)

    w0 = make()
    nbytes = sum(t.numel() * t.element_size() for t in (w0.values, w0.meta, getattr(w0, "scales", None))
                 if t is not None)
    return [w0] + [make() for _ in range(max(2, math.ceil(150e6 / nbytes)) - 1)], nbytes


def sweep(scheme: str, m: int, only: set[int] | None = None, warm: bool = False,
          shapes: tuple[tuple[int, int], ...] = SHAPES) -> None:
    """Per shape of `SHAPES`, each tile of `SWEEP[scheme]` timed in a graph (module docstring);
    `only`: those tiles (indices), `warm`: compile and check them, no timing (so that parallel
    warm-up processes fill the kernel cache before one timing process runs)."""
    quant = scheme.partition("-")[0]  # "w4g128-w8": w4g128's weights, another tile list
    for n, k in shapes:
        one = sparsecc.prune_2to4(torch.randn(n, k, device="cuda", dtype=torch.float16))
        ws, nbytes = distinct_weights(one, quant)
        w0, copies = ws[0], len(ws)
        x = torch.randn(m, k, device="cuda", dtype=torch.float16)
        y = torch.empty(m, n, device="cuda", dtype=torch.float16)
        ref = sparse_linear(x, w0)
        chosen = dispatch.table_config(m, n, k, torch.float16, dispatch.scheme_of(w0), x.device)
        line = []
        tiles = [t for i, t in enumerate(SWEEP[scheme]) if only is None or i in only]
        for tile in ([] if warm else [None]) + tiles:
            if tile is None:  # the dispatcher's path
                def step(ws=ws, x=x) -> None:
                    for w in ws:
                        sparse_linear(x, w)
                name = f"dispatched {chosen}"
            else:
                cfg = LinearConfig(*tile[:5], split_k=tile[5] if len(tile) > 5 else 1,
                                   maxnreg=tile[6] if len(tile) > 6 else None)
                try:
                    y.fill_(float("nan"))
                    launch_linear(y, x, w0, y, cfg, has_bias=False, activation="none")
                    torch.testing.assert_close(y, ref, rtol=2e-2, atol=2e-2)
                except Exception as e:  # noqa: BLE001 - a tile that does not fit this shape: said, skipped
                    print(f"{n}x{k} M={m} {tile}: skipped ({type(e).__name__}: {str(e)[:120]})", flush=True)
                    continue

                def step(ws=ws, cfg=cfg, x=x, y=y) -> None:
                    for w in ws:
                        launch_linear(y, x, w, y, cfg, has_bias=False, activation="none")
                name = ("x".join(map(str, tile[:3])) + f"w{tile[3]}s{tile[4]}" + (f"k{tile[5]}" if len(tile) > 5 else "")
                        + (f"r{tile[6]}" if len(tile) > 6 else ""))
            step()
            if warm:
                continue
            us = triton.testing.do_bench_cudagraph(step, rep=100) * 1e3 / copies
            line.append((us, name))
            print(f"{scheme} {n}x{k} M={m} {name:28}: {us:6.1f} us a GEMM, {nbytes / us / 1e6:.2f} TB/s", flush=True)
        if warm:
            continue
        best = min(line)
        print(f"BEST {scheme} {n}x{k} M={m}: {best[1]} {best[0]:.1f} us (dispatched {line[0][0]:.1f} us)", flush=True)
        del ws
        torch.cuda.empty_cache()


PER_SHAPE = SHAPES + ((28672, 8192), (14336, 4096), (8192, 8192))


def per_shape(schemes: list[str], m: int) -> None:
    """Per weight shape, F.linear and each scheme's dispatched `sparse_linear`, each timed as
    distinct weights of that shape back to back in one graph (enough copies to stream 150 MB,
    so none sits in L2): a GEMM's time inside a model's step, without the ~6 us a lone kernel's
    ramp and tail add (`stream_probe.py`). Prints a markdown row a shape: µs a GEMM and the
    speed-up over F.linear."""
    print("| N x K | M | F.linear µs | " + " | ".join(f"{s} µs | {s} × dense" for s in schemes) + " |")
    print("|---|---|---|" + "---|---|" * len(schemes))
    for n, k in PER_SHAPE:
        one = sparsecc.prune_2to4(torch.randn(n, k, device="cuda", dtype=torch.float16))
        x = torch.randn(m, k, device="cuda", dtype=torch.float16)
        copies = max(2, math.ceil(150e6 / (one.numel() * 2)))
        dense_ws = [one.clone() for _ in range(copies)]

        def dense_step(ws=dense_ws, x=x) -> None:
            for w in ws:
                torch.nn.functional.linear(x, w)

        dense_step()
        dense_us = triton.testing.do_bench_cudagraph(dense_step, rep=100) * 1e3 / copies
        del dense_ws
        cells = []
        for scheme in schemes:
            ws, _ = distinct_weights(one, scheme)
            w0, count = ws[0], len(ws)
            ref = torch.nn.functional.linear(x.float(), w0.to_dense().float())
            err = (sparse_linear(x, w0).float() - ref).abs().max().item()
            assert err <= 1e-2 * ref.abs().max().item(), f"{scheme} {n}x{k}: max |error| {err}"

            def step(ws=ws, x=x) -> None:
                for w in ws:
                    sparse_linear(x, w)

            step()
            us = triton.testing.do_bench_cudagraph(step, rep=100) * 1e3 / count
            cells.append(f"{us:.1f} | {dense_us / us:.2f}x")
            del ws
        torch.cuda.empty_cache()
        print(f"| {n}x{k} | {m} | {dense_us:.1f} | " + " | ".join(cells) + " |", flush=True)


def layers(scheme: str) -> nn.ModuleList:
    """The five Linear layers of `SHAPES`, 2:4-pruned, held as `scheme` holds them."""
    mods = nn.ModuleList(nn.Linear(k, n, bias=False, device="cuda", dtype=torch.float16) for n, k in SHAPES)
    with torch.no_grad():
        for m in mods:
            m.weight.copy_(sparsecc.prune_2to4(m.weight))
    if scheme == "nv24":
        sparsify_(mods, prune=False)
    elif scheme == "fp8":
        sparsify_(mods, prune=False, weight_dtype=torch.float8_e4m3fn)
    elif scheme != "dense":
        sparsify_(mods, prune=False, quant=scheme)
    return mods


def streamed_bytes(mods: nn.ModuleList) -> int:
    """The bytes of every parameter and buffer the layers hold (what a decode step reads)."""
    return sum(t.numel() * t.element_size() for t in [*mods.parameters(), *mods.buffers()])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--schemes", default="dense,nv24,w4g128,w8g128,fp8")
    p.add_argument("--m", default="1,16")
    p.add_argument("--sweep", default=None, choices=sorted(SWEEP), help="time tiles per shape (see above)")
    p.add_argument("--tiles", default=None, help="with --sweep: indices into its tile list (default all)")
    p.add_argument("--shapes", default=None, metavar="NxK,...",
                   help="with --sweep: these weight shapes instead of the layer's five")
    p.add_argument("--warm", action="store_true", help="with --sweep: compile and check only")
    p.add_argument("--variant", action="append", default=[], help="NAME:ENV=V+ENV=V, switches to time too")
    p.add_argument("--per-shape", default=None, metavar="SCHEMES",
                   help="each shape's GEMM alone against F.linear, as `--sweep` times a tile (see per_shape)")
    args = p.parse_args()
    if args.per_shape:
        for m in (int(v) for v in args.m.split(",")):
            per_shape(args.per_shape.split(","), m)
        return
    variants = [("", {})] + [(name, dict(kv.split("=", 1) for kv in spec.split("+") if kv))
                             for name, spec in (v.split(":", 1) for v in args.variant)]
    if args.sweep:
        only = {int(i) for i in args.tiles.split(",")} if args.tiles else None
        shapes = (tuple(tuple(int(v) for v in s.split("x")) for s in args.shapes.split(","))
                  if args.shapes else SHAPES)
        for m in (int(v) for v in args.m.split(",")):
            sweep(args.sweep, m, only, args.warm, shapes)
        return
    rows = []
    for scheme in args.schemes.split(","):
        mods = layers(scheme)
        nbytes = streamed_bytes(mods)
        for m in (int(v) for v in args.m.split(",")):
            xs = [torch.randn(m, k, device="cuda", dtype=torch.float16) for _, k in SHAPES]

            def step(mods=mods, xs=xs) -> None:
                for mod, x in zip(mods, xs):
                    mod(x)

            for name, env in variants if scheme != "dense" else variants[:1]:
                with switched(env):
                    for _ in range(2):
                        step()
                    us = triton.testing.do_bench_cudagraph(step, rep=200) * 1e3
                label = f"{scheme}/{name}" if name else scheme
                rows.append((label, m, us, nbytes))
                print(f"{label:7} M={m:3d}: {us:7.1f} us for the five GEMMs, {nbytes / 1e6:6.1f} MB, "
                      f"{nbytes / us / 1e6:.2f} TB/s", flush=True)
        del mods
        torch.cuda.empty_cache()
    print("| scheme | M | µs (5 GEMMs, one graph) | MB | TB/s | × dense |")
    print("|---|---|---|---|---|---|")
    dense = {m: us for s, m, us, _ in rows if s == "dense"}
    for s, m, us, nb in rows:
        ratio = f"{dense[m] / us:.2f}×" if m in dense else "—"
        print(f"| {s} | {m} | {us:.1f} | {nb / 1e6:.1f} | {nb / us / 1e6:.2f} | {ratio} |")


if __name__ == "__main__":
    main()
