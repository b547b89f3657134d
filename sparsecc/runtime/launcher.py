"""Launch a compiled kernel on the GPU: check arguments, pack them, call the driver.

Everything that does not change between launches is worked out once, at a kernel's first launch
on a device, into a `LaunchPlan` cached on the CompiledKernel: the loaded `CudaKernel`, one
converter per parameter (type checks + value extraction), the block size and the dynamic
shared-memory size, and a generated function that checks and packs all arguments inline. A
later launch runs only that function and one driver call.

Argument rules (checked on every launch, each failure a ValueError naming the argument):
* a pointer parameter `*fp16` takes a CUDA torch.Tensor of exactly that dtype, on the device
  of the other tensor arguments;
* the arrays of a SparseTensor (`A.values`, `A.meta`: its format's arrays, `sparsecc.formats`)
  must be contiguous; any other tensor is passed by its raw data pointer whatever its strides,
  as Triton passes it (the kernel addresses it with the strides it is given);
* a tensor the kernel addresses through a block pointer starts at a multiple of 16 bytes
  (ALIGNMENT): the lowering's vector accesses assume it;
* `i32`/`i64` take Python ints in range, `fp32` a float or int, `i1` a bool or int.
"""

from __future__ import annotations

import contextlib
import importlib
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from sparsecc import formats
from sparsecc.analysis.kernel_params import contiguous_params
from sparsecc.defaults import NUM_WARPS
from sparsecc.runtime.grid import GRID_MAX, check_grid

__all__ = ["LaunchPlan", "contiguous_params", "fast_launcher", "launch", "plan_for"]

_TORCH = {
    "fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32, "fp64": torch.float64,
    "i1": torch.bool, "i8": torch.int8, "i16": torch.int16, "i32": torch.int32, "i64": torch.int64,
    "u8": torch.uint8, "u16": getattr(torch, "uint16", None), "u32": getattr(torch, "uint32", None),
    "u64": getattr(torch, "uint64", None),
    "fp8e4nv": getattr(torch, "float8_e4m3fn", None),
    "fp8e5": getattr(torch, "float8_e5m2", None),
}
_INT_RANGE = {"i32": (-(2**31), 2**31 - 1), "i64": (-(2**63), 2**63 - 1), "i1": (0, 1),
              "u32": (0, 2**32 - 1), "u64": (0, 2**64 - 1)}
ALIGNMENT = 16
"""Bytes every block-pointer base's address is a multiple of: lower_mem emits 16-byte vector
accesses from the base pointer without a run-time test of it."""
_SHARED_KEYS = ("shared_bytes", "shared", "dynamic_shared_bytes", "smem_bytes", "shared_mem")
_PLAN_ATTR = "_sparsecc_launch_plan"
_LOCK = threading.Lock()


# --------------------------------------------------------------------------------------
# Per-parameter converters
# --------------------------------------------------------------------------------------

Converter = Callable[[Any, int], Any]
"""(argument, device index) -> the value the driver packs (pointer as int, scalar as-is)."""


def _pointer(kernel: str, name: str, kind: str, need_contiguous: bool, need_aligned: bool = True) -> Converter:
    elem = kind[1:].split(":")[0]
    dtype = _TORCH.get(elem)
    tensor_type = torch.Tensor
    what = f"{kernel}: argument '{name}'"

    def convert(arg: Any, device: int) -> int:
        if not isinstance(arg, tensor_type):
            raise ValueError(f"{what} ({kind}) must be a CUDA torch.Tensor of {dtype}, got "
                             f"{type(arg).__name__}")
        if arg.dtype is not dtype:
            raise ValueError(f"{what} ({kind}) must have dtype {dtype}, got {arg.dtype}")
        if arg.get_device() != device:
            where = "the CPU" if not arg.is_cuda else str(arg.device)
            raise ValueError(f"{what} is on {where}, but the kernel runs on cuda:{device}: move "
                             "it with .cuda() (every tensor argument must be on the same GPU)")
        if need_contiguous and not arg.is_contiguous():
            raise ValueError(f"{what} must be contiguous (the kernel addresses it without "
                             f"runtime strides), got strides {tuple(arg.stride())}; pass "
                             ".contiguous()")
        ptr = arg.data_ptr()
        if need_aligned and ptr % ALIGNMENT:
            raise ValueError(f"{what} must start at a {ALIGNMENT}-byte aligned address (block-pointer "
                             f"and '*T:16' accesses are compiled as 16-byte vectors), but data_ptr() % {ALIGNMENT} "
                             f"= {ptr % ALIGNMENT} (a view at an offset?); pass .clone()")
        return ptr

    return convert


