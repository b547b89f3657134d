"""Load a cubin and launch its kernels with the CUDA driver API (cuda-python), in torch's context.

    kernel = CudaKernel(cubin_bytes, "name", ["ptr", "ptr", "i32", "f32"])
    kernel.launch((gx, gy, gz), (bx, by, bz), [d.data_ptr(), a.data_ptr(), n, alpha],
                  shared_bytes=smem, stream=None)          # None: torch's current stream

or `CudaKernel.from_kernel_op(cubin, kernel_op)` to take the name, param kinds and dynamic shared
memory from the `ptx.kernel` the cubin was printed from.

Param kinds are those of `ptx.kernel` ("ptr", "i64", "i32", "f32") plus "u32"/"u64"; a "ptr"
argument may be an int (device address) or anything with `data_ptr()` (a torch tensor).

cuda-python is imported on first use (`cuda.bindings.driver`, else the older `cuda.cuda`), so
this module imports on machines without it. The module is loaded into the context current on
this thread, and when there is none into the device's primary context, which is the one torch
uses. Launch cost is kept low: each kernel owns one 8-byte slot per param in a single buffer and
a `void*[]` of the slots' addresses, built once; a launch writes all values with one
`struct.pack_into` and calls `cuLaunchKernel` of libcuda through ctypes (a few µs less than
cuda-python's wrapper, which converts every argument), passing the array's address (the driver
copies the values during `cuLaunchKernel`, so reuse is safe). Where libcuda cannot be opened
with ctypes, cuda-python's `cuLaunchKernel` is used. One kernel's buffer is shared, so launch
one CudaKernel from one thread at a time.

`raw_launcher`, the launcher's fast path, goes one step further: where the C launcher
(lib/launch.c, built on first use by runtime/native.py) loads, packing and the call to
libcuda's `cuLaunchKernel` are one C call that holds the GIL (so it is also thread-safe);
elsewhere the `pack_into` + ctypes path above.
"""

from __future__ import annotations

import ctypes
import struct
import sys
from collections.abc import Callable, Sequence
from typing import Any

_CTYPE = {
    "ptr": ctypes.c_uint64,
    "u64": ctypes.c_uint64,
    "i64": ctypes.c_int64,
    "i32": ctypes.c_int32,
    "u32": ctypes.c_uint32,
    "f32": ctypes.c_float,
    "tmap": ctypes.c_ubyte * 128,
}
#: struct format of each kind in its slot (little-endian, padded): 8 bytes, a tensor map 128.
_SLOT_FORMAT = {"ptr": "Q", "u64": "Q", "i64": "q", "i32": "i4x", "u32": "I4x", "f32": "f4x", "tmap": "128s"}
#: Above this much dynamic shared memory a kernel must opt in (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_...).
DEFAULT_SHARED_LIMIT = 48 * 1024

_driver_mod: Any = None


class CudaError(RuntimeError):
    """A CUDA driver call failed; the message names the call, the kernel and the error."""

    def __init__(self, message: str, code: int | None = None):
        super().__init__(message)
        self.code = code


def cuda_driver() -> Any:
    """The cuda-python driver module (imported once); ImportError saying how to get it."""
    global _driver_mod
    if _driver_mod is None:
        try:
            from cuda.bindings import driver as mod  # cuda-python >= 12.6
        except ImportError:
            try:
                from cuda import cuda as mod  # older cuda-python
            except ImportError as e:
                raise ImportError(
                    "launching kernels needs cuda-python: `pip install cuda-python` "
                    "(or `pip install -e .[gpu]`)"
                ) from e
        _driver_mod = mod
    return _driver_mod


_cu_launch: Any = None


