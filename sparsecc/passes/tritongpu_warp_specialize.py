"""`tritongpu-warp-specialize`: decide whether a TMA kernel gives its copies a warp of their own,
and record the decision in the IR for convert-ttg-to-ptx.

A function qualifies when it has `ttg.async_tma_copy` ops (tritongpu-pipeline{tma=true} made
them), a wgmma dot (`#ttg.mma` version 3), and every top-level op from the first that issues
TMA copies to the last is one the producer warp may run or skip (`specialization_split`). It
then gets `"ttg.producer-warps" = 1 : i32`, those ops get `ttg.producer`, and the scf.ifs among
them that the producer skips get `ttg.consumer_only` (the names and their meaning:
`sparsecc.dialects.ttg.PRODUCER_WARPS`, `PRODUCER`, `CONSUMER_ONLY`). The lowering then runs
one extra warp that issues the copies and waits only for free slots, while the compute warps
wait only for data.

    sparsecc-opt pipelined.mlir -p tritongpu-warp-specialize
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import scf
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, UnitAttr, i32
from xdsl.ir import Operation
from xdsl.passes import ModulePass

from sparsecc.analysis.kloops import uses_wgmma
from sparsecc.dialects import tt
from sparsecc.dialects import ttg as ttgd

_PRODUCER_OPS = frozenset({
    "scf.for", "scf.if", "scf.yield", "tt.advance", "tt.dot", "tt.get_program_id", "tt.get_num_programs",
    "ttg.memdesc_subview", "ttg.local_load", "ttg.async_tma_copy", "ttg.wait_barrier", "ttg.arrive_barrier",
    "ttg.dot_wait",
})
"""What the producer side of a warp-specialized kernel may meet from its first TMA copy to its
last (the rest it skips or runs as plain scalar code): nothing that writes memory, reduces
across threads or needs a CTA barrier, which the producer warp would run wrongly or alone."""

_PIPELINE_SYNC = (ttgd.AsyncTmaCopyOp, ttgd.WaitBarrierOp, ttgd.ArriveBarrierOp, ttgd.InitBarrierOp, ttgd.DotWaitOp,
                  ttgd.AsyncCopyGlobalToLocalOp, ttgd.AsyncWaitOp)


def consumer_only(op: Operation) -> bool:
    """An scf.if the producer warp skips: nothing in it takes part in the pipeline's
    synchronisation, and its else branch passes on values from outside it (a persistent GEMM's
    per-tile epilogue: store the sum, restart it)."""
    if not isinstance(op, scf.IfOp) or any(isinstance(o, _PIPELINE_SYNC) for o in op.walk()):
        return False
    if not op.results:
        return True
    if not op.false_region.blocks:
        return False
    passed = op.false_region.block.last_op
    return isinstance(passed, scf.YieldOp) and all(not op.is_ancestor(v.owner if isinstance(v.owner, Operation)
                                                                     else v.owner.parent_op())
                                                   for v in passed.operands)


def _producer_may_run(op: Operation) -> bool:
    if consumer_only(op):
        return True
    if not (op.name.startswith("arith.") or op.name in _PRODUCER_OPS):
        return False
    return all(_producer_may_run(o) for region in op.regions for block in region.blocks for o in block.ops)


def specialization_split(func: tt.FuncOp) -> tuple[int, int] | None:
    """(first, last): the top-level ops of `func` from the first that issues TMA copies to the
    last, when warp specialization applies: the function has a wgmma dot, and every op in
    between is one the producer may run (`_PRODUCER_OPS`, arith) or skip (`consumer_only`), so
    stores, reductions and layout conversions stay with the compute warps."""
    ops = list(func.body.block.ops)
    holding = [i for i, op in enumerate(ops) if any(isinstance(o, ttgd.AsyncTmaCopyOp) for o in op.walk())]
    if not holding or not uses_wgmma(func):
        return None
    first, last = holding[0], holding[-1]
    if not all(_producer_may_run(op) for op in ops[first:last + 1]):
        return None
    return first, last


def _clear(func: tt.FuncOp) -> None:
    func.attributes.pop(ttgd.PRODUCER_WARPS, None)
    for op in func.walk():
        op.attributes.pop(ttgd.PRODUCER, None)
        op.attributes.pop(ttgd.CONSUMER_ONLY, None)


@dataclass(frozen=True)
class WarpSpecializePass(ModulePass):
    """Mark the TMA kernels that get a producer warp (see the module docstring).

    Accepts: ttgir (after tritongpu-pipeline) whose `ttg.num-warps`, if any, is one of
    `ttg.SUPPORTED_WARPS` (else a located error). Guarantees: a function is marked exactly when
    `specialization_split` finds a split; the marks of an earlier run are replaced; the IR is
    otherwise unchanged. Leaving the pass out keeps every kernel unspecialized.
    """

    name = "tritongpu-warp-specialize"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        warps = ttgd.module_num_warps(op)  # the lowering runs num-warps + 1 warps: a located error if unsupported
        for func in [o for o in op.walk() if isinstance(o, tt.FuncOp)]:
            _clear(func)
            split = specialization_split(func) if (warps + 1) * 32 <= ttgd.MAX_THREADS else None
            if split is None:  # (at num_warps=32 no producer warp fits in a block)
                continue
            first, last = split
            func.attributes[ttgd.PRODUCER_WARPS] = IntegerAttr(1, i32)
            for top in list(func.body.block.ops)[first:last + 1]:
                top.attributes[ttgd.PRODUCER] = UnitAttr()
                for inner in top.walk():
                    if consumer_only(inner):
                        inner.attributes[ttgd.CONSUMER_ONLY] = UnitAttr()


__all__ = ["WarpSpecializePass", "specialization_split", "consumer_only"]
