"""Handler of `tt.dot`: mma.sp / mma / wgmma.sp over the operands' fragments
(codegen/lower_dot.py builds the instructions; the fragments come from `ttg.local_load` into
`#ttg.dot_op`, see handlers/shared.py, or from `tt.dequantize`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sparsecc.analysis.kloops import carried_in_flight, is_zero_splat, only_feeds_next_iteration
from sparsecc.codegen.handlers.table import handles
from sparsecc.codegen.lower_base import Frag, LoweringError, Regs, SmemOperand
from sparsecc.codegen.lower_dot import lower_dot
from sparsecc.dialects import tt

if TYPE_CHECKING:
    from sparsecc.codegen.lower_state import LoweringState


@handles(tt.DotOp)
def _dot(L: LoweringState, op: tt.DotOp) -> None:
    """The accumulator in registers, A/B as fragments or shared operands, the metadata (sparse
    dots) as fragments. A K-loop dot whose result only feeds the next iteration (or goes on to
    it through the yield where the pipeline keeps a group in flight, `carried_in_flight`)
    leaves its wgmma group in flight; one whose loop restarts the sum (`ZeroRestart`) scales the old sum by 0;
    a dense wgmma dot of a zero constant accumulator starts without one."""
    a, b, c = L.get(op.a), L.get(op.b), L.get(op.c)
    meta = L.get(op.meta) if op.meta is not None else None
    if (not isinstance(a, Frag | SmemOperand) or not isinstance(b, Frag | SmemOperand)
            or (meta is not None and not isinstance(meta, Frag))):
        raise LoweringError("operands must be in #ttg.dot_op layouts (run sparse-gpu-encoding)")
    if not isinstance(c, Regs):
        raise LoweringError("the accumulator must be a register tensor in #ttg.mma")
    fresh = L.restart.flags.get(op)
    scale_d = L.em.cmp("eq", fresh, 0) if fresh is not None else None
    L.set(op.result, lower_dot(L, a, b, c, meta, op.result.type,
                               defer_wait=only_feeds_next_iteration(op) or carried_in_flight(op), scale_d=scale_d,
                               fresh=is_zero_splat(op.c)))
