"""sparse-operand-to-lhs: `tl.dot(x, w)` with `w` 2:4 sparse becomes `(w^T · x^T)^T`, with no
transpose left in the program.

Accepts: tt IR before decompose-sparse-tensors, where a `tt.dot`'s right operand (B, K×N) is
sparse — the orientation of `y = x @ W.T` with W stored N×K and 2:4 along K, what every
`nn.Linear` is. Its tile is K×N with K, the compressed dim, contiguous (a block pointer with
`order = [0, 1]`, or pointers `W + k[:, None] + n[None, :] * stride_wn`).

Guarantees afterwards: every sparse `tt.dot` has the sparse operand on the left. The tensor
cores only take A sparse, so the pass computes the transposed product `D^T = W^T · x^T` and
transposes everything connected to the dot instead of inserting transposes: the connected
component of 2-D values around the dot (its operands and their loads and pointers, the
accumulator through the loop, the epilogue up to its stores) has every shape swapped. A block
pointer swaps its shape, strides, offsets and order, `tt.advance` its offsets, a load or store
its boundary-check dims, `expand_dims` its axis, a reduction its axis, a dot its operands. A
tensor of pointers thus addresses the same elements in transposed order: nothing is copied and
W is read as stored (K contiguous, the left operand's layout). x is read as a K-major right
operand, which the GPU path loads without a transpose.

What cannot be transposed (an op outside those, a non-splat constant, another dot in the same
component whose left operand is sparse) is an error naming the op.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import (
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    IntegerAttr,
    ModuleOp,
    TensorType,
    i32,
)
from xdsl.ir import Attribute, Block, BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException

from sparsecc.dialects import tt


class TransposeError(DiagnosticException):
    """A value connected to a sparse-B dot cannot be transposed."""

    def __init__(self, message: str, op: Operation | None = None):
        super().__init__(message)
        self.op = op


def _is_2d(ty: Attribute) -> bool:
    if isinstance(ty, TensorType):
        return len(ty.get_shape()) == 2
    return isinstance(ty, tt.PointerType) and isinstance(ty.pointee, TensorType) and len(ty.pointee.get_shape()) == 2


def _swap_tensor(ty: TensorType) -> TensorType:
    m, n = ty.get_shape()
    return TensorType(ty.element_type, [n, m], ty.encoding)


def _swapped(ty: Attribute) -> Attribute:
    if isinstance(ty, TensorType):
        return _swap_tensor(ty)
    assert isinstance(ty, tt.PointerType) and isinstance(ty.pointee, TensorType)
    return tt.PointerType(_swap_tensor(ty.pointee))


_SHAPE_ONLY = (tt.SplatOp, tt.BroadcastOp, tt.AddPtrOp, scf.ForOp, scf.YieldOp, scf.IfOp, scf.WhileOp,
               scf.ConditionOp)


def _while_links(v: SSAValue) -> list[SSAValue]:
    """The values an scf.while carries together with `v`: slot i of its inits, its `before`
    block's arguments and its body's yield; slot j of its condition's arguments, its body's
    arguments and its results. `v` may be any of them."""
    out: list[SSAValue] = []
    if isinstance(v, BlockArgument) and isinstance(v.owner, Block) and isinstance(v.owner.parent_op(), scf.WhileOp):
        loop = v.owner.parent_op()
        assert isinstance(loop, scf.WhileOp)
        if v.owner is loop.before_region.block:
            out += _while_slot(loop, v.index)
        else:
            out += _while_result(loop, v.index)
    if isinstance(v.owner, scf.WhileOp):
        out += _while_result(v.owner, v.index)  # type: ignore[attr-defined]
    for use in v.uses:
        op = use.operation
        if isinstance(op, scf.WhileOp):
            out += _while_slot(op, use.index)
        elif isinstance(op, scf.ConditionOp) and use.index > 0 and isinstance(op.parent_op(), scf.WhileOp):
            out += _while_result(op.parent_op(), use.index - 1)  # type: ignore[arg-type]
        elif isinstance(op, scf.YieldOp) and isinstance(op.parent_op(), scf.WhileOp):
            out += _while_slot(op.parent_op(), use.index)  # type: ignore[arg-type]
    return out


def _while_slot(loop: scf.WhileOp, i: int) -> list[SSAValue]:
    """Carried slot i of `loop`: its init, the `before` block's argument, the body's yielded value."""
    body_yield = loop.after_region.block.last_op
    return [loop.arguments[i], loop.before_region.block.args[i],
            *([body_yield.operands[i]] if isinstance(body_yield, scf.YieldOp) else [])]


def _while_result(loop: scf.WhileOp, j: int) -> list[SSAValue]:
    """Result slot j of `loop`: the condition's forwarded value, the body's argument, the result."""
    cond = loop.before_region.block.last_op
    return [*([cond.args[j]] if isinstance(cond, scf.ConditionOp) else []), loop.after_region.block.args[j],
            loop.results[j]]


def _linked(v: SSAValue) -> list[SSAValue]:
    """Values that must be transposed together with `v`: through its defining op, its users, and
    the loop/branch plumbing that carries it."""
    out: list[SSAValue] = _while_links(v)
    ops: list[Operation] = [u.operation for u in v.uses
                            if not isinstance(u.operation, scf.WhileOp | scf.ConditionOp)
                            and not (isinstance(u.operation, scf.YieldOp)
                                     and isinstance(u.operation.parent_op(), scf.WhileOp))]
    owner = v.owner
    if isinstance(owner, Operation) and not isinstance(owner, scf.WhileOp):
        ops.append(owner)
    elif isinstance(v, BlockArgument):
        parent = owner.parent_op() if isinstance(owner, Block) else None
        if isinstance(parent, scf.ForOp) and v.index > 0:
            i = v.index - 1
            yields = parent.body.block.last_op
            out += [parent.iter_args[i], parent.results[i]]
            if isinstance(yields, scf.YieldOp):
                out.append(yields.operands[i])
    for op in ops:
        if isinstance(op, scf.YieldOp):
            parent = op.parent_op()
            for i, operand in enumerate(op.operands):
                if operand is v and parent is not None:
                    out.append(parent.results[i])
                    if isinstance(parent, scf.ForOp):
                        out.append(parent.body.block.args[i + 1])
            continue
        if isinstance(op, scf.ForOp):
            for i, init in enumerate(op.iter_args):
                if init is v:
                    out += [op.results[i], op.body.block.args[i + 1]]
            continue
        if isinstance(op, scf.IfOp | tt.TransOp):
            continue  # a transpose is where the transposed part of the program ends
        out += [o for o in op.operands if _is_2d(o.type)]
        out += [r for r in op.results if _is_2d(r.type)]
    return out


def component(dot: tt.DotOp) -> set[SSAValue]:
    """The 2-D values connected to `dot` (see the module docstring)."""
    return component_of([dot.a, dot.b, dot.c, dot.result])


def component_of(start: list[SSAValue]) -> set[SSAValue]:
    """The 2-D values connected to `start`; a `tt.trans` bounds it."""
    seen: set[SSAValue] = set()
    work = list(start)
    while work:
        v = work.pop()
        if v in seen or not _is_2d(v.type):
            continue
        seen.add(v)
        work.extend(_linked(v))
    return seen


def _ops_of(values: set[SSAValue]) -> list[Operation]:
    ops: dict[Operation, None] = {}
    for v in values:
        if isinstance(v.owner, Operation):
            ops[v.owner] = None
        for use in v.uses:
            ops[use.operation] = None
    return list(ops)


def _set_type(v: SSAValue, ty: Attribute) -> None:
    """Retype `v` in place (its uses stay): the transposed program keeps every SSA value."""
    v._type = ty  # noqa: SLF001 - xDSL has no public in-place retyping


def _flip_dims(attr: DenseArrayBase | None) -> DenseArrayBase | None:
    if attr is None:
        return None
    return DenseArrayBase.from_list(i32, sorted(1 - d for d in attr.get_values()))


def _transpose_op(op: Operation, web: set[SSAValue]) -> None:
    """Adjust one op's attributes/operand order to its operands' and results' swapped types."""
    if isinstance(op, tt.ExpandDimsOp):
        if op.result in web and op.src not in web:
            op.properties["axis"] = IntegerAttr(1 - op.axis.value.data, i32)
        return
    if isinstance(op, tt.ReduceOp):
        if op.operands[0] in web:
            op.properties["axis"] = IntegerAttr(1 - op.axis.value.data, i32)
        return
    if isinstance(op, tt.MakeTensorPtrOp):
        base, (s0, s1), (t0, t1), (o0, o1) = op.base, op.shape, op.strides, op.offsets
        op.operands = [base, s1, s0, t1, t0, o1, o0]
        op.properties["order"] = DenseArrayBase.from_list(i32, [1 - o for o in op.order.get_values()])
        return
    if isinstance(op, tt.AdvanceOp):
        d0, d1 = op.offsets
        op.operands = [op.ptr, d1, d0]
        return
    if isinstance(op, tt.LoadOp | tt.StoreOp):
        flipped = _flip_dims(op.boundaryCheck)
        if flipped is not None:
            op.properties["boundaryCheck"] = flipped
        return
    if isinstance(op, tt.DotOp):
        if tt.is_sparse(op.a.type):
            raise TransposeError("this dot shares its accumulator or operands with a dot whose "
                                 "right operand is sparse; transposing both would make its sparse "
                                 "left operand a right one", op)
        op.operands = [op.b, op.a, op.c, *([op.meta] if op.meta is not None else [])]
        return
    if isinstance(op, arith.ConstantOp):
        value = op.value
        if isinstance(value, DenseIntOrFPElementsAttr) and op.result in web:
            vals = value.get_values()
            if not vals or any(x != vals[0] for x in vals):
                raise TransposeError("only splat constants can be transposed", op)
            op.properties["value"] = DenseIntOrFPElementsAttr.from_list(op.result.type, [vals[0]])
        return
    if isinstance(op, (*_SHAPE_ONLY, tt.TransOp)) or op.dialect_name() in ("arith", "math"):
        return
    raise TransposeError(f"'{op.name}' is connected to a dot whose right operand is sparse and "
                         "cannot be transposed to put the sparse operand on the left", op)


