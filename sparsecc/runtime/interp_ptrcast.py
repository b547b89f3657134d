"""The interpreter's pointer casts: `tt.ptr_to_int`, `tt.int_to_ptr`, `tt.bitcast`.

A pointer here is a buffer and an element offset (`interp_values`), an address on the GPU. So
`ptr_to_int` gives the real address of the element (the tensor's `data_ptr()` plus the offset
in bytes), and `int_to_ptr` finds the live torch tensor whose storage holds an address (Triton's
grouped GEMM loads its operands' `data_ptr()`s from a table) and addresses that storage: any of
its elements may be accessed, as on the GPU, and an access outside it is an error as for other
pointers. The storage of a tensor on a GPU is run on a CPU copy written back after the launch,
as the arguments are (`interpreter.run`). An address of no live tensor is an error naming it.
"""

from __future__ import annotations

import gc
from collections.abc import Sequence
from typing import Any

import torch
from xdsl.ir import Operation

from sparsecc.dialects.tt import PointerType, element_type
from sparsecc.runtime.interp_ops import HANDLERS
from sparsecc.runtime.interp_values import (
    Buffer,
    InterpreterError,
    ScalarPtr,
    TensorPtr,
    torch_dtype,
)

__all__ = ["write_back"]


class _Storages:
    """The storages `int_to_ptr` reached during one launch, as CPU byte tensors: a CPU
    tensor's own storage, or a copy of a GPU tensor's (`copies`, written back by `write_back`)."""

    def __init__(self) -> None:
        self.bytes: dict[int, torch.Tensor] = {}  # storage data_ptr -> its bytes (uint8, on the CPU)
        self.copies: list[tuple[torch.Tensor, torch.Tensor]] = []  # (GPU bytes, CPU copy)


def _state(prog: Any) -> _Storages:
    state = getattr(prog, "pointer_casts", None)
    if state is None:
        state = prog.pointer_casts = _Storages()
    return state


def _bytes_of(t: torch.Tensor) -> torch.Tensor:
    """The whole storage of `t` as a uint8 tensor sharing it."""
    st = t.untyped_storage()
    return torch.empty(0, dtype=torch.uint8, device=t.device).set_(st, 0, (st.nbytes(),), (1,))


def _owner(addr: int) -> torch.Tensor | None:
    """A live tensor whose storage holds byte address `addr` (CPU or GPU memory)."""
    for obj in gc.get_objects():
        if isinstance(obj, torch.Tensor) and obj.device.type != "meta":
            try:
                st = obj.untyped_storage()
            except (RuntimeError, NotImplementedError):  # sparse and other storage-less tensors
                continue
            base = st.data_ptr()
            if base and base <= addr < base + st.nbytes():
                return obj
    return None


def _storage_at(prog: Any, addr: int) -> tuple[int, torch.Tensor]:
    """(storage base address, its CPU bytes) for byte address `addr`."""
    state = _state(prog)
    for base, data in state.bytes.items():
        if base <= addr < base + data.numel():
            return base, data
    t = _owner(addr)
    if t is None:
        raise InterpreterError(f"tt.int_to_ptr: address {addr:#x} is in no live torch tensor's memory (the "
                               "interpreter addresses tensors, not raw memory)")
    base = t.untyped_storage().data_ptr()
    data = _bytes_of(t)
    if data.device.type != "cpu":
        host = data.cpu()
        state.copies.append((data, host))
        data = host
    state.bytes[base] = data
    return base, data


def _address(p: ScalarPtr | TensorPtr) -> Any:
    """The byte address of each element a pointer (or tensor of pointers) points to."""
    buf = p.buf
    start = buf.data.data_ptr() + buf.origin * buf.data.element_size()
    if isinstance(p, ScalarPtr):
        return torch.tensor(start + p.offset * buf.data.element_size(), dtype=torch.int64)
    return start + p.offsets * buf.data.element_size()


def _pointer(prog: Any, addr: torch.Tensor, pointee: torch.dtype) -> ScalarPtr | TensorPtr:
    """Pointers to `pointee` elements at byte addresses `addr` (a scalar or a tensor of them), into
    the storage of the first address's tensor: a tensor of pointers addresses one buffer here."""
    flat = addr.reshape(-1)
    nonzero = flat[flat != 0]  # 0: a masked-off lane's address (`other=0`), never accessed
    if not nonzero.numel():
        empty = Buffer(torch.empty(0, dtype=pointee), "the null address", strided=True)
        return ScalarPtr(empty, 0) if addr.dim() == 0 else TensorPtr(empty, torch.zeros_like(addr))
    first = int(nonzero[0])
    base, data = _storage_at(prog, first)
    size = torch.empty(0, dtype=pointee).element_size()
    rel = addr.to(torch.int64) - base
    if bool((rel % size != 0).any()):
        bad = int(flat[(rel.reshape(-1) % size != 0).nonzero()[0, 0]])
        raise InterpreterError(f"tt.int_to_ptr: address {bad:#x} is not aligned to its {pointee} elements "
                               f"({size} bytes)")
    usable = data.numel() // size * size
    buf = Buffer(data[:usable].view(pointee), f"the tensor at address {base:#x}", strided=True)
    # addresses outside that storage (a masked-off lane's 0, another tensor's) are only an error
    # where a load or store uses them: its bounds check names them
    offsets = torch.div(rel, size, rounding_mode="floor")
    return ScalarPtr(buf, int(offsets)) if addr.dim() == 0 else TensorPtr(buf, offsets)


def _pointee(op: Operation) -> torch.dtype:
    ty = element_type(op.results[0].type)
    assert isinstance(ty, PointerType)
    return torch_dtype(ty.pointee)


def _ptr_to_int(prog: Any, op: Operation, v: list[Any]) -> Sequence[Any]:
    return (_address(v[0]),)


def _int_to_ptr(prog: Any, op: Operation, v: list[Any]) -> Sequence[Any]:
    return (_pointer(prog, torch.as_tensor(v[0], dtype=torch.int64), _pointee(op)),)


def _bitcast(prog: Any, op: Operation, v: list[Any]) -> Sequence[Any]:
    return (_pointer(prog, _address(v[0]), _pointee(op)),)


HANDLERS["tt.ptr_to_int"] = _ptr_to_int
HANDLERS["tt.int_to_ptr"] = _int_to_ptr
HANDLERS["tt.bitcast"] = _bitcast


def write_back(prog: Any) -> None:
    """Copy the CPU copies of GPU storages that `int_to_ptr` reached back to the GPU."""
    state = getattr(prog, "pointer_casts", None)
    if state is not None:
        for dev, host in state.copies:
            dev.copy_(host)
        prog.pointer_casts = None
