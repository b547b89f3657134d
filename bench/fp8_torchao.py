"""fp8 2:4 linear layers against torchao's CUTLASS sm90 fp8 2:4 kernel, same run (issue 26:
fp8 >= 1.0x torchao at every M).

For each weight N x K (out x in) and token count M, `y = x @ W.T` with W 2:4, fp8 e4m3 codes and
one fp32 scale per output row, x bf16 quantized per token to fp8 (both libraries' recipe), y bf16:

    dense        F.linear with the bf16 weight (the cuBLAS reference)
    ao gemm      torchao.ops.rowwise_scaled_linear_sparse_cutlass_f8f8 on pre-quantized x
    cc gemm      sparsecc's scaled_sparse_linear_kernel on the same pre-quantized x, its default
                 tile, and the best of `--tiles` (`launch_linear_8bit`)
    ao layer     torchao's layer as `quantize_` makes it (Float8DynamicActivationFloat8WeightConfig,
                 PerRow, the SPARSE_2D_DATA_2D_METADATA packing): its activation quantization
                 in torch ops, then the kernel
    cc layer     `sparse_linear_8bit`: the fused per-token quantization, then the kernel

The GEMM rows compare the two kernels alone; the layer rows what a model pays. Every path is
checked against the float64 product of the same codes before it is timed. Times are
`dispatch_measure.time_us` (CUDA graphs, medians), with a cold L2 under `--cold`.

    python bench/fp8_torchao.py [--m 1,16,64,128,512,4096] [--shapes 4096x4096,...] [--cold]
                                [--tiles 64x128x256w4s4,...] [--md out.md]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from typing import Any

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import sparsecc  # noqa: E402
from sparsecc.nn.quantize import quantize_rows  # noqa: E402
from sparsecc.ops import dispatch_measure  # noqa: E402
from sparsecc.ops.linear_config import LinearConfig  # noqa: E402
from sparsecc.ops.quantize_rows import quantize_rows_fused  # noqa: E402
from sparsecc.ops.sparse_linear_8bit import (  # noqa: E402
    default_config_linear_8bit,
    launch_linear_8bit,
    sparse_linear_8bit,
)

SHAPES = [(4096, 4096), (11008, 4096), (4096, 11008), (8192, 8192)]
MS = [1, 16, 64, 128, 512, 4096]
FP8_SUM = 2 ** -5
"""Relative bound of an fp8 GEMM against the float64 product of its codes: Hopper's fp8 wgmma
sums in less than fp32's precision (both kernels here err alike: 0.24 on a largest |y| of 29.4 at
4096 tokens x K 14336, where bf16's rounding alone allows 0.12)."""
TILES = "16x64x256w4s4,16x128x256w4s4,32x64x256w4s4,32x128x256w4s4,64x64x256w4s4,64x128x256w4s4," \
        "64x128x128w4s4,128x128x256w8s3,128x256x128w8s4,64x256x128w4s3"


def parse_tiles(spec: str) -> list[LinearConfig]:
    """'64x128x256w4s4,16x64x256w4s4k2,128x256x128w8s4sk,128x128x256w8s3c2' -> LinearConfigs (kS:
    K split over S programs; sk: the stream-K form; c2: CTA pairs multicasting the token tiles)."""
    out = []
    for t in filter(None, spec.split(",")):
        stream_k, pairs = t.endswith("sk"), t.endswith("c2")
        dims, _, rest = t.removesuffix("sk").removesuffix("c2").partition("w")
        warps, _, rest = rest.partition("s")
        stages, _, split = rest.partition("k")
        out.append(LinearConfig(*(int(v) for v in dims.split("x")), int(warps), int(stages), int(split or 1),
                                stream_k=stream_k, cta_pairs=pairs))
    return out


def tile_name(c: LinearConfig) -> str:
    split = f"k{c.split_k}" if c.split_k > 1 else ""
    return (f"{c.block_m}x{c.block_n}x{c.block_k}w{c.num_warps}s{c.num_stages}{split}{'sk' if c.stream_k else ''}"
            f"{'c2' if c.cta_pairs else ''}")


