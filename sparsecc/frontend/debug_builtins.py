"""The debugging builtins of `sparsecc.language.debug`: compile-time ones run here, runtime
ones emit `tt.assert` (only with debugging on, as Triton), `tt.print`, `tt.debug_barrier`."""

from __future__ import annotations

import sys
from typing import Any

from xdsl.dialects.builtin import i1

from sparsecc.dialects import tt
from sparsecc.frontend import semantic as sem
from sparsecc.frontend.builtins import impl
from sparsecc.frontend.errors import SemanticError
from sparsecc.frontend.semantic import Emitter
from sparsecc.frontend.types import describe


def _message(msg: Any, name: str) -> str:
    if not isinstance(msg, str):
        raise SemanticError(f"{name}'s message must be a string literal, got {sem.py_desc(msg)}")
    return msg


@impl
def static_assert(em: Emitter, cond: Any, msg: Any = "") -> None:
    text = _message(msg, "tl.static_assert")
    if isinstance(cond, sem.SSAValue):
        raise SemanticError("tl.static_assert needs a compile-time condition (constexprs only); "
                            "use tl.device_assert for runtime values")
    if not cond:
        raise SemanticError(f"static_assert failed{': ' + text if text else ''}")


@impl
def static_print(em: Emitter, values: Any = (), sep: Any = " ", end: Any = "\n", file: Any = None,
                 flush: Any = False) -> None:
    shown = [describe(v.type) if isinstance(v, sem.SSAValue) else v for v in values]
    print(*shown, sep=sep, end=end, file=sys.stdout if file is None else file, flush=bool(flush))


def _bool_tensor(em: Emitter, x: Any, what: str) -> sem.SSAValue:
    v = sem.to_value(em, x, i1, what)
    sem.require_dense(v, what)
    return sem.to_bool(em, v)


@impl
def device_assert(em: Emitter, cond: Any, msg: Any = "", mask: Any = None) -> None:
    text = _message(msg, "tl.device_assert")
    if not getattr(em, "debug", False):  # as Triton: checked only with debugging on
        return
    c = _bool_tensor(em, cond, "tl.device_assert's condition")
    if mask is not None:  # a masked-off element passes
        m = _bool_tensor(em, mask, "tl.device_assert's mask")
        c = sem.binary(em, "|", c, sem.invert(em, m))
    em.insert(tt.AssertOp(c, text))


@impl
def device_print(em: Emitter, prefix: Any, args: Any = (), hex: Any = False) -> None:
    if not isinstance(prefix, str):
        raise SemanticError(f"tl.device_print's prefix must be a string literal, got {sem.py_desc(prefix)}")
    vals = []
    for a in args:
        v = sem.to_value(em, a, None, "a tl.device_print value")
        sem.require_dense(v, "tl.device_print")
        vals.append(v)
    em.insert(tt.PrintOp(prefix, vals, bool(hex)))


@impl
def debug_barrier(em: Emitter) -> None:
    em.insert(tt.DebugBarrierOp())


@impl
def assume(em: Emitter, cond: Any) -> None:
    if isinstance(cond, sem.SSAValue):
        sem.require_dense(cond, "tl.assume")
        return
    if not sem.is_py_scalar(cond):
        raise SemanticError(f"tl.assume needs a condition, got {sem.py_desc(cond)}")
