"""`libdevice`: the CUDA math library's names that Triton kernels use, each mapped onto a
`tl.math` builtin (the same function, so the same PTX: the fast approximations where
libdevice's `fast_*` are, otherwise sparsecc's `tl.math` forms, see `sparsecc.language.math`).

    from sparsecc.language.extra.cuda import libdevice

    @sparsecc.jit
    def gelu_tanh(X, Y, n: tl.constexpr):
        x = tl.load(X + tl.arange(0, n))
        y = 0.5 * x * (1 + libdevice.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))
        tl.store(Y + tl.arange(0, n), y)

Names not here are not supported: a kernel that uses one gets a located error naming it.
"""

from __future__ import annotations

from typing import Any

from sparsecc.language import math as _m
from sparsecc.language.core import builtin

tanh = _m.tanh
erf = _m.erf
rsqrt = _m.rsqrt
sqrt = _m.sqrt  # sqrt.approx.ftz.f32, as Triton's libdevice (ftz, approximate sqrt)
sqrt_rn = _m.sqrt_rn
exp = _m.exp
exp2 = _m.exp2
log = _m.log
log2 = _m.log2
sin = _m.sin
cos = _m.cos
floor = _m.floor
ceil = _m.ceil
fabs = _m.abs
abs = _m.abs  # noqa: A001 - libdevice's name
fma = _m.fma
div_rn = _m.div_rn
umulhi = _m.umulhi
fast_expf = _m.exp
fast_exp2f = _m.exp2
fast_logf = _m.log
fast_log2f = _m.log2
fast_tanhf = _m.tanh
fast_sinf = _m.sin
fast_cosf = _m.cos
fast_dividef = _m.fdiv  # div.full.f32 (Triton: div.approx.ftz.f32, less exact)


@builtin
def pow(x: Any, y: Any) -> Any:  # noqa: A001 - libdevice's name
    """Elementwise x ** y for floats (C's powf: a negative x takes integer exponents only, other
    exponents give NaN): `libdevice.pow(x, 2.0)`."""


# The names below are compositions in sparsecc (sparsecc/frontend/libdevice_builtins.py): fp32
# polynomials and identities over the primitives, the same formula on the interpreter and the GPU.
# fp16/bf16 inputs are computed in fp32 and rounded back; fp64 inputs are refused.


@builtin
def asin(x: Any) -> Any:
    """Elementwise arcsine, NaN outside [-1, 1]: `libdevice.asin(x)`."""


@builtin
def acos(x: Any) -> Any:
    """Elementwise arccosine in [0, pi]: `libdevice.acos(x)`."""


@builtin
def atan(x: Any) -> Any:
    """Elementwise arctangent in [-pi/2, pi/2]: `libdevice.atan(x)`."""


@builtin
def atan2(y: Any, x: Any) -> Any:
    """Elementwise angle of the point (x, y) in [-pi, pi], as C's atan2: `libdevice.atan2(y, x)`."""


@builtin
def tan(x: Any) -> Any:
    """Elementwise tangent (sin / cos): `libdevice.tan(x)`."""


@builtin
def sinh(x: Any) -> Any:
    """Elementwise hyperbolic sine: `libdevice.sinh(x)`."""


@builtin
def cosh(x: Any) -> Any:
    """Elementwise hyperbolic cosine: `libdevice.cosh(x)`."""


@builtin
def asinh(x: Any) -> Any:
    """Elementwise inverse hyperbolic sine: `libdevice.asinh(x)`."""


@builtin
def acosh(x: Any) -> Any:
    """Elementwise inverse hyperbolic cosine, NaN below 1: `libdevice.acosh(x)`."""


@builtin
def atanh(x: Any) -> Any:
    """Elementwise inverse hyperbolic tangent, +-inf at +-1: `libdevice.atanh(x)`."""


@builtin
def log1p(x: Any) -> Any:
    """Elementwise log(1 + x), accurate near 0: `libdevice.log1p(p)`."""


@builtin
def expm1(x: Any) -> Any:
    """Elementwise e**x - 1, accurate near 0: `libdevice.expm1(x)`."""


@builtin
def exp10(x: Any) -> Any:
    """Elementwise 10**x: `libdevice.exp10(x)`."""


