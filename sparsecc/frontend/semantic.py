"""Typed IR construction shared by the code generator and the `tl` builtins.

The rules kernel authors rely on live here: Python literals are weakly typed (they take the
other operand's type), mixed types promote like Triton (int op float -> float, fp16 op fp32 ->
fp32, fp16 op bf16 -> fp32, narrower int -> wider int), shapes broadcast like numpy, scalars
splat, `ptr + ints` is `tt.addptr`. Every operand passes `require_dense` unless the operation
is one of the few that accept a 2:4-sparse value.

Errors are `SemanticError`s; the code generator adds the source location.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from xdsl.builder import Builder, InsertPoint
from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    LocationAttr,
    NoneAttr,
    TensorType,
    UnknownLoc,
    f16,
    f32,
    f64,
    i1,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue

from sparsecc import defaults
from sparsecc.dialects import arith as arith_ext
from sparsecc.dialects import tt
from sparsecc.dialects.tt import PointerType, is_sparse, sparse_encoding_of
from sparsecc.frontend.errors import SemanticError
from sparsecc.frontend.types import bitwidth, describe, is_float, is_int

PyScalar = bool | int | float
I32_MIN, I32_MAX = -(2**31), 2**31 - 1
I64_MIN, I64_MAX = -(2**63), 2**63 - 1
MAX_NUMEL = defaults.MAX_NUMEL
"""Most elements one tensor of a kernel may hold (Triton's TRITON_MAX_TENSOR_NUMEL)."""
MAX_RANK = 4
"""Tensors have at most 4 dims (blocked layouts tile any rank; the dot takes 2-D tiles)."""


def check_tile(ty: Attribute) -> None:
    """Refuse a tensor type past the element limit or of rank > 4, whatever op makes it (a
    broadcast of two aranges as much as tl.zeros), before any pass spends minutes on it."""
    if not isinstance(ty, TensorType):
        return
    dims = ty.get_shape()
    numel = 1
    for d in dims:
        numel *= d
    if numel > MAX_NUMEL:
        raise SemanticError(f"a tensor of shape {list(dims)} has {numel} elements; a tensor holds at most "
                            f"{MAX_NUMEL} (Triton's limit: one program's registers and shared memory)")
    if len(dims) > MAX_RANK:
        raise SemanticError(f"a tensor of shape {list(dims)} is {len(dims)}-D; kernels take tensors of "
                            f"at most {MAX_RANK} dims (reshape to fewer)")


class Emitter:
    """Where new ops go: the end of the current block (an xDSL `Builder`), and the kernel source
    position they come from (`location`, set by the code generator for each node it visits)."""

    def __init__(self, block: Block):
        self.builder = Builder(InsertPoint.at_end(block))
        self.constants: dict[tuple[int, Attribute, Any], SSAValue] = {}
        """(block, type, value) -> an earlier scalar constant of that block, to reuse."""
        self.location: LocationAttr | None = None

    @property
    def block(self) -> Block:
        block = self.builder.insertion_point.block
        assert block is not None
        return block

    def move_to(self, block: Block) -> Block:
        """Insert at the end of `block` from now on; returns the previous block."""
        old = self.block
        self.builder = Builder(InsertPoint.at_end(block))
        return old

    def insert(self, op: Operation) -> Operation:
        for r in op.results:
            check_tile(r.type)
        if self.location is not None and isinstance(op.location, UnknownLoc):
            op.location = self.location
        return self.builder.insert(op)

    def value(self, op: Operation) -> SSAValue:
        self.insert(op)
        return op.results[0]


# --------------------------------------------------------------------------------------
# Types and shapes
# --------------------------------------------------------------------------------------


def is_value(x: Any) -> bool:
    return isinstance(x, SSAValue)


def is_py_scalar(x: Any) -> bool:
    return isinstance(x, bool | int | float)


def shape(v: SSAValue) -> tuple[int, ...]:
    return v.type.get_shape() if isinstance(v.type, TensorType) else ()


def elem(v: SSAValue | Attribute) -> Attribute:
    ty = v.type if isinstance(v, SSAValue) else v
    return ty.element_type if isinstance(ty, TensorType) else ty


def is_tensor(v: SSAValue) -> bool:
    return isinstance(v.type, TensorType)


def is_pointer(v: SSAValue) -> bool:
    """A scalar pointer or a tensor of pointers (not a block pointer)."""
    e = elem(v)
    return isinstance(e, PointerType) and not e.is_block


def is_block_pointer(v: SSAValue) -> bool:
    return isinstance(v.type, PointerType) and v.type.is_block


def like(ty: Attribute, new_elem: Attribute, encoding: Attribute | None = None) -> Attribute:
    """`ty`'s shape with `new_elem` elements (no encoding unless given)."""
    if isinstance(ty, TensorType):
        return TensorType(new_elem, ty.get_shape(), encoding or NoneAttr())
    return new_elem


def label(v: SSAValue) -> str:
    return f"'{v.name_hint}'" if v.name_hint else "value"


def require_dense(v: Any, what: str) -> None:
    """Reject a 2:4-sparse value in an operation that cannot take one."""
    if isinstance(v, SSAValue) and is_sparse(v.type):
        enc = sparse_encoding_of(v.type)
        name = f" '{v.name_hint}'" if v.name_hint else ""
        raise SemanticError(
            f"sparse tensor{name} (#tt.sparse<\"{enc.format.data if enc else '?'}\">) cannot be used "
            f"in {what}: only tl.load, tl.advance, pointer arithmetic and tl.dot operand A accept it"
        )


def require_value(x: Any, what: str) -> SSAValue:
    if not isinstance(x, SSAValue):
        raise SemanticError(f"{what} must be a tensor or scalar value, got {py_desc(x)}")
    return x


def py_desc(x: Any) -> str:
    if isinstance(x, SSAValue):
        return describe(x.type)
    if x is None:
        return "None"
    return f"{type(x).__name__} {x!r}"


# --------------------------------------------------------------------------------------
# Constants and literals
# --------------------------------------------------------------------------------------


def constant(em: Emitter, py: PyScalar, ty: Attribute, fresh: bool = False) -> SSAValue:
    """`arith.constant` of `py` as scalar type or splat tensor type `ty`. Scalar constants are
    reused within a block unless `fresh` (a constant that becomes a named variable)."""
    e = elem(ty)
    if is_float(e):
        scalar: Attribute = FloatAttr(float(py), e)  # type: ignore[arg-type]
        dense_val: Any = float(py)
    elif isinstance(e, IntegerType):
        v = int(py)
        if e.width.data == 1:
            v = 1 if v else 0
        lo, hi = (-(2 ** (e.width.data - 1)), 2**e.width.data - 1) if e.width.data > 1 else (0, 1)
        if not lo <= v <= hi:
            raise SemanticError(f"constant {py} does not fit in {describe(e)}")
        scalar = IntegerAttr(v, e)
        dense_val = v
    else:
        raise SemanticError(f"cannot make a constant of type {describe(e)}")
    if isinstance(ty, TensorType):
        return em.value(arith.ConstantOp(DenseIntOrFPElementsAttr.from_list(ty, [dense_val])))
    if fresh:
        return em.value(arith.ConstantOp(scalar, e))
    key = (id(em.block), e, (type(dense_val), dense_val))
    if key not in em.constants:
        em.constants[key] = em.value(arith.ConstantOp(scalar, e))
    return em.constants[key]


def literal_type(py: PyScalar, other: Attribute | None = None) -> Attribute:
    """The type a Python literal takes next to an operand of element type `other`."""
    if isinstance(py, bool):
        if other is not None and (is_float(other) or isinstance(other, IntegerType)):
            return other
        return i1
    if isinstance(py, int):
        if isinstance(other, IntegerType) and other.width.data > 1:
            w = other.width.data
            if -(2 ** (w - 1)) <= py < 2**w:
                return other
        if other is not None and is_float(other):
            return other
        if I32_MIN <= py <= I32_MAX:
            return i32
        if I64_MIN <= py <= I64_MAX:
            return i64
        raise SemanticError(f"integer constant {py} does not fit in 64 bits")
    if isinstance(py, float):
        return other if other is not None and is_float(other) else f32
    raise SemanticError(f"expected a number, got {py_desc(py)}")


def to_value(em: Emitter, x: Any, other: Attribute | None = None, what: str = "operand",
             shape: Sequence[int] = (), fresh: bool = False) -> SSAValue:
    """A runtime value for `x`: values pass through, Python literals become constants (splat
    to `shape` if given)."""
    if isinstance(x, SSAValue):
        return x
    if is_py_scalar(x):
        ty = literal_type(x, other)
        return constant(em, x, TensorType(ty, list(shape)) if shape else ty, fresh)
    raise SemanticError(f"{what} must be a tensor, a scalar or a number, got {py_desc(x)}")


# --------------------------------------------------------------------------------------
# Shapes: splat, expand_dims, broadcast
# --------------------------------------------------------------------------------------


def splat(em: Emitter, v: SSAValue, to_shape: Sequence[int]) -> SSAValue:
    owner = v.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr | FloatAttr):
        return constant(em, owner.value.value.data, TensorType(v.type, list(to_shape)))
    enc = sparse_encoding_of(v.type) if isinstance(v.type, PointerType) else None
    return em.value(tt.SplatOp(v, TensorType(v.type, list(to_shape), enc or NoneAttr())))