def torchao_ops() -> tuple[object, object] | str:
    """(the GEMM op, the weight packer), or why torchao cannot run here."""
    try:
        from torchao.ops import (
            rowwise_scaled_linear_sparse_cutlass_f8f8,
            to_sparse_semi_structured_cutlass_sm9x_f8,
        )
    except Exception as e:  # noqa: BLE001 - any import failure means no peer to compare
        return f"torchao not importable: {type(e).__name__}: {str(e)[:100]}"
    return rowwise_scaled_linear_sparse_cutlass_f8f8, to_sparse_semi_structured_cutlass_sm9x_f8


def torchao_layer(weight: torch.Tensor) -> torch.nn.Module | str:
    """An nn.Linear holding `weight` (bf16, 2:4) converted by torchao's quantize_ to its fp8 2:4
    weight with dynamic per-row fp8 activations."""
    try:
        from torchao.quantization import (
            Float8DynamicActivationFloat8WeightConfig,
            PerRow,
            quantize_,
        )
        from torchao.quantization.quantize_.workflows.float8.float8_packing_format import (
            Float8PackingFormat,
        )
        lin = torch.nn.Linear(weight.shape[1], weight.shape[0], bias=False, dtype=torch.bfloat16, device="cuda")
        lin.weight.data.copy_(weight)
        quantize_(lin, Float8DynamicActivationFloat8WeightConfig(
            granularity=PerRow(), packing_format=Float8PackingFormat.SPARSE_2D_DATA_2D_METADATA))
        return lin
    except Exception as e:  # noqa: BLE001 - the layer row is skipped with the reason
        return f"{type(e).__name__}: {str(e)[:100]}"


def check(name: str, got: torch.Tensor, want: torch.Tensor, rel: float = 2 ** -7) -> None:
    """`got` within `rel` of the float64 product's largest magnitude: bf16's one rounding for
    the GEMMs on the same codes; a layer that quantizes x itself may round x differently."""
    err = (got.double() - want).abs().max().item()
    bound = rel * want.abs().max().item() + 1e-3
    if not err <= bound:
        raise SystemExit(f"{name}: max |error| {err:.4g} over the bound {bound:.4g}")