def _integer(kernel: str, name: str, kind: str) -> Converter:
    lo, hi = _INT_RANGE[kind]

    def convert(arg: Any, device: int) -> int:  # noqa: ARG001
        if type(arg) is not int:
            if isinstance(arg, bool | int):
                arg = int(arg)
            elif isinstance(arg, torch.Tensor):
                raise ValueError(f"{kernel}: argument '{name}' ({kind}) is a tensor; pass a "
                                 "Python int (e.g. x.item() or x.shape[0])")
            else:
                raise ValueError(f"{kernel}: argument '{name}' ({kind}) must be an int, got "
                                 f"{type(arg).__name__}")
        if not lo <= arg <= hi:
            raise ValueError(f"{kernel}: argument '{name}' = {arg} does not fit in {kind}")
        return arg

    return convert


def _float(kernel: str, name: str, kind: str) -> Converter:
    def convert(arg: Any, device: int) -> float:  # noqa: ARG001
        if isinstance(arg, float | int) and not isinstance(arg, bool):
            return float(arg)
        raise ValueError(f"{kernel}: argument '{name}' ({kind}) must be a float, got "
                         f"{type(arg).__name__}")

    return convert


def _converter(kernel: str, name: str, kind: str, need_contiguous: bool, need_aligned: bool = True) -> Converter:
    if kind.startswith("*"):
        if _TORCH.get(kind[1:].split(":")[0]) is None:
            raise ValueError(f"{kernel}: parameter '{name}' has unsupported pointer type {kind}")
        return _pointer(kernel, name, kind, need_contiguous, need_aligned)
    kind = kind.split(":")[0]  # an integer's ':16' / ':1' hint was checked when it specialized
    if kind in _INT_RANGE:
        return _integer(kernel, name, kind)
    if kind in ("fp32", "fp16", "bf16", "fp64"):
        return _float(kernel, name, kind)
    raise ValueError(f"{kernel}: parameter '{name}' has unsupported type {kind}")


def make_packer(kinds: Sequence[str], contiguous: Sequence[bool], converters: Sequence[Converter],
                aligned: Sequence[bool] | None = None) -> Callable[[Sequence[Any], int], list[Any]]:
    """One generated function that checks and packs every argument without a call per argument.

    The fast path is inline comparisons (exact type, dtype identity, device, contiguity, int
    range); whenever one fails, the argument's converter runs, which either coerces it (a bool
    for an int) or raises the ValueError naming it.
    """
    env: dict[str, Any] = {"T": torch.Tensor, "C": tuple(converters)}
    lines = ["def pack(args, device):", f"    ({''.join(f'a{i}, ' for i in range(len(kinds)))}) = args"]
    out = []
    aligned = [True] * len(kinds) if aligned is None else aligned
    for i, (kind, contig) in enumerate(zip(kinds, contiguous)):
        a = f"a{i}"
        if kind.startswith("*"):
            env[f"D{i}"] = _TORCH.get(kind[1:].split(":")[0])
            cond = (f"{a}.__class__ is T and {a}.dtype is D{i} and {a}.get_device() == device"
                    + (f" and {a}.is_contiguous()" if contig else ""))
            if aligned[i]:
                lines += [f"    if {cond} and not (p{i} := {a}.data_ptr()) % {ALIGNMENT}:", f"        {a} = p{i}"]
            else:
                lines += [f"    if {cond}:", f"        {a} = {a}.data_ptr()"]
            lines += ["    else:", f"        {a} = C[{i}]({a}, device)"]
        elif kind in _INT_RANGE:
            lo, hi = _INT_RANGE[kind]
            lines += [f"    if {a}.__class__ is not int or not {lo} <= {a} <= {hi}:",
                      f"        {a} = C[{i}]({a}, device)"]
        else:
            lines += [f"    if {a}.__class__ is not float:", f"        {a} = C[{i}]({a}, device)"]
        out.append(a)
    lines.append(f"    return [{', '.join(out)}]")
    exec(compile("\n".join(lines), "<sparsecc launcher>", "exec"), env)  # noqa: S102
    return env["pack"]


# --------------------------------------------------------------------------------------
# Which pointers the kernel assumes contiguous
# --------------------------------------------------------------------------------------


