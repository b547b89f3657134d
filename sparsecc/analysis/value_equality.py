"""Whether two SSA values provably hold the same number, where the IR computes it twice.

Triton kernels recompute things: tutorial 09's persistent matmul calls `_compute_pid` once for
the tile it loads (from the loop's `tile_id`) and once more for the tile it stores (from
`tile_id_c`, a counter it carries and bumps by the same step: `tile_id_c += NUM_SMS`). The
row checks of sparse operands (`row_wraps`) must see that the stored rows are the loaded rows.

`same_value(a, b)` proves it structurally:
  - the same value, or
  - results of two pure ops of the same kind and properties whose operands are the same values, or
  - a loop's induction variable and `c + step`, where `c` is an iter_arg of that loop that is
    yielded as that very `c + step` and starts at `lower bound - step`: by induction `c + step`
    is the induction variable at every iteration (also modulo 2**N, so overflow does not matter).

    same_value(pid_m, pid_m_1)            # True in tutorial 09
    same_linear(linear(offs_am), linear(offs_cm))
"""

from __future__ import annotations

from xdsl.dialects import arith, scf
from xdsl.ir import BlockArgument, Operation, SSAValue

from sparsecc.analysis.linear_index import Linear, add_linear, linear
from sparsecc.dialects import tt

_PURE_TT = (tt.SplatOp, tt.BroadcastOp, tt.ExpandDimsOp, tt.MakeRangeOp, tt.GetProgramIdOp,
            tt.GetNumProgramsOp)
"""tt ops whose result depends on their operands and properties only."""
_MAX_DEPTH = 48


def _pure(op: Operation) -> bool:
    return (op.dialect_name() in ("arith", "math") or isinstance(op, _PURE_TT)) and not op.regions


def _counter_is_induction_variable(iv: SSAValue, bumped: SSAValue, depth: int) -> bool:
    """`iv` is an scf.for's induction variable and `bumped` is `c + step` for an iter_arg `c` of
    that loop that is yielded as `bumped` and starts at `lower bound - step`."""
    if not isinstance(iv, BlockArgument) or iv.index != 0 or not isinstance(bumped.owner, arith.AddiOp):
        return False
    loop = iv.block.parent_op()
    if not isinstance(loop, scf.ForOp) or iv.block is not loop.body.block:
        return False
    add = bumped.owner
    for c, step in ((add.lhs, add.rhs), (add.rhs, add.lhs)):
        if not (isinstance(c, BlockArgument) and c.block is iv.block and c.index >= 1):
            continue
        i = c.index - 1
        yielded = loop.body.block.last_op
        if not isinstance(yielded, scf.YieldOp) or yielded.operands[i] is not bumped:
            continue
        if not same_value(step, loop.step, depth + 1):
            continue
        init, lb, st = linear(loop.iter_args[i]), linear(loop.lb), linear(loop.step)
        if init is not None and lb is not None and st is not None and same_linear(add_linear(init, st), lb, depth + 1):
            return True
    return False


def same_value(a: SSAValue, b: SSAValue, depth: int = 0) -> bool:
    """`a` and `b` hold the same number wherever both are visible (see the module docstring)."""
    if a is b:
        return True
    if depth > _MAX_DEPTH or a.type != b.type:
        return False
    if _counter_is_induction_variable(a, b, depth) or _counter_is_induction_variable(b, a, depth):
        return True
    oa, ob = a.owner, b.owner
    if not (isinstance(oa, Operation) and isinstance(ob, Operation)) or oa.name != ob.name or not _pure(oa):
        return False
    if a.index != b.index or len(oa.operands) != len(ob.operands):  # type: ignore[attr-defined]
        return False
    if oa.properties != ob.properties or oa.attributes != ob.attributes:
        return False
    return all(same_value(x, y, depth + 1) for x, y in zip(oa.operands, ob.operands, strict=True))


def same_linear(a: Linear | None, b: Linear | None, depth: int = 0) -> bool:
    """Two linear forms (`linear_index.linear`) with the same coefficients on atoms that are
    the same values (`same_value`)."""
    if a is None or b is None or len(a) != len(b):
        return False
    if a == b:
        return True
    left = dict(b)
    for key, coef in a.items():
        match = next((k for k, c in left.items() if c == coef and (k == key or (
            isinstance(k, SSAValue) and isinstance(key, SSAValue) and same_value(key, k, depth + 1)))), None)
        if match is None:
            return False
        del left[match]
    return True
