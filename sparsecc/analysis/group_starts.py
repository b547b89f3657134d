"""An index tensor evaluated at the first entry of each group, without gathering.

decompose-sparse-tensors needs, for a row term `X` (R×1) or a column term `Y` (1×C) of a sparse
address, the value at the first row (column) of each group the format packs together: values
take every second column, metadata every 16th row. When the term is an elementwise function of
one `tl.arange` (offsets, strides, `% M` wrapping, `pid * BLOCK`, comparisons for masks), the
value at the group starts is the same function of a strided range: `f(start + g*j)` for
`j < n/g`. `at_group_starts` re-emits the function that way (`tt.make_range` of n/g entries
times g), so the result is plain elementwise IR that every backend runs, instead of a reshape
and a reduction over the groups.

    starts = at_group_starts(builder_anchor, term, axis=1, group=2)   # 1×C/2, or None
"""

from __future__ import annotations

from xdsl.dialects import arith
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, IntegerAttr, TensorType, i32
from xdsl.ir import Attribute, Operation, SSAValue

from sparsecc.dialects import tt

_ELEMENTWISE = (
    arith.AddiOp, arith.SubiOp, arith.MuliOp, arith.DivSIOp, arith.DivUIOp, arith.RemSIOp,
    arith.RemUIOp, arith.MinSIOp, arith.MaxSIOp, arith.MinUIOp, arith.MaxUIOp, arith.AndIOp,
    arith.OrIOp, arith.XOrIOp, arith.CmpiOp, arith.ShLIOp, arith.ShRSIOp, arith.ShRUIOp,
    arith.SelectOp, arith.ExtSIOp, arith.ExtUIOp, arith.TruncIOp,
)

_MAX_OPS = 64
"""Terms are a handful of ops; a larger tree is left to the general path."""


class _NotAnIndexFunction(Exception):
    pass