def _module_of(compiled: Any) -> Any:
    """The decomposed module: kept on the CompiledKernel, or re-parsed from its text."""
    module = getattr(compiled, "module", None)
    if module is not None:
        return module
    text = getattr(compiled, "asm", {}).get("ttir-decomposed")
    if not isinstance(text, str):
        return None
    try:
        from xdsl.parser import Parser

        from sparsecc.dialects import make_context

        return Parser(make_context(), text).parse_module()
    except Exception:  # the analysis is a convenience check; without IR, skip it
        return None


# --------------------------------------------------------------------------------------
# The plan
# --------------------------------------------------------------------------------------


@dataclass
class LaunchPlan:
    """What launches of one compiled kernel need, computed once; `kernels` holds one loaded
    CudaKernel per device index, loaded at the first launch there."""

    name: str
    cubin: bytes
    converters: tuple[Converter, ...]
    pack: Callable[[Sequence[Any], int], list[Any]]
    names: tuple[str, ...]
    block: tuple[int, int, int]
    shared_bytes: int
    driver_kinds: list[str]
    kernels: dict[int, Any]
    pointer_index: int
    """Index of the first pointer parameter (its tensor decides the device), -1 if none."""
    raw: dict[int, Callable[..., None]] = field(default_factory=dict)
    """device -> `(gx, gy, gz, packed values, stream)` launch function of the loaded kernel."""

    def raw_launch(self, device: int) -> Callable[..., None]:
        """The fastest launch function of this kernel on `device` (loading it if needed)."""
        fn = self.raw.get(device)
        if fn is None:
            k = self.kernel(device)
            bind = getattr(k, "raw_launcher", None)
            if bind is not None:
                fn = bind(self.block, self.shared_bytes)
            else:  # a driver without the raw path (tests' stand-ins): its launch()
                block, smem = self.block, self.shared_bytes

                def fn(gx: int, gy: int, gz: int, values: list[Any], stream: int) -> None:
                    k.launch((gx, gy, gz), block, values, smem, stream)

            self.raw[device] = fn
        return fn

    def kernel(self, device: int) -> Any:
        k = self.kernels.get(device)
        if k is None:
            with _LOCK:
                k = self.kernels.get(device)
                if k is None:
                    try:
                        k = _load_kernel(self.cubin, self.name, self.driver_kinds,
                                         self.shared_bytes, device)
                    except Exception as e:
                        raise RuntimeError(f"{self.name}: loading the cubin on cuda:{device} "
                                           f"failed: {e}") from None
                    self.kernels[device] = k
        return k


def _param_kinds(compiled: Any) -> tuple[list[str], list[str]]:
    """Signature kinds ("*fp16", "i32", ...) and names of the decomposed kernel's parameters."""
    kinds = list(getattr(compiled, "flat_signature", None) or [])
    names = list(getattr(compiled, "flat_arg_names", None) or [])
    if len(names) != len(kinds):
        names = [f"#{i}" for i in range(len(kinds))]
    return kinds, names


def _shared_bytes(meta: dict[str, Any]) -> int:
    for k in _SHARED_KEYS:
        if k in meta:
            return int(meta[k])
    return 0


_DRIVER_KIND = {"i1": "i32", "i32": "i32", "i64": "i64", "fp32": "f32", "u32": "u32", "u64": "u64"}


def _driver_kinds(meta: dict[str, Any], kinds: Sequence[str], tensor_maps: int = 0) -> list[str]:
    """Param kinds as driver.CudaKernel packs them: the lowering's own list when it gave one
    (`params`: (name, kind) pairs, or `param_kinds`), else derived from the signature (pointers
    as "ptr"; an i1 travels as a 32-bit word, whose low byte is what a byte-sized param reads),
    followed by the lowering's tensor maps ("tmap", 128 bytes each)."""
    for key in ("param_kinds", "params"):
        given = meta.get(key)
        if isinstance(given, list | tuple) and len(given) == len(kinds) + tensor_maps:
            out = [str(k[1] if isinstance(k, list | tuple) else k) for k in given]
            # the lowering's IR is signless: a "u32"/"u64" scalar packs as unsigned bits
            return [{"i32": "u32", "i64": "u64"}[d] if s in ("u32", "u64") and d in ("i32", "i64") else d
                    for d, s in zip(out, [*kinds, *["tmap"] * tensor_maps])]
    return ["ptr" if k.startswith("*") else _DRIVER_KIND.get(k, k) for k in kinds] + ["tmap"] * tensor_maps


