"""How much shared memory each ttgir op needs, and where it goes: the model behind
allocate-shared-memory (sparsecc/passes/allocate_shared_memory.py), shared with the lowering,
which reads the result from the IR and sizes its scratch the same way.

A `ttg.local_alloc` needs its buffer; `ttg.convert_layout`, `tt.reduce` and `tt.reshape` a
scratch the size of their source (a round trip through shared memory); `tt.dequantize` room
for its operands that arrive in registers; a scalar `tt.atomic_rmw` whose old value is used a
word to broadcast thread 0's result.
"""

from __future__ import annotations

import math

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue

from sparsecc.analysis.dtypes import esize
from sparsecc.analysis.kloops import uses_wgmma
from sparsecc.dialects import tt
from sparsecc.dialects import ttg as ttgd

SMEM_ALIGN = 128
"""Alignment of each shared buffer (bytes): 16-byte vector accesses need at least 16."""
WGMMA_ALIGN = 1024
"""Alignment of each shared buffer of a wgmma kernel, and of its `smem` base: wgmma's swizzle
atoms (8 rows x 128 B) start on 1 KiB boundaries."""


def atomic_needs_broadcast(op: tt.AtomicRMWOp) -> bool:
    """A scalar atomic whose old value is used: thread 0's result must reach every thread."""
    return not isinstance(op.ptr.type, TensorType) and bool(op.result.uses)


def dequantize_reads_in_place(v: SSAValue) -> bool:
    """Whether `v` is a `ttg.local_load` that only feeds `tt.dequantize`s: its lowering keeps the
    buffer, which the dequantization reads directly (no registers, no scratch)."""
    owner = v.owner
    return (isinstance(owner, ttgd.LocalLoadOp) and bool(v.uses)
            and all(isinstance(u.operation, tt.DequantizeOp) for u in v.uses))


def dequantize_padded_bytes(v: SSAValue) -> int:
    """A `tt.dequantize` operand tile's bytes in its scratch buffer, rounded up to 16."""
    ty = v.type
    assert isinstance(ty, TensorType)
    n = ty.get_shape()[0] * ty.get_shape()[1] * esize(ty.element_type)
    return -(-n // 16) * 16


def shared_size(op: Operation) -> int:
    """Bytes of shared memory `op` needs (its buffer, or scratch for a round trip), or 0.

    Example: a `ttg.local_alloc` of a 64x32 f16 memdesc needs 4096."""
    if isinstance(op, ttgd.LocalAllocOp):
        ty = op.result.type
        return math.prod(ty.get_shape()) * esize(ty.element_type)
    if isinstance(op, ttgd.ConvertLayoutOp | tt.ReduceOp | tt.ReshapeOp):
        ty = op.operands[0].type
        return math.prod(ty.get_shape()) * esize(ty.element_type)
    if isinstance(op, tt.DequantizeOp):
        return sum(dequantize_padded_bytes(v) for v in op.operands if not dequantize_reads_in_place(v))
    if isinstance(op, tt.AtomicRMWOp) and atomic_needs_broadcast(op):
        return 4
    return 0


def plan_shared(func: tt.FuncOp) -> tuple[dict[Operation, int], int]:
    """Offsets of every shared buffer and scratch under `func` (in program order, aligned) and
    the total bytes (with room to align the base at run time in a wgmma kernel).

    Example: two 4 KiB local_allocs of a non-wgmma kernel get offsets 0 and 4096, total 8192."""
    wgmma = uses_wgmma(func)
    align = WGMMA_ALIGN if wgmma else SMEM_ALIGN
    offsets: dict[Operation, int] = {}
    off = 0
    for op in func.walk():
        size = shared_size(op)
        if size:
            off = -(-off // align) * align
            offsets[op] = off
            off += size
    total = -(-off // align) * align if off else 0
    if total and wgmma:
        total += WGMMA_ALIGN  # room to align the base at run time
    return offsets, total


__all__ = ["SMEM_ALIGN", "WGMMA_ALIGN", "atomic_needs_broadcast", "dequantize_padded_bytes",
           "dequantize_reads_in_place", "plan_shared", "shared_size"]