def expand_dims(em: Emitter, v: SSAValue, axis: int) -> SSAValue:
    if not is_tensor(v):
        raise SemanticError("cannot index a scalar with None; only tensors have dimensions")
    rank = len(shape(v))
    if axis < 0:
        axis += rank + 1
    if not 0 <= axis <= rank:
        raise SemanticError(f"expand_dims axis {axis} out of range for a rank-{rank} tensor")
    return em.value(tt.ExpandDimsOp(v, axis))


def broadcast_shapes(a: Sequence[int], b: Sequence[int]) -> tuple[int, ...]:
    out = []
    for i in range(1, max(len(a), len(b)) + 1):
        x = a[-i] if i <= len(a) else 1
        y = b[-i] if i <= len(b) else 1
        if x != y and 1 not in (x, y):
            raise SemanticError(f"shapes {list(a)} and {list(b)} cannot be broadcast together")
        out.append(max(x, y) if 1 in (x, y) else x)
    return tuple(reversed(out))


def broadcast_to(em: Emitter, v: SSAValue, to_shape: Sequence[int]) -> SSAValue:
    to_shape = tuple(to_shape)
    if not is_tensor(v):
        return splat(em, v, to_shape) if to_shape else v
    s = shape(v)
    if s == to_shape:
        return v
    if broadcast_shapes(s, to_shape) != to_shape:
        raise SemanticError(f"cannot broadcast shape {list(s)} to {list(to_shape)}")
    while len(shape(v)) < len(to_shape):
        v = em.value(tt.ExpandDimsOp(v, 0))
    ty = v.type
    assert isinstance(ty, TensorType)
    return em.value(tt.BroadcastOp(v, TensorType(ty.element_type, list(to_shape), ty.encoding)))


