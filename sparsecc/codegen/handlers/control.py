"""Handlers of structured control flow: `scf.for`, `scf.if` (and their `scf.yield`),
`tt.return`.

Lowered values are carried through loops and branches as flat register lists
(`lower_state.flatten` / `unflatten`). A loop body starts and ends with both barrier kinds
pending (its other iterations are unseen); an `scf.if` condition is uniform (the passes branch
on scalars only), so a barrier is pending after it if either branch left one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from xdsl.dialects import scf
from xdsl.dialects.builtin import i32, i64
from xdsl.ir import Block, Region, SSAValue

from sparsecc.analysis.kloops import (
    accumulation_chains,
    carried_in_flight,
    ring_in_flight,
    zero_restart,
)
from sparsecc.analysis.warp_sides import trip_scalars
from sparsecc.codegen.handlers.table import handles
from sparsecc.codegen.lower_base import LoweringError, flatten, unflatten
from sparsecc.dialects import tt
from sparsecc.dialects import ttg as ttgd
from sparsecc.dialects.ptx_mbarrier import MbarrierArriveOp, MbarrierWaitOp

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sparsecc.codegen.lower_state import LoweringState


@handles(tt.ReturnOp, scf.YieldOp, scf.ConditionOp)
def _terminator(L: LoweringState, op: tt.ReturnOp | scf.YieldOp | scf.ConditionOp) -> None:
    """Nothing to emit: the enclosing op's handler reads what a yield passes on."""


def _bind(L: LoweringState, results: Sequence[SSAValue], likes: Sequence[object], regs: Sequence[SSAValue]) -> None:
    """Record `results[i]` as a value shaped as `likes[i]` over the next registers of `regs`."""
    pos = 0
    for res, like in zip(results, likes):
        n = len(flatten(like))
        L.set(res, unflatten(like, list(regs[pos:pos + n])))
        pos += n


def _int32(L: LoweringState, v: object) -> SSAValue:
    assert isinstance(v, SSAValue)
    return L.em.to32(v) if v.type != i32 and v.type != i64 else v


@handles(scf.ForOp)
def _for(L: LoweringState, op: scf.ForOp) -> None:
    """The loop with its carried values flattened; registers the body yields unchanged
    (block-pointer bases/shapes/strides) are not carried: uses read the value from before the
    loop, so LICM can hoist what they feed."""
    em = L.em
    lb, ub, step = (_int32(L, L.get(v)) for v in (op.lb, op.ub, op.step))
    inits = [L.get(v) for v in op.iter_args]
    flat = [v for x in inits for v in flatten(x)]
    restart = zero_restart(op) if L.cfg.wgmma and L.mode != "producer" else None
    if restart is not None:
        flat.append(em.c(0))  # `fresh`, carried after the loop's own values
    body = Block(arg_types=[lb.type, *[v.type for v in flat]])
    body_args = list(body.args)
    L.set(op.body.block.args[0], body_args[0])
    _bind(L, op.body.block.args[1:], inits, body_args[1:])
    if restart is not None:
        dot, epilogue, index = restart
        L.restart.flags[dot] = body_args[-1]
        L.restart.ifs[epilogue] = (index, [])
    yielded = _lower_body(L, op, body)
    if restart is not None:
        yielded.extend(L.restart.ifs[restart[1]][1])
    if [v.type for v in yielded] != [v.type for v in flat]:
        raise LoweringError("loop-carried values change their register shape")
    keep = [i for i, (a, y) in enumerate(zip(body_args[1:], yielded)) if y is not a]
    for i in range(len(flat) - 1, -1, -1):
        if i not in keep:
            body_args[i + 1].replace_all_uses_with(flat[i])
            body.erase_arg(body_args[i + 1])
    body.add_op(scf.YieldOp(*[yielded[i] for i in keep]))
    new = scf.ForOp(lb, ub, step, [flat[i] for i in keep], body)
    em.block.add_op(new)
    L.barriers.conservative()
    L.wgmma_drain()  # the accumulators leave the loop: the last wgmma group must land
    results = list(flat)
    for pos_new, i in enumerate(keep):
        results[i] = new.results[pos_new]
    if restart is not None:
        results.pop()
    _bind(L, op.results, inits, results)


