"""The dispatcher: per (M, N, K, dtype, scheme, GPU), run the 2:4 kernel or a dense path.

A 2:4 layer holds only its compressed weight, so each way to compute `x @ W.T` starts from it:

    sparse     the layer's own kernel (16-bit, quantized or 8-bit 2:4), with the tile config
               (split-K included) the table measured best for this shape
    sparse16   quantized / 8-bit weights: dequantize the kept values to fp16/bf16, then the 16-bit
               2:4 kernel (its large-M tiles are the fast ones); the same as sparse for 16-bit
    dense      decompress (and dequantize) into a transient dense weight, then `F.linear`
               (cuBLAS); a layer keeping a cached dense copy skips the decompression

The choice comes from a cost model: a table of times measured on one GPU model, shipped as
`sparsecc/ops/dispatch_tables/<GPU name>.json` (`bench/dispatch_table.py` writes it) and refined
by opt-in tuning runs kept in the cache folder (`sparsecc.nn.tuning.tune(model)`, or
`SPARSECC_DISPATCH_TUNE=1`: each new shape and M bucket is timed on first eager use). Times are interpolated in log M between the
measured token counts and, for a shape not in the table, from the nearest shapes scaled by
N x K. Without a table for this GPU the default rule (`default_mode`) applies.

For a layer the whole plan over M (bands of token counts, a mode each) is computed once per
shape when a call is traced, captured or first run (`layer_plan`), and the token count then
picks its band with plain comparisons: under `torch.compile` that is a guard (a new band is a
recompile), under CUDA graphs it happens at capture, in eager mode it costs a cached lookup.

Forcing: `SparseLinear(..., dispatch="dense")`, `sparse_linear(..., dispatch="sparse")`, the
context manager `dispatch_mode("dense")`, or `SPARSECC_DISPATCH=sparse|sparse16|dense|auto`, in
that order of precedence. Each choice is logged once per shape and band (logger
`sparsecc.dispatch`, level INFO).

    with sparsecc.ops.dispatch.dispatch_mode("sparse"):
        y = model(x)                                   # every layer runs its 2:4 kernel
    sparsecc.ops.dispatch.choose(2048, 11008, 4096, torch.float16, "w4g128")
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import math
import os
import re
import threading
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from sparsecc.defaults import MAX_MAXNREG, MIN_MAXNREG

__all__ = ["BUCKETS", "Choice", "DispatchTableWarning", "choose", "default_mode", "dispatch_mode", "layer_plan",
           "load_table", "pick", "resolve", "table_config"]

logger = logging.getLogger("sparsecc.dispatch")

MODES = ("sparse", "sparse16", "dense")
SETTINGS = ("auto", *MODES)
ENV = "SPARSECC_DISPATCH"
TUNE_ENV = "SPARSECC_DISPATCH_TUNE"
BUCKETS = (1, 4, 16, 64, 128, 256, 512, 2048, 4096, 8192)
"""The token counts (M) the table builder measures."""
MARGIN = 0.98
"""Another path replaces the 2:4 kernel only where it is estimated at least 2% faster (noise)."""
DEFAULT_SPARSE_UP_TO = 256
"""Without a table: quantized and 8-bit weights run their own kernel up to this many tokens."""
QUANT_WGMMA_UP_TO = 1024
"""Without a table, on a GPU with the register-A wgmma kernel of quantized weights (Hopper): that
kernel up to this many tokens, `sparse16` above. In the H100 table (stop 27: the kernel on TMA)
the kernel leads at 512 tokens on all 10 shapes (0.92-1.30x dense, sparse16 0.76-0.92x) and
sparse16 at 2048 on 9 (1.11-1.22x, the kernel 0.99-1.16x)."""
CACHED_SPARSE_UP_TO = 16
"""Without a table, for a layer that keeps a dense copy: its 2:4 kernel up to this many tokens."""
TABLES = Path(__file__).resolve().parent / "dispatch_tables"
_ENDLESS = 1 << 62  # the upper bound of the last band


class DispatchTableWarning(UserWarning):
    """A dispatch table file that cannot be used (not JSON, or not what the builder writes);
    it is ignored and the next source (or the default rule) decides."""


@dataclass(frozen=True)
class Choice:
    """What the dispatcher picked for one problem and why (the log line says the same).

        >>> choose(1, 4096, 4096, torch.float16, "nv24", device="cpu")
        Choice(mode='sparse', why='CPU tensors: the 2:4 path (interpreter / torch reference)')
    """

    mode: str
    why: str


# ---------------------------------------------------------------------------------------------
# forcing


_LOCAL = threading.local()


@contextlib.contextmanager
def dispatch_mode(mode: str) -> Iterator[None]:
    """Within the block, every dispatch whose layer or call does not set its own takes `mode`
    ("auto", "sparse", "sparse16", "dense"). Under `torch.compile` the mode in force when a
    call is traced is the one compiled in.

        with dispatch_mode("dense"):
            y = layer(x)          # decompress + F.linear, whatever the table says
    """
    _check_setting(mode, "dispatch_mode")
    stack = getattr(_LOCAL, "stack", None)
    if stack is None:
        stack = _LOCAL.stack = []
    stack.append(mode)
    try:
        yield
    finally:
        stack.pop()


def _check_setting(mode: Any, who: str) -> None:
    if mode not in SETTINGS:
        raise ValueError(f"{who}: dispatch must be one of {SETTINGS}, got {mode!r}")


def resolve(setting: str | None = None) -> str:
    """The dispatch setting in force: `setting` (a layer's or call's own) if given, else the
    innermost `dispatch_mode`, else $SPARSECC_DISPATCH, else "auto". A bad value is a
    ValueError that names where it came from.

        >>> resolve("dense"), resolve(None) in SETTINGS
        ('dense', True)
    """
    if setting is not None:
        _check_setting(setting, "dispatch")
        return setting
    stack = getattr(_LOCAL, "stack", None)
    if stack:
        return stack[-1]
    env = os.environ.get(ENV, "").strip().lower()
    if not env:
        return "auto"
    if env not in SETTINGS:
        raise ValueError(f"${ENV}: dispatch must be one of {SETTINGS}, got {env!r}")
    return env


# ---------------------------------------------------------------------------------------------
# the table


@dataclass(frozen=True)
class Entry:
    """One shape's measurements (microseconds): per token count M the 2:4 kernel (`sparse`),
    the 16-bit 2:4 kernel (`sparse16`), F.linear with a dense weight (`mm`) and the best tile
    config of the 2:4 kernel (None: the default); per weight the cost of making the 16-bit
    kept values (`dequant_us`) and the dense weight (`densify_us`)."""

    scheme: str
    dtype: str
    n: int
    k: int
    densify_us: float
    dequant_us: float
    ms: tuple[int, ...]
    sparse: tuple[float | None, ...]
    sparse16: tuple[float | None, ...]
    mm: tuple[float | None, ...]
    configs: tuple[tuple[int, ...] | None, ...]


def safe_name(gpu: str) -> str:
    """The file name stem of a GPU's table: "NVIDIA H100 80GB HBM3" -> "NVIDIA_H100_80GB_HBM3"."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", gpu.replace(" ", "_"))


