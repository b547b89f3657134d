"""A user error at a launch shows the user's frames and the diagnostic, not the compiler's.

A kernel error found while compiling (`CompilationError`: `file:line:col` of the kernel source)
or while interpreting (`InterpreterError`: the kernel, the op and the parameter) travels up
through 20-odd frames of the code generator, the passes and `ast.NodeVisitor`, which say
nothing to the kernel's author and pushed the diagnostic below 45 lines of traceback. The
entry points (`kernel[grid](...)`, `sparsecc.compile`) drop those frames, as Triton's
`CompilationError` does; `SPARSECC_DEBUG=1` keeps them (and the exception's cause) for a bug
report:

    try:
        self.run(grid, args, kwargs)
    except Exception as e:
        hide_compiler_frames(e)
        raise                      # a bare raise: the current frame is not added again
"""

from __future__ import annotations

import os
import sys
from types import TracebackType

from sparsecc.compiler import debug_enabled
from sparsecc.frontend.errors import CompilationError

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
"""sparsecc's own directory: frames in files under it are the compiler's."""
_AST = os.sep + "ast.py"
"""The standard library's ast module (NodeVisitor.visit between every code generator frame)."""


def is_user_error(exc: BaseException) -> bool:
    """Whether `exc` reports a mistake in the user's kernel or launch (not a compiler bug)."""
    if isinstance(exc, CompilationError):
        return True
    interp = sys.modules.get("sparsecc.runtime.interp_values")  # loaded if the interpreter ran
    return interp is not None and isinstance(exc, interp.InterpreterError)


def _compiler_frame(tb: TracebackType) -> bool:
    name = tb.tb_frame.f_code.co_filename
    return name.startswith(_PACKAGE) or name.endswith(_AST)


def hide_compiler_frames(exc: BaseException) -> None:
    """Drop sparsecc's frames from a user error's traceback, and its cause and context (an
    internal exception the diagnostic already words); a no-op for other exceptions and under
    `SPARSECC_DEBUG=1`. Re-raise with a bare `raise` so that the caller's frame is not added."""
    if not is_user_error(exc) or debug_enabled():
        return
    kept: list[TracebackType] = []
    tb = exc.__traceback__
    while tb is not None:
        if not _compiler_frame(tb):
            kept.append(tb)
        tb = tb.tb_next
    for frame, following in zip(kept, kept[1:]):
        frame.tb_next = following
    if kept:
        kept[-1].tb_next = None
    exc.__traceback__ = kept[0] if kept else None
    exc.__cause__ = None
    exc.__suppress_context__ = True
