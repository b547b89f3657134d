"""Handlers of the debugging ops: `tt.debug_barrier` is `bar.sync 0`; `tt.assert` traps the
program when any element a thread holds is false (the message is not printed on the GPU: run
the kernel on the interpreter to see it); `tt.print` is dropped (docs/language.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sparsecc.codegen.handlers.table import handles
from sparsecc.codegen.lower_base import Regs
from sparsecc.dialects import ptx, tt

if TYPE_CHECKING:
    from sparsecc.codegen.lower_state import LoweringState


@handles(tt.DebugBarrierOp)
def _debug_barrier(L: LoweringState, op: tt.DebugBarrierOp) -> None:
    L.em.op(ptx.BarSyncOp(0))


@handles(tt.AssertOp)
def _assert(L: LoweringState, op: tt.AssertOp) -> None:
    cond = L.get(op.condition)
    regs = cond.regs if isinstance(cond, Regs) else [cond]
    em = L.em
    ok = regs[0]
    for r in regs[1:]:
        ok = em.band(ok, r)
    em.op(ptx.AsmOp("{\n\t.reg .pred %fail;\n\tnot.pred %fail, $0;\n\t@%fail trap;\n\t}", [ok]))


@handles(tt.PrintOp)
def _print(L: LoweringState, op: tt.PrintOp) -> None:
    return None