def _with_tensor_maps(pack: Callable[[Sequence[Any], int], list[Any]], recipes: list[dict[str, Any]], kernel: str,
                      names: Sequence[str]) -> Callable[[Sequence[Any], int], list[Any]]:
    """`pack` followed by the bytes of the kernel's tensor maps, built from the packed values
    (remembered per value of the arguments they read: a repeated launch pays one lookup)."""
    from sparsecc.analysis.tma import allocations_of, arguments_of
    from sparsecc.runtime.tensor_map import available_elements, encode

    exprs = [e for r in recipes for e in (*r["dims"], *r["strides"], *(x for g in r.get("guards", ()) for x in g))]
    used = sorted({r["arg"] for r in recipes} | {i for e in exprs for i in arguments_of(e)})
    # tma_extents' maps also read how much each of these arguments' allocations holds
    sized = sorted({i for e in exprs for i in allocations_of(e)})
    memo: dict[tuple[Any, ...], list[bytes]] = {}

    def pack_with_maps(args: Sequence[Any], device: int) -> list[Any]:
        values = pack(args, device)
        available = {i: available_elements(args[i]) for i in sized}
        key = (*(values[i] for i in used), *available.values())
        maps = memo.get(key)
        if maps is None:
            maps = [encode(r, values, kernel, names, available) for r in recipes]
            if len(memo) >= 256:
                memo.clear()
            memo[key] = maps
        return values + maps

    return pack_with_maps


def _load_kernel(cubin: bytes, name: str, kinds: list[str], shared_bytes: int, device: int) -> Any:
    """A driver.CudaKernel for `name` in `cubin`, loaded into `device`'s (torch's) context."""
    driver = importlib.import_module("sparsecc.runtime.driver")  # sys.modules' (stand-ins too)
    on_device = torch.cuda.device(device) if torch.cuda.is_available() else contextlib.nullcontext()
    with on_device:
        return driver.CudaKernel(cubin, name, kinds, shared_bytes=shared_bytes)


def plan_for(compiled: Any, num_warps: int | None = None) -> LaunchPlan:
    """The launch plan of `compiled`, built at its first launch and cached on it."""
    plan: LaunchPlan | None = getattr(compiled, _PLAN_ATTR, None)
    if plan is not None:
        return plan
    with _LOCK:
        plan = getattr(compiled, _PLAN_ATTR, None)
        if plan is not None:
            return plan
        meta = getattr(compiled, "metadata", {}) or {}
        name = str(meta.get("name") or getattr(compiled, "name", "kernel"))
        cubin = getattr(compiled, "asm", {}).get("cubin")
        if not isinstance(cubin, bytes | bytearray):
            raise RuntimeError(f"{name}: no cubin to launch (compiled for target "
                               f"{getattr(compiled, 'target', None)!r}; asm has "
                               f"{sorted(getattr(compiled, 'asm', {}))})")
        kinds, names = _param_kinds(compiled)
        # as Triton, a user tensor is passed by its raw data pointer whatever its strides (the
        # kernel addresses it with the strides it is given; CompiledKernel.contiguous, the pointers
        # it addresses with compile-time strides alone, is not enforced); only a SparseTensor's
        # arrays, whose layout the format fixes, must be contiguous.
        contig = [formats.is_array_name(n) for n in names]
        bases = getattr(compiled, "aligned", None)  # block-pointer bases (None: unknown, all)
        # and pointers compiled as "*fp32:16" (aligned by specialization: checked, never assumed)
        aligned = [bases is None or i in bases or kinds[i].endswith(":16") for i in range(len(names))]
        converters = tuple(_converter(name, n, k, c, al) for n, k, c, al in zip(names, kinds, contig, aligned))
        warps = int(meta.get("num_warps") or num_warps or getattr(compiled, "num_warps", NUM_WARPS))
        pack = make_packer(kinds, contig, converters, aligned)
        recipes = list(meta.get("tensor_maps") or [])
        if recipes:
            pack = _with_tensor_maps(pack, recipes, name, names)
        threads = int(meta.get("threads") or 32 * warps)  # (a warp-specialized kernel has more)
        plan = LaunchPlan(name, bytes(cubin), converters, pack,
                          tuple(names), (threads, 1, 1),
                          _shared_bytes(meta), _driver_kinds(meta, kinds, len(recipes)), {},
                          next((i for i, k in enumerate(kinds) if k.startswith("*")), -1))
        setattr(compiled, _PLAN_ATTR, plan)
        return plan


