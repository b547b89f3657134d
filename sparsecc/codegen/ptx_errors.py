"""The PTX printer's user-facing error, in a module of its own so that the printer's helpers
(codegen/fp8_casts.py) raise it without importing the printer."""

from __future__ import annotations

from xdsl.ir import Operation


class PtxEmitError(Exception):
    """The module holds something the printer cannot express in PTX (or that its target cannot
    run); `op` is the op at fault, when known, so a tool can name its place in the input.

        raise PtxEmitError("no PTX cast between fp8 types", op)
    """

    def __init__(self, message: str, op: Operation | None = None):
        super().__init__(message)
        self.op = op


__all__ = ["PtxEmitError"]
