"""`tl.math`: elementwise math on float tensors and scalars, as in `triton.language.math`.

fp16/bf16 inputs are computed in fp32 and rounded back to the input's type (as Triton does); on
the GPU `exp`/`exp2`/`log`/`log2`/`rsqrt`/`sin`/`cos`/`tanh` use the PTX approximations
(`ex2.approx.ftz.f32` and friends: about 2 ulp, flushing denormals) and `sqrt` is
`sqrt.approx.ftz.f32`, as Triton's `tl.sqrt`; `sqrt_rn` and `div_rn` are IEEE round-to-nearest,
`/` is `div.full.f32` (docs/language.md, "Float precision"). Every name is also reachable as `tl.<name>`.

    @sparsecc.jit
    def swish(X, Y, n: tl.constexpr):
        x = tl.load(X + tl.arange(0, n))
        tl.store(Y + tl.arange(0, n), x * tl.sigmoid(x))
"""

from __future__ import annotations

from typing import Any

from sparsecc.language.core import builtin


@builtin
def exp(x: Any) -> Any:
    """Elementwise e**x: `tl.exp(acc)`."""


@builtin
def exp2(x: Any) -> Any:
    """Elementwise 2**x: `tl.exp2(x * 1.4426950408889634)` is Triton's fast softmax idiom."""


@builtin
def log(x: Any) -> Any:
    """Elementwise natural logarithm: `tl.log(p)`."""


@builtin
def log2(x: Any) -> Any:
    """Elementwise base-2 logarithm: `tl.log2(p)`."""


@builtin
def sqrt(x: Any) -> Any:
    """Elementwise square root, approximate on the GPU (`sqrt.approx.ftz.f32`, as Triton; exact
    on the interpreter): `tl.sqrt(var + eps)`. `tl.sqrt_rn` is the IEEE one."""


@builtin
def rsqrt(x: Any) -> Any:
    """Elementwise 1/sqrt(x): `x * tl.rsqrt(mean_sq + eps)` (RMSNorm)."""


@builtin
def sin(x: Any) -> Any:
    """Elementwise sine (radians): `tl.sin(theta)`."""


@builtin
def cos(x: Any) -> Any:
    """Elementwise cosine (radians): `tl.cos(theta)`."""


@builtin
def tanh(x: Any) -> Any:
    """Elementwise hyperbolic tangent: the tanh form of GELU, `0.5 * x * (1 + tl.tanh(...))`."""


@builtin
def floor(x: Any) -> Any:
    """Elementwise round towards -inf: `tl.floor(x)`."""


@builtin
def ceil(x: Any) -> Any:
    """Elementwise round towards +inf: `tl.ceil(x)`."""


@builtin
def abs(x: Any) -> Any:  # noqa: A001 - the Triton name
    """Elementwise absolute value of ints or floats: `tl.abs(x - y)`."""


@builtin
def sigmoid(x: Any) -> Any:
    """Elementwise 1 / (1 + e**-x): `acc * tl.sigmoid(acc)` is SiLU."""


@builtin
def fma(x: Any, y: Any, z: Any) -> Any:
    """Elementwise x * y + z with one rounding: `tl.fma(a, b, acc)`."""


@builtin
def clamp(x: Any, min: Any, max: Any, propagate_nan: Any = 0) -> Any:  # noqa: A002 - the Triton names
    """Elementwise `minimum(maximum(x, min), max)`, NaN as in `tl.maximum`: `tl.clamp(x, -1.0, 1.0)`."""


@builtin
def erf(x: Any) -> Any:
    """Elementwise error function: the exact GELU, `0.5 * x * (1 + tl.erf(x * 0.7071067811865476))`."""


@builtin
def sqrt_rn(x: Any) -> Any:
    """Elementwise square root rounded to nearest (IEEE, `sqrt.rn.f32`): `tl.sqrt_rn(var)`."""


@builtin
def div_rn(x: Any, y: Any) -> Any:
    """Elementwise x / y rounded to nearest (IEEE, `div.rn.f32`): `tl.div_rn(num, den)`; '/' is
    `div.full.f32` (2 ulp), as in Triton."""


@builtin
def fdiv(x: Any, y: Any, ieee_rounding: Any = False, approx: Any = False) -> Any:
    """Elementwise division of floats: `tl.fdiv(x, y)`, as Triton: `div.full.f32` (as '/'), with
    `ieee_rounding=True` rounded to nearest (`div.rn.f32`)."""


@builtin
def umulhi(x: Any, y: Any) -> Any:
    """Elementwise high half of the unsigned product of two int32 (int64) values, the random
    number generators' step: `hi = tl.umulhi(a, 0xD2511F53)`."""
