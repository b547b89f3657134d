"""`ptx-hoist-loop-invariants`: loop-invariant code motion over the per-thread arithmetic of
`ptx.kernel`s (the output of convert-ttg-to-ptx).

The lowering recomputes thread coordinates, swizzled shared offsets and address terms in every
loop body; ptxas does not hoist most of it (it is spread over scf.if paths and 64-bit math).

    sparsecc-opt kernel.mlir -p "convert-ttg-to-ptx,ptx-hoist-loop-invariants" --emit ptx
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from sparsecc.dialects import ptx
from sparsecc.dialects.ptx import COLD_ELSE

_PURE_PTX = {"ptx.sreg", "ptx.shared_base", "ptx.pack", "ptx.unpack", "ptx.cvt.pack"}


def _pure(op: Operation) -> bool:
    return op.name.startswith("arith.") or op.name in _PURE_PTX


def _inside(loop: Operation, v: SSAValue) -> bool:
    owner = v.owner
    op = owner if isinstance(owner, Operation) else owner.parent_op()
    return op is not None and loop.is_ancestor(op)


def in_cold(loop: Operation, op: Operation) -> bool:
    """Whether `op` sits in the else region of a `COLD_ELSE` scf.if inside `loop`."""
    region = op.parent_region()
    while region is not None and region is not loop.body:
        parent = region.parent_op()
        if parent is None:
            return False
        if isinstance(parent, scf.IfOp) and COLD_ELSE in parent.attributes and region is parent.false_region:
            return True
        region = parent.parent_region()
    return False


def hoist_loop_invariants(root: Operation) -> int:
    """Move every pure op (arith, special registers, packs) of an scf.for body under `root`,
    also inside nested scf.if regions (but not a `COLD_ELSE` else region), whose operands are
    all defined outside the loop, in front of the loop (innermost loops first). Pure ops cannot
    trap, so speculating them is safe. Returns the number of ops moved.
    """
    loops = [op for op in root.walk() if isinstance(op, scf.ForOp)]
    moved = 0
    for loop in reversed(loops):  # walk() is pre-order: reversed = inner loops first
        block = loop.parent_block()
        if block is None:
            continue
        for op in list(loop.body.walk()):
            if op is loop or not _pure(op) or op.regions or in_cold(loop, op):
                continue
            if any(_inside(loop, v) for v in op.operands):
                continue
            op.detach()
            block.insert_op_before(op, loop)
            moved += 1
    return moved


@dataclass(frozen=True)
class HoistLoopInvariantsPass(ModulePass):
    """Hoist the loop-invariant pure ops of every `ptx.kernel` (`hoist_loop_invariants`).

    Accepts: any module; only the bodies of its `ptx.kernel`s change (ttgir functions are left
    alone). Guarantees: the same values computed, each invariant pure op once before its loop.
    """

    name = "ptx-hoist-loop-invariants"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel in [o for o in op.walk() if isinstance(o, ptx.KernelOp)]:
            hoist_loop_invariants(kernel)


__all__ = ["HoistLoopInvariantsPass", "hoist_loop_invariants", "in_cold"]
