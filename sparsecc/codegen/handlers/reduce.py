"""Handler of `tt.reduce` (sum, max, min): through a shared scratch buffer, which every thread
reads along the reduced axis for each of its result registers."""

from __future__ import annotations

from typing import TYPE_CHECKING

from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerType, TensorType
from xdsl.ir import Operation, SSAValue

from sparsecc.analysis.layouts import distributed
from sparsecc.codegen.handlers.table import handles
from sparsecc.codegen.handlers.views import row_major
from sparsecc.codegen.lower_base import LoweringError, Regs, Smem
from sparsecc.codegen.lower_mem import smem_addr, store_shared, unpack_words, word_type
from sparsecc.dialects import ptx, tt

if TYPE_CHECKING:
    from sparsecc.codegen.lower_state import LoweringState

_COMBINE: dict[tuple[str, bool], type[Operation]] = {
    ("sum", True): arith.AddfOp, ("sum", False): arith.AddiOp,
    ("max", True): arith.MaximumfOp, ("max", False): arith.MaxSIOp,
    ("min", True): arith.MinimumfOp, ("min", False): arith.MinSIOp,
}
"""(kind, float element) -> the op that combines two elements."""


@handles(tt.ReduceOp)
def _reduce(L: LoweringState, op: tt.ReduceOp) -> None:
    """`tt.reduce` through shared memory: the source is stored row-major, then each thread
    combines, for each of its result elements, the entries along the reduced axis (every
    thread of a scalar result computes the same value). Correct for any layout; it reads
    the reduced extent once per result register, so it suits epilogues and row-wise
    kernels (softmax), not reductions in a GEMM's main loop."""
    em = L.em
    src = L.regs(op.src)
    st = op.src.type
    shape = st.get_shape()
    axis = op.axis.value.data
    elt = st.element_type
    sm = Smem(L.scratch(op), row_major(st))
    store_shared(L, sm, src)
    L.before_shared_read()
    kind = op.kind.data
    combine = _COMBINE.get((kind, not isinstance(elt, IntegerType)))
    if combine is None:
        raise LoweringError(f"tt.reduce {kind}: not supported by the PTX lowering")

    def fold(coords: list[tuple[SSAValue, ...]]) -> SSAValue:
        acc = None
        for c in coords:
            wt, wn = word_type(elt, 1)
            word = em.op(ptx.LdSharedOp(smem_addr(L, sm, c), wt, wn))
            value = unpack_words(L, list(word.results), elt, 1)[0]
            acc = value if acc is None else em.val(combine(acc, value))
        assert acc is not None
        return acc

    res_ty = op.result.type
    if not isinstance(res_ty, TensorType):
        L.set(op.result, fold([(em.c(i),) for i in range(shape[0])]))
        return
    dl = distributed(res_ty.encoding, res_ty.get_shape())
    regs = []
    for c in L.coords(dl):
        regs.append(fold([(*c[:axis], em.c(i), *c[axis:]) for i in range(shape[axis])]))
    L.set(op.result, Regs(res_ty, regs))
