"""Handlers of shared-memory buffers: `ttg.local_alloc`, `ttg.local_load`, `ttg.local_store`,
`ttg.memdesc_subview`, and of the CTA barrier that orders their accesses (`ttg.barrier`).

A buffer lowers to `Smem`: its 32-bit shared address (the kernel's base plus the offset
planned for its `ttg.local_alloc`) and its memdesc type; reads and writes follow the buffer's
swizzle (codegen/lower_mem.py), reads into `#ttg.dot_op` load mma fragments
(codegen/lower_dot.py).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from xdsl.dialects.builtin import TensorType

from sparsecc.analysis.dtypes import esize
from sparsecc.analysis.shared_memory import dequantize_reads_in_place, staged_rows
from sparsecc.codegen.handlers.table import handles
from sparsecc.codegen.lower_base import LoweringError, Smem
from sparsecc.codegen.lower_dot import load_frag
from sparsecc.codegen.lower_mem import load_shared, store_shared
from sparsecc.codegen.mma_stmatrix import BoxStagedTile, store_by_stmatrix
from sparsecc.dialects import ttg as ttgd

if TYPE_CHECKING:
    from sparsecc.codegen.lower_state import LoweringState


def read_shared(L: LoweringState, sm: Smem, ty: TensorType) -> object:
    """A shared buffer read into `ty`'s layout: mma fragments for a dot operand, else registers."""
    if isinstance(ty.encoding, ttgd.DotOperandEncodingAttr):
        return load_frag(L, sm, ty)
    return load_shared(L, sm, ty)


@handles(ttgd.LocalAllocOp)
def _local_alloc(L: LoweringState, op: ttgd.LocalAllocOp) -> None:
    sm = Smem(L.scratch(op), op.result.type)
    rows = staged_rows(op)
    if op.src is not None and rows is not None:
        L.wgmma_drain()  # the TMA store writes the registers box by box (`lower_tma_store`)
        L.set(op.result, BoxStagedTile(sm, rows, L.regs(op.src)))
        return
    if op.src is not None:
        src = L.regs(op.src)
        if not store_by_stmatrix(L, sm, src):  # (a TMA store's tile of an MMA result: stmatrix)
            store_shared(L, sm, src)
    L.set(op.result, sm)


@handles(ttgd.LocalLoadOp)
def _local_load(L: LoweringState, op: ttgd.LocalLoadOp) -> None:
    sm = L.get(op.src)
    assert isinstance(sm, Smem)
    if dequantize_reads_in_place(op.result):
        L.set(op.result, sm)  # tt.dequantize reads the buffer itself
        return
    L.set(op.result, read_shared(L, sm, op.result.type))


@handles(ttgd.LocalStoreOp)
def _local_store(L: LoweringState, op: ttgd.LocalStoreOp) -> None:
    sm = L.get(op.dst)
    assert isinstance(sm, Smem)
    store_shared(L, sm, L.regs(op.src))


@handles(ttgd.MemDescSubviewOp)
def _subview(L: LoweringState, op: ttgd.MemDescSubviewOp) -> None:
    """A view of one slot of a multi-buffered allocation (only leading offsets may vary)."""
    em = L.em
    sm = L.get(op.src)
    assert isinstance(sm, Smem)
    src_shape = sm.ty.get_shape()
    res_ty = op.result.type
    lead = len(src_shape) - len(res_ty.get_shape())
    off = em.c(0)
    for d in range(len(src_shape)):
        idx = em.to32(L.get(op.offsets[d]))
        if d >= lead:
            if em.known(idx) != 0:
                raise LoweringError("only leading-dim (buffer slot) offsets may be non-zero")
            continue
        off = em.add(off, em.mul(idx, math.prod(src_shape[d + 1:])))
    addr = em.add(sm.addr, em.mul(off, esize(sm.ty.element_type)))
    L.set(op.result, Smem(addr, res_ty))


@handles(ttgd.BarrierOp)
def _barrier(L: LoweringState, op: ttgd.BarrierOp) -> None:
    """Due now, issued (`LoweringState.bar`) right before the next op's first shared access."""
    L.barriers.due = True