def shipped_path(gpu: str) -> Path:
    return TABLES / f"{safe_name(gpu)}.json"


def tuned_path(gpu: str) -> Path:
    """Where tuning runs keep their measurements: <cache folder>/dispatch/<GPU>.json."""
    from sparsecc.runtime.cache import cache_dir

    return cache_dir() / "dispatch" / f"{safe_name(gpu)}.json"


def _num(v: Any) -> float | None:
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
        raise ValueError(f"a time must be a positive number or null, got {v!r}")
    return float(v)


def parse_entries(obj: Any) -> list[Entry]:
    """The entries of a table file's JSON (`{"gpu": ..., "entries": [...]}`); ValueError
    naming the first bad entry otherwise."""
    if not isinstance(obj, dict) or not isinstance(obj.get("entries"), list):
        raise ValueError('not a dispatch table (a JSON object with an "entries" list)')
    out = []
    for i, e in enumerate(obj["entries"]):
        try:
            rows = sorted(((int(m), r) for m, r in e["m"].items()), key=lambda t: t[0])
            if not rows or rows[0][0] < 1:
                raise ValueError("needs token counts >= 1")
            configs = []
            for _, r in rows:
                c = r.get("config")
                if c is not None and (not isinstance(c, list) or len(c) not in (6, 7, 8)
                                      or not all(isinstance(v, int) and v >= 0 for v in c)
                                      or not all(v > 0 for v in c[:6])
                                      or (len(c) == 7 and not 1 <= c[6] <= 3)
                                      or (len(c) == 8 and (c[6] > 3 or not MIN_MAXNREG <= c[7] <= MAX_MAXNREG))):
                    raise ValueError(f"config must be 6 positive ints (a 7th of flags, 1 to 3: quant_wgmma 1, "
                                     f"stream_k 2; 0 to 3 before an 8th, maxnreg, {MIN_MAXNREG} to {MAX_MAXNREG}) "
                                     f"or null, got {c!r}")
                configs.append(tuple(c) if c is not None else None)
            out.append(Entry(str(e["scheme"]), str(e["dtype"]), int(e["n"]), int(e["k"]),
                             _num(e["densify_us"]) or 0.0, _num(e.get("dequant_us")) or 0.0,
                             tuple(m for m, _ in rows), tuple(_num(r.get("sparse")) for _, r in rows),
                             tuple(_num(r.get("sparse16")) for _, r in rows),
                             tuple(_num(r.get("mm")) for _, r in rows), tuple(configs)))
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            raise ValueError(f"entry {i}: {err}") from None
    return out