def _lower_body(L: LoweringState, op: scf.ForOp, body: Block) -> list[SSAValue]:
    """Lower the loop body into `body`; returns the registers its scf.yield passes on."""
    em = L.em
    outer = em.block
    em.block = body
    L.barriers.conservative()
    chained = [d for c in accumulation_chains(op) for d in c]
    carried = any(isinstance(d, tt.DotOp) and carried_in_flight(d) for d in op.body.block.ops)
    if (chained or carried) and L.cfg.wgmma:
        L.groups.pending = True  # from the second iteration on, the last group may be in flight
    # fragment registers: with two dots per body (unroll_by_two) each has its own, and the
    # group of the other may stay in flight while one reloads
    L.groups.frag_keep = 1 if len(chained) >= 2 else 0
    # an mbarrier ring whose groups read only guarded slots: barriers and scratch stores of
    # the body keep the group committed last in flight (the switch wgmma_ring_in_flight)
    outer_keep = L.groups.shared_keep
    L.groups.shared_keep = 1 if L.cfg.wgmma and not L.cfg.a_from_shared and ring_in_flight(op) else 0
    L.lower_block(op.body.block)
    L.groups.shared_keep = outer_keep
    y = op.body.block.last_op
    assert isinstance(y, scf.YieldOp)
    yielded = [v for a in y.arguments for v in flatten(L.get(a))]
    em.block = outer
    return yielded


@handles(scf.WhileOp)
def _while(L: LoweringState, op: scf.WhileOp) -> None:
    """The loop with its carried values flattened to registers in both regions; each region
    starts with both barrier kinds pending (it runs after either region). In a ping-pong
    kernel's consumer code the outer ring loop also carries whose turn it is and how many trips
    this group took (`_pingpong_body`)."""
    em = L.em
    inits = [L.get(v) for v in op.arguments]
    flat = [v for x in inits for v in flatten(x)]
    turns = L.ids.pingpong is not None and ttgd.PRODUCER in op.attributes
    if turns:
        flat += [em.c(0), em.c(0)]
    types = [v.type for v in flat]
    outer = em.block
    before, after = Block(arg_types=types), Block(arg_types=types)
    _bind(L, op.before_region.block.args, inits, list(before.args))
    em.block = before
    L.barriers.conservative()
    L.lower_block(op.before_region.block)
    cond = op.before_region.block.last_op
    assert isinstance(cond, scf.ConditionOp)
    passed = [v for a in cond.args for v in flatten(L.get(a))]
    if turns:
        passed += list(before.args[-2:])
    before.add_op(scf.ConditionOp(L.get(cond.condition), *passed))
    _bind(L, op.after_region.block.args, inits, list(after.args))
    em.block = after
    L.barriers.conservative()
    y = op.after_region.block.last_op
    assert isinstance(y, scf.YieldOp)
    if turns:
        turn, own = _pingpong_body(L, op.after_region.block, after.args[-2], after.args[-1])
    else:
        L.lower_block(op.after_region.block)
    yielded = [v for a in y.arguments for v in flatten(L.get(a))]
    if turns:
        yielded += [turn, own]
    if [v.type for v in passed] != types or [v.type for v in yielded] != types:
        raise LoweringError("while-carried values change their register shape")
    after.add_op(scf.YieldOp(*yielded))
    em.block = outer
    new = scf.WhileOp(flat, types, Region(before), Region(after))
    outer.add_op(new)
    L.barriers.conservative()
    L.wgmma_drain()
    _bind(L, op.results, inits, list(new.results))


