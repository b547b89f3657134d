"""Errors of the stages after the frontend, reported at the kernel line that caused them.

A pass or the lowering rejects an op; the op carries the `loc(...)` of the kernel expression it
came from (see `sparsecc.dialects.locations`), so the user sees the same `file:line:col` error
with the source line as for a frontend error. An error about no particular op points at the
kernel's `def` line.

    try:
        stages = compile_module(ttir, options)
    except pass_errors() as e:
        raise located_error(kernel, e) from e
"""

from __future__ import annotations

import linecache

from xdsl.utils.exceptions import DiagnosticException

from sparsecc.dialects.locations import source_position
from sparsecc.frontend.errors import CompilationError
from sparsecc.frontend.kernel import KernelFunction


def pass_errors() -> tuple[type[BaseException], ...]:
    """The exception classes passes and the lowering raise for a kernel they reject."""
    from sparsecc.analysis.layouts import LayoutError
    from sparsecc.codegen.lower_base import LoweringError
    from sparsecc.codegen.ptx_printer import PtxEmitError

    return (DiagnosticException, LoweringError, LayoutError, PtxEmitError)


def located_error(kernel: KernelFunction, exc: BaseException) -> CompilationError:
    """`exc` as a CompilationError at the kernel line of its op (else at the `def` line)."""
    pos = source_position(getattr(exc, "op", None))
    message = str(exc).strip() or type(exc).__name__
    if pos is None:
        line, col = kernel.position(kernel.tree)
        return CompilationError(f"in kernel '{kernel.__name__}': {message}", kernel.file, line, col,
                                linecache.getline(kernel.file, line) or None)
    file, line, col = pos
    return CompilationError(message, file, line, col, linecache.getline(file, line) or None)
