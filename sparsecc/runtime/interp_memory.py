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

__all__ = ["atomic_add", "atomic_rmw", "load", "store"]


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
    return atomic_rmw("add", ptr, value, mask)


def _bits(x: torch.Tensor) -> torch.Tensor:
    """`x`'s bits as a signed integer tensor of its width (floats compare bit for bit in cas)."""
    if not x.dtype.is_floating_point:
        return x
    return x.view({2: torch.int16, 4: torch.int32, 8: torch.int64}[x.element_size()])


def _combine(kind: str, old: torch.Tensor, val: torch.Tensor, cmp: torch.Tensor | None) -> torch.Tensor:
    """The new memory value of one atomic kind (elementwise, in memory's dtype)."""
    if kind == "add":
        return old + val
    if kind in ("max", "min"):
        if old.dtype.is_floating_point:
            # the GPU's integer trick orders floats by their bits: +0.0 > -0.0, and a NaN stored
            # or given wins a max if positive; the plain comparison agrees except on NaN and zeros
            take = val > old if kind == "max" else val < old
            return torch.where(take, val, old)
        return torch.maximum(old, val) if kind == "max" else torch.minimum(old, val)
    if kind == "and":
        return old & val
    if kind == "or":
        return old | val
    if kind == "xor":
        return old ^ val
    if kind == "xchg":
        return val
    if kind == "cas":
        assert cmp is not None
        return torch.where(_bits(old) == _bits(cmp), val, old)
    raise InterpreterError(f"unknown atomic kind '{kind}'")


def atomic_rmw(kind: str, ptr: Any, value: Any, mask: Any, cmp: Any = None) -> torch.Tensor:
    """One atomic read-modify-write per active element, in element order (programs run one
    after the other, so this is what some interleaving on the GPU gives); the old values
    (inactive elements: memory's value at their address, or 0 outside it)."""
    buf, offs, active = _addresses(ptr, mask, ())
    _check_bounds(buf, offs, active, f"atomic_{kind}")
    dtype = buf.data.dtype
    val = value.to(dtype).expand(offs.shape)
    cmps = cmp.to(dtype).expand(offs.shape) if cmp is not None else None
    offs = offs + buf.origin  # from the view's first element to the storage's
    safe = torch.where(active, offs, buf.origin)
    old = buf.data[safe].clone() if buf.size else torch.zeros(offs.shape, dtype=dtype)
    where = offs[active]
    if where.numel() == where.unique().numel():  # each address once: all at the same time
        new = _combine(kind, old[active], val[active], cmps[active] if cmps is not None else None)
        buf.data[where] = new.to(dtype)
        return old
    flat_offs, flat_active = offs.reshape(-1), active.reshape(-1)
    flat_val = val.reshape(-1)
    flat_cmp = cmps.reshape(-1) if cmps is not None else None
    flat_old = old.reshape(-1).clone()
    for i in range(flat_offs.numel()):  # an address seen twice: one element after the other
        if not bool(flat_active[i]):
            continue
        o = int(flat_offs[i])
        flat_old[i] = buf.data[o]
        c = flat_cmp[i:i + 1] if flat_cmp is not None else None
        buf.data[o] = _combine(kind, buf.data[o:o + 1], flat_val[i:i + 1], c)[0].to(dtype)
    return flat_old.reshape(offs.shape)


def store(ptr: Any, value: Any, mask: Any, checked: tuple[int, ...]) -> None:
    """Write the active elements of `value`; others keep their memory."""
    buf, offs, active = _addresses(ptr, mask, checked)
    _check_bounds(buf, offs, active, "store")
    value = value.to(buf.data.dtype).expand(offs.shape)
    buf.data[offs[active] + buf.origin] = value[active]