def _read(path: Path) -> list[Entry]:
    if not path.is_file():
        return []
    try:
        return parse_entries(json.loads(path.read_text()))
    except (OSError, ValueError) as err:
        warnings.warn(f"sparsecc dispatch: ignoring the table {path}: {err}", DispatchTableWarning, stacklevel=3)
        return []


_VERSION = [0]  # bumped when a tuning run writes: plans computed before are stale


@functools.cache
def _load(gpu: str, version: int) -> dict[tuple[str, str], tuple[Entry, ...]]:
    merged: dict[tuple[str, str, int, int], Entry] = {}
    for path in (shipped_path(gpu), tuned_path(gpu)):  # tuned entries replace shipped ones
        for e in _read(path):
            merged[(e.scheme, e.dtype, e.n, e.k)] = _merge(merged.get((e.scheme, e.dtype, e.n, e.k)), e)
    table: dict[tuple[str, str], list[Entry]] = {}
    for e in merged.values():
        table.setdefault((e.scheme, e.dtype), []).append(e)
    return {key: tuple(v) for key, v in table.items()}


def _merge(old: Entry | None, new: Entry) -> Entry:
    """`new`'s token counts over `old`'s (a tuning run measures a few M of a shape)."""
    if old is None:
        return new
    rows = {m: (s, s16, mm, c) for m, s, s16, mm, c in zip(old.ms, old.sparse, old.sparse16, old.mm, old.configs)}
    rows.update({m: (s, s16, mm, c) for m, s, s16, mm, c in zip(new.ms, new.sparse, new.sparse16, new.mm, new.configs)})
    ms = tuple(sorted(rows))
    return Entry(new.scheme, new.dtype, new.n, new.k, new.densify_us, new.dequant_us, ms,
                 *(tuple(rows[m][i] for m in ms) for i in range(4)))


def load_table(gpu: str) -> dict[tuple[str, str], tuple[Entry, ...]]:
    """The measurements for `gpu` (a `torch.cuda.get_device_name()`), keyed by (scheme, dtype
    name): the shipped table with the tuning runs' entries over it; {} where there is none."""
    return _load(gpu, _VERSION[0])


