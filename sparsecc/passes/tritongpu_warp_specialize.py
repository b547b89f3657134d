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

With `pingpong` (the `pingpong` switch), a kernel of one compute warpgroup (4 warps) whose
TMA K loop runs in an outer `scf.while` over work items (`pingpong_loop`) gets two compute
warpgroups and a producer warpgroup: `"ttg.consumer-groups" = 2` and `"ttg.producer-warps" =
4`. The lowering then runs the compute code once per group, group g taking the loop's trips g,
g + 2, ...: one group's epilogue runs while the other's K loop keeps the tensor cores busy
(CUTLASS's ping-pong kernels). Both groups share the producer's ring; each has its own scratch.
Where two copies of that scratch would not fit the target's shared memory, box-staged store
tiles (`ttg.box_staged`) stage fewer rows a box until they do; where nothing fits, the function
keeps one compute group (`_fit_two_groups`).

With `warpgroup` (the `producer_warpgroup` switch), a kernel of two or more compute warpgroups
gets `"ttg.producer-warps" = 4` instead: a whole producer warpgroup, whose registers the
lowering hands to the compute warps with `setmaxnreg` (232 a thread instead of 168 at 8 compute
warps), one of its warps issuing the copies, as CUTLASS's warp-specialized Hopper GEMMs do.

A top-level outer loop (scf.while or scf.for) around a TMA K loop whose rings live outside it
(tritongpu-pipeline{continue-rings}: one ring for all of a grouped GEMM's token tiles) is
accepted too (`outer_ring_loop`): the producer warp runs the same outer loop (its trip
condition and carried values are scalars every warp computes) and issues the copies of every
K step of every trip; the ops of its body that the copies do not need (`outer_epilogue`: the
accumulator's conversion and store, the y pointer) get `ttg.consumer_only` and run on the
compute warps alone. Why that stays ordered: tritongpu_pipeline.PipelinePass._pipeline_mbarriers.

    sparsecc-opt pipelined.mlir -p tritongpu-warp-specialize
    sparsecc-opt pipelined.mlir -p 'tritongpu-warp-specialize{warpgroup=true}'
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import scf
from xdsl.dialects.builtin import (
    IndexType,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    TensorType,
    UnitAttr,
    i32,
)
from xdsl.ir import Operation
from xdsl.passes import ModulePass

from sparsecc.analysis.kloops import uses_wgmma
from sparsecc.analysis.shared_memory import plan_shared, staged_row_counts, staged_rows
from sparsecc.analysis.warp_sides import backward_slice, trip_scalars
from sparsecc.dialects import ptx_targets, tt
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


_OUTER_OPS = frozenset({"scf.while", "scf.condition", "tt.make_tensor_ptr"})
"""What the producer may also meet inside an outer ring loop (`outer_ring_loop`): the loop
itself and the block pointers each trip makes (scalar arithmetic)."""


def outer_ring_loop(op: Operation) -> bool:
    """Whether `op` is an outer loop (scf.while / scf.for) around a TMA K loop whose rings and
    their barriers are made outside it, so that its trips share them (tritongpu-pipeline
    {continue-rings}). A per-trip ring (initialised inside the loop) does not qualify: a
    producer running ahead would initialise the barriers under the compute warps.

    Example: bench/moe.py's `while t0 < end` compiled with tma_extents."""
    if not isinstance(op, scf.WhileOp | scf.ForOp):
        return False
    copies = [o for o in op.walk() if isinstance(o, ttgd.AsyncTmaCopyOp)]
    nested = any(isinstance(o, scf.ForOp) and o is not op for o in op.walk())
    return bool(copies) and nested and not any(isinstance(o, ttgd.InitBarrierOp) for o in op.walk()) and all(
        not op.is_ancestor(c.ring.owner) for c in copies)  # type: ignore[arg-type]


def outer_epilogue(loop: scf.WhileOp | scf.ForOp) -> set[Operation]:
    """The ops of an outer ring loop's body the producer warp skips: all but the pipeline's
    (those holding copies, barrier waits and arrivals, wgmma waits), the yield, and what they
    read (a backward slice over the body). The rest (the epilogue: the accumulator's
    conversion, its store, the output pointer) the compute warps run alone.

    Example: in bench/moe.py's while body, truncf, make_tensor_ptr of y, convert_layout and
    tt.store."""
    body = loop.after_region.block if isinstance(loop, scf.WhileOp) else loop.body.block
    needed = backward_slice(body, lambda op: op is body.last_op or any(isinstance(o, _PIPELINE_SYNC)
                                                                       for o in op.walk()))
    return {op for op in body.ops if op not in needed}


def _producer_may_run(op: Operation, skip: frozenset[Operation] | set[Operation] = frozenset(),
                      outer: bool = False) -> bool:
    if consumer_only(op) or op in skip:
        return True
    if not (op.name.startswith("arith.") or op.name in _PRODUCER_OPS or (outer and op.name in _OUTER_OPS)):
        return False
    return all(_producer_may_run(o, skip, outer) for region in op.regions for block in region.blocks for o in block.ops)


def _split(func: tt.FuncOp) -> tuple[int, int, set[Operation]] | None:
    """`specialization_split` and the ops of outer ring loops the producer skips."""
    ops = list(func.body.block.ops)
    holding = [i for i, op in enumerate(ops) if any(isinstance(o, ttgd.AsyncTmaCopyOp) for o in op.walk())]
    if not holding or not uses_wgmma(func):
        return None
    first, last = holding[0], holding[-1]
    skipped: set[Operation] = set()
    for op in ops[first:last + 1]:
        outer = outer_ring_loop(op)
        skip = outer_epilogue(op) if outer else set()  # type: ignore[arg-type]
        if not _producer_may_run(op, skip, outer):
            return None
        skipped |= skip
    return first, last, skipped


def specialization_split(func: tt.FuncOp) -> tuple[int, int] | None:
    """(first, last): the top-level ops of `func` from the first that issues TMA copies to the
    last, when warp specialization applies: the function has a wgmma dot, and every op in
    between is one the producer may run (`_PRODUCER_OPS`, arith) or skip (`consumer_only`, the
    epilogue of an outer ring loop: `outer_epilogue`), so stores, reductions and layout
    conversions stay with the compute warps."""
    split = _split(func)
    return None if split is None else split[:2]


def pingpong_loop(func: tt.FuncOp, first: int, last: int) -> scf.WhileOp | None:
    """The outer ring loop whose trips two compute warpgroups may take in turn: the one op of the
    producer run `first..last`, an scf.while around a TMA K loop (`outer_ring_loop`) that carries
    scalars only (each group runs every trip's scalar code and only its own trips' work), with
    no tensor computed before it (the groups' threads index their tiles from 0 to 127 each).
    None when the function has another shape.

    Example: sparsecc.ops.stream_k's `while item < ITEMS` with SPLIT = 1."""
    ops = list(func.body.block.ops)
    loop = ops[first]
    if first != last or not isinstance(loop, scf.WhileOp) or not outer_ring_loop(loop):
        return None
    if not all(isinstance(v.type, IntegerType | IndexType) for v in loop.arguments):
        return None
    if any(isinstance(r.type, TensorType) for op in ops[:first] for r in op.results):
        return None
    if not all(_scalar_op(op) for op in trip_scalars(loop.after_region.block)):
        return None  # what the loop carries on must not need a trip's work (run by one group only)
    return loop


def _scalar_op(op: Operation) -> bool:
    """Scalar arithmetic or the program's index and count: safe to run in every group."""
    if op.regions or any(isinstance(r.type, TensorType | tt.PointerType) for r in op.results):
        return False
    return op.name.startswith("arith.") or op.name in ("tt.get_program_id", "tt.get_num_programs")


def _fit_two_groups(func: tt.FuncOp, target: str) -> bool:
    """Mark `func` for two compute groups (`ttg.consumer-groups`), each with its own copy of the
    epilogue's buffers, where both copies fit `target`'s shared memory per block: box-staged
    store tiles (`ttg.box_staged`) stage fewer rows a box until they do. False (unmarked, the
    staged boxes as they were) where nothing fits."""
    func.attributes[ttgd.CONSUMER_GROUPS] = IntegerAttr(2, i32)
    staged = [op for op in func.walk() if staged_rows(op) is not None]
    before = {op: op.attributes[ttgd.BOX_STAGED] for op in staged}
    choices = staged_row_counts(staged[0].result.type) if staged else [None]
    for rows in choices:
        for op in staged:
            if rows in staged_row_counts(op.result.type):
                op.attributes[ttgd.BOX_STAGED] = IntegerAttr(rows, i32)
        if ptx_targets.check_shared(target, plan_shared(func)[1]) is None:
            return True
    func.attributes.pop(ttgd.CONSUMER_GROUPS)
    for op, attr in before.items():
        op.attributes[ttgd.BOX_STAGED] = attr
    return False


def producer_warps(num_warps: int, warpgroup: bool) -> int:
    """The producer warps of a kernel of `num_warps` compute warps: a warpgroup (4) when asked
    for and the compute warps are whole warpgroups, at least two (where one warpgroup's 168
    registers a thread bind: a 128x256 fp32 accumulator alone takes 128), else one warp.

        >>> producer_warps(8, True), producer_warps(4, True), producer_warps(8, False)
        (4, 1, 1)
    """
    if warpgroup and num_warps >= 8 and num_warps % 4 == 0 and (num_warps + 4) * 32 <= ttgd.MAX_THREADS:
        return 4
    return 1


def _clear(func: tt.FuncOp) -> None:
    func.attributes.pop(ttgd.PRODUCER_WARPS, None)
    func.attributes.pop(ttgd.CONSUMER_GROUPS, None)
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

    warpgroup: bool = False
    """Give a kernel of 8 or more compute warps (a multiple of 4) a producer warpgroup instead of
    one warp, so that the lowering moves its registers to the compute warps (`setmaxnreg`)."""

    pingpong: bool = False
    """Give a 4-warp kernel whose TMA K loop runs in an outer `while` (`pingpong_loop`) two
    compute warpgroups that take the loop's trips in turn, and a producer warpgroup."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        target = ttgd.module_target(op) or ""  # (none: no limit to fit)
        warps = ttgd.module_num_warps(op)  # the lowering runs num-warps + 1 warps: a located error if unsupported
        producers = producer_warps(warps, self.warpgroup)
        for func in [o for o in op.walk() if isinstance(o, tt.FuncOp)]:
            _clear(func)
            split = _split(func) if (warps + producers) * 32 <= ttgd.MAX_THREADS else None
            if split is None:  # (at num_warps=32 no producer warp fits in a block)
                continue
            first, last, epilogue = split
            if self.pingpong and warps == 4 and pingpong_loop(func, first, last) is not None \
                    and _fit_two_groups(func, target):
                func.attributes[ttgd.PRODUCER_WARPS] = IntegerAttr(4, i32)
            else:
                func.attributes[ttgd.PRODUCER_WARPS] = IntegerAttr(producers, i32)
            for top in list(func.body.block.ops)[first:last + 1]:
                top.attributes[ttgd.PRODUCER] = UnitAttr()
                for inner in top.walk():
                    if consumer_only(inner) or inner in epilogue:
                        inner.attributes[ttgd.CONSUMER_ONLY] = UnitAttr()


__all__ = ["WarpSpecializePass", "consumer_only", "outer_epilogue", "outer_ring_loop", "pingpong_loop", "producer_warps",
           "specialization_split"]
