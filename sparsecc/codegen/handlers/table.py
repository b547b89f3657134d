"""The op -> handler table of convert-ttg-to-ptx, and the decorators that fill it.

A handler is `handler(L, op) -> None`: it reads the lowered values of `op`'s operands
(`L.get`), emits `ptx`-dialect ops through `L.em` and records `op`'s results (`L.set`); `L` is
the `sparsecc.codegen.lower_state.LoweringState` of the kernel. Each module of this package
registers the handlers of one op family:

    @handles(tt.SplatOp)
    def _splat(L: LoweringState, op: tt.SplatOp) -> None:
        ...

Ops are looked up by class, then by name (`handles_name`: arith and math, whose ops share
one handler per family and whose sparsecc subclasses keep the upstream names), then by base
class (a subclass of a handled op); anything else is the LoweringError of an op the PTX
lowering does not support.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from xdsl.ir import Operation

from sparsecc.codegen.lower_base import LoweringError

Handler = Callable[[Any, Any], None]

HANDLERS: dict[type[Operation], Handler] = {}
"""Op class -> handler."""
NAMED_HANDLERS: dict[str, Handler] = {}
"""Op name -> handler (arith, math)."""
_RESOLVED: dict[type[Operation], Handler] = {}
"""Op class -> handler, as `handler_for` found it (the tables stay as registered)."""


def handles(*classes: type[Operation]) -> Callable[[Handler], Handler]:
    """Register the decorated function as the handler of `classes`."""
    def register(fn: Handler) -> Handler:
        for cls in classes:
            if cls in HANDLERS:
                raise AssertionError(f"two handlers for {cls.__name__}")
            HANDLERS[cls] = fn
        return fn
    return register


def handles_name(*names: str) -> Callable[[Handler], Handler]:
    """Register the decorated function as the handler of the ops named `names`."""
    def register(fn: Handler) -> Handler:
        for name in names:
            if name in NAMED_HANDLERS:
                raise AssertionError(f"two handlers for {name}")
            NAMED_HANDLERS[name] = fn
        return fn
    return register


def _unsupported(L: Any, op: Operation) -> None:
    raise LoweringError(f"{op.name}: not supported by the PTX lowering")


def handler_for(op: Operation) -> Handler:
    """The handler of `op` (memoised per class), or one that raises the unsupported-op error."""
    cls = type(op)
    handler = _RESOLVED.get(cls)
    if handler is not None:
        return handler
    handler = HANDLERS.get(cls) or NAMED_HANDLERS.get(op.name)
    if handler is None:
        handler = next((HANDLERS[base] for base in cls.__mro__[1:] if base in HANDLERS), None)
        if handler is None:
            return _unsupported
    _RESOLVED[cls] = handler
    return handler


__all__ = ["HANDLERS", "NAMED_HANDLERS", "Handler", "handler_for", "handles", "handles_name"]