@dataclass(frozen=True)
class SparseOperandToLhsPass(ModulePass):
    """Put every sparse dot operand on the left by transposing its component (module docstring)."""

    name = "sparse-operand-to-lhs"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for dot in [o for o in op.walk() if isinstance(o, tt.DotOp)]:
            if not tt.is_sparse(dot.b.type):
                continue
            if tt.is_sparse(dot.a.type):
                raise TransposeError("both operands of this dot are sparse; at most one may be", dot)
            transpose_component(component(dot))


_TRANSPOSABLE = (*_SHAPE_ONLY, tt.ExpandDimsOp, tt.ReduceOp, tt.MakeTensorPtrOp, tt.AdvanceOp,
                 tt.LoadOp, tt.StoreOp, tt.DotOp, arith.ConstantOp, tt.TransOp)


def untransposable(web: set[SSAValue]) -> Operation | None:
    """The first op touching `web` that cannot be transposed, if any."""
    for o in _ops_of(web):
        if not (isinstance(o, _TRANSPOSABLE) or o.dialect_name() in ("arith", "math")):
            return o
        if isinstance(o, tt.TransOp) and o.src in web and o.result in web:
            return o
    return None


def transpose_component(web: set[SSAValue]) -> None:
    """Swap the shape of every value in `web` and adjust its ops; a `tt.trans` at the edge then
    relates two values of one type and disappears."""
    bad = untransposable(web)
    if bad is not None:  # checked before changing anything
        raise TransposeError(f"'{bad.name}' is connected to a dot whose right operand is sparse and "
                             "cannot be transposed to put the sparse operand on the left", bad)
    ops = _ops_of(web)
    for v in web:
        _set_type(v, _swapped(v.type))
    for o in ops:
        _transpose_op(o, web)
    for o in ops:
        if isinstance(o, tt.TransOp):
            o.result.replace_all_uses_with(o.src)
            o.detach()
            o.erase(safe_erase=False)
