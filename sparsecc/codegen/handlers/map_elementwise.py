"""Handler of `tt.map_elementwise` (`tl.map_elementwise`): its scalar region lowered inline
once per group of `pack` consecutive registers of the thread (the region's ops are scalar ops
with their own handlers, scf.if included, so each element branches on its own)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from xdsl.ir import SSAValue

from sparsecc.codegen.handlers.table import handles
from sparsecc.codegen.lower_base import LoweringError, Regs
from sparsecc.dialects import tt

if TYPE_CHECKING:
    from sparsecc.codegen.lower_state import LoweringState


@handles(tt.MapElementwiseOp)
def _map_elementwise(L: LoweringState, op: tt.MapElementwiseOp) -> None:
    pack = op.pack.value.data
    block = op.scalar_op.block
    operands = [L.get(v) for v in op.args]
    if not all(isinstance(o, Regs) for o in operands):
        raise LoweringError("tt.map_elementwise: expected register tensors")
    count = len(operands[0].regs)
    if count % pack:
        raise LoweringError(f"tt.map_elementwise: pack={pack} does not divide the {count} elements each thread "
                            "holds; use a smaller pack or a larger tile")
    results: list[list[SSAValue]] = [[] for _ in op.res]
    for start in range(0, count, pack):
        args = [o.regs[start + k] for o in operands for k in range(pack)]
        out = L.inline_block(block, args, "tt.map_elementwise: the scalar function")
        for j in range(len(op.res)):
            results[j].extend(out[j * pack:(j + 1) * pack])  # type: ignore[arg-type]
    for r, regs in zip(op.res, results, strict=True):
        L.set(r, Regs(r.type, regs))