def broadcast_all(em: Emitter, *vals: SSAValue) -> list[SSAValue]:
    target: tuple[int, ...] = ()
    for v in vals:
        target = broadcast_shapes(target, shape(v))
    return [broadcast_to(em, v, target) for v in vals]


# --------------------------------------------------------------------------------------
# Promotion and casts
# --------------------------------------------------------------------------------------


def promote(a: Attribute, b: Attribute) -> Attribute:
    """The common element type of two operands (Triton's rules, signed integers)."""
    if a == b:
        return a
    fa, fb = is_float(a), is_float(b)
    if fa and fb:
        wa, wb = bitwidth(a), bitwidth(b)
        if 64 in (wa, wb):
            return f64
        if 32 in (wa, wb) or wa == wb:  # f32 wins; fp16 op bf16 -> fp32
            return f32
        return a if wa > wb else b  # fp8 op 16-bit float -> the 16-bit one
    if fa or fb:
        f = a if fa else b
        return f16 if bitwidth(f) == 8 else f
    if isinstance(a, IntegerType) and isinstance(b, IntegerType):
        return a if a.width.data >= b.width.data else b
    raise SemanticError(f"no common type for {describe(a)} and {describe(b)}")


def cast(em: Emitter, v: SSAValue, dst: Attribute) -> SSAValue:
    """Convert `v` elementwise to element type `dst` (value-preserving where possible)."""
    src = elem(v)
    if src == dst:
        return v
    if isinstance(src, PointerType) or isinstance(dst, PointerType):
        raise SemanticError(f"cannot convert {describe(v.type)} to {describe(dst)}")
    out_ty = like(v.type, dst)
    if is_int(src) and is_int(dst):
        ws, wd = bitwidth(src), bitwidth(dst)
        if wd == 1:
            return compare(em, "!=", v, constant(em, 0, v.type))
        if ws == 1:
            return em.value(arith_ext.ExtUIOp(v, out_ty))
        if wd > ws:
            return em.value(arith_ext.ExtSIOp(v, out_ty))
        return em.value(arith_ext.TruncIOp(v, out_ty))
    if is_float(src) and is_float(dst):
        ws, wd = bitwidth(src), bitwidth(dst)
        if wd > ws:
            return em.value(arith.ExtFOp(v, out_ty))
        if wd < ws:
            return em.value(arith.TruncFOp(v, out_ty))
        return cast(em, cast(em, v, f32), dst)  # fp16 <-> bf16 through fp32
    if is_int(src):
        if bitwidth(src) == 1:
            return em.value(arith_ext.UIToFPOp(v, out_ty))
        return em.value(arith_ext.SIToFPOp(v, out_ty))
    if bitwidth(dst) == 1:
        return compare(em, "!=", v, constant(em, 0.0, v.type))
    return em.value(arith_ext.FPToSIOp(v, out_ty))


