"""`@sparsecc.jit`: a kernel's source, its parameters, and `kernel[grid](*args)` launches.

A launch specializes on its arguments (torch tensor -> `*fp16`, `*fp16:16` when it is on the
GPU and its data is 16-byte aligned, SparseTensor -> `*fp16:NV24`,
int -> i32/i64, with ':16' when it is a multiple of 16 and ':1' when it equals 1, as Triton
specializes them; float -> fp32, bool -> i1), compiles once per (signature, constexprs, options,
target) and dispatches: to the CPU interpreter when `SPARSECC_INTERPRET=1` or the tensors live
on the CPU, else to the GPU launcher for the current device's architecture.

Launch fast path: the first launch of a specialization goes through the full path above and
then stores, in a per-kernel dict, a prebuilt launch function under a cheap key: one token per
positional argument (a tensor's dtype and whether it is on the CPU, an int's i32/i64 range and
hint, a constexpr's value), the keyword arguments (constexprs and options only) and whether
`SPARSECC_INTERPRET` is set. Later launches with the same key compute only that key (by a
function generated once per positional-argument count, `_key_fn`) and call
the stored function, which flattens SparseTensors, resolves the grid and hands the arguments to
the launcher's per-kernel closure (checks, then packing and the driver call in one C call where
lib/launch.c is built). Anything else (keyword runtime arguments, unhashable constexprs,
bad types, a wrong argument count) takes the full path, which also reports errors. The
environment's switches are read on the full path only: after changing one inside a process,
`drop_fast_paths()` makes each kernel's next launch read them again.
"""

from __future__ import annotations

import importlib
import os
import sys
import warnings
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import sparsecc.language as tl
from sparsecc import formats
from sparsecc.compiler import CompileOptions
from sparsecc.defaults import NUM_CTAS, NUM_STAGES, NUM_WARPS
from sparsecc.frontend.compile import NONE_SIGNATURE, compile_with_options
from sparsecc.frontend.kernel import KernelFunction
from sparsecc.frontend.tracebacks import hide_compiler_frames
from sparsecc.runtime.grid import GRID_MAX, check_grid
from sparsecc.switches import SWITCHES

_OPTION_DEFAULTS = {"num_warps": NUM_WARPS, "num_stages": NUM_STAGES, "num_ctas": NUM_CTAS, "maxnreg": None}
_IGNORED_LAUNCH = frozenset({"launch_pdl"})
"""Triton launch keywords accepted and ignored: `launch_pdl` asks for programmatic dependent
launch, which Triton itself ignores where unsupported; sparsecc launches without it."""
_OPTIONS = frozenset(_OPTION_DEFAULTS) | frozenset(SWITCHES) | _IGNORED_LAUNCH
"""Launch keywords that are compile options, not kernel parameters (`num_warps=8`, `tma=False`)."""
_JIT_OPTIONS = frozenset({"do_not_specialize", "do_not_specialize_on_alignment", "debug", "launch_metadata",
                          "noinline", "repr"})
"""`@sparsecc.jit(...)` options, Triton's names. `do_not_specialize` / `..._on_alignment` change
the signature a launch compiles (see `JITFunction.unspecialize`); `debug`, `launch_metadata`
(a profiler hook), `noinline` (calls are always inlined) and `repr` are accepted hints that
change no code."""
_I32_MIN, _I32_MAX = -(2**31), 2**31 - 1


class InterpreterFallbackWarning(UserWarning):
    """A launch ran on the CPU interpreter because its tensors were on the CPU (said once per
    kernel): `warnings.simplefilter("ignore", InterpreterFallbackWarning)` silences it."""


_WARNED_CPU: set[str] = set()
"""Kernels whose CPU fallback was already announced."""


def _env_reader(name: str) -> Callable[[], Any]:
    """A cheap reader of one environment variable: `os.environ.get` re-encodes the name on
    every call (~1 µs); the mapping's own dict with the pre-encoded key costs ~0.1 µs and sees
    every change made through os.environ (monkeypatch.setenv included)."""
    data, encode = getattr(os.environ, "_data", None), getattr(os.environ, "encodekey", None)
    if isinstance(data, dict) and encode is not None:
        key = encode(name)
        return lambda: data.get(key)
    return lambda: os.environ.get(name)


_interpret_env = _env_reader("SPARSECC_INTERPRET")
_OFF = (None, "", "0", b"", b"0")


def interpret_forced() -> bool:
    """SPARSECC_INTERPRET set to anything but "" or "0"."""
    return _interpret_env() not in _OFF


