"""`libdevice` math that neither PTX nor `tl.math` has as one operation (asin, atan2, sinh, log1p,
rint, isnan, ...), built in the frontend from the primitives both back ends already run: f32
arithmetic, selects, compares, `sqrt`, `exp2`/`log2`, `floor`/`ceil` and bit casts.

Because each is a composition, the interpreter and the GPU compute the same formula. 16-bit float
inputs are computed in fp32 and rounded back, as `tl.math` does; fp64 inputs are refused (the
polynomials are fp32-accurate, and the PTX lowering has no fp64 math).

The small-argument polynomials (`_ASIN`, `_ATAN`, `_ATANH`, `_SINH`, `_EXPM1`) were fitted for
sparsecc by least squares on Chebyshev nodes against mpmath (relative weight); evaluated in fp32
their error is within 1.4 ulp on their intervals.
"""

from __future__ import annotations

import math as pymath
from collections.abc import Callable, Sequence
from typing import Any

from xdsl.dialects import arith, math
from xdsl.dialects.builtin import f32, i32, i64
from xdsl.ir import SSAValue

from sparsecc.frontend import semantic as sem
from sparsecc.frontend.builtins import impl
from sparsecc.frontend.errors import SemanticError
from sparsecc.frontend.math_builtins import _float_pair
from sparsecc.frontend.semantic import Emitter
from sparsecc.frontend.types import bitwidth, describe, is_float

_ASIN = (0.1666666633857549, 0.07500094314117313, 0.04459947498246368, 0.031099839887401268,
         0.017152999883490713, 0.03368482942579117)
"""(asin(x) - x) / x**3 as a polynomial in z = x*x on [0, 0.25] (|x| <= 0.5)."""
_ATAN = (-0.33333333278505667, 0.19999977041872977, -0.14284141086785626, 0.11071199526531467,
         -0.08623567647189316, 0.0504553622801347)
"""(atan(x) - x) / x**3 in z = x*x on [0, tan(pi/8)**2]."""
_ATANH = (0.3333333332508787, 0.2000000535027898, 0.1428515538241998, 0.11132291636370684,
          0.08733012516445797, 0.10391418428141122)
"""(atanh(x) - x) / x**3 in z = x*x on [0, 1/9] (|x| <= 1/3)."""
_SINH = (0.1666666666669765, 0.00833333331770485, 0.0001984128240946736, 2.755378961228937e-06,
         2.545573752471359e-08)
"""(sinh(x) - x) / x**3 in z = x*x on [0, 1]."""
_EXPM1 = (0.4999999999916988, 0.16666666668279773, 0.04166666773690552, 0.008333332888908748,
          0.0013888673956014318, 0.00019841508525185968, 2.493944130661514e-05, 2.758329817744205e-06)
"""(expm1(x) - x) / x**2 as a polynomial in x on [-0.5, 0.5]."""

_HALF_PI = pymath.pi / 2
_LN2 = pymath.log(2.0)
_BIG = 4096.0
"""Past this, sqrt(x*x +- 1) is x in fp32, and asinh/acosh are log(2x)."""


