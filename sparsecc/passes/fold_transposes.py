"""fold-transposes: a `tl.trans` is folded into the loads (or stores) it transposes.

Accepts: tt IR. Guarantees afterwards: each `tt.trans` whose source side (the 2-D values that
lead to it: a load, its pointers, masks) or, failing that, whose result side can be transposed
as a whole (see sparse-operand-to-lhs for the rules) is gone, that side now producing the
transposed values directly: `tl.trans(tl.load(block_ptr))` loads through the transposed block
pointer. A transpose that cannot be folded stays (the interpreter runs it; on the GPU it is a
shuffle through shared memory), as does any `tt.trans` of a rank-3+ tensor. Runs after sparse-operand-to-lhs, which folds the transposes around a sparse dot.

    tl.dot(x, tl.trans(tl.load(w_ptr)))   ->   tl.dot(x, tl.load(w_ptr transposed))
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from sparsecc.dialects import tt
from sparsecc.passes.sparse_operand_to_lhs import component_of, transpose_component, untransposable


def fold(op: tt.TransOp) -> bool:
    """Fold one transpose into its source side (when no dot is there) or its result side."""
    source = component_of([op.src])
    if untransposable(source) is None and not any(isinstance(o, tt.DotOp) for o in _ops(source)):
        transpose_component(source)
        return True
    result = component_of([op.result])
    if untransposable(result) is None:
        transpose_component(result)
        return True
    return False


def _ops(web: set) -> list:
    return [v.owner for v in web if not isinstance(v.owner, type(None))]


@dataclass(frozen=True)
class FoldTransposesPass(ModulePass):
    """Fold `tt.trans` into the memory ops around it (see the module docstring)."""

    name = "fold-transposes"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for trans in [o for o in op.walk() if isinstance(o, tt.TransOp)]:
            # a permutation of a rank-3+ tensor is no 2-D transpose: it stays (a register shuffle)
            if trans.parent is not None and len(tt.shape_of(trans.src.type)) == 2:
                fold(trans)