class _Cloner:
    """Re-emits a term's ops before `anchor` with the range axis shrunk by `group`."""

    def __init__(self, anchor: Operation, group: int, round_down: frozenset[Operation] = frozenset()):
        self.anchor = anchor
        self.group = group
        self.round_down = round_down
        self.memo: dict[SSAValue, tuple[SSAValue | None, int | None]] = {}
        self.count = 0
        self.created: list[Operation] = []

    def insert(self, op: Operation) -> SSAValue:
        block = self.anchor.parent_block()
        assert block is not None
        block.insert_op_before(op, self.anchor)
        op.location = self.anchor.location
        self.created.append(op)
        return op.results[0]

    def visit(self, v: SSAValue) -> tuple[SSAValue | None, int | None]:
        """(the value at group starts, the range's axis in it); (None, None) for a value that
        does not depend on the range (a splat or constant: re-made at its consumer's shape)."""
        if v in self.memo:
            return self.memo[v]
        self.count += 1
        if self.count > _MAX_OPS:
            raise _NotAnIndexFunction
        result = self._visit(v)
        self.memo[v] = result
        return result

    def _visit(self, v: SSAValue) -> tuple[SSAValue | None, int | None]:
        ty = v.type
        if not isinstance(ty, TensorType):
            raise _NotAnIndexFunction
        owner = v.owner
        if isinstance(owner, tt.SplatOp) and not isinstance(owner.src.type, TensorType):
            return None, None
        if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, DenseIntOrFPElementsAttr):
            values = owner.value.get_values()
            if values and all(x == values[0] for x in values):
                return None, None
            raise _NotAnIndexFunction
        if isinstance(owner, tt.MakeRangeOp):
            n = ty.get_shape()[0]
            if n % self.group:
                raise _NotAnIndexFunction
            strided = self.insert(tt.MakeRangeOp(0, n // self.group))
            shape = [n // self.group]
            scaled = strided if self.group == 1 else self.insert(
                arith.MuliOp(strided, self._splat(IntegerAttr(self.group, i32), shape)))
            start = owner.start.value.data
            if start:
                scaled = self.insert(arith.AddiOp(scaled, self._splat(IntegerAttr(start, i32), shape)))
            return scaled, 0
        if isinstance(owner, tt.ExpandDimsOp):
            src, axis = self.visit(owner.src)
            if src is None:
                return None, None
            new_axis = owner.axis.value.data
            shape = list(tt.shape_of(src.type))
            shape.insert(new_axis, 1)
            out = self.insert(tt.ExpandDimsOp(src, new_axis))
            assert axis is not None
            return out, axis + (1 if new_axis <= axis else 0)
        if isinstance(owner, _ELEMENTWISE):
            parts = [self.visit(o) for o in owner.operands]
            axes = {a for _, a in parts if a is not None}
            shapes = {tt.shape_of(p.type) for p, _ in parts if p is not None}
            if not axes:
                return None, None
            if len(axes) != 1 or len(shapes) != 1:
                raise _NotAnIndexFunction
            shape = list(next(iter(shapes)))
            operands = [p if p is not None else self._rebuild(o, shape)
                        for (p, _), o in zip(parts, owner.operands, strict=True)]
            elem = tt.element_type(ty)
            new = type(owner).create(operands=operands, result_types=[TensorType(elem, shape)],
                                     properties=dict(owner.properties), attributes=dict(owner.attributes))
            out = self.insert(new)
            if owner in self.round_down:  # (x // group) * group: a group's first row
                g = self._splat(IntegerAttr(self.group, elem), shape)
                out = self.insert(arith.MuliOp(self.insert(arith.DivSIOp(out, g)), g))
            return out, next(iter(axes))
        raise _NotAnIndexFunction

    def _splat(self, value: Attribute, shape: list[int]) -> SSAValue:
        assert isinstance(value, IntegerAttr)
        scalar = self.insert(arith.ConstantOp(value))
        return self.insert(tt.SplatOp(scalar, TensorType(scalar.type, shape)))

    def _rebuild(self, v: SSAValue, shape: list[int]) -> SSAValue:
        """A range-independent operand (splat of a scalar, splat constant) at a new shape."""
        owner = v.owner
        elem = tt.element_type(v.type)
        if isinstance(owner, tt.SplatOp):
            return self.insert(tt.SplatOp(owner.src, TensorType(elem, shape)))
        if isinstance(owner, _ELEMENTWISE):  # e.g. extsi(splat(stride)): its operands rebuilt, then itself
            operands = [self._rebuild(o, shape) for o in owner.operands]
            return self.insert(type(owner).create(operands=operands, result_types=[TensorType(elem, shape)],
                                                  properties=dict(owner.properties),
                                                  attributes=dict(owner.attributes)))
        assert isinstance(owner, arith.ConstantOp) and isinstance(owner.value, DenseIntOrFPElementsAttr)
        value = owner.value.get_values()[0]
        return self.insert(arith.ConstantOp(DenseIntOrFPElementsAttr.from_list(TensorType(elem, shape), [value])))


def _strip_broadcast(v: SSAValue) -> SSAValue:
    while isinstance(v.owner, tt.BroadcastOp):
        v = v.owner.src
    return v


def at_group_starts(anchor: Operation, term: SSAValue, axis: int, group: int,
                    round_down: frozenset[Operation] = frozenset()) -> SSAValue | None:
    """`term` (R×1 for axis 0, 1×C for axis 1) at every `group`-th entry along `axis`, emitted
    before `anchor`; `term` itself for groups of 1 or a single entry; None when `term` is not an
    elementwise function of one `tl.arange` along `axis` (the caller then reduces the groups).
    The results of the ops in `round_down` (a `% M` wrap whose rows past M nobody sees) are
    rounded down to a multiple of `group`, so that a wrapped group still starts on a group."""
    shape = tt.shape_of(term.type)
    if group == 1 or shape[axis] == 1:
        return term
    cloner = _Cloner(anchor, group, round_down)
    try:
        value, found_axis = cloner.visit(_strip_broadcast(term))
    except _NotAnIndexFunction:
        value, found_axis = None, None
    if value is None or found_axis != axis or tt.shape_of(value.type)[axis] != shape[axis] // group:
        for op in reversed(cloner.created):  # uses before definitions
            op.detach()
            op.erase(safe_erase=False)
        return None
    return value