class _F32:
    """Short forms for the f32 expressions below (operands: SSA values or Python floats)."""

    def __init__(self, em: Emitter) -> None:
        self.em = em

    def add(self, a: Any, b: Any) -> SSAValue:
        return sem.binary(self.em, "+", a, b)

    def sub(self, a: Any, b: Any) -> SSAValue:
        return sem.binary(self.em, "-", a, b)

    def mul(self, a: Any, b: Any) -> SSAValue:
        return sem.binary(self.em, "*", a, b)

    def div(self, a: Any, b: Any) -> SSAValue:
        """IEEE division (div.rn), not '/''s div.full: the compositions' error bounds (and
        rcp_rn's correct rounding) assume a correctly rounded quotient."""
        a, b = sem._operands(self.em, a, b, "'/'")
        return self.em.value(arith.DivfOp(a, b))

    def cmp(self, op: str, a: Any, b: Any) -> SSAValue:
        return sem.compare(self.em, op, a, b)

    def where(self, c: SSAValue, a: Any, b: Any) -> SSAValue:
        return sem.select(self.em, c, a, b)

    def neg(self, a: SSAValue) -> SSAValue:
        return self.em.value(arith.NegfOp(a))

    def abs(self, a: SSAValue) -> SSAValue:
        return self.em.value(math.AbsFOp(a))

    def sqrt(self, a: SSAValue) -> SSAValue:
        return self.em.value(math.SqrtOp(a))

    def floor(self, a: SSAValue) -> SSAValue:
        return self.em.value(math.FloorOp(a))

    def ceil(self, a: SSAValue) -> SSAValue:
        return self.em.value(math.CeilOp(a))

    def exp(self, a: SSAValue) -> SSAValue:
        return self.em.value(math.ExpOp(a))

    def exp2(self, a: SSAValue) -> SSAValue:
        return self.em.value(math.Exp2Op(a))

    def log(self, a: SSAValue) -> SSAValue:
        return self.em.value(math.LogOp(a))

    def log2(self, a: SSAValue) -> SSAValue:
        return self.em.value(math.Log2Op(a))

    def bits(self, pattern: int) -> SSAValue:
        """The f32 scalar whose bits are `pattern` (NaN and inf from their bits: a NaN splat
        constant is no splat to the GPU lowering, NaN != NaN); compares and selects broadcast it."""
        return self.em.value(arith.BitcastOp(sem.constant(self.em, pattern, i32), f32))

    def nan(self) -> SSAValue:
        return self.bits(0x7FC00000)

    def inf(self) -> SSAValue:
        return self.bits(0x7F800000)

    def signbit(self, a: SSAValue) -> SSAValue:
        """i1: the sign bit of `a` is set (-0.0 and negative NaNs included)."""
        as_int = self.em.value(arith.BitcastOp(a, sem.like(a.type, i32)))
        return sem.compare(self.em, "<", as_int, 0)

    def isinf(self, a: SSAValue) -> SSAValue:
        return self.cmp("==", self.abs(a), self.inf())

    def with_sign_of(self, r: SSAValue, x: SSAValue) -> SSAValue:
        """|r| carrying the sign of `x` (r >= 0 here, so only a negation)."""
        return self.where(self.signbit(x), self.neg(r), r)

    def odd_poly(self, x: SSAValue, coeffs: Sequence[float]) -> SSAValue:
        """x + x * z * P(z), z = x*x (Horner in f32)."""
        z = self.mul(x, x)
        acc: Any = coeffs[-1]
        for c in reversed(coeffs[:-1]):
            acc = self.add(self.mul(acc, z), c)
        return self.add(x, self.mul(x, self.mul(z, acc)))


def _unary_f32(name: str, body: Callable[[_F32, SSAValue], SSAValue], int_result: bool = False) -> Callable[..., Any]:
    """The builtin `libdevice.<name>(x)`: `body` on `x` in f32 (16-bit floats widened, the result
    rounded back; `int_result`: an int32 0/1 test such as isnan, never rounded back)."""

    def build(em: Emitter, x: Any) -> Any:
        v = _float32_input(em, x, name)
        t = sem.elem(v)
        w = v if t == f32 else sem.cast(em, v, f32)
        r = body(_F32(em), w)
        if int_result:
            return sem.cast(em, r, i32)
        return r if t == f32 else sem.cast(em, r, t)

    build.__name__ = name
    return build


def _float32_input(em: Emitter, x: Any, name: str) -> SSAValue:
    """`x` as an f32/f16/bf16 value (a Python number becomes an fp32 constant)."""
    if sem.is_py_scalar(x) and not isinstance(x, bool):
        return sem.constant(em, float(x), f32)
    v = sem.require_value(x, f"libdevice.{name}'s input")
    sem.require_dense(v, f"libdevice.{name}")
    t = sem.elem(v)
    if not is_float(t):
        raise SemanticError(f"libdevice.{name} needs a floating-point input, got {describe(v.type)}; "
                            "convert it first, e.g. x.to(tl.float32)")
    if bitwidth(t) > 32:
        raise SemanticError(f"libdevice.{name} on {describe(t)}: sparsecc computes it in fp32 only; "
                            "convert the input with x.to(tl.float32)")
    return v


def _asin_core(f: _F32, a: SSAValue) -> SSAValue:
    """asin(|x|) for a = |x|: the polynomial up to 0.5, pi/2 - 2 asin(sqrt((1-a)/2)) past it."""
    s = f.sqrt(f.mul(f.sub(1.0, a), 0.5))
    big = f.sub(_HALF_PI, f.mul(2.0, f.odd_poly(s, _ASIN)))
    return f.where(f.cmp("<=", a, 0.5), f.odd_poly(a, _ASIN), big)


def _asin(f: _F32, x: SSAValue) -> SSAValue:
    return f.with_sign_of(_asin_core(f, f.abs(x)), x)


