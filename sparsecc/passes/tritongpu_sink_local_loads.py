"""`tritongpu-sink-local-loads`: move each `ttg.local_load` to just before its first user.

Then the shared stores of one K step all come before its reads, and the lowering needs one
CTA barrier between them (and one back) per iteration instead of one per interleaved pair.
A pipelined wgmma loop (a wgmma dot plus `ttg.async_wait` or `ttg.wait_barrier`) keeps its
reads at the top of the body, right after the wait: the fragment loads then overlap the
previous wgmma group, so the pass leaves such a module as it is.

    sparsecc-opt kernel.mlir -p tritongpu-sink-local-loads
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass

from sparsecc.analysis.kloops import uses_wgmma
from sparsecc.dialects import ttg as ttgd


def sink_local_loads(root: Operation) -> None:
    """Move each ttg.local_load under `root` to just before its first user in its block."""
    for op in list(root.walk()):
        if not isinstance(op, ttgd.LocalLoadOp) or op.parent_block() is None:
            continue
        block = op.parent_block()
        first = None
        for use in op.result.uses:
            user = use.operation
            while user is not None and user.parent_block() is not block:
                user = user.parent_op()
            if user is None:
                continue
            if first is None or block.get_operation_index(user) < block.get_operation_index(first):
                first = user
        if first is not None and first is not op.next_op:
            op.detach()
            block.insert_op_before(op, first)


def keeps_loads_at_the_top(module: ModuleOp) -> bool:
    """Whether `module` has a pipelined wgmma loop (a wgmma dot and an async or mbarrier wait),
    whose reads stay where the pipeline put them."""
    return uses_wgmma(module) and any(isinstance(o, ttgd.AsyncWaitOp | ttgd.WaitBarrierOp) for o in module.walk())


@dataclass(frozen=True)
class SinkLocalLoadsPass(ModulePass):
    """Sink every `ttg.local_load` to its first user (see the module docstring).

    Accepts: ttgir. Guarantees: the same ops, each local_load right before its first user in
    its block (nothing moves across a block boundary); a module with a pipelined wgmma loop is
    left unchanged.
    """

    name = "tritongpu-sink-local-loads"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if not keeps_loads_at_the_top(op):
            sink_local_loads(op)


__all__ = ["SinkLocalLoadsPass", "sink_local_loads"]
