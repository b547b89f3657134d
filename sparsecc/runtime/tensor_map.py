"""Tensor maps (CUtensorMap, 128 bytes) for the TMA copies of a compiled kernel, per launch.

The lowering leaves one recipe per tensor map in the launch metadata (`tensor_maps`,
sparsecc.analysis.tma.TensorMapRecipe.as_json): which argument holds the base address, the
element type, dims and outer byte strides as expressions over the arguments, the box and the
swizzle mode. `encode(recipe, values)` evaluates it for one launch's packed arguments and
returns the map's bytes, which travel as a by-value kernel parameter. The driver call costs a
few microseconds, so maps are cached by everything they encode (a repeated launch on the same
tensors reuses its bytes).
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Sequence
from typing import Any

from sparsecc.analysis.tma import evaluate
from sparsecc.runtime.driver import check, cuda_driver

_DTYPES = {"fp16": "FLOAT16", "bf16": "BFLOAT16", "fp32": "FLOAT32", "u16": "UINT16", "u8": "UINT8", "u32": "UINT32"}
_SWIZZLES = {0: "NONE", 32: "32B", 64: "64B", 128: "128B"}


class TensorMapError(ValueError):
    """A tensor map could not be built for these arguments (names the argument and why)."""


@functools.lru_cache(maxsize=1024)
def encode_tiled(dtype: str, ptr: int, dims: tuple[int, ...], strides: tuple[int, ...], box: tuple[int, ...],
                 swizzle: int) -> bytes:
    """`cuTensorMapEncodeTiled` for `dtype` ("fp16", "bf16", "u16", ...) at `ptr`: dims and box
    innermost first, byte strides of the outer dims, swizzle in bytes (0: none), zero fill."""
    drv = cuda_driver()
    u64, u32 = drv.cuuint64_t, drv.cuuint32_t
    dt = getattr(drv.CUtensorMapDataType, f"CU_TENSOR_MAP_DATA_TYPE_{_DTYPES[dtype]}")
    rest = ([u64(d) for d in dims], [u64(s) for s in strides], [u32(b) for b in box], [u32(1)] * len(dims),
            drv.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
            getattr(drv.CUtensorMapSwizzle, f"CU_TENSOR_MAP_SWIZZLE_{_SWIZZLES[swizzle]}"),
            drv.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            drv.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)
    try:
        res = drv.cuTensorMapEncodeTiled(dt, len(dims), ptr, *rest)
    except TypeError:  # bindings that want the rank wrapped
        res = drv.cuTensorMapEncodeTiled(dt, u32(len(dims)), ptr, *rest)
    tmap = check(res, "cuTensorMapEncodeTiled")
    return bytes((ctypes.c_ubyte * 128).from_address(tmap.getPtr()))


def available_elements(t: Any) -> int:
    """Elements of `t`'s dtype from its first element to the end of its storage: what an
    unmasked pointer load from its address may read (`sparsecc.analysis.tma_extents`).

        >>> available_elements(torch.empty(1000, dtype=torch.float16)[100:200])
        900
    """
    storage = t.untyped_storage()
    return (storage.nbytes() - (t.data_ptr() - storage.data_ptr())) // t.element_size()


def check_guards(recipe: dict[str, Any], values: Sequence[Any], available: dict[int, int] | None = None,
                 kernel: str = "kernel", names: Sequence[str] = ()) -> None:
    """Refuse a launch that breaks one of the recipe's guards (`lo <= hi`): its tensor map would
    not read what the kernel's pointer load reads (`sparsecc.analysis.tma_extents`).

        >>> check_guards({"arg": 0, "guards": [[["arg", 1], ["arg", 2]]]}, [0, 4160, 4096])
        TensorMapError: kernel: argument '0': ... need 4160 <= 4096 ...
    """
    arg = recipe["arg"]
    for lo, hi in recipe.get("guards", ()):
        a, b = evaluate(lo, list(values), available), evaluate(hi, list(values), available)
        if a > b:
            what = f"{kernel}: argument '{names[arg] if arg < len(names) else arg}'"
            raise TensorMapError(
                f"{what}: the kernel was compiled with tma_extents, whose TMA copies of this unmasked tile "
                f"need {a} <= {b} (the columns its K loop reads, from column 0 on, must fit in one row "
                f"of the row stride); these arguments break it. Pass tma_extents=False (or "
                f"SPARSECC_TMA_EXTENTS=0) to copy the tile with cp.async")


def encode(recipe: dict[str, Any], values: Sequence[Any], kernel: str = "kernel", names: Sequence[str] = (),
           available: dict[int, int] | None = None) -> bytes:
    """The 128 bytes of the tensor map `recipe` describes for a launch with packed `values`
    (`available`: elements each argument's allocation holds, for the recipe's "rows" terms).
    (The base is a block-pointer base, whose 16-byte alignment the launcher's packing checked.)"""
    arg = recipe["arg"]
    ptr = int(values[arg])
    check_guards(recipe, values, available, kernel, names)
    dims = tuple(evaluate(e, list(values), available) for e in recipe["dims"])
    strides = tuple(evaluate(e, list(values), available) for e in recipe["strides"])
    what = f"{kernel}: argument '{names[arg] if arg < len(names) else arg}'"
    if any(d < 1 or d >= 2**32 for d in dims):
        raise TensorMapError(f"{what}: a TMA copy needs extents in 1 .. 2**32 - 1, got {dims}")
    if any(s % 16 or s <= 0 or s >= 2**40 for s in strides):
        raise TensorMapError(f"{what}: a TMA copy needs row strides that are positive multiples of 16 bytes, "
                             f"got {strides} bytes")
    return encode_tiled(recipe["dtype"], ptr, dims, strides, tuple(recipe["box"]), int(recipe["swizzle"]))


__all__ = ["TensorMapError", "available_elements", "check_guards", "encode", "encode_tiled"]
