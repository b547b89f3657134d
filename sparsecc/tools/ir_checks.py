"""Structural checks that xDSL's verifier leaves out: SSA dominance and region yields.

xDSL verifies each op's own constraints but accepts a use placed before its definition (in the
same block, or of a value defined inside a region the user is not in), and an `scf.if` /
`scf.for` whose region yields fewer values than the op returns (the parser inserts an empty
implicit `scf.yield`). Passes then fail later with unrelated errors, so `sparsecc-opt` runs
these checks right after parsing and reports the offending op.

    >>> problem = first_structural_error(module)   # None, or (op, message)
"""

from __future__ import annotations

from xdsl.dialects import scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, BlockArgument, Operation, OpResult, SSAValue


def _name(value: SSAValue) -> str:
    return f"%{value.name_hint}" if value.name_hint else "a value"


def _ancestor_in(op: Operation, block: Block) -> Operation | None:
    """`op` or its ancestor whose parent block is `block` (None: `op` is not inside `block`)."""
    cur: Operation | None = op
    while cur is not None and cur.parent_block() is not block:
        cur = cur.parent_op()
    return cur


def _dominance_error(op: Operation, index: int, value: SSAValue,
                     order: dict[Block, dict[Operation, int]]) -> str | None:
    """Why operand `index` of `op` is not visible there, or None when it is."""
    what = f"operand #{index} ({_name(value)})"
    if isinstance(value, BlockArgument):
        if _ancestor_in(op, value.block) is None:
            return f"{what} is an argument of a block that does not enclose this use"
        return None
    if not isinstance(value, OpResult):  # a forward reference the parser never resolved
        return f"{what} is used but never defined where this use can see it"
    definer = value.op
    block = definer.parent_block()
    if block is None or isinstance(definer.parent_op(), ModuleOp):
        return None  # the module body is a graph region: no order among its ops
    user = _ancestor_in(op, block)
    if user is None:
        return f"{what} is defined inside a region that does not enclose this use"
    if user is definer:
        return f"{what} is defined inside the region of the op that uses it"
    positions = order.get(block)
    if positions is None:
        positions = order[block] = {o: i for i, o in enumerate(block.ops)}
    if positions[definer] > positions[user]:
        return f"{what} is used before its definition"
    return None


def _yield_error(op: Operation) -> str | None:
    """Why an scf.if / scf.for region yields the wrong number of values, or None."""
    if isinstance(op, scf.IfOp):
        want = len(op.results)
        regions = [("then", op.true_region), ("else", op.false_region)]
    elif isinstance(op, scf.ForOp):
        want = len(op.results)
        regions = [("body", op.body)]
    else:
        return None
    for label, region in regions:
        if not region.blocks:
            if want and label == "else":
                return f"has {want} result(s) but no else region to yield them"
            continue
        last = region.blocks.first.last_op if region.blocks.first is not None else None
        got = len(last.operands) if isinstance(last, scf.YieldOp) else 0
        if got != want:
            return f"{label} region yields {got} value(s) but the op has {want} result(s)"
    return None


def first_structural_error(root: Operation) -> tuple[Operation, str] | None:
    """The first op (in walk order) that uses a value it cannot see or whose regions yield
    the wrong number of values, with the reason."""
    order: dict[Block, dict[Operation, int]] = {}
    for op in root.walk():
        for i, value in enumerate(op.operands):
            problem = _dominance_error(op, i, value, order)
            if problem is not None:
                return op, problem
        problem = _yield_error(op)
        if problem is not None:
            return op, problem
    return None
