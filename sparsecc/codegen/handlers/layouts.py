"""Handler of `ttg.convert_layout`: a round trip through a shared scratch buffer (stored
row-major, with the ldmatrix swizzle when the result is an mma A operand, K-major when it is
an 8-bit or tf32 B operand)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from xdsl.dialects.builtin import TensorType, i1
from xdsl.ir import Attribute

from sparsecc.analysis.dtypes import esize
from sparsecc.analysis.mma_rename import is_mma_relabel
from sparsecc.analysis.swizzle import mma_swizzle_params
from sparsecc.codegen.handlers.shapes import stored_type
from sparsecc.codegen.handlers.shared import read_shared
from sparsecc.codegen.handlers.table import handles
from sparsecc.codegen.lower_base import Regs, Smem
from sparsecc.codegen.lower_mem import load_shared, store_shared
from sparsecc.codegen.mma_shortcut import is_mma_to_a_rename, mma_to_a_frags
from sparsecc.codegen.mma_stmatrix import store_by_stmatrix, transposed_scratch_encoding
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
    if is_mma_relabel(st, op.result.type):  # the same registers under another instruction N
        L.set(op.result, Regs(op.result.type, list(src.regs)))
        return
    shape = st.get_shape()
    order = tuple(range(len(shape) - 1, -1, -1))  # row-major
    enc = ttgd.SharedEncodingAttr(1, 1, 1, order)
    by_stmatrix = False
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
    elif (transposed := transposed_scratch_encoding(st, dst)) is not None:
        enc = transposed  # an MMA tile bound for a column-major store: 16-byte reads
        by_stmatrix = True
    if st.element_type == i1:
        _convert_predicates(L, op, src, enc)
        return
    mem_ty = ttgd.MemDescType(shape, st.element_type, enc, True)
    sm = Smem(L.scratch(op), mem_ty)
    if not (by_stmatrix and store_by_stmatrix(L, sm, src)):
        store_shared(L, sm, src)
    L.set(op.result, read_shared(L, sm, op.result.type))


def _convert_predicates(L: LoweringState, op: ttgd.ConvertLayoutOp, src: Regs, enc: Attribute) -> None:
    """An i1 tensor (a mask) in another layout: predicates have no memory form, so the round
    trip stores them as i16 0/1 (`stored_type`, as the shape ops do) and compares on the way back."""
    em = L.em
    st, rt = op.src.type, op.result.type
    wide = stored_type(i1)
    shape = st.get_shape()
    one, zero = em.c(1, wide), em.c(0, wide)
    words = Regs(TensorType(wide, shape, st.encoding), [em.select(v, one, zero) for v in src.regs])
    sm = Smem(L.scratch(op), ttgd.MemDescType(shape, wide, enc, True))
    store_shared(L, sm, words)
    back = load_shared(L, sm, TensorType(wide, shape, rt.encoding))
    L.set(op.result, Regs(rt, [em.cmp("ne", v, 0) for v in back.regs]))
