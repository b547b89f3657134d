"""`tl.dot_scaled`: the matrix product of microscaled (OCP MX) operands."""

from __future__ import annotations

from typing import Any

from sparsecc.language.core import builtin, float32


@builtin
def dot_scaled(lhs: Any, lhs_scale: Any, lhs_format: Any, rhs: Any, rhs_scale: Any, rhs_format: Any,
               acc: Any = None, fast_math: Any = False, lhs_k_pack: Any = True, rhs_k_pack: Any = True,
               out_dtype: Any = float32) -> Any:
    """`lhs @ rhs` (+ `acc`) in f32, each operand scaled by its e8m0 block scales (uint8, one per 32
    elements along K; None for 1). Formats: "e2m1" (two per uint8, low nibble first, packed along
    K), "e4m3", "e5m2" (uint8 bits or fp8 dtypes), "bf16", "fp16". As Triton emulates it without
    native MX tensor cores: decoded, scaled, rounded to bf16, then `tl.dot`:

        acc = tl.dot_scaled(a, a_scale, "e2m1", b, b_scale, "e4m3", acc)
    """
