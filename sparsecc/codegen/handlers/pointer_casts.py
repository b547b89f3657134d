"""Handlers of the pointer casts `tt.int_to_ptr`, `tt.ptr_to_int` and `tt.bitcast`: a pointer is
its 64-bit byte address in a register here, so each cast keeps the registers and changes only
the type they are recorded with."""

from __future__ import annotations

from typing import TYPE_CHECKING

from xdsl.ir import Operation

from sparsecc.codegen.handlers.table import handles
from sparsecc.codegen.lower_base import Regs
from sparsecc.dialects import tt

if TYPE_CHECKING:
    from sparsecc.codegen.lower_state import LoweringState


@handles(tt.IntToPtrOp, tt.PtrToIntOp, tt.PtrBitcastOp)
def _same_address(L: LoweringState, op: Operation) -> None:
    v = L.get(op.operands[0])
    L.set(op.results[0], Regs(op.results[0].type, list(v.regs)) if isinstance(v, Regs) else v)
