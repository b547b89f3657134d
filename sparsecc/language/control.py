"""`tl.range`: a runtime loop iterator with Triton's compiler hints.

Kept apart from `core` because defining a module-level `range` shadows Python's builtin in the
module that defines it.
"""

from __future__ import annotations

from typing import Any

from sparsecc.language.core import builtin


def _range(arg1: Any, arg2: Any = None, step: Any = None, num_stages: Any = None,
           loop_unroll_factor: Any = None, disallow_acc_multi_buffer: Any = False, flatten: Any = False,
           warp_specialize: Any = False, disable_licm: Any = False) -> Any:
    """`for k in tl.range(lo, hi, step, num_stages=3)`: a runtime loop like `range()`.

    `num_stages` pipelines the loop when it is a dot (K) loop, overriding the launch's
    num_stages for it; `loop_unroll_factor`, `flatten`, `warp_specialize`,
    `disallow_acc_multi_buffer` and `disable_licm` are accepted hints (kept on the loop as
    `tt.*` attributes; sparsecc's passes do not act on them). A negative step must be a
    constexpr, as in Triton."""


_range.__name__ = _range.__qualname__ = "range"
range = builtin(_range)  # noqa: A001 - the Triton spelling, `tl.range`
