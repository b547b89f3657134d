"""Ragged token counts: a layer on m tokens against the same layer on the rows padded to whole
128-token tiles, same run, cold L2.

A kernel whose last token tile is ragged ran slower on the H100 than the same tiles whole with
more rows (8-bit layers: persistent kernels 20-35%, data-parallel ones up to 18%; NOTES stops 37
and 38), so `sparse_linear_8bit` pads the token rows of its persistent and 128-token tiles
(`padded_tokens`). This script measures that for each scheme, so that the rule can follow the
data to the other kernels:

    ragged    the dispatched layer on m tokens (for the 8-bit schemes, as shipped: padded where
              `padded_tokens` says)
    unpadded  8-bit only: the same with `padded_tokens` switched off (every row count as given)
    padded    the dispatched layer on the rows rounded up to a multiple of 128 (its first m
              rows are the same outputs)

Schemes: nv24 (fp16 2:4), w4g128 / w8g128 (quantized 2:4, fp16 tokens), fp8 / int8 (8-bit 2:4,
bf16 tokens). Each result is checked against the reference on the same weight before it is
timed. `--dry-run` (no GPU) prints each case's 8-bit config and padded rows.

    python bench/ragged_tokens.py [--schemes nv24,w4g128,fp8] [--ms 300,448] [NxK ...]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable, Iterator

if __package__ in (None, ""):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import torch  # noqa: E402

import sparsecc  # noqa: E402
import sparsecc.ops.sparse_linear_8bit as linear_8bit  # noqa: E402
from sparsecc.nn.quantize import quantize_rows  # noqa: E402
from sparsecc.ops.sparse_linear import reference_linear, sparse_linear  # noqa: E402

SHAPES = ["4096x14336", "32000x4096", "28672x8192", "13824x5120", "12288x4096"]
SCHEMES = "nv24,w4g128,w8g128,fp8,int8"
EIGHT_BIT = {"fp8": torch.float8_e4m3fn, "int8": torch.int8}


def padded(m: int, tile: int = 128) -> int:
    """m rounded up to whole `tile`-row token tiles.

        >>> padded(300), padded(384), padded(1)
        (384, 384, 128)
    """
    return -(-m // tile) * tile


@contextlib.contextmanager
def no_padding() -> Iterator[None]:
    """Within it, `sparse_linear_8bit` runs every token count as given (`padded_tokens` off)."""
    saved = linear_8bit.padded_tokens
    linear_8bit.padded_tokens = lambda m, cfg, hopper=True: m
    try:
        yield
    finally:
        linear_8bit.padded_tokens = saved


def layer(scheme: str, n: int, k: int, device: str) -> tuple[Callable[[torch.Tensor], torch.Tensor],
                                                              Callable[[torch.Tensor], torch.Tensor], torch.dtype]:
    """(the dispatched layer, its reference, the tokens' dtype) of a random 2:4 weight n x k."""
    g = torch.Generator(device=device).manual_seed(n + k)
    dense = sparsecc.prune_2to4(torch.randn(n, k, device=device, generator=g) * 0.05)
    if scheme in EIGHT_BIT:
        q, sw = quantize_rows(dense, EIGHT_BIT[scheme])
        w = sparsecc.compress(q)
        return (lambda x: linear_8bit.sparse_linear_8bit(x, w, sw),
                lambda x: linear_8bit.reference_linear_8bit(x, w, sw), torch.bfloat16)
    w = sparsecc.compress(dense.half()) if scheme == "nv24" else sparsecc.compress(dense.half(), quant=scheme)
    return (lambda x: sparse_linear(x, w)), (lambda x: reference_linear(x, w)), torch.float16


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("shapes", nargs="*", default=SHAPES)
    ap.add_argument("--schemes", default=SCHEMES)
    ap.add_argument("--ms", default="300,448")
    ap.add_argument("--dry-run", action="store_true", help="no GPU: the 8-bit configs and padded rows")
    a = ap.parse_args()
    schemes = a.schemes.split(",")
    ms = [int(v) for v in a.ms.split(",")]
    if a.dry_run:
        for shape in a.shapes:
            n, k = (int(v) for v in shape.split("x"))
            for m in ms:
                cfg = linear_8bit.default_config_linear_8bit(m, n, k)
                print(f"{n}x{k} M={m}: 8-bit {cfg} -> rows {linear_8bit.padded_tokens(m, cfg)}; padded case {padded(m)}")
        return 0
    if not torch.cuda.is_available():
        print("ragged_tokens.py needs a GPU (--dry-run prints the plan without one)", file=sys.stderr)
        return 2
    from sparsecc.ops.dispatch_measure import cold_l2, time_us

    print("| scheme | N x K | M | ragged µs | unpadded µs | padded µs (rows) | ragged / padded |")
    print("|---|---|---|---|---|---|---|")
    with cold_l2():
        warm = torch.randn(4096, 4096, device="cuda", dtype=torch.float16)
        time_us(lambda: warm @ warm, target_us=200000.0)  # clocks up first: a process's first timings ran 8-13% slow
        for shape in a.shapes:
            n, k = (int(v) for v in shape.split("x"))
            for scheme in schemes:
                fn, ref_fn, dtype = layer(scheme, n, k, "cuda")
                for m in ms:
                    x = torch.randn(padded(m), k, device="cuda", dtype=dtype)
                    ref = ref_fn(x[:m]).float()
                    err = (fn(x[:m]).float() - ref).abs().max().item()
                    assert err <= 2e-2 * max(ref.abs().max().item(), 1.0), f"{scheme} {shape} M={m}: error {err}"
                    ragged = time_us(lambda x=x, m=m, fn=fn: fn(x[:m]))
                    unpadded = float("nan")
                    if scheme in EIGHT_BIT:
                        with no_padding():
                            unpadded = time_us(lambda x=x, m=m, fn=fn: fn(x[:m]))
                    whole = time_us(lambda x=x, fn=fn: fn(x))
                    print(f"| {scheme} | {shape} | {m} | {ragged:.1f} | {unpadded:.1f} | {whole:.1f} ({x.shape[0]}) "
                          f"| {ragged / whole:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
