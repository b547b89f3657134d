"""Quantized 2:4 weights at prefill on Hopper: the register-A wgmma kernel (`quant_wgmma`) against
the mma.sp kernel of the same weight, the dispatcher's other paths and dense `F.linear`, same run.

For each Llama layer shape N x K, scheme and token count M it times `y = x @ W.T` (CUDA graphs,
do_bench_cudagraph medians):

    dense      F.linear with the dense fp16 weight
    fp16 2:4   the 16-bit 2:4 kernel (sparse_linear of the pruned fp16 weight)
    sparse16   the quantized weight's kept values dequantized, then the 16-bit kernel
    mma.sp     the quantized kernel at the 16-bit kernel's default tile (BLOCK_K fitted), as before
    wgmma      quant_wgmma tiles: quantized_prefill_config and the other candidates
               (`dispatch_measure`), as launched (`quant_wgmma_options`) and, as
               "overlap", in the QUANT_WGMMA_RING form (mbarrier ring, loop unrolled by two);
               with `--ring`, also as "ring": that form with SPARSECC_WGMMA_RING_IN_FLIGHT=1 (the convert barrier of bf16 weights keeps the
               last wgmma group running; fp16 kernels compile to the same PTX either way)

    python bench/quant_prefill.py [--m 256,512,2048,8192] [--schemes w4g128,w8g128] [--dtype bf16]
                                  [--ring] [--variant LABEL:SPARSECC_X=1+SPARSECC_Y=0 ...] [NxK ...]

`--variant` times each wgmma tile once more with those switches set in the environment.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator

import torch
import torch.nn.functional as F
import triton.testing

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import sparsecc  # noqa: E402
from sparsecc.frontend.jit import drop_fast_paths  # noqa: E402
from sparsecc.ops.sparse_linear import (  # noqa: E402
    LinearConfig,
    default_linear_config,
    launch_linear,
    quantized_linear_config,
    quantized_prefill_config,
    sparse_linear,
)

SHAPES = [(4096, 4096), (11008, 4096), (4096, 11008), (14336, 4096), (28672, 8192)]
WGMMA_TILES = [(128, 128, 128, 8, 4), (64, 256, 128, 8, 3)]
"""Besides quantized_prefill_config's tile."""


@contextlib.contextmanager
def switched(env: dict[str, str]) -> Iterator[None]:
    """quant_wgmma launches with the switches `env` names set (the environment wins over
    QUANT_WGMMA_OPTIONS). A kernel's launch fast path keeps the kernel its first launch compiled
    whatever the environment says later, so the fast paths are dropped on the way in and out
    (`drop_fast_paths`): each launch then takes the full path once, which reads the switches."""
    old = {v: os.environ.get(v) for v in env}
    os.environ.update(env)
    drop_fast_paths()
    try:
        yield
    finally:
        for v, value in old.items():
            if value is None:
                os.environ.pop(v, None)
            else:
                os.environ[v] = value
        drop_fast_paths()


def graph_us(fn) -> float:
    fn()
    torch.cuda.synchronize()
    return triton.testing.do_bench_cudagraph(fn, rep=100, return_mode="median") * 1e3


OVERLAP = {"SPARSECC_MBARRIERS": "1", "SPARSECC_WGMMA_UNROLL": "1", "SPARSECC_WGMMA_IN_FLIGHT": "0"}
"""QUANT_WGMMA_RING through the environment."""
RING = {**OVERLAP, "SPARSECC_WGMMA_RING_IN_FLIGHT": "1"}


