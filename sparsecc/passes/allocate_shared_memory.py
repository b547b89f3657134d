"""`allocate-shared-memory`: give every shared buffer and scratch of a ttgir kernel its byte
offset in the kernel's one dynamic `smem` array, and the module the total.

Each op that needs shared memory gets `ttg.shared_offset = N : i32`: a `ttg.local_alloc` (its
buffer), a `ttg.convert_layout`, `tt.reduce` or `tt.reshape` (the scratch of their round trip
through shared memory, sized by the source), a `tt.dequantize` with operands in registers (the
scratch they are stored to) and a scalar-result `tt.atomic_rmw` (the word that broadcasts
thread 0's old value). The module gets `ttg.shared = total : i32`, which convert-ttg-to-ptx
puts in the launch attribute.

The sizes and the placement are `sparsecc.analysis.shared_memory`'s. Buffers are placed in program order, each aligned to 128 B, or to 1 KiB in a wgmma kernel (the
swizzle atoms of wgmma's operands start on 1 KiB boundaries); a wgmma kernel's total has one
extra KiB so that the lowering can align the base of `smem` at run time. Nothing is reused:
two buffers never share bytes. The pass must run after every pass that adds, removes or
reorders ttgir ops (the compiler runs it right before convert-ttg-to-ptx); convert-ttg-to-ptx
runs it itself on a module without `ttg.shared`.

    sparsecc-opt kernel.mlir -p allocate-shared-memory
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i32
from xdsl.passes import ModulePass

from sparsecc.analysis.shared_memory import plan_shared, shared_size
from sparsecc.dialects import tt
from sparsecc.dialects import ttg as ttgd


def allocate_shared_memory(module: ModuleOp) -> None:
    """Record the plan of every `tt.func` of `module` in the IR (offsets on the ops, the
    largest total on the module); earlier offsets are replaced."""
    total = 0
    for func in (op for op in module.ops if isinstance(op, tt.FuncOp)):
        offsets, func_total = plan_shared(func)
        for op in func.walk():
            op.attributes.pop(ttgd.SHARED_OFFSET, None)
        for op, off in offsets.items():
            op.attributes[ttgd.SHARED_OFFSET] = IntegerAttr(off, i32)
        total = max(total, func_total)
    module.attributes[ttgd.SHARED_TOTAL] = IntegerAttr(total, i32)


def has_shared_plan(module: ModuleOp) -> bool:
    """Whether allocate-shared-memory ran on `module` (it carries `ttg.shared`)."""
    return ttgd.SHARED_TOTAL in module.attributes


@dataclass(frozen=True)
class AllocateSharedMemoryPass(ModulePass):
    """Give every shared buffer and scratch its offset, the module its total (see the module
    docstring).

    Accepts: ttgir (after sparse-gpu-encoding and the ttgir -> ttgir passes). Guarantees: every
    op that needs shared memory carries `ttg.shared_offset`, no two of them overlap, and the
    module carries `ttg.shared` (0 when nothing needs shared memory); nothing else changes.
    """

    name = "allocate-shared-memory"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        allocate_shared_memory(op)


__all__ = ["AllocateSharedMemoryPass", "allocate_shared_memory", "has_shared_plan", "plan_shared", "shared_size"]
