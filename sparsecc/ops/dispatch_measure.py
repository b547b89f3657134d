"""Measurements for the dispatcher's table (`bench/dispatch_table.py`, `sparsecc.ops.dispatch.tune`).

Each path is timed as the layer runs it: inside a CUDA graph (several calls per replay, median of
a few replays), on random 2:4 weights of the shape, per token count M:

    mm        F.linear with the dense 16-bit weight
    sparse16  the 16-bit 2:4 kernel (best of a few tile configs, split-K among them)
    sparse    the scheme's own kernel (best config; an 8-bit layer's forward, x quantized per token)

and per weight the cost of making its 16-bit kept values (`dequant_us`) and its dense weight
(`densify_us`), as the dispatcher makes them (`sparsecc.ops.densify.weight16`: one fused kernel).

    entries = measure_shape(["nv24", "w4g128"], torch.float16, 4096, 4096, [1, 16, 2048])
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import astuple, replace
from typing import Any

import torch

from sparsecc.ops.densify import weight16

__all__ = ["measure_entry", "measure_shape", "time_us"]


def time_us(fn: Callable[[], Any], target_us: float = 3000.0, reps: int = 7) -> float:
    """Microseconds per call of `fn` (CUDA): as many calls in one CUDA graph as fill about
    `target_us` (1 to 20), median of `reps` replays; eager calls where capture fails."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up (compiles; cuBLAS sets up its workspace) off the capture
        fn()
        fn()
    torch.cuda.current_stream().wait_stream(side)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    end.synchronize()
    first = start.elapsed_time(end) * 1e3
    calls = max(1, min(20, int(target_us / max(first, 1.0))))
    try:
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(calls):
                fn()
        run = graph.replay
    except RuntimeError:  # not capturable: time eager calls (launch costs included)
        graph = None

        def run() -> None:
            for _ in range(calls):
                fn()
    run()
    times = []
    for _ in range(reps):
        start.record()
        run()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3 / calls)
    del graph
    return statistics.median(times)