@functools.cache
def gpu_name(index: int | None) -> str:
    return torch.cuda.get_device_name(index)


# ---------------------------------------------------------------------------------------------
# the cost model


def _at(ms: tuple[int, ...], ts: tuple[float | None, ...], m: int) -> float | None:
    """The time at M, linear in log-log between the measured neighbours (the end segments
    extended); with one measurement, that time for the M of its bucket (`bucket`), else None."""
    pts = [(x, t) for x, t in zip(ms, ts) if t is not None]
    if not pts:
        return None
    for x, t in pts:
        if x == m:
            return t
    if len(pts) == 1:  # a tuning run's one bucket stands for the token counts it covers
        return pts[0][1] if bucket(m) == pts[0][0] else None
    lo = max((p for p in pts if p[0] < m), key=lambda p: p[0], default=None)
    hi = min((p for p in pts if p[0] > m), key=lambda p: p[0], default=None)
    if lo is None:
        lo, hi = pts[0], pts[1]
    elif hi is None:
        lo, hi = pts[-2], pts[-1]
    a = (math.log(m) - math.log(lo[0])) / (math.log(hi[0]) - math.log(lo[0]))
    slope_t = math.log(hi[1]) - math.log(lo[1])
    return math.exp(math.log(lo[1]) + a * slope_t)


def estimate(entries: tuple[Entry, ...], n: int, k: int, m: int, cached: bool) -> dict[str, float]:
    """Estimated microseconds of each available mode for an N x K weight at M tokens: from the
    entry of this shape, else the inverse-distance mean (in log2 N, log2 K) of every entry's
    times scaled by N x K. A mode some entry cannot estimate is left out."""
    exact = [e for e in entries if (e.n, e.k) == (n, k)]
    use = exact or list(entries)
    sums: dict[str, float] = {}
    weights: dict[str, float] = {}
    for e in use:
        d2 = (math.log2(n / e.n)) ** 2 + (math.log2(k / e.k)) ** 2
        w = 1.0 / (d2 + 1e-9)
        scale = (n * k) / (e.n * e.k)
        per = _modes_of(e, m, cached)
        for mode, t in per.items():
            sums[mode] = sums.get(mode, 0.0) + w * math.log(t * scale)
            weights[mode] = weights.get(mode, 0.0) + w
    return {mode: math.exp(sums[mode] / weights[mode]) for mode in sums}


def _modes_of(e: Entry, m: int, cached: bool) -> dict[str, float]:
    out = {}
    sparse = _at(e.ms, e.sparse, m)
    if sparse is not None:
        out["sparse"] = sparse
    s16 = _at(e.ms, e.sparse16, m)
    if s16 is not None and e.scheme != "nv24":
        out["sparse16"] = e.dequant_us + s16
    mm = _at(e.ms, e.mm, m)
    if mm is not None:
        out["dense"] = mm if cached else e.densify_us + mm
    return out


def default_mode(scheme: str, m: int, cached: bool = False, quant_wgmma: bool = False) -> str:
    """The rule without a table for this GPU (conservative: it keeps the 2:4 kernels where they
    were measured ahead on the H100, and never pays a transient decompression):

    - 16-bit 2:4 weights: the 2:4 kernel at every M;
    - quantized and 8-bit weights: their own kernel up to `DEFAULT_SPARSE_UP_TO` (256) tokens,
      above that dequantize to 16-bit kept values and run the 16-bit 2:4 kernel (sparse16);
      quantized weights on a GPU with their register-A wgmma kernel (`quant_wgmma`: Hopper,
      `sparse_linear.quantized_prefill_config`) keep it up to `QUANT_WGMMA_UP_TO` (1024);
    - a layer that keeps a dense copy: its 2:4 kernel up to `CACHED_SPARSE_UP_TO` (16) tokens
      (decode, where halving the weight bytes wins), the cached dense weight above.

        >>> default_mode("nv24", 4096), default_mode("w4g128", 2048), default_mode("fp8", 16)
        ('sparse', 'sparse16', 'sparse')
        >>> default_mode("w4g128", 1024, quant_wgmma=True), default_mode("w4g128", 2048, quant_wgmma=True)
        ('sparse', 'sparse16')
    """
    if cached:
        return "sparse" if m <= CACHED_SPARSE_UP_TO else "dense"
    if scheme == "nv24" or m <= DEFAULT_SPARSE_UP_TO:
        return "sparse"
    if quant_wgmma and scheme.startswith("w") and m <= QUANT_WGMMA_UP_TO:  # w4g128, w8c, ...: not fp8 / int8
        return "sparse"
    return "sparse16"