def to_bool(em: Emitter, v: SSAValue) -> SSAValue:
    return cast(em, v, i1)


# --------------------------------------------------------------------------------------
# Binary and unary operators
# --------------------------------------------------------------------------------------

_CMP_I = {"<": "slt", "<=": "sle", ">": "sgt", ">=": "sge", "==": "eq", "!=": "ne"}
_CMP_F = {"<": "olt", "<=": "ole", ">": "ogt", ">=": "oge", "==": "oeq", "!=": "une"}
_INT_OPS: dict[str, type[Operation]] = {
    "+": arith.AddiOp, "-": arith.SubiOp, "*": arith.MuliOp, "//": arith.DivSIOp,
    "%": arith.RemSIOp, "&": arith.AndIOp, "|": arith.OrIOp, "^": arith.XOrIOp,
    "<<": arith.ShLIOp, ">>": arith.ShRSIOp,
}
_FLOAT_OPS: dict[str, type[Operation]] = {
    "+": arith.AddfOp, "-": arith.SubfOp, "*": arith.MulfOp, "/": arith.DivfOp,
}
COMPARISONS = tuple(_CMP_I)


def _operands(em: Emitter, a: Any, b: Any, what: str) -> tuple[SSAValue, SSAValue]:
    """Materialize literals (weakly typed against the other side) and broadcast."""
    if not isinstance(a, SSAValue) and not isinstance(b, SSAValue):
        raise SemanticError(f"{what} needs at least one tensor or scalar value")
    if isinstance(b, SSAValue):
        a = to_value(em, a, elem(b), f"left operand of {what}", shape(b))
    b = to_value(em, b, elem(a), f"right operand of {what}", shape(a))
    a, b = broadcast_all(em, a, b)
    return a, b


def binary(em: Emitter, op: str, a: Any, b: Any) -> SSAValue:
    """`a <op> b` for `+ - * / // % & | ^ << >>` and the comparisons."""
    what = f"'{op}'"
    va, vb = isinstance(a, SSAValue), isinstance(b, SSAValue)
    if (va and is_pointer(a)) or (vb and is_pointer(b)):
        return _pointer_arith(em, op, a, b)
    for x in (a, b):
        require_dense(x, what)
        if isinstance(x, SSAValue) and isinstance(elem(x), PointerType):
            raise SemanticError(f"operator {what} is not defined on block pointers; use tl.advance")
    if op in COMPARISONS:
        return compare(em, op, a, b)
    a, b = _operands(em, a, b, what)
    t = promote(elem(a), elem(b))
    if op == "/" and is_int(t):
        t = f32  # true division of integers is floating point, as in Python and Triton
    if op in ("&", "|", "^", "<<", ">>") and not is_int(t):
        raise SemanticError(f"operator {what} needs integer operands, got {describe(t)}")
    a, b = cast(em, a, t), cast(em, b, t)
    if is_float(t):
        if op == "%":  # C's fmod (the dividend's sign), as Triton's frem
            return em.value(arith_ext.RemFOp(a, b))
        if op == "//":
            raise SemanticError("operator '//' is not defined on floating-point values (as in Triton); "
                                "use tl.floor(x / y), or convert to an integer type first")
        return em.value(_FLOAT_OPS[op](a, b))
    if op == "/":
        raise SemanticError("internal: integer '/' reached integer lowering")
    return em.value(_INT_OPS[op](a, b))


