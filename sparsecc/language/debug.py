"""Compile-time checks and runtime debugging, as in Triton: `static_assert`/`static_print` run
while the kernel compiles; `device_assert` is checked only when the kernel is compiled with
debugging on (Triton's `debug=True`), `device_print` prints on the interpreter (the GPU
lowering drops it), `debug_barrier` is `bar.sync 0`, `assume` is accepted.

    @sparsecc.jit
    def copy(X, Y, n, BLOCK: tl.constexpr):
        tl.static_assert(BLOCK % 32 == 0, "BLOCK must be a multiple of 32")
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.device_assert(offs >= 0, "negative offset")
        tl.store(Y + offs, tl.load(X + offs, mask=offs < n), mask=offs < n)
"""

from __future__ import annotations

from typing import Any

from sparsecc.language.core import builtin


@builtin
def static_assert(cond: Any, msg: str = "") -> Any:
    """Fail the compilation, naming `msg`, when the compile-time `cond` is false:
    `tl.static_assert(BLOCK_K % 16 == 0, "BLOCK_K must be a multiple of 16")`."""


@builtin
def static_print(*values: Any, sep: str = " ", end: str = "\n", file: Any = None, flush: bool = False) -> Any:
    """Print compile-time values while the kernel compiles (a runtime value prints as its
    type): `tl.static_print("BLOCK =", BLOCK)`."""


@builtin
def device_assert(cond: Any, msg: str = "", mask: Any = None) -> Any:
    """With debugging on, every (unmasked) element of `cond` must hold: the interpreter raises
    naming `msg`, the GPU traps; without it a no-op, as in Triton: `tl.device_assert(x >= 0, "x")`."""


@builtin
def device_print(prefix: str, *args: Any, hex: bool = False) -> Any:
    """Print runtime values, once per program, on the interpreter (on the GPU it is dropped):
    `tl.device_print("row max", m)`."""


@builtin
def debug_barrier() -> Any:
    """Every thread of the program waits for the others (`bar.sync 0`): `tl.debug_barrier()`."""


@builtin
def assume(cond: Any) -> Any:
    """A promise that `cond` holds, for the optimizer; accepted and checked by nothing here:
    `tl.assume(stride > 0)`."""
