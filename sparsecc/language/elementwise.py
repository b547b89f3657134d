"""`tl.map_elementwise`: a scalar @jit function mapped over the elements of tensors, so that it
may branch per element (where `tl.where` would compute both sides)."""

from __future__ import annotations

from typing import Any

from sparsecc.language.core import builtin


@builtin
def map_elementwise(scalar_fn: Any, *args: Any, pack: Any = 1) -> Any:
    """`scalar_fn` (a @jit function of scalars) applied to each element of `args`, broadcast to
    one shape; one tensor per value it returns (a tuple for several). With `pack=P` it takes
    P elements of each argument at once and returns P values per result:

        @sparsecc.jit
        def compare(x, y):
            if x < y:
                return -1
            elif x == y:
                return 0
            return 1

        z = tl.map_elementwise(compare, x, y)   # int32, -1/0/1 per element
    """
