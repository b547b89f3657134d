"""The reduction builtins beyond sum/max/min (markers, as in `core`): Triton's `reduce`,
`argmax`, `argmin` and `xor_sum`."""

from __future__ import annotations

from typing import Any

from sparsecc.language.core import builtin


@builtin
def reduce(input: Any, axis: Any, combine_fn: Any, keep_dims: bool = False) -> Any:
    """`input` (a tensor or a tuple of same-shape tensors) reduced along `axis` (all axes if
    None) by the @jit function `combine_fn(a..., b...)`, which gets two partial results (one
    scalar per tensor each) and returns their combination; it must be associative and
    commutative. Example::

        @sparsecc.jit
        def mul(a, b):
            return a * b

        prod = tl.reduce(x, 0, mul)
    """


@builtin
def argmax(input: Any, axis: Any, tie_break_left: bool = True, keep_dims: bool = False) -> Any:
    """Index of the maximum along `axis` (int32), the smallest such index when several are
    equal: `i = tl.argmax(x, axis=0)`."""


@builtin
def argmin(input: Any, axis: Any, tie_break_left: bool = True, keep_dims: bool = False) -> Any:
    """Index of the minimum along `axis` (int32), the smallest such index when several are
    equal: `i = tl.argmin(x, axis=0)`."""


@builtin
def xor_sum(input: Any, axis: Any = None, keep_dims: bool = False) -> Any:
    """Bitwise xor of the integers along `axis` (all axes if None): `h = tl.xor_sum(x, 0)`."""


__all__ = ["argmax", "argmin", "reduce", "xor_sum"]