def compare(em: Emitter, op: str, a: Any, b: Any) -> SSAValue:
    a, b = _operands(em, a, b, f"'{op}'")
    t = promote(elem(a), elem(b))
    a, b = cast(em, a, t), cast(em, b, t)
    if is_float(t):
        return em.value(arith_ext.CmpfOp(a, b, _CMP_F[op]))
    return em.value(arith_ext.CmpiOp(a, b, _CMP_I[op]))


def _pointer_arith(em: Emitter, op: str, a: Any, b: Any) -> SSAValue:
    if op == "+" and isinstance(b, SSAValue) and is_pointer(b) and not (
        isinstance(a, SSAValue) and is_pointer(a)
    ):
        a, b = b, a
    if op not in ("+", "-") or (isinstance(b, SSAValue) and is_pointer(b)):
        raise SemanticError(f"operator '{op}' is not defined on pointers (only pointer + integers)")
    assert isinstance(a, SSAValue)
    off = to_value(em, b, None, "pointer offset")
    require_dense(off, "a pointer offset")
    if not is_int(elem(off)) or elem(off) == i1:
        raise SemanticError(f"a pointer offset must be an integer, got {describe(off.type)}")
    if op == "-":
        off = binary(em, "-", 0, off)
    ptr, off = broadcast_all(em, a, off)
    return em.value(tt.AddPtrOp(ptr, off))


def negate(em: Emitter, v: SSAValue) -> SSAValue:
    require_dense(v, "unary '-'")
    if is_float(elem(v)):
        return em.value(arith.NegfOp(v))
    if is_int(elem(v)):
        return binary(em, "-", 0, v)
    raise SemanticError(f"unary '-' is not defined on {describe(v.type)}")


def invert(em: Emitter, v: SSAValue) -> SSAValue:
    require_dense(v, "'~'")
    if not is_int(elem(v)):
        raise SemanticError(f"'~' needs an integer operand, got {describe(v.type)}")
    return em.value(arith.XOrIOp(v, constant(em, -1 if elem(v) != i1 else 1, v.type)))


def logical_not(em: Emitter, v: SSAValue) -> SSAValue:
    require_dense(v, "'not'")
    return em.value(arith.XOrIOp(to_bool(em, v), constant(em, 1, like(v.type, i1))))


def select(em: Emitter, cond: Any, x: Any, y: Any) -> SSAValue:
    """`cond ? x : y` elementwise (`tl.where`, runtime `x if c else y`)."""
    for v, what in ((cond, "tl.where's condition"), (x, "tl.where"), (y, "tl.where")):
        require_dense(v, what)
    c = to_value(em, cond, i1, "the condition")
    if isinstance(x, SSAValue) or isinstance(y, SSAValue):
        x, y = _operands(em, x, y, "tl.where")
    else:
        x, y = to_value(em, x), to_value(em, y)
    t = promote(elem(x), elem(y))
    c, x, y = broadcast_all(em, to_bool(em, c), cast(em, x, t), cast(em, y, t))
    return em.value(arith_ext.SelectOp(c, x, y))


def minmax(em: Emitter, kind: str, x: Any, y: Any) -> SSAValue:
    """Elementwise maximum/minimum: arith.maximumf/minimumf or maxsi/minsi."""
    for v in (x, y):
        require_dense(v, f"tl.{kind}imum")
        if isinstance(v, SSAValue) and isinstance(elem(v), PointerType):
            raise SemanticError(f"tl.{kind}imum is not defined on pointers, got {describe(v.type)}")
    x, y = _operands(em, x, y, f"tl.{kind}imum")
    t = promote(elem(x), elem(y))
    x, y = cast(em, x, t), cast(em, y, t)
    if is_float(t):
        cls = arith.MaximumfOp if kind == "max" else arith.MinimumfOp
    else:
        cls = arith.MaxSIOp if kind == "max" else arith.MinSIOp
    return em.value(cls(x, y))


def index_value(em: Emitter, x: Any, ty: Attribute, what: str) -> SSAValue:
    """An integer scalar of type `ty` (i32/i64) for shapes, strides, offsets and bounds."""
    if isinstance(x, bool) or (not isinstance(x, SSAValue) and not isinstance(x, int)):
        raise SemanticError(f"{what} must be an integer, got {py_desc(x)}")
    if isinstance(x, int):
        return constant(em, x, ty)
    require_dense(x, what)
    if is_tensor(x) or not is_int(elem(x)):
        raise SemanticError(f"{what} must be an integer scalar, got {describe(x.type)}")
    return cast(em, x, ty)
