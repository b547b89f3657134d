"""Which ops each side of a warp-specialized function lowers (tritongpu-warp-specialize marks
the function `ttg.producer-warps` and a contiguous run of its top-level ops `ttg.producer`).

The ops before the run execute in every thread. Then the producer warp runs the run's ops
without the compute (shared reads, dots, full-slot waits, the slot releases of the compute
warps, consumer-only epilogues), and the consumer (compute) warps run the run's ops and the
rest of the function without the stages' TMA copies. tritongpu-insert-barriers places each
side's barriers from these rules, and the lowering (`sparsecc.codegen.lower_async`) skips ops
by them: one definition keeps the two in step.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from xdsl.dialects import scf
from xdsl.dialects.builtin import IntegerAttr, StringAttr
from xdsl.ir import Block, Operation, SSAValue

from sparsecc.dialects import tt
from sparsecc.dialects import ttg as ttgd

Side = Literal["producer", "consumer"]
SIDES: tuple[Side, Side] = ("producer", "consumer")


def issues_tma(op: Operation) -> bool:
    """An scf.if that holds a stage's TMA copies directly (the pipeline's copy groups)."""
    return isinstance(op, scf.IfOp) and bool(op.true_region.blocks) and any(
        isinstance(o, ttgd.AsyncTmaCopyOp) for o in op.true_region.block.ops)


def is_empty_ring(ring: SSAValue) -> bool:
    """Whether mbarrier ring `ring` is a pipeline's empty-slot ring (no TMA copy counts on it)."""
    return not any(isinstance(u.operation, ttgd.AsyncTmaCopyOp) for u in ring.uses)


def barrier_side(op: ttgd.BarrierOp) -> str | None:
    """The side a `ttg.barrier` belongs to (its `side` attribute), None for both."""
    side = op.attributes.get(ttgd.BARRIER_SIDE)
    return side.data if isinstance(side, StringAttr) else None


def lowered_on(op: Operation, side: Side) -> bool:
    """Whether `side` of a warp-specialized function lowers `op` (an op of the producer run or
    after it, at any depth; the other side's `ttg.barrier`s are not its own).

    Example: a `tt.dot` is lowered on "consumer", not on "producer"."""
    if isinstance(op, ttgd.BarrierOp):
        return barrier_side(op) in (None, side)
    if side == "consumer":
        return not issues_tma(op)
    if ttgd.CONSUMER_ONLY in op.attributes:  # a skipped scf.if, an outer ring loop's epilogue
        return False
    if isinstance(op, ttgd.LocalLoadOp | ttgd.DotWaitOp | tt.DotOp | ttgd.AsyncTmaStoreOp | ttgd.AsyncTmaStoreWaitOp):
        return False
    if isinstance(op, ttgd.WaitBarrierOp):
        return is_empty_ring(op.ring)
    if isinstance(op, scf.IfOp):
        return not any(isinstance(o, ttgd.ArriveBarrierOp) and o.kind.data == "warps" for o in op.walk())
    return True


def producer_run(func: tt.FuncOp) -> tuple[int, int] | None:
    """(first, last): the contiguous run of top-level ops marked `ttg.producer` of a function
    with one producer warp; None when `func` is not warp-specialized or its marks are malformed
    (the lowering reports those: `sparsecc.codegen.lower_async.producer_split`).

    Example: ops [alloc, for{producer}, store] of a marked function give (1, 1)."""
    warps = func.attributes.get(ttgd.PRODUCER_WARPS)
    if not isinstance(warps, IntegerAttr) or warps.value.data != 1:
        return None
    marked = [i for i, op in enumerate(func.body.block.ops) if ttgd.PRODUCER in op.attributes]
    if not marked or marked != list(range(marked[0], marked[-1] + 1)):
        return None
    return marked[0], marked[-1]


def backward_slice(body: Block, seed: Callable[[Operation], bool]) -> set[Operation]:
    """The ops of `body` that `seed` picks and every op of `body` whose results they (or ops
    nested in them) read, transitively."""
    needed: set[Operation] = set()
    for op in reversed(list(body.ops)):
        if not (op in needed or seed(op)):
            continue
        needed.add(op)
        for inner in op.walk():
            for v in inner.operands:
                if isinstance(v.owner, Operation) and v.owner.parent_block() is body:
                    needed.add(v.owner)
    return needed


def trip_scalars(body: Block) -> list[Operation]:
    """The ops of an outer loop's body that its yield needs (a backward slice, in order): what
    every compute group of a ping-pong kernel runs on every trip; the rest only the group whose
    trip it is."""
    needed = backward_slice(body, lambda op: op is body.last_op)
    return [op for op in body.ops if op in needed and op is not body.last_op]


__all__ = ["SIDES", "Side", "barrier_side", "is_empty_ring", "issues_tma", "lowered_on", "producer_run", "trip_scalars",
           "backward_slice"]