def _pingpong_body(L: LoweringState, body: Block, turn: SSAValue, own: SSAValue) -> tuple[SSAValue, SSAValue]:
    """One trip of a ping-pong kernel's outer ring loop for this compute group: the scalars the
    loop carries on (the backward slice of the yield) every trip, the rest (the K loop, the
    release of its last slot, the epilogue) only on its own trips, `turn` == group. The groups'
    K loops alternate through two mbarriers: before its K loop a group waits until the other has
    passed every full-slot wait of its trip (except on the kernel's first trip), and lane 0 of
    each of its warps arrives on the other's barrier once its own K loop is issued (before the
    wgmma drain), so that the ring's slots are read in the order the producer fills them and a
    parity wait never meets a slot two phases behind. Returns the next (turn, own trips)."""
    em = L.em
    pp = L.ids.pingpong
    assert pp is not None
    y = body.last_op
    assert isinstance(y, scf.YieldOp)
    carried = set(trip_scalars(body))
    if any(inner.regions for inner in carried):
        raise LoweringError("internal error: a ping-pong loop carries on a value of a trip's work "
                            "(tritongpu-warp-specialize accepts none)")
    for inner in body.ops:
        if inner in carried:
            L.lower_op(inner)
    mine = em.cmp("eq", turn, pp.group)
    outer = em.block
    work = Block()
    em.block = work
    waits = em.cmp("ne", em.add(own, pp.group), 0)  # all but group 0's first trip
    parity = em.band(em.add(em.add(own, pp.group), 1), em.c(1))
    wait_blk = Block()
    em.block = wait_blk
    em.op(MbarrierWaitOp(em.add(pp.order, em.mul(pp.group, 8)), parity))
    wait_blk.add_op(scf.YieldOp())
    em.block = work
    em.op(scf.IfOp(waits, [], Region(wait_blk), Region(Block([scf.YieldOp()]))))
    L.barriers.conservative()
    arrived = False
    seen_loop = False
    for inner in body.ops:
        if inner in carried or inner is y:
            continue
        if seen_loop and not arrived and isinstance(inner, ttgd.DotWaitOp):
            _arrive_other(L)
            arrived = True
        seen_loop = seen_loop or isinstance(inner, scf.ForOp)
        L.lower_op(inner)
    if not arrived:
        _arrive_other(L)
    L.wgmma_drain()
    work.add_op(scf.YieldOp())
    em.block = outer
    em.op(scf.IfOp(mine, [], Region(work), Region(Block([scf.YieldOp()]))))
    L.barriers.conservative()
    return em.xor(turn, 1), em.add(own, em.select(mine, em.c(1), em.c(0)))


def _arrive_other(L: LoweringState) -> None:
    """Lane 0 of each warp of this group arrives on the other group's ordering mbarrier."""
    em = L.em
    pp = L.ids.pingpong
    assert pp is not None
    other = em.add(pp.order, em.mul(em.xor(pp.group, 1), 8))
    em.op(MbarrierArriveOp(other, em.cmp("eq", L.ids.lane, em.c(0))))


@handles(scf.IfOp)
def _if(L: LoweringState, op: scf.IfOp) -> None:
    """Both branches lowered from the barrier state before the if; the restarted sum of a
    persistent kernel's epilogue (`ZeroRestart`) is passed on, not zeroed."""
    em = L.em
    cond = L.get(op.cond)
    outer = em.block
    state = L.barriers.state()
    blocks, templates, yields, ends = [], None, [], []
    restart = L.restart.ifs.get(op)
    for region in (op.true_region, op.false_region):
        blk = Block()
        em.block = blk
        L.barriers.restore(state)
        vals = _lower_branch(L, op, region, restart) if region.blocks else []
        templates = templates or vals
        yields.append([v for x in vals for v in flatten(x)])
        blocks.append(blk)
        ends.append(L.barriers.state())
    for blk, ys in zip(blocks, yields):
        blk.add_op(scf.YieldOp(*ys))
    em.block = outer
    types = [v.type for v in yields[0]]
    new = scf.IfOp(cond, types, Region(blocks[0]), Region(blocks[1]))
    outer.add_op(new)
    # the condition is uniform: afterwards a barrier is pending if either branch left one
    L.barriers.restore((ends[0][0] or ends[1][0], ends[0][1] or ends[1][1]))
    if restart is not None:
        restart[1].append(em.select(cond, em.c(1), em.c(0)))
    _bind(L, op.results, templates or [], list(new.results))


def _lower_branch(L: LoweringState, op: scf.IfOp, region: Region, restart: tuple | None) -> list[object]:
    """Lower one branch; returns the lowered values its scf.yield passes on."""
    L.lower_block(region.block)
    y = region.block.last_op
    vals = [L.get(a) for a in y.arguments] if isinstance(y, scf.YieldOp) else []
    if restart is not None and region is op.true_region:
        # the restarted sum: the next dot ignores the accumulator (wgmma scale-d = 0) instead
        # of zeroing its registers here, which would make ptxas serialise every wgmma of the
        # loop (C7515)
        passed = op.false_region.block.last_op
        assert isinstance(passed, scf.YieldOp)
        vals[restart[0]] = L.get(passed.arguments[restart[0]])
    return vals