_TENSOR: Any = None
"""torch.Tensor, once a launch has seen torch imported (jit itself does not import torch)."""
_SPARSE_CLASSES: set[type] = set()
"""Classes seen to be SparseTensor-like (values/meta/encoding), for the fast key."""


class _SpecCache(dict):  # type: ignore[type-arg]
    """Compiled specializations; clearing it also drops the fast-path launch functions."""

    def __init__(self, fast: dict[Any, Any]):
        super().__init__()
        self.fast = fast

    def clear(self) -> None:
        self.fast.clear()
        super().clear()

    def __delitem__(self, key: Any) -> None:
        self.fast.clear()
        super().__delitem__(key)

    def pop(self, *args: Any) -> Any:
        self.fast.clear()
        return super().pop(*args)


_KERNELS: weakref.WeakSet[JITFunction] = weakref.WeakSet()
"""Every live `@sparsecc.jit` kernel, for `drop_fast_paths`."""


def drop_fast_paths() -> None:
    """Drop every kernel's launch fast paths: each kernel's next launch takes the full path once,
    which reads the environment's switches again (`sparsecc.switches`). The fast path keeps the
    kernel its specialization's first launch compiled, so an A/B run inside one process calls
    this after changing a `SPARSECC_*` variable (compiled kernels stay cached, per switch value).

        >>> drop_fast_paths()  # after os.environ["SPARSECC_TMA"] = "0": next launches compile with tma=False
    """
    for kernel in list(_KERNELS):
        kernel.fast.clear()


