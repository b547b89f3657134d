"""`@sparsecc.autotune(configs=[...], key=[...])`: pick the fastest config per problem key.

Like Triton's autotuner: the first launch for a new value of the `key` arguments times every
config (median of a few runs, after a warm-up that also compiles), remembers the winner in
memory and on disk (one JSON file per kernel and GPU under the sparsecc cache folder), and later
launches go straight to it. A config that fails to compile or launch is skipped, not fatal,
unless every config fails. A progress line is printed to stderr while tuning.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sparsecc.defaults import NUM_STAGES, NUM_WARPS


@dataclass(frozen=True)
class Config:
    """Meta-parameters (constexprs) plus launch options of one candidate."""

    kwargs: dict[str, Any] = field(default_factory=dict)
    num_warps: int = NUM_WARPS
    num_stages: int = NUM_STAGES

    def all_kwargs(self) -> dict[str, Any]:
        return {**self.kwargs, "num_warps": self.num_warps, "num_stages": self.num_stages}

    def to_json(self) -> dict[str, Any]:
        return {"kwargs": self.kwargs, "num_warps": self.num_warps, "num_stages": self.num_stages}

    @staticmethod
    def from_json(d: dict[str, Any]) -> Config:
        return Config(dict(d["kwargs"]), int(d["num_warps"]), int(d["num_stages"]))

    def __str__(self) -> str:
        kv = ", ".join(f"{k}={v}" for k, v in self.kwargs.items())
        return f"{kv}, num_warps={self.num_warps}, num_stages={self.num_stages}"


def _cache_dir() -> str:
    return os.environ.get("SPARSECC_CACHE_DIR", os.path.join(os.path.expanduser("~"), ".cache", "sparsecc"))


def _device_tag() -> str:
    import torch

    if not torch.cuda.is_available():
        return "cpu"
    return torch.cuda.get_device_name().replace(" ", "_").replace("/", "_")


def _key_value(v: Any) -> Any:
    """What of an argument identifies the problem: shapes and dtypes of tensors, ints as-is."""
    if hasattr(v, "shape") and hasattr(v, "dtype"):
        return [list(v.shape), str(v.dtype)]
    return v


def default_timer(fn: Callable[[], None], reps: int = 10) -> float:
    """Median milliseconds of `fn` on the GPU (triton's do_bench if present)."""
    try:
        from triton.testing import do_bench

        return float(do_bench(fn, warmup=5, rep=25))
    except ImportError:
        import torch

        times = []
        for _ in range(reps):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            fn()
            torch.cuda.synchronize()
            times.append((time.perf_counter() - t0) * 1e3)
        return sorted(times)[len(times) // 2]


class Autotuner:
    """Wraps a JIT kernel; `tuned[grid](*args)` launches the best config for these args."""

    def __init__(
        self,
        fn: Any,
        configs: Sequence[Config],
        key: Sequence[str],
        timer: Callable[[Callable[[], None]], float] = default_timer,
        verbose: bool = True,
    ):
        if not configs:
            raise ValueError("autotune needs at least one Config")
        self.fn = fn
        self.configs = list(configs)
        self.key = list(key)
        self.timer = timer
        self.verbose = verbose
        self.best: dict[str, Config] = {}
        self._loaded = False
        self.arg_names: list[str] = list(getattr(fn, "arg_names", []))

    @property
    def _disk_path(self) -> str:
        name = getattr(self.fn, "__name__", None) or getattr(self.fn, "name", "kernel")
        return os.path.join(_cache_dir(), "autotune", f"{name}-{_device_tag()}.json")

    def _load(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        try:
            with open(self._disk_path) as f:
                data = json.load(f)
            self.best.update({k: Config.from_json(v) for k, v in data.items()})
        except (OSError, ValueError, KeyError, TypeError):
            pass  # no or unreadable cache: tune again

    def _save(self) -> None:
        path = self._disk_path
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            json.dump({k: c.to_json() for k, c in self.best.items()}, f, indent=1)
        os.replace(tmp, path)

    def _problem_key(self, args: Sequence[Any], kwargs: dict[str, Any]) -> str:
        named = dict(zip(self.arg_names, args)) | kwargs
        missing = [k for k in self.key if k not in named]
        if missing:
            raise ValueError(f"autotune key {missing} not among the kernel's arguments {self.arg_names}")
        return json.dumps([_key_value(named[k]) for k in self.key])

    def __getitem__(self, grid: Any) -> Callable[..., None]:
        def launch(*args: Any, **kwargs: Any) -> None:
            cfg = self.choose(grid, args, kwargs)
            self.fn[grid](*args, **kwargs, **cfg.all_kwargs())

        return launch

    def choose(self, grid: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> Config:
        self._load()
        key = self._problem_key(args, kwargs)
        if key in self.best:
            return self.best[key]
        if len(self.configs) == 1:
            self.best[key] = self.configs[0]
            return self.configs[0]
        timings: list[tuple[float, Config]] = []
        for i, cfg in enumerate(self.configs):
            if self.verbose:
                print(f"\rsparsecc autotune {key}: config {i + 1}/{len(self.configs)} ({cfg})",
                      end="", file=sys.stderr, flush=True)
            try:
                ms = self.timer(lambda cfg=cfg: self.fn[grid](*args, **kwargs, **cfg.all_kwargs()))
            except Exception as e:  # a config that cannot compile/launch is skipped
                if self.verbose:
                    print(f"\n  skipped ({type(e).__name__}: {str(e)[:100]})", file=sys.stderr)
                continue
            timings.append((ms, cfg))
        if not timings:
            raise RuntimeError(f"autotune: every config failed for {key}")
        ms, best = min(timings, key=lambda t: t[0])
        if self.verbose:
            print(f"\rsparsecc autotune {key}: best {best} ({ms:.3f} ms)" + " " * 20, file=sys.stderr)
        self.best[key] = best
        self._save()
        return best


def autotune(configs: Sequence[Config], key: Sequence[str], **options: Any) -> Callable[[Any], Autotuner]:
    """Decorator: `@sparsecc.autotune(configs=[Config({...}, num_warps=4)], key=["M", "N", "K"])`."""

    def wrap(fn: Any) -> Autotuner:
        return Autotuner(fn, configs, key, **options)

    return wrap