def _acos(f: _F32, x: SSAValue) -> SSAValue:
    a = f.abs(x)
    p = f.mul(2.0, f.odd_poly(f.sqrt(f.mul(f.sub(1.0, a), 0.5)), _ASIN))  # acos(|x|) past 0.5
    big = f.where(f.signbit(x), f.sub(pymath.pi, p), p)
    return f.where(f.cmp("<=", a, 0.5), f.sub(_HALF_PI, f.odd_poly(x, _ASIN)), big)


def _atan_unit(f: _F32, q: SSAValue) -> SSAValue:
    """atan(q) for q in [0, 1]: past tan(pi/8), pi/4 + atan((q-1)/(q+1))."""
    mid = f.cmp(">", q, 0.41421356237309503)
    t = f.where(mid, f.div(f.sub(q, 1.0), f.add(q, 1.0)), q)
    return f.add(f.where(mid, pymath.pi / 4, 0.0), f.odd_poly(t, _ATAN))


def _atan(f: _F32, x: SSAValue) -> SSAValue:
    a = f.abs(x)
    big = f.cmp(">", a, 1.0)
    r = _atan_unit(f, f.where(big, f.div(1.0, a), a))  # atan(a) = pi/2 - atan(1/a) past 1
    return f.with_sign_of(f.where(big, f.sub(_HALF_PI, r), r), x)


def _atan2(f: _F32, y: SSAValue, x: SSAValue) -> SSAValue:
    """C's atan2: the angle of (x, y) in [-pi, pi], signed zeros and infinities included."""
    ax, ay = f.abs(x), f.abs(y)
    steep = f.cmp(">", ay, ax)
    hi, lo = f.where(steep, ay, ax), f.where(steep, ax, ay)  # a NaN ends in lo or hi: q is NaN
    q = f.where(f.cmp("==", hi, lo), 1.0, f.div(lo, hi))  # inf/inf: 1 (the diagonal)
    q = f.where(f.cmp("==", hi, 0.0), lo, q)  # both zero: the angle is 0 or pi (lo: 0, or NaN)
    r = _atan_unit(f, q)
    r = f.where(steep, f.sub(_HALF_PI, r), r)
    r = f.where(f.signbit(x), f.sub(pymath.pi, r), r)
    return f.with_sign_of(r, y)


def _sinh(f: _F32, x: SSAValue) -> SSAValue:
    a = f.abs(x)
    h = f.exp(f.sub(a, _LN2))  # e**a / 2, finite up to sinh's own overflow
    big = f.sub(h, f.div(0.25, h))
    return f.with_sign_of(f.where(f.cmp("<", a, 1.0), f.odd_poly(a, _SINH), big), x)


def _cosh(f: _F32, x: SSAValue) -> SSAValue:
    h = f.exp(f.sub(f.abs(x), _LN2))
    return f.add(h, f.div(0.25, h))


def _log1p(f: _F32, x: SSAValue) -> SSAValue:
    """log(1 + x) accurate near 0: 2 atanh(x / (2 + x)) for |x| < 0.5 (the quotient is within
    [-1/3, 1/5], the atanh polynomial's interval)."""
    small = f.mul(2.0, f.odd_poly(f.div(x, f.add(x, 2.0)), _ATANH))
    return f.where(f.cmp("<", f.abs(x), 0.5), small, f.log(f.add(x, 1.0)))


def _atanh(f: _F32, x: SSAValue) -> SSAValue:
    a = f.abs(x)
    big = f.mul(0.5, f.log(f.div(f.add(1.0, a), f.sub(1.0, a))))
    return f.with_sign_of(f.where(f.cmp("<=", a, 1 / 3), f.odd_poly(a, _ATANH), big), x)


def _asinh(f: _F32, x: SSAValue) -> SSAValue:
    a = f.abs(x)
    a2 = f.mul(a, a)
    mid = _log1p(f, f.add(a, f.div(a2, f.add(1.0, f.sqrt(f.add(a2, 1.0))))))
    r = f.where(f.cmp("<", a, _BIG), mid, f.add(f.log(a), _LN2))
    return f.with_sign_of(r, x)


def _acosh(f: _F32, x: SSAValue) -> SSAValue:
    t = f.sub(x, 1.0)
    mid = _log1p(f, f.add(t, f.sqrt(f.add(f.mul(2.0, t), f.mul(t, t)))))
    r = f.where(f.cmp("<", x, _BIG), mid, f.add(f.log(x), _LN2))
    return f.where(f.cmp("<", x, 1.0), f.nan(), r)