def measure_shape(n: int, k: int, ms: list[int], tiles: list[LinearConfig], ao_gemm: Any, ao_pack: Any) -> list[str]:
    """The table rows of one N x K weight, one per token count."""
    g = torch.Generator(device="cuda").manual_seed(n * 7 + k)
    weight = sparsecc.prune_2to4(torch.randn(n, k, dtype=torch.bfloat16, device="cuda", generator=g) * 0.05)
    q, sw = quantize_rows(weight, torch.float8_e4m3fn)
    w8 = sparsecc.compress(q)
    ao_w, ao_meta = ao_pack(q)
    layer = torchao_layer(weight)
    exact_w = q.double() * sw.double()[:, None]
    timer = dispatch_measure.time_us
    rows = []
    for m in ms:
        x = torch.randn(m, k, dtype=torch.bfloat16, device="cuda", generator=g)
        xq, xs = quantize_rows_fused(x, torch.float8_e4m3fn)
        want = (xq.double() * xs.double()[:, None]) @ exact_w.T
        y = torch.empty(m, n, dtype=torch.bfloat16, device="cuda")
        row = {"dense": timer(lambda x=x: F.linear(x, weight))}
        check("torchao gemm", ao_gemm(xq, xs, ao_w, ao_meta, sw, None, torch.bfloat16), want, rel=FP8_SUM)
        row["ao gemm"] = timer(lambda xq=xq, xs=xs: ao_gemm(xq, xs, ao_w, ao_meta, sw, None, torch.bfloat16))
        default = default_config_linear_8bit(m, n, k)
        best: tuple[float, str] | None = None
        times: list[str] = []
        for cfg in [default, *tiles]:
            def run(cfg: LinearConfig = cfg, y: torch.Tensor = y, xq: torch.Tensor = xq, xs: torch.Tensor = xs) -> None:
                launch_linear_8bit(y, xq, xs, w8, sw, None, "none", cfg)
            try:
                y.fill_(float("nan"))
                run()
                check(f"sparsecc gemm {tile_name(cfg)}", y, want, rel=FP8_SUM)
                t = timer(run)
            except SystemExit:
                raise
            except Exception as e:  # noqa: BLE001 - a tile that does not compile is skipped, said
                print(f"  {n}x{k} M={m} {tile_name(cfg)}: {type(e).__name__}: {str(e)[:100]}", flush=True)
                continue
            times.append(f"{tile_name(cfg)}={t:.1f}")
            if cfg is default:
                row["cc default"] = t
            if best is None or t < best[0]:
                best = (t, tile_name(cfg) + (" (default)" if cfg == default else ""))
        row["cc best"], best_tile = best if best else (float("nan"), "-")
        print(f"  {n}x{k} M={m} ao {row['ao gemm']:.1f}: " + " ".join(times), flush=True)
        check("sparsecc layer", sparse_linear_8bit(x, w8, sw), want, rel=FP8_SUM)  # the same quantization
        row["cc layer"] = timer(lambda x=x: sparse_linear_8bit(x, w8, sw))
        note = ""
        if isinstance(layer, str):
            row["ao layer"], note = float("nan"), f" ({layer})"
        else:
            check("torchao layer", layer(x), want, rel=0.15)
            row["ao layer"] = timer(lambda x=x: layer(x))
        cells = [f"{row.get(c, float('nan')):.1f}" for c in ("dense", "ao gemm", "cc default", "cc best")]
        rows.append(f"| {n}x{k} | {m} | " + " | ".join(cells) + f" | {best_tile} | "
                    f"**{row['ao gemm'] / row['cc best']:.2f}x** | {row['ao layer']:.1f}{note} | "
                    f"{row['cc layer']:.1f} | **{row['ao layer'] / row['cc layer']:.2f}x** | "
                    f"{row['dense'] / row['cc layer']:.2f}x |")
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--m", default=",".join(map(str, MS)))
    ap.add_argument("--shapes", default=",".join(f"{n}x{k}" for n, k in SHAPES))
    ap.add_argument("--tiles", default=TILES, help="GEMM tiles tried beside the default, BMxBNxBKwWsS,...")
    ap.add_argument("--cold", action="store_true", help="a cold L2 before each call (dispatch_measure.cold_l2)")
    ap.add_argument("--budget", type=float, default=300.0, help="seconds after which no new shape starts")
    ap.add_argument("--md", default=None, help="also write the table here")
    args = ap.parse_args(argv)
    if not torch.cuda.is_available():
        ap.error("needs a CUDA GPU")
    ao = torchao_ops()
    if isinstance(ao, str):
        raise SystemExit(ao)
    ao_gemm, ao_pack = ao
    ms = [int(v) for v in args.m.split(",")]
    shapes = [tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",")]
    tiles = parse_tiles(args.tiles)
    start = time.monotonic()
    lines = [f"# fp8 2:4 linear vs torchao, {torch.cuda.get_device_name()} (us{', cold L2' if args.cold else ''})",
             "", "| N x K | M | dense | ao gemm | cc gemm default | cc gemm best | best tile | "
             "gemm cc/ao speed-up | ao layer | cc layer | layer cc/ao speed-up | cc layer vs dense |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    print("\n".join(lines), flush=True)
    with dispatch_measure.cold_l2() if args.cold else contextlib.nullcontext(), torch.no_grad():
        for n, k in shapes:
            if time.monotonic() - start > args.budget:
                lines.append(f"| {n}x{k} | skipped: the budget is spent |")
                print(lines[-1], flush=True)
                continue
            for line in measure_shape(n, k, ms, tiles, ao_gemm, ao_pack):
                lines.append(line)
                print(line, flush=True)
    if args.md:
        with open(args.md, "w") as f:
            f.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