@builtin
def log10(x: Any) -> Any:
    """Elementwise base-10 logarithm: `libdevice.log10(x)`."""


@builtin
def cbrt(x: Any) -> Any:
    """Elementwise cube root (negative for negative x): `libdevice.cbrt(x)`."""


@builtin
def erfc(x: Any) -> Any:
    """Elementwise 1 - erf(x): `libdevice.erfc(x)`."""


@builtin
def trunc(x: Any) -> Any:
    """Elementwise rounding towards zero: `libdevice.trunc(x)`."""


@builtin
def round(x: Any) -> Any:  # noqa: A001 - libdevice's name
    """Elementwise rounding to nearest, halves away from zero (C's roundf): `libdevice.round(x)`."""


@builtin
def rint(x: Any) -> Any:
    """Elementwise rounding to nearest, halves to even: `libdevice.rint(x)`."""


@builtin
def nearbyint(x: Any) -> Any:
    """Elementwise rounding to nearest, halves to even (as rint): `libdevice.nearbyint(x)`."""


@builtin
def saturatef(x: Any) -> Any:
    """Elementwise clamp to [0, 1], NaN to 0: `libdevice.saturatef(x)`."""


@builtin
def rcp_rn(x: Any) -> Any:
    """Elementwise 1 / x rounded to nearest: `libdevice.rcp_rn(x)`."""


@builtin
def isnan(x: Any) -> Any:
    """Elementwise int32 1 where x is NaN, else 0: `libdevice.isnan(x) != 0`."""


@builtin
def isinf(x: Any) -> Any:
    """Elementwise int32 1 where x is +-inf, else 0: `libdevice.isinf(x) != 0`."""


@builtin
def finitef(x: Any) -> Any:
    """Elementwise int32 1 where x is neither NaN nor +-inf, else 0: `libdevice.finitef(x) != 0`."""


@builtin
def signbit(x: Any) -> Any:
    """Elementwise int32 1 where x's sign bit is set (-0.0 included), else 0: `libdevice.signbit(x)`."""


@builtin
def hypot(x: Any, y: Any) -> Any:
    """Elementwise sqrt(x*x + y*y) without overflow: `libdevice.hypot(x, y)`."""


@builtin
def copysign(x: Any, y: Any) -> Any:
    """Elementwise |x| with the sign of y: `libdevice.copysign(x, y)`."""


@builtin
def fmod(x: Any, y: Any) -> Any:
    """Elementwise remainder with the dividend's sign, exact for every quotient (C's fmodf, as
    CUDA's `__nv_fmodf`): `libdevice.fmod(x, y)`. `x % y` instead divides first, as Triton's
    frem, and is exact only while |x / y| < 2**24: `libdevice.fmod(2.0**30, 3.0)` is 1.0 where
    `2.0**30 % 3.0` is -32.0 on the GPU."""


@builtin
def fmax(x: Any, y: Any) -> Any:
    """Elementwise maximum, a NaN losing to a number (C's fmaxf): `libdevice.fmax(x, y)`."""


@builtin
def fmin(x: Any, y: Any) -> Any:
    """Elementwise minimum, a NaN losing to a number (C's fminf): `libdevice.fmin(x, y)`."""


fast_powf = pow
fast_tanf = tan
fast_log10f = log10
fast_exp10f = exp10


__all__ = ["abs", "acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "cbrt", "ceil", "copysign",
           "cos", "cosh", "div_rn", "erf", "erfc", "exp", "exp10", "exp2", "expm1", "fabs",
           "fast_cosf", "fast_dividef", "fast_exp10f", "fast_exp2f", "fast_expf", "fast_log10f",
           "fast_log2f", "fast_logf", "fast_powf", "fast_sinf", "fast_tanf", "fast_tanhf",
           "finitef", "floor", "fma", "fmax", "fmin", "fmod", "hypot", "isinf", "isnan", "log",
           "log10", "log1p", "log2", "nearbyint", "pow", "rcp_rn", "rint", "round", "rsqrt",
           "saturatef", "signbit", "sin", "sinh", "sqrt", "sqrt_rn", "tan", "tanh", "trunc",
           "umulhi"]
