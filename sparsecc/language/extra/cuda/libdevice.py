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


__all__ = ["abs", "ceil", "cos", "div_rn", "erf", "exp", "exp2", "fabs", "fast_cosf", "fast_dividef",
           "fast_exp2f", "fast_expf", "fast_log2f", "fast_logf", "fast_sinf", "fast_tanhf", "floor", "fma",
           "log", "log2", "pow", "rsqrt", "sin", "sqrt", "sqrt_rn", "tanh", "umulhi"]