def row(m: int, n: int, k: int, scheme: str, dtype: torch.dtype = torch.float16,
        ring: bool = False, variants: dict[str, dict[str, str]] | None = None) -> tuple[list[str], dict[str, float]]:
    torch.manual_seed(0)
    w16 = sparsecc.prune_2to4(torch.randn(n, k, device="cuda", dtype=dtype) * 0.02)
    ws = sparsecc.compress(w16)
    wq = sparsecc.compress(w16, quant=scheme)
    dense = wq.to_dense()
    x = torch.randn(m, k, device="cuda", dtype=dtype)
    y = torch.empty(m, n, device="cuda", dtype=dtype)
    want = F.linear(x.float(), dense.float())
    times: dict[str, float] = {"dense": graph_us(lambda: F.linear(x, dense)),
                               "fp16 2:4": graph_us(lambda: sparse_linear(x, ws, dispatch="sparse")),
                               "sparse16": graph_us(lambda: sparse_linear(x, wq, dispatch="sparse16"))}
    old = quantized_linear_config(default_linear_config(m, n, k), wq)
    times["mma.sp"] = graph_us(lambda: launch_linear(y, x, wq, y, old, False, "none"))
    tiles = [quantized_prefill_config(m, n, k)] + [LinearConfig(*t, quant_wgmma=True) for t in WGMMA_TILES]
    for cfg in tiles:
        cfg = quantized_linear_config(cfg, wq)
        name = f"wgmma {cfg.block_m}x{cfg.block_n}x{cfg.block_k}s{cfg.num_stages}"
        try:
            times[name] = graph_us(lambda cfg=cfg: launch_linear(y, x, wq, y, cfg, False, "none"))
            err = (y.float() - want).abs().max().item() / want.abs().max().item()
            if err > 2e-2:
                print(f"  !! {name}: relative error {err:.3g}", flush=True)
            with switched(OVERLAP):
                times[name + " overlap"] = graph_us(lambda cfg=cfg: launch_linear(y, x, wq, y, cfg, False, "none"))
            for label, env in (variants or {}).items():
                with switched(env):
                    times[f"{name} {label}"] = graph_us(lambda cfg=cfg: launch_linear(y, x, wq, y, cfg, False, "none"))
                    err = (y.float() - want).abs().max().item() / want.abs().max().item()
                    if err > 2e-2:
                        print(f"  !! {name} {label}: relative error {err:.3g}", flush=True)
            if ring:
                with switched(RING):
                    times[name + " ring"] = graph_us(lambda cfg=cfg: launch_linear(y, x, wq, y, cfg, False, "none"))
                    err = (y.float() - want).abs().max().item() / want.abs().max().item()
                    if err > 2e-2:
                        print(f"  !! {name} ring: relative error {err:.3g}", flush=True)
        except Exception as e:  # noqa: BLE001 - a tile that does not fit is reported, the rest go on
            print(f"  {name}: {type(e).__name__}: {str(e).splitlines()[0][:160]}", flush=True)
    return list(times), times


def main(argv: list[str]) -> int:
    if "-h" in argv or "--help" in argv:
        print(__doc__)
        return 0
    if not torch.cuda.is_available():
        print("bench/quant_prefill.py times CUDA kernels: it needs a GPU", file=sys.stderr)
        return 2
    ms = [256, 512, 2048, 8192]
    schemes = ["w4g128", "w8g128"]
    if "--m" in argv:
        ms = [int(v) for v in argv[argv.index("--m") + 1].split(",")]
    if "--schemes" in argv:
        schemes = argv[argv.index("--schemes") + 1].split(",")
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}[argv[argv.index("--dtype") + 1]] \
        if "--dtype" in argv else torch.float16
    ring = "--ring" in argv
    variants = {}
    for i, a in enumerate(argv):
        if a == "--variant":  # label:SPARSECC_X=1+SPARSECC_Y=0
            label, _, pairs = argv[i + 1].partition(":")
            variants[label] = dict(p.split("=", 1) for p in pairs.split("+"))
    shapes = [tuple(int(v) for v in a.split("x")) for a in argv
              if "x" in a and a[0].isdigit() and "," not in a and ":" not in a] or SHAPES
    print(f"# {torch.cuda.get_device_name()}, {dtype}: microseconds (speed-up over dense)\n")
    for scheme in schemes:
        head: list[str] | None = None
        for n, k in shapes:
            for m in ms:
                names, t = row(m, n, k, scheme, dtype, ring, variants)
                if head is None:
                    head = names
                    print(f"\n## {scheme}\n\n| M | N×K | " + " | ".join(head) + " |")
                    print("|---" * (len(head) + 2) + "|")
                cells = [f"{t[c]:.1f} ({t['dense'] / t[c]:.2f}x)" if c in t else "-" for c in head]
                print(f"| {m} | {n}x{k} | " + " | ".join(cells) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
