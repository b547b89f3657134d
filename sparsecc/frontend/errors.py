"""Errors the frontend reports to kernel authors."""

from __future__ import annotations


class CompilationError(Exception):
    """A user error in a kernel, located at `file:line:col` (1-based) with the source line."""

    def __init__(self, message: str, file: str = "<unknown>", line: int = 0, col: int = 0,
                 source_line: str | None = None):
        self.message = message
        self.file = file
        self.line = line
        self.col = col
        self.source_line = source_line
        text = f"{file}:{line}:{col}: error: {message}"
        if source_line is not None:
            text += f"\n{source_line.rstrip()}\n{' ' * max(col - 1, 0)}^"
        super().__init__(text)


class SemanticError(Exception):
    """Raised below the code generator, which adds the location of the offending node."""