def _device_of(flat_args: Sequence[Any], first_pointer: int) -> int:
    """The GPU of the first pointer argument when it is a CUDA tensor, else of any CUDA tensor,
    else the current GPU (the argument checks then report the stray CPU tensor)."""
    if first_pointer >= 0:
        a = flat_args[first_pointer]
        if isinstance(a, torch.Tensor) and a.is_cuda:
            return a.get_device()
    for a in flat_args:
        if isinstance(a, torch.Tensor) and a.is_cuda:
            return a.get_device()
    return torch.cuda.current_device() if torch.cuda.is_available() else 0


try:  # the raw cudaStream_t of the current stream without building a torch.cuda.Stream
    _raw_stream: Callable[[int], int] = torch._C._cuda_getCurrentRawStream  # type: ignore[attr-defined]
except AttributeError:  # pragma: no cover - older/newer torch
    def _raw_stream(device: int) -> int:
        return torch.cuda.current_stream(device).cuda_stream


def _check_clusters(compiled: Any, gx: int) -> None:
    """A kernel compiled for CTA pairs (num_ctas=2) runs whole clusters only."""
    cluster = (getattr(compiled, "metadata", None) or {}).get("cluster", 1)
    if gx % cluster:
        raise ValueError(f"{compiled.name}: compiled with num_ctas={cluster}, so the grid's x extent must be a "
                         f"multiple of {cluster}, got {gx}")


def launch(compiled: Any, grid: Sequence[int], flat_args: Sequence[Any], num_warps: int) -> None:
    """Launch `compiled` over `grid` with the decomposed arguments, on torch's current stream."""
    plan = compiled.__dict__.get(_PLAN_ATTR) or plan_for(compiled, num_warps)
    converters = plan.converters
    if len(flat_args) != len(converters):
        raise ValueError(f"{plan.name}: expected {len(converters)} arguments "
                         f"({', '.join(plan.names)}), got {len(flat_args)}")
    device = _device_of(flat_args, plan.pointer_index)
    values = plan.pack(flat_args, device)
    gx, gy, gz = check_grid(grid, plan.name)
    if gx == 0 or gy == 0 or gz == 0:
        return
    _check_clusters(compiled, gx)
    fn = plan.raw.get(device) or plan.raw_launch(device)
    try:
        fn(gx, gy, gz, values, _raw_stream(device))
    except RuntimeError as e:
        if plan.name in str(e):  # driver.CudaError already names the kernel and the call
            raise
        raise RuntimeError(f"{plan.name}: launch failed (grid {tuple(grid)}, block {plan.block}, "
                           f"{plan.shared_bytes} B dynamic shared memory): {e}") from None
    except Exception as e:
        raise RuntimeError(f"{plan.name}: launch failed (grid {tuple(grid)}, block {plan.block}, "
                           f"{plan.shared_bytes} B dynamic shared memory): {e}") from None


def fast_launcher(compiled: Any, num_warps: int) -> Callable[[int, int, int, Sequence[Any]], None]:
    """`go(gx, gy, gz, flat_args)`: `launch` with everything per-kernel bound once, for the
    `kernel[grid](...)` fast path. Same checks and errors as `launch`; the argument count is
    the caller's promise (it comes from the specialization that produced `compiled`)."""
    plan = plan_for(compiled, num_warps)
    pack, raw, pidx, name = plan.pack, plan.raw, plan.pointer_index, plan.name
    stream_of = _raw_stream
    tensor = torch.Tensor
    cluster = (getattr(compiled, "metadata", None) or {}).get("cluster", 1)
    gx_max, gyz_max = GRID_MAX[0], GRID_MAX[1]

    def go(gx: int, gy: int, gz: int, flat: Sequence[Any]) -> None:
        if gx > gx_max or gy > gyz_max or gz > gyz_max:  # (kernel[grid] checked it already)
            check_grid((gx, gy, gz), name)
        a = flat[pidx] if pidx >= 0 else None
        device = a.get_device() if a.__class__ is tensor else -1
        if device < 0:
            device = _device_of(flat, pidx)
        values = pack(flat, device)
        if not (gx and gy and gz):
            return
        if cluster > 1 and gx % cluster:
            _check_clusters(compiled, gx)
        fn = raw.get(device) or plan.raw_launch(device)
        try:
            fn(gx, gy, gz, values, stream_of(device))
        except Exception as e:
            if name in str(e):
                raise
            raise RuntimeError(f"{name}: launch failed (grid {(gx, gy, gz)}, block {plan.block}, "
                               f"{plan.shared_bytes} B dynamic shared memory): {e}") from None

    return go
