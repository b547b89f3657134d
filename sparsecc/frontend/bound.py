"""A builtin bound to its first argument before the call: `x.sum` (then `x.sum(0)` is
`tl.sum(x, 0)`) or a tensor descriptor's `desc.load`. Its own module so that the builtins that
make one need not import the AST walker that calls it.

    BoundBuiltin(x, "sum")   # what `x.sum` evaluates to inside a kernel
"""

from __future__ import annotations

from typing import Any


class BoundBuiltin:
    """`value.name` before it is called: calling it is `tl.<name>(value, ...)`."""

    def __init__(self, value: Any, name: str):
        self.value = value
        self.name = name
