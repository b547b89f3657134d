"""`@sparsecc.autotune(configs=[...], key=[...])`: pick the fastest config per problem key.

Like Triton's autotuner: the first launch for a new value of the `key` arguments times every
config (median of a few runs, after a warm-up that also compiles), remembers the winner in
memory and on disk, and later launches go straight to it. A config that fails to compile or
launch is skipped, not fatal, unless every config fails. A progress line is printed to stderr
while tuning.

The disk file lies in `<cache folder>/autotune/` (the compile cache's folder: `$SPARSECC_CACHE_DIR`,
else `~/.cache/sparsecc`; `SPARSECC_CACHE=0` turns it off) and is named after the kernel, the GPU
and a hash of what the winners depend on: the kernel's qualified name and source, the config
list and the key names. The file is not trusted: one of another kernel or config list, or that
is not what `_save` writes, is ignored with an `AutotuneCacheWarning`, and so is a stored winner
that is not in the config list (the key is tuned again). A folder that cannot be read or
written is warned about too; tuning goes on in memory.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sparsecc.defaults import NUM_STAGES, NUM_WARPS
from sparsecc.runtime import cache


@dataclass(frozen=True)
class Config:
    """Meta-parameters (constexprs) plus launch options of one candidate; `maxnreg` caps the
    registers a thread, as Triton's `Config(..., maxnreg=128)`.

        >>> str(Config({"BLOCK": 64}, num_warps=8, maxnreg=128))
        'BLOCK=64, num_warps=8, num_stages=3, maxnreg=128'
    """

    kwargs: dict[str, Any] = field(default_factory=dict)
    num_warps: int = NUM_WARPS
    num_stages: int = NUM_STAGES
    maxnreg: int | None = None

    def all_kwargs(self) -> dict[str, Any]:
        extra = {} if self.maxnreg is None else {"maxnreg": self.maxnreg}
        return {**self.kwargs, "num_warps": self.num_warps, "num_stages": self.num_stages, **extra}

    def to_json(self) -> dict[str, Any]:
        extra = {} if self.maxnreg is None else {"maxnreg": self.maxnreg}
        return {"kwargs": self.kwargs, "num_warps": self.num_warps, "num_stages": self.num_stages, **extra}

    @staticmethod
    def from_json(d: dict[str, Any]) -> Config:
        maxnreg = d.get("maxnreg")
        return Config(dict(d["kwargs"]), int(d["num_warps"]), int(d["num_stages"]),
                      None if maxnreg is None else int(maxnreg))

    def __str__(self) -> str:
        kv = ", ".join(f"{k}={v}" for k, v in self.kwargs.items())
        extra = "" if self.maxnreg is None else f", maxnreg={self.maxnreg}"
        return f"{kv}, num_warps={self.num_warps}, num_stages={self.num_stages}{extra}"


class AutotuneCacheWarning(UserWarning):
    """The autotuner's disk file could not be read, written or trusted; tuning goes on in memory.

        warnings.simplefilter("error", sparsecc.runtime.autotune.AutotuneCacheWarning)  # in a test
    """


def _warn(message: str) -> None:
    warnings.warn(f"sparsecc autotune: {message}", AutotuneCacheWarning, stacklevel=3)


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


def cpu_timer(fn: Callable[[], None], reps: int = 2) -> float:
    """Median milliseconds of `fn` on the CPU interpreter: one warm-up run (it compiles), then
    `reps` timed runs, without CUDA events or synchronisation (there is no GPU to wait for)."""
    fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return sorted(times)[len(times) // 2]


def _runs_on_cpu(args: Sequence[Any], kwargs: dict[str, Any]) -> bool:
    """Whether a launch with these arguments runs on the CPU interpreter (SPARSECC_INTERPRET
    set, or no argument lives on a GPU: `kernel[grid]`'s rule), where the GPU timer cannot
    time it."""
    if os.environ.get("SPARSECC_INTERPRET", "") not in ("", "0"):
        return True
    for v in [*args, *kwargs.values()]:
        v = getattr(v, "values", v) if not hasattr(v, "device") else v  # a SparseTensor: its values
        device = getattr(v, "device", None)
        if device is not None and getattr(device, "type", "cpu") != "cpu":
            return False
    return True


def _json_form(config: Config) -> Any:
    """`config` as it reads back from the disk file (tuples become lists, ...)."""
    return json.loads(json.dumps(config.to_json(), default=repr))


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

    @functools.cached_property
    def _ident(self) -> tuple[str, str]:
        """(qualified name, sha256 hex) of what the stored winners depend on."""
        fn = self.fn
        name = str(getattr(fn, "__name__", None) or type(fn).__name__)
        qualname = getattr(getattr(fn, "fn", fn), "__qualname__", None) or name
        ident = f"{getattr(fn, '__module__', '?')}:{qualname}"
        source = cache.kernel_source(fn) if getattr(fn, "__sparsecc_jit__", False) else str(getattr(fn, "src", ""))
        blob = json.dumps({"kernel": ident, "source": source, "key": self.key,
                           "configs": [c.to_json() for c in self.configs]}, sort_keys=True, default=repr)
        return ident, hashlib.sha256(blob.encode()).hexdigest()

    @property
    def _disk_path(self) -> str:
        ident, digest = self._ident
        name = ident.rpartition(":")[2].replace("<", "").replace(">", "")
        return os.path.join(str(cache.cache_dir()), "autotune", f"{name}-{_device_tag()}-{digest[:16]}.json")

    def _load(self) -> None:
        """Read the stored winners (once); anything not trustworthy is skipped with a warning."""
        if self._loaded:
            return
        self._loaded = True
        if not cache.enabled():
            return
        path = self._disk_path
        try:
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
        except FileNotFoundError:
            return
        except OSError as e:
            _warn(f"cannot read {path} ({e.strerror or e}); tuning again")
            return
        except (ValueError, RecursionError):
            _warn(f"{path} is not valid JSON; ignoring it and tuning again")
            return
        ident, digest = self._ident
        if (not isinstance(data, dict) or data.get("id") != digest or not isinstance(data.get("best"), dict)):
            _warn(f"{path} is not the autotune file of {ident} with this config list; ignoring it")
            return
        # a stored winner is used only when it is one of the configs (compared in JSON form)
        known = [_json_form(c) for c in self.configs]
        for key, stored in data["best"].items():
            try:
                self.best[key] = self.configs[known.index(stored)]
            except ValueError:
                _warn(f"{path}: the winner stored for {key[:80]} is not among {ident}'s configs; tuning it again")

    def _save(self) -> None:
        """Write the winners atomically; a folder that cannot take them is a warning."""
        if not cache.enabled():
            return
        path = self._disk_path
        ident, digest = self._ident
        text = json.dumps({"kernel": ident, "id": digest, "best": {k: c.to_json() for k, c in self.best.items()}},
                          indent=1, default=repr)
        tmp = None
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".autotune-", suffix=".tmp", dir=os.path.dirname(path))
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
            os.chmod(tmp, cache._FILE_MODE)  # mkstemp's 0600 would keep a shared cache folder private
            os.replace(tmp, path)
        except OSError as e:
            if tmp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
            _warn(f"cannot write {path} ({e.strerror or e}); the winner is kept in memory only")

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
        # the default timer uses CUDA (do_bench, synchronize): on the interpreter every config
        # failed with it, so there the configs are timed by the wall clock
        timer = cpu_timer if self.timer is default_timer and _runs_on_cpu(args, kwargs) else self.timer
        for i, cfg in enumerate(self.configs):
            if self.verbose:
                print(f"\rsparsecc autotune {key}: config {i + 1}/{len(self.configs)} ({cfg})",
                      end="", file=sys.stderr, flush=True)
            try:
                ms = timer(lambda cfg=cfg: self.fn[grid](*args, **kwargs, **cfg.all_kwargs()))
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