@functools.cache
def _quant_wgmma_gpu(gpu: str) -> bool:
    """Whether the GPU model `gpu` (one of this machine's) runs the register-A wgmma kernel of
    quantized weights: compute capability 9.0 (sm_90a)."""
    if not torch.cuda.is_available():
        return False
    return any(torch.cuda.get_device_name(i) == gpu and torch.cuda.get_device_capability(i) == (9, 0)
               for i in range(torch.cuda.device_count()))


_GRID = tuple(sorted({int(b * f) for b in (2 ** i for i in range(18)) for f in (1, 1.5)} | set(BUCKETS)))
"""Token counts a plan is evaluated at; M takes the choice of the first grid point >= M."""


def _decide(gpu: str | None, scheme: str, dtype: str, n: int, k: int, setting: str, cached: bool,
            m: int) -> tuple[str, str]:
    """(mode, why) at M tokens (a grid point of the plan)."""
    if setting != "auto":
        return _allowed(setting, scheme), f"forced {setting}"
    table = load_table(gpu) if gpu else {}
    entries = table.get((scheme, dtype)) or _other_dtype(table, scheme, dtype)
    est = estimate(entries, n, k, m, cached) if entries else {}
    if "sparse" not in est:
        where = f"table for {gpu}" if gpu else "GPU table"
        mode = default_mode(scheme, m, cached, quant_wgmma=bool(gpu) and _quant_wgmma_gpu(gpu))
        return _allowed(mode, scheme), f"default rule (no {where} for {scheme} {dtype})"
    best = min(est, key=lambda mode: est[mode])
    mode = best if est[best] < MARGIN * est["sparse"] else "sparse"
    why = f"table {safe_name(gpu or '')} at M={m}: " + ", ".join(f"{key} {t:.1f} us" for key, t in sorted(est.items()))
    return _allowed(mode, scheme), why


def _grid_point(m: int) -> int:
    """The grid point whose choice M takes: the first >= M (the last for larger M)."""
    return next((g for g in _GRID if g >= m), _GRID[-1])


@functools.lru_cache(maxsize=4096)
def _plan(gpu: str | None, scheme: str, dtype: str, n: int, k: int, setting: str, cached: bool,
          version: int) -> tuple[tuple[int, str, str], ...]:
    if setting != "auto":
        mode, why = _decide(gpu, scheme, dtype, n, k, setting, cached, 1)
        return ((_ENDLESS, mode, why),)
    bands: list[tuple[int, str, str]] = []
    for i, m in enumerate(_GRID):
        mode, why = _decide(gpu, scheme, dtype, n, k, setting, cached, m)
        bound = _ENDLESS if i == len(_GRID) - 1 else m
        if bands and bands[-1][1] == mode:
            bands[-1] = (bound, mode, bands[-1][2])
        else:
            bands.append((bound, mode, why))
    return tuple(bands)


def _allowed(mode: str, scheme: str) -> str:
    """sparse16 is the 2:4 kernel itself for 16-bit weights."""
    return "sparse" if mode == "sparse16" and scheme == "nv24" else mode


def _other_dtype(table: dict, scheme: str, dtype: str) -> tuple[Entry, ...]:
    """bf16 and fp16 run the same kernels at the same speed: one stands in for the other."""
    other = {"float16": "bfloat16", "bfloat16": "float16"}.get(dtype)
    return table.get((scheme, other), ()) if other else ()