def _expm1(f: _F32, x: SSAValue) -> SSAValue:
    acc: Any = _EXPM1[-1]
    for c in reversed(_EXPM1[:-1]):
        acc = f.add(f.mul(acc, x), c)
    small = f.add(x, f.mul(f.mul(x, x), acc))
    return f.where(f.cmp("<", f.abs(x), 0.5), small, f.sub(f.exp(x), 1.0))


def _cbrt(f: _F32, x: SSAValue) -> SSAValue:
    a = f.abs(x)
    y = f.exp2(f.div(f.log2(a), 3.0))
    y = f.sub(y, f.div(f.sub(f.mul(f.mul(y, y), y), a), f.mul(3.0, f.mul(y, y))))  # one Newton step
    special = sem.binary(f.em, "|", f.cmp("==", a, 0.0), f.isinf(a))
    return f.with_sign_of(f.where(special, a, y), x)


def _trunc(f: _F32, x: SSAValue) -> SSAValue:
    return f.where(f.signbit(x), f.ceil(x), f.floor(x))


def _round(f: _F32, x: SSAValue) -> SSAValue:
    """C's roundf: halves away from zero (|x| - floor|x| is exact, so no 0.49999997 trap)."""
    a = f.abs(x)
    t = f.floor(a)
    r = f.where(f.cmp(">=", f.sub(a, t), 0.5), f.add(t, 1.0), t)
    return f.with_sign_of(r, x)


def _rint(f: _F32, x: SSAValue) -> SSAValue:
    """Round half to even (rintf / nearbyintf in the default rounding mode)."""
    a = f.abs(x)
    t = f.floor(a)
    d = f.sub(a, t)
    odd = f.cmp("!=", f.sub(t, f.mul(2.0, f.floor(f.mul(t, 0.5)))), 0.0)
    up = sem.binary(f.em, "|", f.cmp(">", d, 0.5), sem.binary(f.em, "&", f.cmp("==", d, 0.5), odd))
    return f.with_sign_of(f.where(up, f.add(t, 1.0), t), x)


def _saturate(f: _F32, x: SSAValue) -> SSAValue:
    """Clamped to [0, 1], NaN to 0 (CUDA's saturatef)."""
    return f.where(f.cmp(">", x, 0.0), f.where(f.cmp("<", x, 1.0), x, 1.0), 0.0)


_UNARY: dict[str, Callable[[_F32, SSAValue], SSAValue]] = {
    "asin": _asin, "acos": _acos, "atan": _atan, "sinh": _sinh, "cosh": _cosh, "asinh": _asinh,
    "acosh": _acosh, "atanh": _atanh, "log1p": _log1p, "expm1": _expm1, "cbrt": _cbrt,
    "trunc": _trunc, "round": _round, "rint": _rint, "nearbyint": _rint, "saturatef": _saturate,
    "tan": lambda f, x: f.div(f.em.value(math.SinOp(x)), f.em.value(math.CosOp(x))),
    "exp10": lambda f, x: f.exp2(f.mul(x, pymath.log2(10.0))),
    "log10": lambda f, x: f.mul(f.log2(x), pymath.log10(2.0)),
    "erfc": lambda f, x: f.sub(1.0, f.em.value(math.ErfOp(x))),
    "rcp_rn": lambda f, x: f.div(1.0, x),
}
_TESTS: dict[str, Callable[[_F32, SSAValue], SSAValue]] = {
    "isnan": lambda f, x: f.cmp("!=", x, x),
    "isinf": lambda f, x: f.isinf(x),
    "finitef": lambda f, x: f.cmp("<", f.abs(x), f.inf()),
    "signbit": lambda f, x: f.signbit(x),
}
"""libdevice's tests: int32 0 or 1, as `__nv_isnanf` and friends (nonzero there) return."""

for _name, _body in _UNARY.items():
    impl(_unary_f32(_name, _body))
for _name, _body in _TESTS.items():
    impl(_unary_f32(_name, _body, int_result=True))


def _binary_f32(name: str, body: Callable[[_F32, SSAValue, SSAValue], SSAValue]) -> Callable[..., Any]:
    """The builtin `libdevice.<name>(x, y)`: both promoted to one float type, computed in f32."""

    def build(em: Emitter, x: Any, y: Any) -> Any:
        a, b = _float_pair(em, x, y, name)
        t = sem.elem(a)
        if bitwidth(t) > 32:
            raise SemanticError(f"libdevice.{name} on {describe(t)}: sparsecc computes it in fp32 only; "
                                "convert the inputs with x.to(tl.float32)")
        if t != f32:
            a, b = sem.cast(em, a, f32), sem.cast(em, b, f32)
        r = body(_F32(em), a, b)
        return r if t == f32 else sem.cast(em, r, t)

    build.__name__ = name
    return build