class JITFunction(KernelFunction):
    """A Python function compiled to tt IR; launch it with `kernel[grid](*args, **meta)`."""

    def __init__(self, fn: Callable[..., Any], do_not_specialize: Sequence[int | str] = (),
                 do_not_specialize_on_alignment: Sequence[int | str] = (), debug: bool | None = None,
                 launch_metadata: Callable[..., Any] | None = None, noinline: bool | None = None,
                 repr: Callable[..., Any] | None = None):  # noqa: A002 - Triton's option name
        super().__init__(fn)
        self.no_specialize = self._param_set(do_not_specialize, "do_not_specialize")
        """Int parameters compiled without the ':1'/':16' hints of their values (as Triton)."""
        self.no_align = self._param_set(do_not_specialize_on_alignment, "do_not_specialize_on_alignment")
        """Int parameters compiled without the ':16' hint (multiple of 16) of their values."""
        self.debug, self.launch_metadata, self.noinline, self.repr = debug, launch_metadata, noinline, repr
        self.fast: dict[Any, Callable[[Any, Sequence[Any], dict[str, Any]], None]] = {}
        """Fast-path key -> prebuilt launch function (see the module docstring)."""
        _KERNELS.add(self)
        self.cache: dict[Any, Any] = _SpecCache(self.fast)
        self._cx_pos = tuple(n in self.constexpr_names for n in self.arg_names)
        self._key_fns: dict[int, Callable[[Sequence[Any], dict[str, Any]], Any]] = {}
        """Positional argument count -> its generated `fast_key` (see `_key_fn`)."""
        self._fast_kw = frozenset(self.constexpr_names) | _OPTIONS
        runtime_pos = [i for i, n in enumerate(self.arg_names) if n not in self.constexpr_names]
        self._min_args = (runtime_pos[-1] + 1) if runtime_pos else 0

    def _param_set(self, names: Sequence[int | str], option: str) -> frozenset[str]:
        """Parameter names from Triton's index-or-name list; a TypeError names a bad entry."""
        if isinstance(names, int | str):
            names = [names]
        out = set()
        for n in names:
            name = self.arg_names[n] if isinstance(n, int) and 0 <= n < len(self.arg_names) else n
            if name not in self.runtime_names:
                raise TypeError(f"@sparsecc.jit({option}=...) of {self.__name__}: {n!r} is not a runtime "
                                f"parameter (parameters: {self.params_text()})")
            out.add(name)
        return frozenset(out)

    def unspecialize(self, name: str, sig: str) -> str:
        """`sig` (from `specialize`) without the value hints `do_not_specialize*` turn off."""
        if name in self.no_specialize and not sig.startswith("*"):
            return sig.split(":")[0]
        if name in self.no_align and sig.endswith(":16"):
            return sig[:-3]
        return sig

    # ---- calling --------------------------------------------------------------------

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(
            f"{self.__name__} is a @sparsecc.jit kernel: launch it with {self.__name__}[grid](...) "
            "or call it from another @sparsecc.jit function"
        )

    def __getitem__(self, grid: Any) -> Callable[..., None]:
        fast, key_fns, key_fn = self.fast, self._key_fns, self._key_fn

        def launcher(*args: Any, **kwargs: Any) -> None:
            try:
                try:
                    entry = fast[(key_fns.get(len(args)) or key_fn(len(args)))(args, kwargs)]
                except (KeyError, TypeError):  # new specialization, or not fast-path material
                    self.run(grid, args, kwargs)
                    return
                entry(grid, args, kwargs)
            except Exception as e:  # a kernel's error shows its diagnostic, not our frames
                hide_compiler_frames(e)
                raise

        return launcher

    def fast_key(self, args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
        """The fast-path key of a launch (see the module docstring); None when the launch must
        take the full path. May raise TypeError (unhashable values): also the full path."""
        return (self._key_fns.get(len(args)) or self._key_fn(len(args)))(args, kwargs)

    def _key_fn(self, nargs: int) -> Callable[[Sequence[Any], dict[str, Any]], Any]:
        """`fast_key` for launches with `nargs` positional arguments, generated once per count
        with the loop over parameters unrolled (a launch pays ~half of the generic loop):

            one token per argument: a constexpr's `constexpr_key` (an int or str: itself); a
            tensor's (dtype, is on the CPU, on the CPU or 16-byte aligned); an int's value when it is 1, else (fits i32,
            multiple of 16) as `specialize` hints it;
            float/bool: the class; a SparseTensor: (class, logical dtype, on the CPU, encoding)
        then the keyword arguments (constexprs and options only, values by `constexpr_key`) and
        SPARSECC_INTERPRET."""
        if _TENSOR is None:  # torch not seen yet: every launch takes the full path for now
            return _no_key
        if nargs < self._min_args or nargs > len(self.arg_names):
            self._key_fns[nargs] = _no_key
            return _no_key
        names = [f"a{i}" for i in range(nargs)]
        lines = ["def key(args, kwargs):",
                 "    if kwargs and not kwargs.keys() <= FAST_KW:",
                 "        return None",
                 f"    ({''.join(n + ', ' for n in names)}) = args"]
        toks = []
        for a, cx in zip(names, self._cx_pos):
            if cx:  # an int or str stands for itself; anything else by its typed key (1 != 1.0 != True)
                lines.append(f"    k_{a} = {a} if {a}.__class__ is int or {a}.__class__ is str else CX({a})")
                toks.append(f"k_{a}")
                continue
            lines += [f"    c = {a}.__class__",
                      f"    if c is TENSOR: t_{a} = ({a}.dtype, {a}.is_cpu, {a}.is_cpu or {a}.data_ptr() & 15 == 0)",
                      f"    elif c is int: t_{a} = {a} if {a} == 1 else (I32_MIN <= {a} <= I32_MAX, {a} & 15 == 0)",
                      f"    elif c is float or c is bool: t_{a} = c",
                      f"    elif c in SPARSE: t_{a} = (c, getattr({a}, 'dtype', None) or {a}.values.dtype, {a}.values.is_cpu, {a}.encoding)",
                      "    else: return None"]
            toks.append(f"t_{a}")
        lines.append(f"    return ({nargs}, {''.join(t + ', ' for t in toks)}*(KW(kwargs) if kwargs else ()), "
                     "interpret_env() not in OFF)")
        env = {"FAST_KW": self._fast_kw, "TENSOR": _TENSOR, "SPARSE": _SPARSE_CLASSES,
               "CX": constexpr_key, "KW": _kw_key, "I32_MIN": _I32_MIN, "I32_MAX": _I32_MAX, "interpret_env": _interpret_env, "OFF": _OFF}
        exec(compile("\n".join(lines), f"<sparsecc launch key {self.__name__}/{nargs}>", "exec"), env)  # noqa: S102
        fn = self._key_fns[nargs] = env["key"]
        return fn

    def bind_launch(self, args: Sequence[Any], kwargs: dict[str, Any]) -> dict[str, Any]:
        """Name -> value for every parameter; TypeError naming the kernel and its parameters."""
        try:
            bound = self.signature.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{self.__name__}[grid](...): {e}; parameters are "
                            f"({self.params_text()})") from None
        bound.apply_defaults()
        return dict(bound.arguments)

    def run(self, grid: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> None:
        """Specialize, compile (cached) and launch."""
        given = kwargs
        kwargs = dict(kwargs)
        # checked, never truncated, by CompileOptions.create (num_warps=4.7 is an error)
        options = {k: kwargs.pop(k, d) for k, d in _OPTION_DEFAULTS.items()}
        switches = {k: kwargs.pop(k) for k in SWITCHES if k in kwargs}
        for k in _IGNORED_LAUNCH:
            kwargs.pop(k, None)
        named = self.bind_launch(args, kwargs)
        constexprs = {n: (v.value if isinstance(v, tl.constexpr) else v)
                      for n, v in named.items() if n in self.constexpr_names}
        runtime = {n: named[n] for n in self.runtime_names}
        signature = {n: self.unspecialize(n, specialize(v, n, self.__name__)) for n, v in runtime.items()}
        forced = interpret_forced()
        interpret = forced or _on_cpu(runtime.values())
        if interpret and not forced and self.__name__ not in _WARNED_CPU:
            _WARNED_CPU.add(self.__name__)
            warnings.warn(f"sparsecc: kernel '{self.__name__}' runs on the CPU interpreter because its tensors are "
                          "on the CPU: exact, but orders of magnitude slower than the GPU; move the tensors "
                          "to CUDA, or set SPARSECC_INTERPRET=1 to ask for the interpreter (and silence this)",
                          InterpreterFallbackWarning, stacklevel=3)
        target = None if interpret else current_target()
        try:
            compile_options = CompileOptions.create(target=target, **options, **switches)
        except (TypeError, ValueError) as e:  # a bad option: name the launch it came with
            raise type(e)(f"{self.__name__}[grid](...): {e}") from None
        key = (tuple(signature.items()), tuple((k, constexpr_key(v)) for k, v in constexprs.items()),
               compile_options)
        compiled = self.cache.get(key)
        if compiled is None:
            compiled = compile_with_options(self, signature, constexprs, compile_options)
            self.cache[key] = compiled
        meta = {**named, **constexprs, **options}
        launch_grid = normalize_grid(grid(meta) if callable(grid) else grid, f"{self.__name__}[grid]")
        flat = flatten_args(runtime.values())
        if interpret:
            interpreter = importlib.import_module("sparsecc.runtime.interpreter")
            interpreter.run(compiled.module, compiled.name, launch_grid, flat)
        else:
            launcher = importlib.import_module("sparsecc.runtime.launcher")
            launcher.launch(compiled, launch_grid, flat, options["num_warps"])
        self._remember(args, given, compiled, interpret, options["num_warps"])

    def _remember(self, args: Sequence[Any], kwargs: dict[str, Any], compiled: Any, interpret: bool,
                  num_warps: int) -> None:
        """After a full-path launch: store the fast-path launch function under its key."""
        global _TENSOR
        if _TENSOR is None and "torch" in sys.modules:
            _TENSOR = sys.modules["torch"].Tensor
        for a in args:
            if _is_sparse_tensor(a):
                _SPARSE_CLASSES.add(a.__class__)
        try:
            key = self.fast_key(args, kwargs)
            if key is None:
                return
            hash(key)
        except TypeError:
            return
        self.fast[key] = self._make_entry(compiled, interpret, num_warps, len(args))

    def _make_entry(self, compiled: Any, interpret: bool, num_warps: int,
                    nargs: int) -> Callable[[Any, Sequence[Any], dict[str, Any]], None]:
        """A launch function for one fast-path key: flatten + grid + the launcher's closure."""
        parts = []
        for i, n in enumerate(self.arg_names):
            if n in self.constexpr_names:
                continue
            if compiled.signature[n] == NONE_SIGNATURE:  # compiled in: nothing to pass
                continue
            fmt = formats.of_signature(compiled.signature[n])
            parts += [f"args[{i}].{a.suffix}" for a in fmt.arrays] if fmt else [f"args[{i}]"]
        if interpret:
            def go(gx: int, gy: int, gz: int, flat: list[Any]) -> None:
                interpreter = importlib.import_module("sparsecc.runtime.interpreter")
                interpreter.run(compiled.module, compiled.name, (gx, gy, gz), flat)
        else:
            launcher = importlib.import_module("sparsecc.runtime.launcher")
            make = getattr(launcher, "fast_launcher", None)
            if make is not None:
                go = make(compiled, num_warps)
            else:  # a stand-in launcher module (tests)
                def go(gx: int, gy: int, gz: int, flat: list[Any]) -> None:
                    launcher.launch(compiled, (gx, gy, gz), flat, num_warps)
        env = {"go": go, "grid3": _grid3, "meta_of": self._grid_meta, "NAME": f"{self.__name__}[grid]"}
        src = "\n".join([
            "def entry(grid, args, kwargs):",
            "    if grid.__class__ is not tuple and callable(grid):",
            "        grid = grid(meta_of(args, kwargs))",
            "    gx, gy, gz = grid3(grid, NAME)",
            f"    go(gx, gy, gz, [{', '.join(parts)}])",
        ])
        exec(compile(src, f"<sparsecc launch {self.__name__}>", "exec"), env)  # noqa: S102
        return env["entry"]

    def _grid_meta(self, args: Sequence[Any], kwargs: dict[str, Any]) -> dict[str, Any]:
        """What a callable grid receives: every parameter by name (constexprs unwrapped) + options."""
        named = self.bind_launch(args, {k: v for k, v in kwargs.items() if k not in _OPTIONS})
        meta = {n: (v.value if isinstance(v, tl.constexpr) else v) for n, v in named.items()}
        for k, d in _OPTION_DEFAULTS.items():
            v = kwargs.get(k, d)
            meta[k] = v if v is None else int(v)
        return meta


def _no_key(args: Sequence[Any], kwargs: dict[str, Any]) -> None:
    """The fast-path key of launches that always take the full path."""
    return None


def constexpr_key(v: Any) -> Any:
    """A constexpr's value as a cache key that tells apart values Python calls equal but a
    kernel does not: 1, 1.0 and True (an i32, an fp32 and an i1 constant), 0.0 and -0.0; and
    that matches a NaN with itself. Specializations are keyed by it, in memory and on the fast
    path (the disk cache keys by the printed value, which already differs).

        >>> constexpr_key(1) == constexpr_key(1.0), constexpr_key(-0.0) == constexpr_key(0.0)
        (False, False)
    """
    if isinstance(v, tl.constexpr):
        v = v.value
    c = v.__class__
    if c is int or c is str or v is None:
        return v
    if c is bool:
        return (bool, v)
    if isinstance(v, float):  # repr is exact and spells -0.0 and nan
        return (c, repr(v))
    if c is tuple or c is list:
        return (c, tuple(constexpr_key(x) for x in v))
    try:
        hash(v)
        return (c, v)
    except TypeError:  # unhashable (a dict): by its text
        return (c, repr(v))


def _kw_key(kwargs: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    """The fast-path key's part for keyword arguments (constexprs and options)."""
    return tuple((k, v if v.__class__ is int else constexpr_key(v)) for k, v in kwargs.items())


def jit(fn: Callable[..., Any] | None = None, **options: Any) -> Any:
    """Decorator: `@sparsecc.jit`, `@sparsecc.jit()` or `@sparsecc.jit(do_not_specialize=["n"])`
    turns a function into a JITFunction; the options are Triton's (`_JIT_OPTIONS`)."""
    unknown = sorted(set(options) - _JIT_OPTIONS)
    if unknown:
        raise TypeError(f"sparsecc.jit got unknown options {unknown} (it takes {', '.join(sorted(_JIT_OPTIONS))})")
    if fn is None:
        return lambda f: JITFunction(f, **options)
    return JITFunction(fn, **options)


# --------------------------------------------------------------------------------------
# Launch helpers
# --------------------------------------------------------------------------------------

_TORCH_DTYPES = {
    "float16": "fp16", "bfloat16": "bf16", "float32": "fp32", "int8": "i8", "int16": "i16",
    "int32": "i32", "int64": "i64", "float8_e4m3fn": "fp8e4nv", "float8_e5m2": "fp8e5",
    "bool": "i1", "float64": "fp64", "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
}


def _is_sparse_tensor(v: Any) -> bool:
    return (not _is_torch_tensor(v) and hasattr(v, "values") and hasattr(v, "meta")
            and isinstance(getattr(v, "encoding", None), str))


def _logical_dtype(v: Any) -> Any:
    """A sparse tensor's element type as kernels see it: its `dtype` (a QuantizedSparseTensor's
    values are int8 codes, its dtype the scales' fp16/bf16), else its values' dtype."""
    dtype = getattr(v, "dtype", None)
    return v.values.dtype if dtype is None else dtype


def _is_torch_tensor(v: Any) -> bool:
    return type(v).__module__.startswith("torch") and hasattr(v, "data_ptr")


def _dtype_name(torch_dtype: Any, param: str, kernel: str) -> str:
    name = str(torch_dtype).removeprefix("torch.")
    if name not in _TORCH_DTYPES:
        raise TypeError(f"{kernel}: argument '{param}' has unsupported dtype {torch_dtype} "
                        f"(supported: {', '.join('torch.' + k for k in _TORCH_DTYPES)})")
    return _TORCH_DTYPES[name]


def specialize(v: Any, param: str, kernel: str) -> str:
    """The signature type string a runtime argument compiles as."""
    if _is_sparse_tensor(v):
        return f"*{_dtype_name(_logical_dtype(v), param, kernel)}:{v.encoding}"
    if _is_torch_tensor(v):
        # GPU data on a 16-byte boundary (every torch allocation, not every view) may move in
        # 128-bit vectors; the interpreter reads no alignment, so CPU tensors carry no hint
        aligned = not v.is_cpu and v.data_ptr() & 15 == 0
        return f"*{_dtype_name(v.dtype, param, kernel)}" + (":16" if aligned else "")
    if v is None:  # as Triton: the parameter is the constant None in the body (`if W is None:`)
        return NONE_SIGNATURE
    if isinstance(v, bool):
        return "i1"
    if isinstance(v, int):
        hint = ":1" if v == 1 else (":16" if v % 16 == 0 else "")
        if -(2**31) <= v < 2**31:
            return "i32" + hint
        if -(2**63) <= v < 2**63:
            return "i64" + hint
        if 2**63 <= v < 2**64:  # as Triton: the kernel sees a tl.uint64
            return "u64" + hint
        raise TypeError(f"{kernel}: integer argument '{param}' = {v} does not fit in 64 bits")
    if isinstance(v, float):
        return "fp32"
    raise TypeError(f"{kernel}: argument '{param}' of type {type(v).__name__} cannot be passed to a "
                    "kernel (tensors, SparseTensors, ints, floats and bools can)")


def flatten_args(values: Sequence[Any] | Any) -> list[Any]:
    """Runtime arguments as the decomposed kernel takes them: a SparseTensor becomes the arrays
    its format decomposes into (NV24: values, meta)."""
    flat: list[Any] = []
    for v in values:
        if v is None:  # a None argument is compiled in (NONE_SIGNATURE): the kernel takes no value
            continue
        if _is_sparse_tensor(v):
            flat.extend(getattr(v, a.suffix) for a in formats.lookup(v.encoding).arrays)
        else:
            flat.append(v)
    return flat


def _grid3(g: Any, kernel: str = "") -> tuple[int, int, int]:
    """normalize_grid, with the common tuple-of-ints case first (the same limits, inline)."""
    if g.__class__ is tuple:
        n = len(g)
        if n == 1:
            gx, gy, gz = g[0], 1, 1
        elif n == 2:
            gx, gy, gz = g[0], g[1], 1
        elif n == 3:
            gx, gy, gz = g
        else:
            return normalize_grid(g, kernel)
        if (gx.__class__ is int and gy.__class__ is int and gz.__class__ is int
                and 0 <= gx <= _GX_MAX and 0 <= gy <= _GYZ_MAX and 0 <= gz <= _GYZ_MAX):
            return gx, gy, gz
    return normalize_grid(g, kernel)


_GX_MAX, _GYZ_MAX = GRID_MAX[0], GRID_MAX[1]


def normalize_grid(grid: Any, kernel: str = "") -> tuple[int, int, int]:
    """A launch's grid as (x, y, z): `sparsecc.runtime.grid.check_grid` (ints only, within
    CUDA's limits), which the interpreter and the GPU launcher apply too."""
    return check_grid(grid, kernel)


def _on_cpu(values: Any) -> bool:
    devices = set()
    for v in values:
        if _is_sparse_tensor(v):
            v = v.values
        if _is_torch_tensor(v):
            devices.add(v.device.type)
    if len(devices) > 1:
        raise ValueError(f"kernel arguments live on different devices: {sorted(devices)}")
    return devices == {"cpu"} or not devices


def current_target() -> str:
    """`sm_XY` of the current CUDA device (`sm_90a` on Hopper)."""
    import torch

    index = torch.cuda.current_device()
    target = _TARGETS.get(index)
    if target is None:  # asked on every sparse_mm call: look the device up once
        major, minor = torch.cuda.get_device_capability(index)
        # Hopper: the arch-specific target, which adds wgmma.mma_async.sp
        target = _TARGETS[index] = "sm_90a" if (major, minor) == (9, 0) else f"sm_{major}{minor}"
    return target


_TARGETS: dict[int, str] = {}