@torch.compiler.assume_constant_result
def layer_plan(n: int, k: int, dtype: str, scheme: str, device_type: str, device_index: int | None,
               setting: str | None = None, cached: bool = False) -> tuple[tuple[int, str, str], ...]:
    """The bands of a weight's plan: ((largest M, mode, why), ...), increasing; the last band
    is unbounded. Computed once per shape (cached), at trace time under torch.compile.

        >>> layer_plan(4096, 4096, "float16", "nv24", "cpu", None)
        ((4611686018427387904, 'sparse', 'CPU tensors: the 2:4 path (interpreter / torch reference)'),)
    """
    mode = resolve(setting)
    if device_type != "cuda":
        if mode == "auto":
            return ((_ENDLESS, "sparse", "CPU tensors: the 2:4 path (interpreter / torch reference)"),)
        return ((_ENDLESS, _allowed(mode, scheme), f"forced {mode}"),)
    gpu = gpu_name(device_index)
    return _plan(gpu, scheme, dtype, n, k, mode, cached, _VERSION[0])


def pick(plan: tuple[tuple[int, str, str], ...], m: int) -> tuple[str, str]:
    """(mode, the band's label) for M tokens: plain comparisons, so that under torch.compile a
    symbolic M becomes a guard on its band rather than a graph break."""
    low = 0
    for bound, mode, _ in plan:
        if m <= bound:
            return mode, _label(low, bound)
        low = bound
    return plan[-1][1], _label(low, _ENDLESS)


def _label(low: int, high: int) -> str:
    if high >= _ENDLESS:
        return f"M > {low}" if low else "any M"
    return f"{low} < M <= {high}" if low else f"M <= {high}"


def choose(m: int, n: int, k: int, dtype: torch.dtype | str, scheme: str, device: torch.device | str = "cuda",
           setting: str | None = None, cached: bool = False) -> Choice:
    """The mode for M tokens through an N x K weight of `scheme` ("nv24" for 16-bit 2:4
    weights, a quantization scheme such as "w4g128", "fp8" or "int8" for 8-bit weights) and
    logical `dtype`, on `device`, and why.

        >>> choose(2048, 11008, 4096, torch.float16, "w4g128", device="cpu").mode
        'sparse'
    """
    device = torch.device(device)
    name = str(dtype).removeprefix("torch.")
    plan = layer_plan(n, k, name, scheme, device.type, device.index, setting, cached)
    mode = pick(plan, m)[0]
    if device.type != "cuda" or len(plan) == 1:
        return Choice(mode, plan[0][2])
    # the reasons at the grid point that decided M's band (the plan is made of these points)
    return Choice(mode, _decide(gpu_name(device.index), scheme, name, n, k, "auto", cached, _grid_point(m))[1])


# ---------------------------------------------------------------------------------------------
# what was chosen: one log line per shape and band, and SparseLinear's repr


_SEEN: dict[tuple[Any, ...], dict[str, str]] = {}


@torch.compiler.assume_constant_result
def announce(who: str, n: int, k: int, dtype: str, scheme: str, m: int | None, band: str, mode: str) -> bool:
    """Log (once per shape, band of M and mode) and remember what was chosen; `m` is the token
    count that first took the band (None under torch.compile, where M may be symbolic)."""
    seen = _SEEN.setdefault((n, k, dtype, scheme), {})
    if seen.get(band) != mode:
        seen[band] = mode
        at = f"M={m} ({band})" if m is not None else band
        logger.info("%s (%d -> %d, %s %s), %s: %s", who, k, n, scheme, dtype, at, mode)
    return True


def seen_modes(n: int, k: int, dtype: str, scheme: str) -> dict[str, str]:
    """{band of M: mode} chosen so far for this shape (what SparseLinear's repr shows)."""
    return dict(_SEEN.get((n, k, dtype, scheme), {}))


# ---------------------------------------------------------------------------------------------
# the 2:4 kernel's config from the table


