"""Handlers of global memory and pointer ops: `tt.make_tensor_ptr`, `tt.advance`, `tt.addptr`,
`tt.load`, `tt.store`, `tt.atomic_rmw`.

A block pointer lowers to its scalar fields (`BlockPtr`), a tensor of pointers to one 64-bit
address per register; loads and stores take the path of their pointer's kind
(codegen/lower_mem.py for block pointers, codegen/lower_ptrs.py for the others).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from xdsl.ir import SSAValue

from sparsecc.codegen.handlers.table import handles
from sparsecc.codegen.lower_base import BlockPtr, LoweringError, Regs
from sparsecc.codegen.lower_mem import load_block, store_block
from sparsecc.codegen.lower_ptrs import (
    atomic_ptrs,
    load_ptrs,
    load_scalar,
    lower_addptr,
    store_ptrs,
    store_scalar,
)
from sparsecc.dialects import tt
from sparsecc.dialects import ttg as ttgd

if TYPE_CHECKING:
    from sparsecc.codegen.lower_state import LoweringState


@handles(tt.MakeTensorPtrOp)
def _make_tensor_ptr(L: LoweringState, op: tt.MakeTensorPtrOp) -> None:
    em = L.em
    base = L.get(op.base)
    shape = [em.ext64(L.get(s)) for s in op.shape]
    strides = [em.ext64(L.get(s)) for s in op.strides]
    offsets = [em.to32(L.get(o)) for o in op.offsets]
    L.set(op.result, BlockPtr(base, shape, strides, offsets, op.result.type))


@handles(tt.AdvanceOp)
def _advance(L: LoweringState, op: tt.AdvanceOp) -> None:
    bp = L.get(op.ptr)
    assert isinstance(bp, BlockPtr)
    offs = [L.em.add(o, L.em.to32(L.get(d))) for o, d in zip(bp.offsets, op.offsets)]
    L.set(op.result, BlockPtr(bp.base, bp.shape, bp.strides, offs, op.result.type))


@handles(tt.AddPtrOp)
def _addptr(L: LoweringState, op: tt.AddPtrOp) -> None:
    lower_addptr(L, op)


def boundary_dims(op: tt.LoadOp | tt.StoreOp | ttgd.AsyncCopyGlobalToLocalOp) -> list[int]:
    """The dimensions a block-pointer access checks against the tensor's shape."""
    return list(op.boundaryCheck.get_values()) if op.boundaryCheck is not None else []


@handles(tt.LoadOp)
def _load(L: LoweringState, op: tt.LoadOp) -> None:
    ptr = L.get(op.ptr)
    if isinstance(ptr, Regs):
        load_ptrs(L, op, ptr)
        return
    if isinstance(ptr, SSAValue):
        load_scalar(L, op, ptr)
        return
    if not isinstance(ptr, BlockPtr):
        raise LoweringError("only block-pointer, pointer-tensor and scalar loads are supported")
    dims = boundary_dims(op)
    pad = op.padding.value.data if op.padding is not None else None
    ty = op.result.type
    if isinstance(ty.encoding, ttgd.DotOperandEncodingAttr):
        raise LoweringError("loads straight into #ttg.dot_op are not supported (stage through shared memory)")
    L.set(op.result, load_block(L, ptr, ty, dims, pad, L.cfg.divs.ptr(op.ptr)))


@handles(tt.StoreOp)
def _store(L: LoweringState, op: tt.StoreOp) -> None:
    ptr = L.get(op.ptr)
    if isinstance(ptr, Regs):
        store_ptrs(L, op, ptr)
        return
    if isinstance(ptr, SSAValue):
        store_scalar(L, op, ptr)
        return
    if not isinstance(ptr, BlockPtr):
        raise LoweringError("only block-pointer, pointer-tensor and scalar stores are supported")
    if op.mask is not None:
        raise LoweringError("masked block-pointer stores are not supported")
    store_block(L, ptr, L.regs(op.value), boundary_dims(op), L.cfg.divs.ptr(op.ptr))


@handles(tt.AtomicRMWOp)
def _atomic_rmw(L: LoweringState, op: tt.AtomicRMWOp) -> None:
    atomic_ptrs(L, op, L.scratch(op) if op in L.cfg.smem_offsets else None)
