"""Loads into registers one K step ahead: the scales (and zero points) a wgmma's fragment
dequantization reads in registers (`analysis.dequantize.scales_in_registers`).

Such a tile never goes through the shared-memory rings of tritongpu-pipeline, so nothing
would hide its global-memory latency: loaded where it is used, every K step would wait for
it. Instead the loop carries it, loaded one iteration early:

    %s0 = tt.load %p0                                     (before the loop: step 0's)
    scf.for ... iter_args(..., %p = %p0, %s = %s0) {
        ... tt.dequantize %codes, %s ...
        %pn = tt.advance %p, [0, dk]
        %sn = tt.load %pn                                 (step j+1's, in flight meanwhile)
        scf.yield ..., %pn, %sn
    }

The last iteration's load reads one step past the end: only done where the load's boundary
check covers every advanced dimension, so that read is masked (padding), never out of
bounds. Called by tritongpu-pipeline on the wgmma loops it pipelines.
"""

from __future__ import annotations

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IntegerAttr
from xdsl.ir import BlockArgument
from xdsl.rewriter import InsertPoint, Rewriter

from sparsecc.analysis.dequantize import scales_in_registers
from sparsecc.analysis.kloops import carried_advance
from sparsecc.dialects import tt


def _advance_of(load: tt.LoadOp, loop: scf.ForOp) -> tt.AdvanceOp | None:
    """The advance that yields `load`'s pointer for the next iteration (`kloops.carried_advance`)
    when every dimension it moves is boundary-checked by `load` and no mask applies; else None."""
    adv = carried_advance(loop, load)
    if adv is None or load.mask is not None:
        return None
    checked = set(load.boundaryCheck.get_values()) if load.boundaryCheck is not None else set()
    for d, off in enumerate(adv.offsets):
        o = off.owner
        fixed_zero = isinstance(o, arith.ConstantOp) and isinstance(o.value, IntegerAttr) and o.value.value.data == 0
        if not fixed_zero and d not in checked:
            return None
    return adv


def _prefetched(loop: scf.ForOp) -> list[tuple[tt.LoadOp, tt.AdvanceOp]]:
    """The loads of `loop`'s body that feed only fragment dequantizations in registers."""
    out = []
    for load in loop.body.block.ops:
        if not isinstance(load, tt.LoadOp):
            continue
        uses = list(load.result.uses)
        if not uses or not all(isinstance(u.operation, tt.DequantizeOp)
                               and scales_in_registers(u.operation, load.result) for u in uses):
            continue
        adv = _advance_of(load, loop)
        if adv is not None:
            out.append((load, adv))
    return out


def prefetch_register_loads(loop: scf.ForOp) -> scf.ForOp:
    """`loop` with its register-dequantization operands loaded one iteration ahead (module
    docstring): a new loop with one more carried value per such load (its old results keep
    their uses), or `loop` itself when it has none."""
    found = _prefetched(loop)
    if not found:
        return loop
    body = loop.body.block
    y = body.last_op
    assert isinstance(y, scf.YieldOp)
    inits = []
    nexts = []
    for load, adv in found:
        assert isinstance(load.ptr, BlockArgument)
        bc = list(load.boundaryCheck.get_values()) if load.boundaryCheck is not None else []
        pad = load.padding.value.data if load.padding is not None else None
        first = tt.LoadOp(loop.iter_args[load.ptr.index - 1], boundary_check=bc, padding=pad)
        first.location = load.location
        Rewriter.insert_op(first, InsertPoint.before(loop))
        inits.append(first.result)
        carried = body.insert_arg(load.result.type, len(body.args))
        load.result.replace_all_uses_with(carried)
        load.detach()
        Rewriter.insert_op(load, InsertPoint.after(adv))
        load.operands[0] = adv.result
        nexts.append(load.result)
    Rewriter.replace_op(y, scf.YieldOp(*y.operands, *nexts))
    new = scf.ForOp(loop.lb, loop.ub, loop.step, [*loop.iter_args, *inits], loop.detach_region(loop.body))
    new.attributes.update(loop.attributes)
    Rewriter.insert_op(new, InsertPoint.before(loop))
    for old, res in zip(loop.results, new.results):
        old.replace_all_uses_with(res)
    loop.detach()
    loop.erase()
    return new


__all__ = ["prefetch_register_loads"]