def libcuda_launch() -> Callable[..., int] | None:
    """libcuda's `cuLaunchKernel` as a ctypes function (None where libcuda cannot be opened)."""
    global _cu_launch
    if _cu_launch is None:
        try:
            lib = ctypes.CDLL("nvcuda.dll" if sys.platform == "win32" else "libcuda.so.1")
            fn = lib.cuLaunchKernel
            u32, ptr = ctypes.c_uint, ctypes.c_void_p
            fn.argtypes = [ptr, u32, u32, u32, u32, u32, u32, u32, ptr, ptr, ptr]
            fn.restype = ctypes.c_int
            _cu_launch = fn
        except (OSError, AttributeError):
            _cu_launch = False
    return _cu_launch or None


#: lib/launch.c's one-character codes of the param kinds.
_NATIVE_KIND = {"ptr": "Q", "u64": "Q", "i64": "q", "i32": "i", "u32": "I", "f32": "f", "tmap": "t"}


def _native_launcher(cu: Any, handle: int, block: Sequence[int], shared_bytes: int,
                     kinds: Sequence[str], on_error: Callable[[int, int, int, int], None]
                     ) -> Callable[[int, int, int, Sequence[Any], int], None] | None:
    """The C launcher's `launch(gx, gy, gz, values, stream)` for one kernel (None where the C
    module cannot be built: see runtime/native.py)."""
    from sparsecc.runtime import native

    module = native.load()
    if module is None:
        return None
    address = ctypes.cast(cu, ctypes.c_void_p).value
    codes = "".join(_NATIVE_KIND[k] for k in kinds)
    return module.Launcher(address, handle, tuple(block), shared_bytes, codes, on_error).launch


def _error_text(drv: Any, err: Any) -> str:
    code = int(err)
    name = desc = None
    try:
        e1, name = drv.cuGetErrorName(err)
        e2, desc = drv.cuGetErrorString(err)
        if int(e1) != 0:
            name = None
        if int(e2) != 0:
            desc = None
    except Exception:  # error reporting must not hide the original failure
        pass
    name = name.decode() if isinstance(name, bytes) else (name or f"CUDA error {code}")
    desc = desc.decode() if isinstance(desc, bytes) else desc
    return f"{name} ({desc})" if desc else name


def check(result: Any, call: str, kernel: str | None = None) -> Any:
    """Unpack a cuda-python `(CUresult, *values)` return, raising `CudaError` on failure."""
    drv = cuda_driver()
    if isinstance(result, tuple):
        err, rest = result[0], result[1:]
    else:
        err, rest = result, ()
    if int(err) != 0:
        who = f"kernel '{kernel}': " if kernel else ""
        raise CudaError(f"{who}{call} failed: {_error_text(drv, err)}", int(err))
    if not rest:
        return None
    return rest[0] if len(rest) == 1 else rest