def _hypot(f: _F32, x: SSAValue, y: SSAValue) -> SSAValue:
    """sqrt(x*x + y*y) without overflow: hi * sqrt(1 + (lo/hi)**2); an infinity wins over NaN."""
    ax, ay = f.abs(x), f.abs(y)
    steep = f.cmp(">", ay, ax)
    hi, lo = f.where(steep, ay, ax), f.where(steep, ax, ay)
    q = f.div(lo, hi)
    r = f.where(f.cmp("==", hi, 0.0), lo, f.mul(hi, f.sqrt(f.add(1.0, f.mul(q, q)))))  # lo: 0 or NaN
    anyinf = sem.binary(f.em, "|", f.isinf(ax), f.isinf(ay))
    return f.where(anyinf, f.inf(), r)


_FMOD_STEP = 39
"""Bits of the exponent difference `_fmod` consumes per step: a 24-bit remainder shifted by 39
stays below 2**63 (an i64)."""


def _fmod(f: _F32, x: SSAValue, y: SSAValue) -> SSAValue:
    """C's fmodf, exact for every quotient (as CUDA's `__nv_fmodf`; `x % y` divides first, as
    Triton's frem, and is exact only while |x / y| < 2**24).

    With |x| = mx * 2**ex and |y| = my * 2**ey (24-bit integer significands, ex >= ey), the
    remainder is ((mx * 2**(ex - ey)) mod my) * 2**ey: an integer long division that shifts in at
    most `_FMOD_STEP` bits of the exponent difference (< 254) per step, in i64, so 7 fixed steps
    (no loop: the GPU runs them per element). The result is below |y| and a multiple of 2**ey,
    hence exact in f32; it takes x's sign. x = +-inf, y = 0 or a NaN give NaN; |x| < |y| gives x
    (y = +-inf included)."""
    em = f.em

    def b(op: str, a: Any, c: Any) -> SSAValue:
        return sem.binary(em, op, a, c)

    def parts(v: SSAValue) -> tuple[SSAValue, SSAValue, SSAValue]:
        """|v|'s bits, its significand (i64, the implicit bit set) and exponent field (>= 1)."""
        mag = b("&", em.value(arith.BitcastOp(v, sem.like(v.type, i32))), 0x7FFFFFFF)
        field = b(">>", mag, 23)
        frac = b("&", mag, 0x7FFFFF)
        sig = f.where(f.cmp(">", field, 0), b("|", frac, 0x800000), frac)
        return mag, sem.cast(em, sig, i64), sem.minmax(em, "max", field, 1)

    ax, mx, ex = parts(x)
    ay, my, ey = parts(y)
    my = f.where(f.cmp("==", my, 0), 1, my)  # y = +-0 gives NaN below; the integer '%' needs a divisor
    diff = b("-", ex, ey)
    rem = mx
    for step in range(-(-253 // _FMOD_STEP)):
        shift = sem.minmax(em, "min", sem.minmax(em, "max", b("-", diff, step * _FMOD_STEP), 0), _FMOD_STEP)
        rem = b("%", b("<<", rem, sem.cast(em, shift, i64)), my)
    scale = em.value(arith.BitcastOp(b("<<", ey, 23), sem.like(ey.type, f32)))  # 2**(ey - 127)
    mag = f.mul(f.mul(sem.cast(em, rem, f32), 2.0**-23), scale)  # rem * 2**(ey - 150), exact
    r = f.where(f.cmp("<", ax, ay), x, f.with_sign_of(mag, x))
    nan = b("|", b("|", f.cmp("==", ay, 0), f.cmp(">=", ax, 0x7F800000)), f.cmp(">", ay, 0x7F800000))
    return f.where(nan, f.nan(), r)


_BINARY: dict[str, Callable[[_F32, SSAValue, SSAValue], SSAValue]] = {
    "hypot": _hypot,
    "copysign": lambda f, x, y: f.with_sign_of(f.abs(x), y),
    "fmod": _fmod,
    "fmax": lambda f, x, y: sem.minmax(f.em, "max", x, y),
    "fmin": lambda f, x, y: sem.minmax(f.em, "min", x, y),
}
for _name, _body2 in _BINARY.items():
    impl(_binary_f32(_name, _body2))


@impl
def atan2(em: Emitter, y: Any, x: Any) -> Any:
    """`libdevice.atan2(y, x)` (the marker's parameter names: builtins are called by keyword)."""
    return _binary_f32("atan2", _atan2)(em, y, x)
