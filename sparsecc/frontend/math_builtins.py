"""The `tl.math` builtins: unary float functions computed in fp32 for 16-bit floats (rounded
back to the input's type, as Triton does), composites (`sigmoid`, `clamp`) from primitives."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from xdsl.dialects import arith, math
from xdsl.dialects.builtin import IntegerType, f32, i32
from xdsl.ir import Operation, SSAValue

from sparsecc.frontend import semantic as sem
from sparsecc.frontend.builtins import impl
from sparsecc.frontend.errors import SemanticError
from sparsecc.frontend.semantic import Emitter
from sparsecc.frontend.types import bitwidth, describe, is_float

_UNARY: dict[str, type[Operation]] = {
    "exp": math.ExpOp, "exp2": math.Exp2Op, "log": math.LogOp, "log2": math.Log2Op,
    "sqrt": math.SqrtOp, "rsqrt": math.RsqrtOp, "sin": math.SinOp, "cos": math.CosOp,
    "tanh": math.TanhOp, "floor": math.FloorOp, "ceil": math.CeilOp, "erf": math.ErfOp,
    "sqrt_rn": math.SqrtOp,  # IEEE (sqrt.rn.f32); tl.sqrt is approximate, see `_unary`
}


def _float_input(em: Emitter, x: Any, name: str) -> SSAValue:
    """`x` as a float SSA value (a Python number becomes an fp32 constant)."""
    if sem.is_py_scalar(x) and not isinstance(x, bool):
        return sem.constant(em, float(x), f32)
    v = sem.require_value(x, f"tl.{name}'s input")
    sem.require_dense(v, f"tl.{name}")
    if not is_float(sem.elem(v)):
        raise SemanticError(f"tl.{name} needs a floating-point input, got {describe(v.type)}; "
                            "convert it first, e.g. x.to(tl.float32)")
    return v


def _in_fp32(em: Emitter, v: SSAValue, body: Callable[[SSAValue], SSAValue]) -> SSAValue:
    """`body` on `v` widened to fp32 when it is a 16-bit float, the result rounded back."""
    t = sem.elem(v)
    if bitwidth(t) >= 32:
        return body(v)
    return sem.cast(em, body(sem.cast(em, v, f32)), t)


def _unary(name: str) -> Callable[..., Any]:
    cls = _UNARY[name]

    def build(em: Emitter, x: Any) -> Any:
        v = _float_input(em, x, name)
        if name == "sqrt":  # Triton's tl.sqrt: sqrt.approx.ftz.f32 (sem.APPROX)
            return _in_fp32(em, v, lambda w: em.value(math.SqrtOp(w, sem.APPROX)))
        return _in_fp32(em, v, lambda w: em.value(cls(w)))

    build.__name__ = name
    return build


for _name in _UNARY:
    impl(_unary(_name))


@impl
def abs_(em: Emitter, x: Any) -> Any:
    if sem.is_py_scalar(x):
        return x if not isinstance(x, bool) else int(x)
    v = sem.require_value(x, "tl.abs's input")
    sem.require_dense(v, "tl.abs")
    if is_float(sem.elem(v)):
        return _in_fp32(em, v, lambda w: em.value(math.AbsFOp(w)))
    return em.value(math.AbsIOp(v))


@impl
def sigmoid(em: Emitter, x: Any) -> Any:
    v = _float_input(em, x, "sigmoid")

    def body(w: SSAValue) -> SSAValue:
        one = sem.constant(em, 1.0, w.type)
        e = em.value(math.ExpOp(em.value(arith.NegfOp(w))))
        return sem.fast_div(em, one, em.value(arith.AddfOp(one, e)))  # Triton's 1 / (1 + exp(-x))

    return _in_fp32(em, v, body)


@impl
def fma(em: Emitter, x: Any, y: Any, z: Any) -> Any:
    a, b = sem._operands(em, x, y, "tl.fma")
    t = sem.promote(sem.elem(a), sem.elem(b))
    c = z if isinstance(z, SSAValue) else sem.constant(em, float(z), t)
    t = sem.promote(t, sem.elem(c))
    if not is_float(t):
        raise SemanticError(f"tl.fma needs floating-point inputs, got {describe(t)}")
    a, b, c = sem.broadcast_all(em, sem.cast(em, a, t), sem.cast(em, b, t), sem.cast(em, c, t))
    if bitwidth(t) >= 32:
        return em.value(math.FmaOp(a, b, c))
    wide = [sem.cast(em, v, f32) for v in (a, b, c)]
    return sem.cast(em, em.value(math.FmaOp(*wide)), t)


@impl
def clamp(em: Emitter, x: Any, min: Any, max: Any, propagate_nan: Any = 0) -> Any:  # noqa: A002
    nan = sem.propagates_nan(propagate_nan)
    return sem.minmax(em, "min", sem.minmax(em, "max", x, min, nan), max, nan)


def _float_pair(em: Emitter, x: Any, y: Any, name: str) -> tuple[SSAValue, SSAValue]:
    """`x` and `y` promoted to one float type and broadcast (Triton: both floats after promotion)."""
    a, b = sem._operands(em, x, y, f"tl.{name}")
    t = sem.promote(sem.elem(a), sem.elem(b))
    if not is_float(t):
        raise SemanticError(f"tl.{name} needs floating-point operands, got {describe(a.type)} and "
                            f"{describe(b.type)}; convert them first, e.g. x.to(tl.float32)")
    return sem.cast(em, a, t), sem.cast(em, b, t)


@impl
def div_rn(em: Emitter, x: Any, y: Any) -> Any:
    a, b = _float_pair(em, x, y, "div_rn")
    # an unflagged arith.divf prints div.rn.f32 (16-bit floats divide in f32, rounded once more: exact)
    return em.value(arith.DivfOp(a, b))


@impl
def fdiv(em: Emitter, x: Any, y: Any, ieee_rounding: Any = False, approx: Any = False) -> Any:
    if ieee_rounding and approx:
        raise SemanticError("tl.fdiv: approx and ieee_rounding cannot both be True (as in Triton)")
    a, b = _float_pair(em, x, y, "fdiv")
    if approx and sem.elem(a) != f32:
        raise SemanticError(f"tl.fdiv: approx=True needs float32 operands, got {describe(sem.elem(a))}")
    # as Triton: IEEE round-to-nearest with ieee_rounding, else '/' (div.full.f32)
    return em.value(arith.DivfOp(a, b)) if ieee_rounding else sem.fast_div(em, a, b)


@impl
def umulhi(em: Emitter, x: Any, y: Any) -> Any:
    a, b = sem._operands(em, x, y, "tl.umulhi")
    t = sem.promote(sem.elem(a), sem.elem(b))
    if not isinstance(t, IntegerType) or t.width.data not in (32, 64):
        raise SemanticError(f"tl.umulhi needs int32 or int64 operands, got {describe(a.type)} and "
                            f"{describe(b.type)}")
    a, b = sem.cast(em, a, t), sem.cast(em, b, t)
    # the high half of the unsigned 2N-bit product (mul.hi.u32/u64, libdevice's umulhi)
    op = arith.MulUIExtendedOp(a, b, a.type)
    em.insert(op)
    return op.results[1]


@impl
def pow_(em: Emitter, x: Any, y: Any) -> Any:
    """exp2(y * log2|x|), with C's powf cases: x ** 0 = 1, 0 ** y = 0 (y > 0) or inf (y < 0),
    a negative x to an odd integer power negative, to a non-integer power NaN."""
    a, b = _float_pair(em, x, y, "pow")

    t = sem.elem(a)
    if bitwidth(t) < 32:
        a, b = sem.cast(em, a, f32), sem.cast(em, b, f32)
    mag = em.value(math.Exp2Op(sem.binary(em, "*", b, em.value(math.Log2Op(em.value(math.AbsFOp(a)))))))
    integral = sem.compare(em, "==", em.value(math.FloorOp(b)), b)
    half = sem.binary(em, "*", b, 0.5)
    odd = sem.binary(em, "&", integral, sem.compare(em, "!=", em.value(math.FloorOp(half)), half))
    negative = sem.compare(em, "<", a, 0.0)
    r = sem.select(em, sem.binary(em, "&", negative, odd), em.value(arith.NegfOp(mag)), mag)
    # the quiet NaN from its bits: a NaN splat constant is no splat to the GPU lowering (NaN != NaN)
    nan = em.value(arith.BitcastOp(sem.constant(em, 0x7FC00000, i32), f32))
    r = sem.select(em, sem.binary(em, "&", negative, sem.invert(em, integral)), nan, r)
    r = sem.select(em, sem.compare(em, "==", b, 0.0), 1.0, r)
    return sem.cast(em, r, t)
