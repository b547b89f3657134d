"""Measurements for the dispatcher's table (`bench/dispatch_table.py`, `sparsecc.ops.dispatch.tune`).

Each path is timed as the layer runs it: inside a CUDA graph (several calls per replay, median of
a few replays), on random 2:4 weights of the shape, per token count M:

    mm        F.linear with the dense 16-bit weight
    sparse16  the 16-bit 2:4 kernel (best of a few tile configs, split-K among them)
    sparse    the scheme's own kernel (best config; an 8-bit layer's forward, x quantized per token)

and per weight the cost of making its 16-bit kept values (`dequant_us`) and its dense weight
(`densify_us`), as the dispatcher makes them (`sparsecc.ops.densify.weight16`: one sparsecc kernel).

By default the calls of one graph follow each other, so a weight that fits in L2 (4096x4096 fp16:
32 MB of the H100's 50 MB) is read from L2 after the first call. Inside `cold_l2()` each call
first overwrites a buffer twice the L2's size, as the other layers of a model would, and the
time of those overwrites (a graph of them alone) is subtracted.

    entries = measure_shape(["nv24", "w4g128"], torch.float16, 4096, 4096, [1, 16, 2048])
    with cold_l2():
        entries = measure_shape(["nv24"], torch.float16, 4096, 4096, [64])
"""

from __future__ import annotations

import contextlib
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import torch

from sparsecc.nn.quantize import quantize_rows
from sparsecc.ops import dispatch
from sparsecc.ops.densify import weight16

__all__ = ["cold_l2", "maybe_tune", "measure_entry", "measure_shape", "time_us", "tune_shapes"]

_FLUSH: list[torch.Tensor | None] = [None]  # the buffer `cold_l2` overwrites before each timed call


@contextlib.contextmanager
def cold_l2(device: torch.device | str = "cuda") -> Iterator[None]:
    """Within it, `time_us` times each call with a cold L2: before it, the graph overwrites a
    buffer of twice the L2's size (then subtracts the time of the overwrites alone).

        with cold_l2():
            t = time_us(lambda: torch.nn.functional.linear(x, w))
    """
    l2 = torch.cuda.get_device_properties(torch.device(device)).L2_cache_size
    previous = _FLUSH[0]
    _FLUSH[0] = torch.empty(2 * max(l2, 1 << 20), dtype=torch.uint8, device=device)
    try:
        yield
    finally:
        _FLUSH[0] = previous


def time_us(fn: Callable[[], Any], target_us: float = 3000.0, reps: int = 7) -> float:
    """Microseconds per call of `fn` (CUDA): as many calls in one CUDA graph as fill about
    `target_us` (1 to 20), median of `reps` replays; eager calls where capture fails. Inside
    `cold_l2()`, each call after an overwrite of the L2, whose own time is taken off."""
    flush = _FLUSH[0]
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

    def timed(body: Callable[[], None]) -> float:
        try:
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                for _ in range(calls):
                    body()
            run = graph.replay
        except RuntimeError:  # not capturable: time eager calls (launch costs included)
            graph = None

            def run() -> None:
                for _ in range(calls):
                    body()
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

    if flush is None:
        return timed(fn)

    def flushed() -> None:
        flush.zero_()
        fn()

    return max(timed(flushed) - timed(flush.zero_), 0.01)


_MEDIUM_TILES = [(64, 128, 64, 4), (128, 128, 64, 4), (128, 256, 64, 8), (64, 64, 128, 4), (128, 128, 64, 8)]
"""(BLOCK_M, BLOCK_N, BLOCK_K, warps) tried at 17-1023 tokens, 4 stages each."""
_WIDE_TILES = [(64, 128, 128, 4), (128, 128, 128, 8)]
"""(BLOCK_M, BLOCK_N, BLOCK_K, warps) of 16-bit weights' wgmma tiles with two 128-byte column
blocks of x^T a row (`convert_tt_to_ttg.WIDE_KMAJOR16_MIN_N`), tried at 17-1023 tokens."""
_NARROW_TILES = [(16, 32, 1024, 3, 1), (16, 64, 256, 3, 1), (32, 64, 256, 4, 1), (32, 32, 512, 4, 1),
                 (32, 64, 256, 4, 2), (16, 128, 128, 3, 1)]