def ensure_context(device: int | None = None) -> Any:
    """The current CUDA context, making torch's (the primary context of `device`) current if none."""
    drv = cuda_driver()
    try:
        import torch

        if torch.cuda.is_available():
            torch.cuda.init()
            if device is None:
                device = torch.cuda.current_device()
    except ImportError:
        pass
    check(drv.cuInit(0), "cuInit")
    ctx = check(drv.cuCtxGetCurrent(), "cuCtxGetCurrent")
    if ctx is not None and int(ctx) != 0:
        return ctx
    dev = check(drv.cuDeviceGet(device or 0), "cuDeviceGet")
    ctx = check(drv.cuDevicePrimaryCtxRetain(dev), "cuDevicePrimaryCtxRetain")
    check(drv.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    return ctx


def _current_stream() -> int:
    try:
        import torch

        return int(torch.cuda.current_stream().cuda_stream)
    except ImportError:
        return 0


class CudaKernel:
    """One kernel of a loaded cubin, launchable with plain Python values."""

    def __init__(self, cubin: bytes, name: str, param_kinds: Sequence[str], *, shared_bytes: int = 0):
        for k in param_kinds:
            if k not in _CTYPE:
                raise ValueError(f"kernel '{name}': unknown param kind {k!r} (one of {list(_CTYPE)})")
        self.name = name
        self.param_kinds = tuple(param_kinds)
        self.default_shared_bytes = shared_bytes
        drv = cuda_driver()
        self._drv = drv
        self._ctx = ensure_context()
        _unload_released()
        self._module = check(drv.cuModuleLoadData(cubin), "cuModuleLoadData", name)
        self._function = check(drv.cuModuleGetFunction(self._module, name.encode()), "cuModuleGetFunction", name)
        # One slot per param (8 bytes; a tensor map 128) in one buffer, and the void* array
        # pointing at the slots, reused by every launch.
        n = len(self.param_kinds)
        offsets, size = [], 0
        for k in self.param_kinds:
            offsets.append(size)
            size += struct.calcsize("<" + _SLOT_FORMAT[k])
        self._buf = ctypes.create_string_buffer(max(8, size))
        base = ctypes.addressof(self._buf)
        self._ptrs = (ctypes.c_void_p * max(1, n))(*[base + o for o in offsets])
        self._params_addr = ctypes.addressof(self._ptrs) if n else 0
        self._pack_into = struct.Struct("<" + "".join(_SLOT_FORMAT[k] for k in self.param_kinds)).pack_into
        self._is_ptr = [k == "ptr" for k in self.param_kinds]
        self._handle = int(self._function)
        self._shared_limit = DEFAULT_SHARED_LIMIT
        self._stream_key: int | None = None
        self._stream_obj: Any = None
        if shared_bytes > DEFAULT_SHARED_LIMIT:
            self._allow_shared(shared_bytes)

    @classmethod
    def from_kernel_op(cls, cubin: bytes, kernel: Any) -> CudaKernel:
        """Take name, param kinds and dynamic shared memory from a `ptx.kernel` op."""
        return cls(cubin, kernel.kernel_name, kernel.kinds, shared_bytes=kernel.shared_bytes.value.data)

    def _allow_shared(self, nbytes: int) -> None:
        drv = self._drv
        attr = drv.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
        check(drv.cuFuncSetAttribute(self._function, attr, nbytes), "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)", self.name)
        self._shared_limit = nbytes

    def _stream(self, stream: int | None) -> Any:
        key = _current_stream() if stream is None else int(stream)
        if key != self._stream_key:
            self._stream_obj = self._drv.CUstream(key)
            self._stream_key = key
        return self._stream_obj

    def launch(
        self,
        grid: Sequence[int],
        block: Sequence[int],
        args: Sequence[Any],
        shared_bytes: int | None = None,
        stream: int | None = None,
    ) -> None:
        """Launch on `stream` (a CUstream handle as int; None: torch's current stream)."""
        if len(args) != len(self.param_kinds):
            raise TypeError(f"kernel '{self.name}' takes {len(self.param_kinds)} arguments {list(self.param_kinds)}, got {len(args)}")
        values = [v.data_ptr() if is_ptr and not isinstance(v, int) else v
                  for is_ptr, v in zip(self._is_ptr, args)]
        self._pack(values)
        smem = self.default_shared_bytes if shared_bytes is None else shared_bytes
        if smem > self._shared_limit:
            self._allow_shared(smem)
        gx, gy, gz = grid
        bx, by, bz = block
        cu = libcuda_launch()
        if cu is not None:
            s = _current_stream() if stream is None else int(stream)
            rc = cu(self._handle, gx, gy, gz, bx, by, bz, smem, s, self._params_addr, None)
            if rc:
                self._fail(rc, (gx, gy, gz), (bx, by, bz), smem)
            return
        err = self._drv.cuLaunchKernel(
            self._function, gx, gy, gz, bx, by, bz, smem, self._stream(stream), self._params_addr, 0
        )
        if int(err[0] if isinstance(err, tuple) else err) != 0:
            check(err, f"cuLaunchKernel(grid={tuple(grid)}, block={tuple(block)}, shared={smem})", self.name)

    def _pack(self, values: Sequence[Any]) -> None:
        try:
            self._pack_into(self._buf, 0, *values)
        except struct.error as e:
            raise TypeError(f"kernel '{self.name}': arguments {list(values)} do not fit the param "
                            f"kinds {list(self.param_kinds)}: {e}") from None

    def _fail(self, rc: int, grid: Sequence[int], block: Sequence[int], smem: int) -> None:
        drv = self._drv
        err = drv.CUresult(rc) if hasattr(drv, "CUresult") else rc
        raise CudaError(f"kernel '{self.name}': cuLaunchKernel(grid={tuple(grid)}, block={tuple(block)}, "
                        f"shared={smem}) failed: {_error_text(drv, err)}", rc)

    def raw_launcher(self, block: Sequence[int], shared_bytes: int, *,
                     native: bool = True) -> Callable[[int, int, int, Sequence[Any], int], None]:
        """`go(gx, gy, gz, values, stream)` with block and shared memory fixed: the fewest steps
        per launch. `values` are already checked ints/floats (pointers as device addresses).
        `native=False` keeps to the ctypes path (bench/host.py compares the two)."""
        if shared_bytes > self._shared_limit:
            self._allow_shared(shared_bytes)
        bx, by, bz = (int(d) for d in block)
        cu = libcuda_launch()
        if cu is None:
            def slow(gx: int, gy: int, gz: int, values: Sequence[Any], stream: int) -> None:
                self.launch((gx, gy, gz), (bx, by, bz), values, shared_bytes, stream)

            return slow
        fast = native and _native_launcher(
            cu, self._handle, (bx, by, bz), shared_bytes, self.param_kinds,
            lambda rc, gx, gy, gz: self._fail(rc, (gx, gy, gz), (bx, by, bz), shared_bytes))
        if fast:
            return fast
        pack_into, buf, handle, params, smem = self._pack_into, self._buf, self._handle, self._params_addr, shared_bytes

        def go(gx: int, gy: int, gz: int, values: Sequence[Any], stream: int) -> None:
            try:
                pack_into(buf, 0, *values)
            except struct.error:
                self._pack(values)
            rc = cu(handle, gx, gy, gz, bx, by, bz, smem, stream, params, None)
            if rc:
                self._fail(rc, (gx, gy, gz), (bx, by, bz), smem)

        return go

    __call__ = launch

    def __del__(self) -> None:
        # Not unloaded here: the garbage collector may run this while a stream is being
        # captured into a CUDA graph, and unloading a module then invalidates the capture
        # (CUDA_ERROR_STREAM_CAPTURE_INVALIDATED at the next launch). The next kernel load
        # unloads it, outside any capture.
        # (at interpreter exit the module's globals may already be None: nothing left to do)
        module, drv = getattr(self, "_module", None), getattr(self, "_drv", None)
        if module is not None and drv is not None and _RELEASED is not None:
            _RELEASED.append((drv, module))


_RELEASED: list[tuple[Any, Any]] = []
"""Modules of collected kernels, unloaded by `_unload_released` (see `CudaKernel.__del__`)."""


def _unload_released() -> None:
    """Unload the modules of collected kernels, unless a CUDA graph capture is under way."""
    if not _RELEASED or _capturing():
        return
    while _RELEASED:
        drv, module = _RELEASED.pop()
        try:
            drv.cuModuleUnload(module)
        except Exception:  # noqa: BLE001 - the context may be gone; a leak is the lesser harm
            pass


def _capturing() -> bool:
    """Whether torch is capturing the current stream into a CUDA graph (False without torch)."""
    torch = sys.modules.get("torch")
    try:
        return bool(torch is not None and torch.cuda.is_current_stream_capturing())
    except Exception:  # noqa: BLE001 - no CUDA in this torch
        return False


def load_kernel(cubin: bytes, name: str, param_kinds: Sequence[str], *, shared_bytes: int = 0) -> CudaKernel:
    """Shorthand for `CudaKernel(cubin, name, param_kinds, shared_bytes=...)`."""
    return CudaKernel(cubin, name, param_kinds, shared_bytes=shared_bytes)
