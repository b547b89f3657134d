"""Handler of `ttg.convert_layout`: a round trip through a shared scratch buffer (stored
row-major, with the ldmatrix swizzle when the result is an mma A operand, K-major when it is
an 8-bit or tf32 B operand)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sparsecc.analysis.dtypes import esize
from sparsecc.analysis.swizzle import mma_swizzle_params
from sparsecc.codegen.handlers.shared import read_shared
from sparsecc.codegen.handlers.table import handles
from sparsecc.codegen.lower_base import Smem
from sparsecc.codegen.lower_mem import store_shared
from sparsecc.codegen.mma_shortcut import is_mma_to_a_rename, mma_to_a_frags
from sparsecc.dialects import ttg as ttgd

if TYPE_CHECKING:
    from sparsecc.codegen.lower_state import LoweringState


@handles(ttgd.ConvertLayoutOp)
def _convert_layout(L: LoweringState, op: ttgd.ConvertLayoutOp) -> None:
    src = L.regs(op.src)
    st = op.src.type
    if is_mma_to_a_rename(st, op.result.type):  # attention's P: registers renamed, no round trip
        L.set(op.result, mma_to_a_frags(L, src, op.result.type))
        return
    shape = st.get_shape()
    order = tuple(range(len(shape) - 1, -1, -1))  # row-major
    enc = ttgd.SharedEncodingAttr(1, 1, 1, order)
    dst = op.result.type.encoding
    if (isinstance(dst, ttgd.DotOperandEncodingAttr) and dst.op_idx == 0 and len(shape) == 2
            and dst.meta in (-1, 0)):
        # an A fragment is read back by ldmatrix, 8 rows at a time: swizzle the rows apart
        enc = ttgd.SharedEncodingAttr(*mma_swizzle_params(shape[1], esize(st.element_type)), order)
    elif isinstance(dst, ttgd.DotOperandEncodingAttr) and dst.op_idx == 1 and esize(st.element_type) != 2:
        # 8-bit / tf32 B is read K-major (neither ldmatrix nor wgmma transposes it): the store
        # transposes a tile computed in registers, as sparse-gpu-encoding does a loaded one
        from sparsecc.analysis.dot_staging import shared_encoding_for

        enc = shared_encoding_for(dst, st)
    mem_ty = ttgd.MemDescType(shape, st.element_type, enc, True)
    sm = Smem(L.scratch(op), mem_ty)
    store_shared(L, sm, src)
    L.set(op.result, read_shared(L, sm, op.result.type))
