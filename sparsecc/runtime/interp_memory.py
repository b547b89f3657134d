"""`tt.load` / `tt.store` of the CPU interpreter: addressing, masks, bounds, padding.

Every access is turned into (element offsets, active mask) over a flat buffer. Active
elements outside the tensor passed (its elements from first to last; for a strided view,
passed by its raw pointer as in Triton, its storage: `interp_values.Buffer`) are an error (the
GPU would fault or corrupt memory); inactive ones are never touched: loads give `other` / the padding value, stores skip them.
Block pointers mask the dims named in boundaryCheck; a dim not named must be in bounds.
"""

from __future__ import annotations

from typing import Any

import torch

from sparsecc.runtime.interp_values import BlockPtr, Buffer, InterpreterError, ScalarPtr, TensorPtr

__all__ = ["load", "store"]


def _block_addresses(p: BlockPtr, checked: tuple[int, ...]) -> tuple[torch.Tensor, torch.Tensor]:
    """Element offsets and in-bounds mask of a block pointer's tile."""
    rank = len(p.block_shape)
    offs = torch.full((), p.base, dtype=torch.int64)
    mask = torch.ones((), dtype=torch.bool)
    for d in range(rank):
        idx = p.offsets[d] + torch.arange(p.block_shape[d], dtype=torch.int64)
        inb = (idx >= 0) & (idx < p.shape[d])
        if d not in checked and not bool(inb.all()):
            bad = idx[~inb]
            raise InterpreterError(
                f"block pointer into '{p.buf.name}': dim {d} indices {int(bad[0])}..{int(bad[-1])} are "
                f"outside its shape {list(p.shape)} (offsets {list(p.offsets)}, block "
                f"{list(p.block_shape)}) and dim {d} is not in boundaryCheck")
        view = [1] * rank
        view[d] = p.block_shape[d]
        offs = offs + (idx * p.strides[d]).reshape(view)
        mask = mask & inb.reshape(view)
    shape = tuple(p.block_shape)
    return offs.expand(shape), mask.expand(shape)


def _addresses(ptr: Any, mask: Any, checked: tuple[int, ...]) -> tuple[Buffer, torch.Tensor, torch.Tensor]:
    if isinstance(ptr, BlockPtr):
        offs, active = _block_addresses(ptr, checked)
        return ptr.buf, offs, active
    if isinstance(ptr, TensorPtr):
        offs = ptr.offsets
    elif isinstance(ptr, ScalarPtr):
        offs = torch.tensor(ptr.offset, dtype=torch.int64)
    else:
        raise InterpreterError(f"expected a pointer, got {type(ptr).__name__}")
    active = torch.ones(offs.shape, dtype=torch.bool) if mask is None else mask.expand(offs.shape)
    return ptr.buf, offs, active


def _check_bounds(buf: Buffer, offs: torch.Tensor, active: torch.Tensor, what: str) -> None:
    """Every active element must be in the buffer (`Buffer`: the tensor's elements, or a strided
    view's storage); the error names the first one, in access order, that is not."""
    bad = active & ((offs < -buf.origin) | (offs >= buf.size - buf.origin))
    if not bool(bad.any()):
        return
    first, count = int(offs[bad][0]), int(bad.sum())
    if buf.strided:
        where = (f"is outside the storage of parameter '{buf.name}', a strided view (element offsets "
                 f"{-buf.origin}..{buf.size - buf.origin - 1} from its first element are its storage's); "
                 "mask the access or use boundary_check")
    else:
        where = (f"is outside parameter '{buf.name}' ({buf.size} elements from its first element to its "
                 "last); mask the access or use boundary_check")
    raise InterpreterError(f"out-of-bounds {what}: element offset {first} ({count} element(s) in all) {where}")


def load(ptr: Any, mask: Any, other: Any, checked: tuple[int, ...], padding: int | None,
         dtype: torch.dtype) -> torch.Tensor:
    """The loaded value (scalar or tile); inactive elements take `other` or the padding."""
    buf, offs, active = _addresses(ptr, mask, checked)
    _check_bounds(buf, offs, active, "load")
    if buf.size == 0:
        values = torch.zeros(offs.shape, dtype=buf.data.dtype)
    else:
        idx = torch.where(active, offs, 0) + buf.origin
        values = buf.data[idx]
        if idx.dim() == 0:  # a 0-d index gives a view of memory, which a later store would change
            values = values.clone()
    if other is None:
        fill = float("nan") if padding == 2 else 0
        other = torch.full((), fill, dtype=values.dtype)
    result = torch.where(active, values, other) if not bool(active.all()) else values
    return result.to(dtype)


def atomic_add(ptr: Any, value: Any, mask: Any) -> torch.Tensor:
    """`*ptr += value` for the active elements, in element order (programs run one after the
    other, so this is exactly what any interleaving of atomic adds gives); the old values."""
    buf, offs, active = _addresses(ptr, mask, ())
    _check_bounds(buf, offs, active, "atomic_add")
    old = buf.data[torch.where(active, offs, 0) + buf.origin].clone()
    value = value.to(buf.data.dtype).expand(offs.shape)
    buf.data.index_put_((offs[active] + buf.origin,), value[active], accumulate=True)
    return old


def store(ptr: Any, value: Any, mask: Any, checked: tuple[int, ...]) -> None:
    """Write the active elements of `value`; others keep their memory."""
    buf, offs, active = _addresses(ptr, mask, checked)
    _check_bounds(buf, offs, active, "store")
    value = value.to(buf.data.dtype).expand(offs.shape)
    buf.data[offs[active] + buf.origin] = value[active]
