"""Handler of `tt.dequantize`: quantized codes (read in place from shared memory) times
scales, into registers or straight into mma fragments (codegen/lower_quant.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sparsecc.codegen.handlers.table import handles
from sparsecc.dialects import tt

if TYPE_CHECKING:
    from sparsecc.codegen.lower_state import LoweringState


@handles(tt.DequantizeOp)
def _dequantize(L: LoweringState, op: tt.DequantizeOp) -> None:
    # imported here: only quantized kernels pay for the module (a cold compile imports the
    # back half, and most kernels have no dequantize)
    from sparsecc.codegen.lower_quant import lower_dequantize

    scratch = L.scratch(op) if op in L.cfg.smem_offsets else None
    L.set(op.result, lower_dequantize(L, op, scratch))
