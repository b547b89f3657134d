"""The IR surgery behind tritongpu-pipeline{continue-rings}: a TMA ring whose K loop runs inside
an outer loop (a grouped GEMM's `while` over an expert's token tiles) lives outside that loop,
and the outer loop carries the ring's step counter from one trip to the next.

Without it, every outer trip allocates and initialises the ring's mbarriers again, so no warp
may run ahead into the next trip (a CTA barrier ends each K loop) and warp specialization does
not apply. With one ring for the whole kernel, global step g of the ring (the steps of all
earlier trips counted) uses slot g % S at phase g / S, wherever the trips begin and end; a
producer warp can then issue the next trip's copies while the compute warps finish this one.
The ring itself and its steps are `tritongpu_pipeline.PipelinePass._pipeline_mbarriers`'s.
Continued (`continue_rings`, TMA, a K loop that `ring_outer_loop` finds inside an outer loop),
the rings and both barrier rings are made and initialised once, before the outer loop, which
carries g = the ring steps of all earlier trips (`carry_counter`); step j of this trip is the
ring's step g + j everywhere in that ring (slot (g + j) % S, phases from (g + j) / S; rd and wr
start at g % S and (g + S-1) % S). What changes, and why it stays ordered:
    prologue stage s: scf.if (step s exists) { wait empty[(g+s) % S], parity
                      ((g+s) / S & 1) ^ 1; arrive full; copies }
        - the slot may still hold step g+s-S of an earlier trip: its copy waits for
          that step's release, as the loop's refills do (a fresh barrier passes parity
          1 at once: the first S steps of the kernel never wait);
    after the loop:   ttg.dot_wait {pendings = 0}; scf.if (n > 0) { arrive empty[wr] }
                      (wr = (g+n-1) % S, the slot of this trip's last step); g' = g + n
        - the last step's slot is released once its wgmma group retired, so that the
          next trip's copies may reuse it; every step of every trip is released
          exactly once, in order, which keeps the phase arithmetic exact across trips.
Who waits on what: a compute warp waits only on full[s] for the step it computes (the
copies of step k are issued before any wait on step k's phase can pass, by the TMA
thread which is either the producer warp or thread 0 in program order); the TMA
thread waits only on empty[s] for step k-S, which every compute warp released before
it can wait on anything of step k (releases of trip t's steps come before the full
waits of trip t+1 in each warp's program order), so nobody waits on a step whose
release or copy waits on it: no deadlock, with or without a producer warp. Phases:
slot s is used by steps s, s+S, s+2S, ... of the whole kernel, its full barrier
completes one phase per step (the copies' bytes) and its empty barrier one per
release (all compute warps), so the phase of step k is k / S on both. No CTA barrier
is needed at the end of a trip (nothing is initialised again); the epilogue writes
only the compute warps' own buffers (y, the store scratch), which allocate-shared-
memory never overlaps with the rings, so the copies of the next trip cannot race
with it.

    outer = ring_outer_loop(k_loop)      # None: the loop keeps the per-trip ring
    base, finish = carry_counter(outer, zero)
    ... uses of base (the steps before this trip) ...; finish(base + n)
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IntegerAttr, i32
from xdsl.ir import Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from sparsecc.analysis.divisibility import int_constant
from sparsecc.dialects import tt


def ring_outer_loop(loop: scf.ForOp) -> scf.WhileOp | scf.ForOp | None:
    """The outer loop whose trips may share `loop`'s ring: the scf.while (its body) or scf.for
    that directly holds `loop`, itself a top-level op of its function, with no other scf.for
    inside it. None otherwise (the ring stays per trip).

    Example: bench/moe.py's K loop gives the `while t0 < end` loop around it."""
    outer = loop.parent_op()
    if isinstance(outer, scf.WhileOp):
        if loop.parent_block() is not outer.after_region.block:
            return None
    elif not isinstance(outer, scf.ForOp):
        return None
    if not isinstance(outer.parent_op(), tt.FuncOp):
        return None
    if [o for o in outer.walk() if isinstance(o, scf.ForOp) and o is not outer] != [loop]:
        return None
    return outer


def carry_counter(outer: scf.WhileOp | scf.ForOp, init: SSAValue) -> tuple[SSAValue, Callable[[SSAValue], None]]:
    """Give `outer` one more carried i32, starting at `init` (defined before it): (its value in
    the body, `finish(next)` that makes the body yield `next` for it). `outer` is replaced by a
    loop with one more result (its old results keep their uses); its regions move over.

    Example: carry_counter(while_op, zero) -> (g, finish); finish(g + n) after the K loop."""
    if isinstance(outer, scf.WhileOp):
        before, body = outer.before_region.block, outer.after_region.block
        passed = before.insert_arg(i32, len(before.args))
        cond = before.last_op
        assert isinstance(cond, scf.ConditionOp)
        Rewriter.replace_op(cond, scf.ConditionOp(cond.condition, *cond.args, passed))
        value = body.insert_arg(i32, len(body.args))
        types = [r.type for r in outer.results]
        regions = (outer.before_region, outer.after_region)
        new: Operation = scf.WhileOp([*outer.arguments, init], [*types, i32], *(outer.detach_region(r) for r in regions))
    else:
        body = outer.body.block
        value = body.insert_arg(i32, len(body.args))
        new = scf.ForOp(outer.lb, outer.ub, outer.step, [*outer.iter_args, init], outer.detach_region(outer.body))
    Rewriter.insert_op(new, InsertPoint.before(outer))
    for old, res in zip(outer.results, new.results):
        old.replace_all_uses_with(res)
    outer.detach()
    outer.erase()

    def finish(nxt: SSAValue) -> None:
        y = body.last_op
        assert isinstance(y, scf.YieldOp)
        Rewriter.replace_op(y, scf.YieldOp(*y.operands, nxt))

    return value, finish


def trip_count(loop: scf.ForOp, at: InsertPoint) -> SSAValue:
    """The number of iterations of `loop` (i32, >= 0), computed at `at`: max(ub - lb + step - 1,
    0) / step; max(ub, 0) for lb = 0, step = 1 (a K loop)."""
    def ins(op: Operation) -> SSAValue:
        Rewriter.insert_op(op, at)
        return op.results[0]

    zero = ins(arith.ConstantOp(IntegerAttr(0, i32)))
    lb, ub, step = loop.lb, loop.ub, loop.step
    if int_constant(lb) == 0 and int_constant(step) == 1:
        return ins(arith.MaxSIOp(ub, zero))
    span = ins(arith.SubiOp(ub, lb))
    span = ins(arith.AddiOp(span, ins(arith.SubiOp(step, ins(arith.ConstantOp(IntegerAttr(1, i32)))))))
    return ins(arith.DivSIOp(ins(arith.MaxSIOp(span, zero)), step))


def ring_start(base: SSAValue, stages: int, at: InsertPoint) -> tuple[SSAValue, SSAValue]:
    """(rd, wr) of a trip whose ring already ran `base` steps: the slots its first step reads
    (base % S) and its first refill writes ((base + S-1) % S), computed at `at`."""
    def ins(op: Operation) -> SSAValue:
        Rewriter.insert_op(op, at)
        return op.results[0]

    ns = ins(arith.ConstantOp(IntegerAttr(stages, i32)))
    rd = ins(arith.RemUIOp(base, ns))
    ahead = ins(arith.AddiOp(base, ins(arith.ConstantOp(IntegerAttr(stages - 1, i32)))))
    return rd, ins(arith.RemUIOp(ahead, ns))


__all__ = ["carry_counter", "ring_outer_loop", "ring_start", "trip_count"]
