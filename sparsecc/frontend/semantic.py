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
    ArrayAttr,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    LocationAttr,
    NoneAttr,
    Signedness,
    TensorType,
    UnknownLoc,
    UnrealizedConversionCastOp,
    f16,
    f32,
    f64,
    i1,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, ParametrizedAttribute, SSAValue

from sparsecc import defaults
from sparsecc.dialects import arith as arith_ext
from sparsecc.dialects import tt
from sparsecc.dialects.tt import PointerType, is_sparse, sparse_encoding_of
from sparsecc.frontend.errors import SemanticError
from sparsecc.frontend.types import bitwidth, describe, is_float, is_int, is_unsigned, signless

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
        if is_unsigned(e):
            lo = 0
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
    key = (id(em.block), e, (type(dense_val), repr(dense_val)))  # repr: -0.0 is not 0.0 (== is)
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
        if is_unsigned(other) and py < 0:
            raise SemanticError(f"a negative constant ({py}) next to an unsigned {describe(other)} value; "
                                "convert one of them explicitly (as Triton asks)")
        if isinstance(other, IntegerType) and other.width.data > 1:
            w = other.width.data
            if -(2 ** (w - 1)) <= py < 2**w:
                return other
        if other is not None and is_float(other):
            return other
        if I32_MIN <= py <= I32_MAX:
            return i32
        if py < 2**32 and py > 0:  # Triton's literals in [2**31, 2**32) are uint32
            return IntegerType(32, Signedness.UNSIGNED)
        if I64_MIN <= py <= I64_MAX:
            return i64
        if py < 2**64:  # Triton's literals in [2**63, 2**64) are uint64
            return IntegerType(64, Signedness.UNSIGNED)
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
        # C's usual arithmetic conversions, as Triton's integer_promote_impl: same signedness ->
        # the wider; else the unsigned one unless the signed one is strictly wider
        wa, wb = a.width.data, b.width.data
        if is_unsigned(a) == is_unsigned(b):
            return a if wa > wb else b
        if is_unsigned(a):
            return a if wa >= wb else b
        return b if wb >= wa else a
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
        if ws == wd:  # int32 <-> uint32
            return reinterpret(em, v, dst)
        if ws == 1 or (wd > ws and is_unsigned(src)):  # zero-extension
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
        if bitwidth(src) == 1:  # a mask as 0.0/1.0: widened first, PTX converts no predicate to a float
            v = em.value(arith_ext.ExtUIOp(v, like(v.type, i32)))
        if bitwidth(src) == 1 or is_unsigned(src):
            return em.value(arith_ext.UIToFPOp(v, out_ty))
        return em.value(arith_ext.SIToFPOp(v, out_ty))
    if bitwidth(dst) == 1:
        return compare(em, "!=", v, constant(em, 0.0, v.type))
    if is_unsigned(dst):
        return em.value(arith_ext.FPToUIOp(v, out_ty))
    return em.value(arith_ext.FPToSIOp(v, out_ty))


def reinterpret(em: Emitter, v: SSAValue, dst: Attribute) -> SSAValue:
    """`v`'s bits as integer type `dst` of the same width and other signedness (int32 <->
    uint32). It is an `unrealized_conversion_cast` that `erase_signedness` removes: in the
    signless IR both sides are the same value."""
    return em.value(UnrealizedConversionCastOp.get([v], [like(v.type, dst)]))


def erase_signedness(root: Operation) -> None:
    """Make the IR under `root` signless, as the passes after the frontend take it: every
    `ui<N>` type (in results, block arguments and attributes) becomes `i<N>`, and the casts of
    `reinterpret` disappear. Signedness already lives in the ops the frontend chose."""
    for op in list(root.walk()):
        if isinstance(op, UnrealizedConversionCastOp) and len(op.operands) == 1:
            op.results[0].replace_all_uses_with(op.operands[0])
            op.detach()
            op.erase()
            continue
        for r in op.results:
            r._type = _signless_attr(r.type)  # noqa: SLF001 - xDSL has no public type setter
        for region in op.regions:
            for block in region.blocks:
                for a in block.args:
                    a._type = _signless_attr(a.type)  # noqa: SLF001
        for d in (op.attributes, op.properties):
            for k, a in list(d.items()):
                d[k] = _signless_attr(a)


def _signless_attr(a: Attribute) -> Attribute:
    """`a` with every unsigned integer type inside it signless (integer constants keep their
    bits: 3000000000 : ui32 becomes -1294967296 : i32)."""
    if is_unsigned(a):
        return signless(a)
    if isinstance(a, IntegerAttr) and is_unsigned(a.type):
        w = a.type.width.data
        v = a.value.data
        return IntegerAttr(v - (1 << w) if v >= 1 << (w - 1) else v, signless(a.type))
    if isinstance(a, ArrayAttr):
        new = tuple(_signless_attr(x) for x in a.data)
        return a if new == a.data else ArrayAttr(new)
    if isinstance(a, DictionaryAttr):
        new_d = {k: _signless_attr(x) for k, x in a.data.items()}
        return a if new_d == dict(a.data) else DictionaryAttr(new_d)
    if isinstance(a, ParametrizedAttribute):
        params = tuple(_signless_attr(p) for p in a.parameters)
        if params != tuple(a.parameters):
            return type(a).new(params)
    return a