@functools.lru_cache(maxsize=4096)
def _config(gpu: str, scheme: str, dtype: str, n: int, k: int, m: int, version: int) -> tuple[int, ...] | None:
    table = load_table(gpu)
    entries = table.get((scheme, dtype)) or _other_dtype(table, scheme, dtype)
    for e in entries:
        if (e.n, e.k) == (n, k):
            above = [i for i, x in enumerate(e.ms) if x >= m]
            i = above[0] if above else len(e.ms) - 1
            return e.configs[i]
    return None


def table_config(m: int, n: int, k: int, dtype: torch.dtype, scheme: str,
                 device: torch.device) -> tuple[int, ...] | None:
    """The 2:4 kernel's tile config (block_m, block_n, block_k, num_warps, num_stages, split_k)
    the table measured best for this shape at the first measured M >= `m`; None (the default
    tiles) for shapes the table does not hold."""
    if device.type != "cuda":
        return None
    return _config(gpu_name(device.index), scheme, str(dtype).removeprefix("torch."), n, k, m, _VERSION[0])


# ---------------------------------------------------------------------------------------------
# the other paths of sparse_linear / sparse_mm


def activate(y: torch.Tensor, activation: str) -> torch.Tensor:
    """The epilogue activations of the 2:4 kernels, in torch (for the dense path)."""
    if activation == "relu":
        return torch.relu(y)
    if activation == "gelu_tanh":
        return torch.nn.functional.gelu(y, approximate="tanh")
    if activation == "silu":
        return torch.nn.functional.silu(y)
    return y


def scheme_of(w: Any) -> str:
    """The dispatch scheme of a SparseTensor / QuantizedSparseTensor: "nv24" for 16-bit values,
    the quantization scheme ("w4g128"), or the 8-bit type ("fp8", "int8")."""
    quant = getattr(w, "scheme", None)
    if quant is not None and hasattr(quant, "spec"):
        return quant.spec
    if w.dtype == torch.float8_e4m3fn or w.dtype == torch.float8_e5m2:
        return "fp8"
    if w.dtype == torch.int8:
        return "int8"
    return "nv24" if w.encoding == "NV24" else w.encoding


# ---------------------------------------------------------------------------------------------
# tuning on this GPU


def tuning_enabled() -> bool:
    """$SPARSECC_DISPATCH_TUNE is 1/true/on/yes: shapes are measured on first eager use."""
    return os.environ.get(TUNE_ENV, "").strip().lower() in ("1", "true", "on", "yes")


def bucket(m: int) -> int:
    """The measured token count a tuning run times for M: the first of BUCKETS >= M (the last)."""
    return next((b for b in BUCKETS if b >= m), BUCKETS[-1])


def measured(gpu: str, scheme: str, dtype: str, n: int, k: int, m: int) -> bool:
    """Whether the tables hold this shape at M's bucket (a tuning run need not time it)."""
    b = bucket(m)
    return any((e.n, e.k) == (n, k) and b in e.ms for e in load_table(gpu).get((scheme, dtype), ()))


def save_tuned(gpu: str, entries: list[dict]) -> Path:
    """Merge measured entries (`sparsecc.ops.dispatch_measure.measure_shape`'s form) into the
    tuning file of `gpu` (`tuned_path`), per shape and M, and make later plans read it."""
    path = tuned_path(gpu)
    try:
        doc = json.loads(path.read_text()) if path.is_file() else {"gpu": gpu, "entries": []}
        parse_entries(doc)
    except (OSError, ValueError):  # unreadable or not ours: start over
        doc = {"gpu": gpu, "entries": []}
    for new in entries:
        key = (new["scheme"], new["dtype"], new["n"], new["k"])
        old = next((e for e in doc["entries"] if (e["scheme"], e["dtype"], e["n"], e["k"]) == key), None)
        if old is None:
            doc["entries"].append(new)
        else:
            old.update({name: v for name, v in new.items() if name != "m"})
            old["m"].update(new["m"])
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(doc, indent=1))
    os.replace(tmp, path)  # readers see the old file or the new one, never half of one
    _VERSION[0] += 1
    return path
