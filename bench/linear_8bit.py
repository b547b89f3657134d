"""The 8-bit (fp8 e4m3 / int8) SparseLinear forward before and after the fused path, same run:
`y = act(quantize(x) @ W.T * scales + bias)` on Llama shapes, CUDA graphs (do_bench_cudagraph
medians, ms), against dense fp16 `F.linear`.

- before: `quantize_rows` (torch, 6-8 kernels), `sparse_mm(W, xq.T)` into an out x tokens bf16
  buffer with both scales, then `.t().to(x.dtype)`, the bias, the reshape (the forward as it was);
- before+compile: the same under `torch.compile` (inductor fuses the quantization's torch ops);
- after: `SparseLinear.forward` now: `quantize_rows_fused` (one launch) and
  `scaled_sparse_linear_kernel` (scales, bias, activation in the epilogue, y written directly);
- quant before / after: the quantization alone.

Every path is checked against the float64 reference before it is timed.

    python bench/linear_8bit.py [--dtype fp8|int8] [--m 1,16,128] [--shapes 4096x4096,...] [--no-compile]
"""

from __future__ import annotations

import argparse
import os
import sys

import torch
import torch.nn.functional as F
import triton.testing

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import sparsecc  # noqa: E402
from sparsecc.nn import SparseLinear  # noqa: E402
from sparsecc.nn.quantize import quantize_rows  # noqa: E402
from sparsecc.ops.quantize_rows import quantize_rows_fused  # noqa: E402
from sparsecc.ops.sparse_linear_8bit import reference_linear_8bit  # noqa: E402

SHAPES = [(4096, 4096), (14336, 4096), (4096, 14336), (28672, 8192)]  # N x K: out x in
MS = [1, 4, 16, 64, 128, 512, 2048, 4096]


def _time(fn) -> float:
    fn()
    torch.cuda.synchronize()
    return triton.testing.do_bench_cudagraph(fn, rep=100, return_mode="median")


def _before(layer: SparseLinear, x: torch.Tensor) -> torch.Tensor:
    """SparseLinear's 8-bit forward before this change."""
    xq, x_scale = quantize_rows(x.reshape(-1, layer.in_features), layer.weight_dtype)
    y = torch.ops.sparsecc.sparse_mm(layer.values, layer.meta, layer.in_features, xq.t(), layer.weight_scale, x_scale)
    y = y.t().to(x.dtype)
    if layer.bias is not None:
        y = y + layer.bias
    return y.reshape(*x.shape[:-1], layer.out_features)


def main(argv: list[str]) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dtype", choices=("fp8", "int8"), default="fp8")
    ap.add_argument("--m", default=",".join(map(str, MS)), help="token counts")
    ap.add_argument("--shapes", default=",".join(f"{n}x{k}" for n, k in SHAPES), help="NxK weights (out x in)")
    ap.add_argument("--no-compile", action="store_true", help="skip the torch.compile'd old path")
    args = ap.parse_args(argv)
    if not torch.cuda.is_available():
        sys.exit("bench/linear_8bit.py needs a CUDA GPU (fp8 tensor cores: sm_89 or newer)")
    wdt = torch.float8_e4m3fn if args.dtype == "fp8" else torch.int8
    shapes = [tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",")]
    ms = [int(v) for v in args.m.split(",")]
    print(f"# 8-bit SparseLinear ({args.dtype}), {torch.cuda.get_device_name()}, ms (CUDA graphs)\n")
    print("| N x K | M | dense F.linear | before | before+compile | after | after vs dense | after vs before "
          "| quant before | quant after |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    with torch.no_grad():
        for n, k in shapes:
            torch.manual_seed(0)
            linear = torch.nn.Linear(k, n, device="cuda", dtype=torch.float16)
            layer = SparseLinear.from_linear(linear, weight_dtype=wdt)
            layer.dispatch = "sparse"
            dense_w = sparsecc.prune_2to4(linear.weight)
            compiled = None if args.no_compile else torch.compile(lambda x, layer=layer: _before(layer, x))
            for m in ms:
                print(_row(layer, linear.bias, dense_w, compiled, torch.randn(m, k, device="cuda",
                                                                         dtype=torch.float16), wdt), flush=True)


def _row(layer: SparseLinear, bias: torch.Tensor, dense_w: torch.Tensor, compiled, x: torch.Tensor,  # noqa: ANN001
         wdt: torch.dtype) -> str:
    """One table row: every path checked against the float64 reference, then timed."""
    (m, k), n = x.shape, layer.out_features
    ref = reference_linear_8bit(x, layer.weight(), layer.weight_scale, layer.bias).float()
    tol = 2e-2 * max(ref.abs().max().item(), 1.0)
    for name, fn in (("before", lambda: _before(layer, x)), ("after", lambda: layer(x))):
        err = (fn().float() - ref).abs().max().item()
        assert err <= tol, f"{name} {n}x{k} M={m}: max |diff| {err} > {tol}"
    t = {"dense": _time(lambda: F.linear(x, dense_w, bias)), "before": _time(lambda: _before(layer, x)),
         "after": _time(lambda: layer(x)), "qb": _time(lambda: quantize_rows(x, wdt)),
         "qa": _time(lambda: quantize_rows_fused(x, wdt)),
         "compiled": _time(lambda: compiled(x)) if compiled is not None else float("nan")}
    return (f"| {n}x{k} | {m} | {t['dense']:.4f} | {t['before']:.4f} | {t['compiled']:.4f} | {t['after']:.4f} | "
            f"{t['dense'] / t['after']:.2f}x | {t['before'] / t['after']:.2f}x | {t['qb']:.4f} | {t['qa']:.4f} |")


if __name__ == "__main__":
    main(sys.argv[1:])
