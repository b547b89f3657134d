"""Dead side-effect-free ops in the `ptx` stage: what the lowering and the PTX loop passes erase
after rewriting addresses (xDSL's DCE does not know that casts and pure inline asm have no
effects)."""

from __future__ import annotations

from xdsl.ir import Operation

from sparsecc.dialects import ptx


def drop_dead_arith(kernel: Operation) -> int:
    """Erase the `arith` ops and pure `ptx.asm` (side-effect free; xDSL's DCE does not know
    that of casts) whose results nothing uses, last to first so that a dead chain goes in one
    pass; returns how many. What a vectorized pointer access leaves behind: the addresses and
    predicates of the registers after each vector's first.

        dropped = drop_dead_arith(kernel_op)
    """
    dropped = 0
    for region in kernel.regions:
        for block in region.blocks:
            for op in reversed(list(block.ops)):
                if op.regions:
                    dropped += drop_dead_arith(op)
                elif _side_effect_free(op) and op.results and all(r.first_use is None for r in op.results):
                    block.erase_op(op)
                    dropped += 1
    return dropped


def _side_effect_free(op: Operation) -> bool:
    return op.dialect_name() == "arith" or (isinstance(op, ptx.AsmOp) and op.pure is not None)


__all__ = ["drop_dead_arith"]
