"""Interpreter rules of the debugging ops (`tt.assert`, `tt.print`, `tt.debug_barrier`) and the
GPU-only `tt.elementwise_inline_asm`, registered in `interp_ops.HANDLERS` on import."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from xdsl.dialects.builtin import FileLineColLoc
from xdsl.ir import Operation

from sparsecc.runtime.interp_ops import HANDLERS
from sparsecc.runtime.interp_values import InterpreterError


def where(op: Operation) -> str:
    """`file:line:col: ` of the kernel source that made `op`, when it is known."""
    loc = op.location
    if isinstance(loc, FileLineColLoc):
        return f"{loc.filename.data}:{loc.line.data}:{loc.column.data}: "
    return ""


def _assert(prog: Any, op: Operation, v: list[Any]) -> Sequence[Any]:
    cond = v[0]
    if not bool(torch.as_tensor(cond).all()):
        bad = (~torch.as_tensor(cond)).nonzero()
        at = f" at index {tuple(int(i) for i in bad[0])}" if bad.numel() and cond.dim() else ""
        message = op.message.data  # type: ignore[attr-defined]
        raise InterpreterError(f"{where(op)}device_assert failed{at}: {message or '(no message)'}")
    return ()


def _print(prog: Any, op: Operation, v: list[Any]) -> Sequence[Any]:
    pid = prog.program_id
    prefix = op.prefix.data  # type: ignore[attr-defined]
    hex_ = bool(op.hex.value.data)  # type: ignore[attr-defined]
    shown = []
    for x in v:
        if hex_ and not x.dtype.is_floating_point:
            shown.append(str([hex(int(e)) for e in x.reshape(-1).tolist()]) if x.dim() else hex(int(x)))
        else:
            shown.append(str(x.tolist()))
    print(f"pid ({pid[0]}, {pid[1]}, {pid[2]}) {prefix}{' '.join(shown)}")
    return ()


def _inline_asm(prog: Any, op: Operation, v: list[Any]) -> Sequence[Any]:
    raise InterpreterError(f"{where(op)}tl.inline_asm_elementwise runs on the GPU only (its PTX cannot run "
                           "on the CPU interpreter, as in Triton's interpreter)")


HANDLERS["tt.assert"] = _assert
HANDLERS["tt.print"] = _print
HANDLERS["tt.debug_barrier"] = lambda prog, op, v: ()  # one program is one thread here
HANDLERS["tt.elementwise_inline_asm"] = _inline_asm
