"""`tritongpu-insert-barriers`: place the CTA barriers (`ttg.barrier`) that order shared-memory
accesses between threads, from a read/write analysis of each block (as Triton's membar
analysis does).

The analysis walks each block in order with two facts: a shared write is pending (written since
the last barrier) and a shared read happened since the last barrier. Before an op whose first
shared access is a read while a write is pending (RAW), or a write while reads happened (WAR),
it inserts a `ttg.barrier`, after which both are clear. What each op's lowering does to shared
memory is `sparsecc.analysis.shared_memory.shared_effects`: a convert_layout, reduce or reshape
writes a scratch and reads it back with its own barrier in between (the op's internal sync, as
in Triton's lowering); `ttg.async_wait`, `ttg.init_barrier` and a releasing scalar atomic
barrier themselves; an mbarrier wait (`ttg.wait_barrier`) proves the writes it waited for
done; an async copy into a slot only needs the WAR order (its data is read after an
async_wait), and none when the pipeline marked the slot safe or guarded. A loop body starts and
ends conservatively (both facts set: the other iterations are unseen); the branches of an
`scf.if` (whose conditions are uniform) start from the state before it and merge with "or".

Reads of a private scratch are tracked by buffer: every op with a scratch (a reduce's warp
exchange, a convert_layout's staging, ...) gets its own range from `plan_shared`, which no other
op touches, so the write that starts such an op's round trip only races with earlier reads of
that same scratch (its own, one loop iteration before), not with reads of other buffers. Two
`tl.sum`s in a row (layer norm's mean and variance) thus need no barrier between them. Reads of
any other shared memory (local_load, a wgmma operand, ...) count as reads of everything.

The function gets `ttg.explicit_barriers`: the lowering then adds no barrier between ops of its
own. In a warp-specialized function (`ttg.producer-warps`) the producer and consumer warps
lower different subsets of the same ops after the split (`sparsecc.analysis.warp_sides`):
the ops before it are analysed once, then each side's ops from that state, and a barrier after
the split belongs to its side (`ttg.barrier {side = "consumer"}`; the other side skips it).
The pass runs after every pass that moves shared accesses (tritongpu-sink-local-loads changes
where they go).

    sparsecc-opt kernel.mlir -p tritongpu-insert-barriers
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import scf
from xdsl.dialects.builtin import ModuleOp, UnitAttr
from xdsl.ir import Block, Operation
from xdsl.passes import ModulePass

from sparsecc.analysis import shared_memory as sm
from sparsecc.analysis import warp_sides as ws
from sparsecc.analysis.shuffles import SHUFFLE_OPS
from sparsecc.analysis.warp_sides import Side
from sparsecc.dialects import tt
from sparsecc.dialects import ttg as ttgd


@dataclass
class _State:
    """Since the last barrier: a shared write is pending / a shared read of memory anywhere
    happened / the private scratches (by their op) that were read."""

    writes: bool = False
    reads: bool = False
    scratch_reads: set[Operation] = field(default_factory=set)

    def copy(self) -> _State:
        return _State(self.writes, self.reads, set(self.scratch_reads))

    def clear(self) -> None:
        self.writes = self.reads = False
        self.scratch_reads = set()


def _private_scratch(op: Operation) -> bool:
    """Whether `op`'s round trip goes through a scratch of its own (`plan_shared` gives every
    op with a `shared_size` a range no other op uses; the handlers address it by
    `L.scratch(op)`)."""
    return isinstance(op, (tt.ReduceOp, ttgd.ConvertLayoutOp, *SHUFFLE_OPS)) and sm.shared_size(op) > 0


def _needs_barrier(effect: str, state: _State, op: Operation) -> bool:
    if effect == sm.READ:
        return state.writes
    if effect == sm.ROUND_TRIP and _private_scratch(op):
        return state.reads or op in state.scratch_reads  # WAR on its own scratch only
    if effect in (sm.WRITE, sm.WAR_WRITE, sm.ROUND_TRIP):
        return state.reads or bool(state.scratch_reads)
    return False


def _apply(effect: str, state: _State, op: Operation) -> None:
    """`state` after `effect` (a barrier before it, if needed, already cleared it)."""
    if effect == sm.READ:
        state.reads = True
    elif effect == sm.WRITE:
        state.writes = True
    elif effect == sm.ROUND_TRIP:  # written, synced internally (every earlier access done), read back
        state.clear()
        if _private_scratch(op):
            state.scratch_reads.add(op)
        else:
            state.reads = True
    elif effect == sm.SYNC:
        state.clear()
    elif effect == sm.LANDED:
        state.writes = False


def _visit_op(op: Operation, state: _State, side: Side | None) -> None:
    """Insert a barrier before `op` if its first access needs one; update `state`. With a
    `side` (after a warp-specialized function's split), only the ops that side lowers count,
    and the barriers are that side's."""
    if side is not None and not ws.lowered_on(op, side):
        return
    if isinstance(op, scf.ForOp):
        _visit_block(op.body.block, _State(True, True), side)
        state.writes = state.reads = True  # after the loop: whatever its last iteration left
        return
    if isinstance(op, scf.WhileOp):  # both regions run after either one: each starts unknown
        for region in (op.before_region, op.after_region):
            _visit_block(region.block, _State(True, True), side)
        state.writes = state.reads = True
        return
    if isinstance(op, scf.IfOp):
        ends = []
        for region in (op.true_region, op.false_region):
            branch = state.copy()
            if region.blocks:
                _visit_block(region.block, branch, side)
            ends.append(branch)
        state.writes = ends[0].writes or ends[1].writes
        state.reads = ends[0].reads or ends[1].reads
        state.scratch_reads = ends[0].scratch_reads | ends[1].scratch_reads
        return
    for i, effect in enumerate(sm.shared_effects(op)):
        if _needs_barrier(effect, state, op):
            # only an op's first access can need one: the others follow an internal sync
            assert i == 0, f"{op.name}: a barrier would be needed inside the op"
            block = op.parent_block()
            assert block is not None
            barrier = ttgd.BarrierOp(side)
            if ttgd.PRODUCER in op.attributes:  # the producer's run of top-level ops stays contiguous
                barrier.attributes[ttgd.PRODUCER] = op.attributes[ttgd.PRODUCER]
            block.insert_op_before(barrier, op)
            state.clear()
        _apply(effect, state, op)


def _visit_block(block: Block, state: _State, side: Side | None = None) -> None:
    for op in list(block.ops):
        _visit_op(op, state, side)


def insert_barriers(func: tt.FuncOp) -> bool:
    """Place the `ttg.barrier`s of `func` and mark it `ttg.explicit_barriers`; False (nothing
    changed) for a function already marked or with malformed warp-specialization marks (the
    lowering reports those)."""
    if ttgd.EXPLICIT_BARRIERS in func.attributes:
        return False
    if ttgd.PRODUCER_WARPS not in func.attributes:
        _visit_block(func.body.block, _State())
    else:
        run = ws.producer_run(func)
        if run is None:
            return False
        first, last = run
        ops = list(func.body.block.ops)
        state = _State()
        for op in ops[:first]:  # every thread runs these
            _visit_op(op, state, None)
        # each side goes on from there over what it lowers (as lower_async.lower_specialized)
        for side, part in zip(ws.SIDES, (ops[first:last + 1], ops[first:])):
            side_state = state.copy()
            for op in part:
                _visit_op(op, side_state, side)
    func.attributes[ttgd.EXPLICIT_BARRIERS] = UnitAttr()
    return True


@dataclass(frozen=True)
class InsertBarriersPass(ModulePass):
    """Place the CTA barriers of each `tt.func` as `ttg.barrier` ops (see the module docstring).

    Accepts: ttgir after the passes that move shared accesses (the compiler runs it right
    before convert-ttg-to-ptx). Guarantees: a `ttg.barrier` before each op whose shared access
    would race with an earlier one of another thread, none elsewhere; the function marked
    `ttg.explicit_barriers`. Running it twice changes nothing.
    """

    name = "tritongpu-insert-barriers"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for func in [o for o in op.ops if isinstance(o, tt.FuncOp)]:
            insert_barriers(func)


__all__ = ["InsertBarriersPass", "insert_barriers"]