def to_bool(em: Emitter, v: SSAValue) -> SSAValue:
    return cast(em, v, i1)


# --------------------------------------------------------------------------------------
# Binary and unary operators
# --------------------------------------------------------------------------------------

_CMP_I = {"<": "slt", "<=": "sle", ">": "sgt", ">=": "sge", "==": "eq", "!=": "ne"}
_CMP_U = {"<": "ult", "<=": "ule", ">": "ugt", ">=": "uge", "==": "eq", "!=": "ne"}
_UNSIGNED_OPS: dict[str, type[Operation]] = {"//": arith.DivUIOp, "%": arith.RemUIOp, ">>": arith.ShRUIOp}
"""Where signedness changes the result: the unsigned ops replacing `_INT_OPS`' signed ones."""
_CMP_F = {"<": "olt", "<=": "ole", ">": "ogt", ">=": "oge", "==": "oeq", "!=": "une"}
_INT_OPS: dict[str, type[Operation]] = {
    "+": arith.AddiOp, "-": arith.SubiOp, "*": arith.MuliOp, "//": arith.DivSIOp,
    "%": arith.RemSIOp, "&": arith.AndIOp, "|": arith.OrIOp, "^": arith.XOrIOp,
    "<<": arith.ShLIOp, ">>": arith.ShRSIOp,
}
_FLOAT_OPS: dict[str, type[Operation]] = {
    "+": arith.AddfOp, "-": arith.SubfOp, "*": arith.MulfOp, "/": arith.DivfOp,
}
APPROX = arith.FastMathFlagsAttr([arith.FastMathFlag.APPROX_FUNC])
"""The flag of Triton's fast float forms: `arith.divf ... fastmath<afn>` is `/` (PTX
`div.full.f32`, 2 ulp), `math.sqrt ... fastmath<afn>` is `tl.sqrt` (`sqrt.approx.ftz.f32`); the
unflagged ops are IEEE round-to-nearest (`tl.div_rn`, `tl.sqrt_rn`). The interpreter computes
both exactly."""


def fast_div(em: Emitter, a: SSAValue, b: SSAValue) -> SSAValue:
    """`a / b` of two floats of one type, as Triton's '/' (see `APPROX`)."""
    return em.value(arith.DivfOp(a, b, APPROX))
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
    ea, eb = elem(a), elem(b)
    if (op in ("//", "%") and is_int(ea) and is_int(eb) and ea != i1 and eb != i1
            and is_unsigned(ea) != is_unsigned(eb)):
        raise SemanticError(f"operator {what} between {describe(ea)} and {describe(eb)}: they differ in "
                            "signedness (as in Triton, convert one so both are signed or both unsigned)")
    t = promote(ea, eb)
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
        if op == "/":
            return fast_div(em, a, b)
        return em.value(_FLOAT_OPS[op](a, b))
    if op == "/":
        raise SemanticError("internal: integer '/' reached integer lowering")
    if is_unsigned(t) and op in _UNSIGNED_OPS:
        return em.value(_UNSIGNED_OPS[op](a, b))
    return em.value(_INT_OPS[op](a, b))


def compare(em: Emitter, op: str, a: Any, b: Any) -> SSAValue:
    a, b = _operands(em, a, b, f"'{op}'")
    t = promote(elem(a), elem(b))
    a, b = cast(em, a, t), cast(em, b, t)
    if is_float(t):
        return em.value(arith_ext.CmpfOp(a, b, _CMP_F[op]))
    return em.value(arith_ext.CmpiOp(a, b, (_CMP_U if is_unsigned(t) else _CMP_I)[op]))


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
    ones = 1 if elem(v) == i1 else (1 << bitwidth(elem(v))) - 1 if is_unsigned(elem(v)) else -1
    return em.value(arith.XOrIOp(v, constant(em, ones, v.type)))


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


def propagates_nan(flag: Any) -> bool:
    """Triton's `propagate_nan` (a `tl.PropagateNan`): True for ALL, False for NONE."""
    if isinstance(flag, bool) or not isinstance(flag, int) or flag not in (0, 0xFFFF):
        raise SemanticError(f"propagate_nan must be tl.PropagateNan.NONE or tl.PropagateNan.ALL, got {py_desc(flag)}")
    return flag == 0xFFFF


def minmax(em: Emitter, kind: str, x: Any, y: Any, propagate_nan: bool = False) -> SSAValue:
    """Elementwise maximum/minimum as Triton: floats by arith.maxnumf/minnumf (a NaN loses to a
    number), or maximumf/minimumf with `propagate_nan` (NaN wins); ints by maxsi/minsi."""
    for v in (x, y):
        require_dense(v, f"tl.{kind}imum")
        if isinstance(v, SSAValue) and isinstance(elem(v), PointerType):
            raise SemanticError(f"tl.{kind}imum is not defined on pointers, got {describe(v.type)}")
    x, y = _operands(em, x, y, f"tl.{kind}imum")
    t = promote(elem(x), elem(y))
    x, y = cast(em, x, t), cast(em, y, t)
    if is_float(t) and propagate_nan:
        cls = arith.MaximumfOp if kind == "max" else arith.MinimumfOp
    elif is_float(t):
        cls = arith.MaxnumfOp if kind == "max" else arith.MinnumfOp
    elif is_unsigned(t):
        cls = arith.MaxUIOp if kind == "max" else arith.MinUIOp
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