def _linear_candidates(m: int, n: int, k: int, w: Any) -> list[Any]:
    """Tile configs to time for the 2:4 linear kernel: the default pick first, then split-K
    variants at few tokens (more CTAs for long rows)."""
    from sparsecc.ops.sparse_linear import (
        default_linear_config,
        quantized_decode_config,
        quantized_linear_config,
    )
    from sparsecc.runtime.quant_tensor import QuantizedSparseTensor

    quantized = isinstance(w, QuantizedSparseTensor)
    base = default_linear_config(m, n, k)
    if quantized and m <= 64:
        base = quantized_decode_config(m, n, k)
    cands = [base]
    if m <= 128:
        cands += [replace(base, split_k=s) for s in (1, 2, 4) if s != base.split_k and k // s >= 1024]
    if quantized:
        cands = [quantized_linear_config(c, w) for c in cands]
    out: list[Any] = []
    for c in cands:
        if c not in out:
            out.append(c)
    return out


def _best_linear(x: torch.Tensor, w: Any, log: Callable[[str], None]) -> tuple[float | None, list[int] | None]:
    """(microseconds, config) of the fastest candidate config; config None when the default
    pick wins (so that a better default later applies)."""
    from sparsecc.ops.sparse_linear import sparse_linear

    m, k = x.shape
    cands = _linear_candidates(m, w.shape[0], k, w)
    best: tuple[float | None, list[int] | None] = (None, None)
    for i, cfg in enumerate(cands):
        try:
            t = time_us(lambda cfg=cfg: sparse_linear(x, w, config=cfg))
        except Exception as e:  # noqa: BLE001 - a config that fails is skipped, said in the log
            log(f"    config {cfg} failed: {type(e).__name__}: {str(e)[:120]}")
            continue
        if best[0] is None or t < best[0]:
            best = (t, None if i == 0 else list(astuple(cfg)))
    return best


def measure_shape(schemes: list[str], dtype: torch.dtype, n: int, k: int, ms: list[int],
                  device: torch.device | str = "cuda", log: Callable[[str], None] | None = None,
                  deadline: float | None = None) -> list[dict]:
    """Table entries (the JSON form `sparsecc.ops.dispatch.parse_entries` reads) for an N x K
    weight of each scheme ("nv24", "w4g128", "w8g128", "fp8", "int8", ...) at the token counts
    `ms`; F.linear and the 16-bit kernel are timed once and shared. Stops adding token counts
    once `deadline` (time.monotonic()) has passed."""
    import sparsecc
    from sparsecc.nn.linear import SparseLinear

    log = log or (lambda line: None)
    device = torch.device(device)
    gen = torch.Generator(device=device).manual_seed(n * 131 + k)
    weight = sparsecc.prune_2to4(torch.randn(n, k, dtype=dtype, device=device, generator=gen) * 0.05)
    s16 = sparsecc.compress(weight)
    name = str(dtype).removeprefix("torch.")
    kinds: dict[str, dict[str, Any]] = {}
    for scheme in schemes:
        entry: dict[str, Any] = {"scheme": scheme, "dtype": name, "n": n, "k": k, "m": {}}
        if scheme == "nv24":
            entry["dequant_us"] = None
            entry["densify_us"] = time_us(lambda: weight16(s16.values, s16.meta, None, None, None, 16, k, dtype, True))
            run = None
        elif scheme in ("fp8", "int8"):
            linear = torch.nn.Linear(k, n, bias=False, device=device, dtype=dtype)
            with torch.no_grad():
                linear.weight.copy_(weight)
            wd = torch.float8_e4m3fn if scheme == "fp8" else torch.int8
            layer = SparseLinear.from_linear(linear, prune=False, weight_dtype=wd)
            layer.dispatch = "sparse"  # its own kernel, whatever a table says
            for key, dense in (("dequant_us", False), ("densify_us", True)):
                entry[key] = time_us(lambda layer=layer, dense=dense: weight16(
                    layer.values, layer.meta, None, None, layer.weight_scale, 8, k, dtype, dense))
            run = ("layer", layer)
        else:
            q = sparsecc.compress(weight, quant=scheme)
            for key, dense in (("dequant_us", False), ("densify_us", True)):
                entry[key] = time_us(lambda q=q, dense=dense: weight16(
                    q.values, q.meta, q.scales, q.zeros, None, q.scheme.bits, k, dtype, dense))
            run = ("linear", q)
        kinds[scheme] = {"entry": entry, "run": run}
        log(f"  {scheme} {n}x{k}: make dense {entry['densify_us']:.1f} us"
            + (f", 16-bit values {entry['dequant_us']:.1f} us" if entry["dequant_us"] else ""))
    with torch.no_grad():
        for m in ms:
            if deadline is not None and time.monotonic() > deadline:
                log(f"  {n}x{k}: time budget spent, M >= {m} not measured")
                break
            x = torch.randn(m, k, dtype=dtype, device=device, generator=gen)
            mm = time_us(lambda x=x: torch.nn.functional.linear(x, weight))
            s16_t, s16_cfg = _best_linear(x, s16, log)
            parts = [f"F.linear {mm:.1f}", f"16-bit 2:4 {s16_t:.1f}" if s16_t else "16-bit 2:4 failed"]
            for scheme, kind in kinds.items():
                row: dict[str, Any] = {"mm": mm, "sparse16": s16_t}
                run = kind["run"]
                if run is None:
                    row.update(sparse=s16_t, config=s16_cfg)
                elif run[0] == "layer":
                    try:
                        row["sparse"] = time_us(lambda x=x, layer=run[1]: layer(x))
                    except Exception as e:  # noqa: BLE001
                        log(f"    {scheme} failed: {type(e).__name__}: {str(e)[:120]}")
                        row["sparse"] = None
                    row["config"] = None
                else:
                    row["sparse"], row["config"] = _best_linear(x, run[1], log)
                kind["entry"]["m"][str(m)] = row
                if scheme != "nv24":
                    parts.append(f"{scheme} {row['sparse']:.1f}" if row["sparse"] else f"{scheme} failed")
            log(f"  {n}x{k} M={m}: " + ", ".join(parts) + " us")
    torch.cuda.empty_cache()
    return [kind["entry"] for kind in kinds.values()]


def measure_entry(scheme: str, dtype: torch.dtype, n: int, k: int, ms: list[int],
                  device: torch.device | str = "cuda") -> dict:
    """One scheme's table entry (see `measure_shape`)."""
    return measure_shape([scheme], dtype, n, k, ms, device)[0]