"""(BLOCK_M, BLOCK_N, BLOCK_K, stages, split_k) of the decode family, tried at 17-128 tokens."""


def _linear_candidates(m: int, n: int, k: int, w: Any) -> list[Any]:
    """Tile configs to time for the 2:4 linear kernel: the default pick first, then split-K
    variants at few tokens (more CTAs for long rows), and from 256 tokens stream-K forms of the
    tiles whose last wave it would split."""
    from sparsecc.ops.linear_config import SM_COUNT, LinearConfig
    from sparsecc.ops.sparse_linear import (
        default_linear_config,
        has_quant_wgmma,
        quantized_default_config,
        quantized_linear_config,
    )
    from sparsecc.ops.sparse_mm import sm_count
    from sparsecc.ops.stream_k import stream_k_plan
    from sparsecc.runtime.quant_tensor import QuantizedSparseTensor

    quantized = isinstance(w, QuantizedSparseTensor)
    base = default_linear_config(m, n, k)
    if quantized:
        base = quantized_default_config(m, n, k, w, w.device)
    cands = [base]
    if quantized and m <= 16:
        # at most 128 registers a thread: 4 CTAs of 4 warps an SM instead of 3 (168 registers),
        # so 500 CTAs of 64 rows take one wave (bench/decode_graph.py --sweep w4g128-r128, stop 30:
        # 32000x4096 at one token 21.5 us against 24.0)
        cands += [replace(base, maxnreg=128), LinearConfig(8 if m <= 8 else 16, 64, 512, 4, 2, maxnreg=128)]
    if quantized and m >= 128 and has_quant_wgmma(w.device):
        # the register-A wgmma tiles, and the 16-bit kernel's prefill tile on mma.sp (the old default)
        cands += [LinearConfig(bm, bn, 128, 8, ns, quant_wgmma=True) for bm, bn, ns in ((128, 128, 4), (64, 256, 3))]
        if m >= 256 and w.dtype == torch.float16:
            # 256 tokens a tile: each dequantized A fragment feeds twice the MMA work (fp16 only,
            # bf16's convert scratch does not fit beside 3 stages). bench/stream_k.py, stop 26:
            # w4 28672x8192 M = 256 1.15x F.linear (128x128: 0.88x), 4096² M = 2048 98 vs 119 us
            cands.append(LinearConfig(256, 128, 128, 8, 3, quant_wgmma=True))
        if m <= 256:  # K split over two programs, and one warpgroup over 64 tokens: more CTAs
            # (bench/linear_mid_sweep.py --scheme, stop 24: 4096x4096 M = 128 0.77 -> 0.95x F.linear)
            cands += [LinearConfig(128, 128, 128, 8, 4, 2, quant_wgmma=True),
                      LinearConfig(64, 128, 128, 4, 4, 1, quant_wgmma=True),
                      LinearConfig(64, 128, 128, 4, 4, 2, quant_wgmma=True)]
        cands.append(default_linear_config(m, n, k))
    if m <= 128:
        cands += [replace(base, split_k=s) for s in (1, 2, 4) if s != base.split_k and k // s >= 1024]
    if 16 < m <= 128 and not quantized:
        # the decode family's narrow token tiles, a few token tiles a weight tile (the weight
        # tile is re-read from L2): at 64 tokens on 4096x4096 the mid-M tiles ran 0.72x F.linear
        cands += [LinearConfig(bm, bn, bk, 4, ns, s) for (bm, bn, bk, ns, s) in _NARROW_TILES if k // s >= bk]
    if 16 < m < 1024:  # the tile family bench/linear_mid_sweep.py found best there, both splits
        tiles = _MEDIUM_TILES + ([] if quantized else _WIDE_TILES)
        cands += [LinearConfig(bm, bn, bk, w, 4, s) for (bm, bn, bk, w) in tiles for s in (1, 2)
                  if bm <= max(32, m) and k // s >= 1024]
    if quantized:
        cands = [quantized_linear_config(c, w) for c in cands]
    if m >= 256:  # the persistent form where its plan splits a thin last wave (bench/stream_k.py, stop 25),
        # or where whole tiles make more than a wave and the last is partial: one program an SM
        # loads a tile while the one before it ends (w4g128 128x128x128 at 512 tokens, stop 34:
        # 11008x4096 64.0 us against 64.8)
        sms = sm_count(w.device.index) if w.device.type == "cuda" else SM_COUNT

        def persistent_gains(c: Any) -> bool:
            programs, whole, split, _ = stream_k_plan(m, n, k, c, sms)
            return split > 1 or whole % programs > 0  # (programs = SMs where tiles outnumber them)
        cands += [replace(c, stream_k=True) for c in cands if c.split_k == 1 and c.block_m >= 64 and persistent_gains(c)]
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
            best = (t, None if i == 0 else cfg.table_row())
    return best


def _eight_bit_forward(x: torch.Tensor, w8: Any, w_scale: torch.Tensor) -> torch.Tensor:
    """An 8-bit SparseLinear's 2:4 path (`SparseLinear.forward` with `weight_dtype`): x quantized
    per token in one launch, then the 8-bit kernel with both scales in its epilogue."""
    from sparsecc.ops.sparse_linear_8bit import sparse_linear_8bit

    return sparse_linear_8bit(x, w8, w_scale)


def measure_shape(schemes: list[str], dtype: torch.dtype, n: int, k: int, ms: list[int],
                  device: torch.device | str = "cuda", log: Callable[[str], None] | None = None,
                  deadline: float | None = None) -> list[dict]:
    """Table entries (the JSON form `sparsecc.ops.dispatch.parse_entries` reads) for an N x K
    weight of each scheme ("nv24", "w4g128", "w8g128", "fp8", "int8", ...) at the token counts
    `ms`; F.linear and the 16-bit kernel are timed once and shared. Stops adding token counts
    once `deadline` (time.monotonic()) has passed."""
    import sparsecc

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
            w8, w_scale = quantize_rows(weight, torch.float8_e4m3fn if scheme == "fp8" else torch.int8)
            w8 = sparsecc.compress(w8)  # what SparseLinear(weight_dtype=...) stores
            for key, dense in (("dequant_us", False), ("densify_us", True)):
                entry[key] = time_us(lambda w8=w8, w_scale=w_scale, dense=dense: weight16(
                    w8.values, w8.meta, None, None, w_scale, 8, k, dtype, dense))
            run = ("8-bit", (w8, w_scale))
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
                elif run[0] == "8-bit":
                    try:
                        row["sparse"] = time_us(lambda x=x, w=run[1]: _eight_bit_forward(x, *w))
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


def maybe_tune(n: int, k: int, dtype: torch.dtype, scheme: str, m: int, device: torch.device) -> None:
    """With $SPARSECC_DISPATCH_TUNE on, time this shape at M's bucket unless the tables hold it
    (`sparsecc.ops.dispatch.measured`); never while a CUDA graph is being captured."""
    if device.type != "cuda" or not dispatch.tuning_enabled() or torch.cuda.is_current_stream_capturing():
        return
    if dispatch.measured(dispatch.gpu_name(device.index), scheme, str(dtype).removeprefix("torch."), n, k, m):
        return
    tune_shapes([(scheme, dtype, n, k)], [dispatch.bucket(m)], device)


def tune_shapes(shapes: list[tuple[str, torch.dtype, int, int]], tokens: list[int],
                device: torch.device | str = "cuda") -> Any:
    """Measure each (scheme, dtype, N, K) at `tokens` on this GPU and keep the results in the
    tuning file (`sparsecc.ops.dispatch.tuned_path`), which later plans read over the shipped
    table; returns the file's path."""
    device = torch.device(device)
    entries = []
    for scheme, dtype, n, k in shapes:
        dispatch.logger.info("tuning %s %s %dx%d at M=%s", scheme, dtype, n, k, tokens)
        entries.append(measure_entry(scheme, dtype, n, k, tokens, device))
    return dispatch.save_tuned(dispatch.gpu_name(device.index), entries)
