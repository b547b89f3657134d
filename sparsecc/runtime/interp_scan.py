"""Interpreter rules of `tt.scan` and `tt.gather` (`tl.associative_scan`, `tl.cumsum`,
`tl.gather`), registered in `interp_ops.HANDLERS` on import."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from xdsl.ir import Operation

from sparsecc.runtime.interp_ops import HANDLERS
from sparsecc.runtime.interp_values import InterpreterError


def _scan(prog: Any, op: Operation, v: list[Any]) -> Sequence[Any]:
    """Hillis-Steele over whole tensors: after the step of distance d each element holds the
    combination of the (up to) 2d elements ending at it, the earlier ones on the left; log2(n)
    runs of the region. `reverse` flips along the axis before and after."""
    axis = op.axis.value.data  # type: ignore[attr-defined]
    reverse = bool(op.reverse.value.data)  # type: ignore[attr-defined]
    block = op.combine.block  # type: ignore[attr-defined]
    xs = [x.flip(axis) if reverse else x for x in v]
    n = xs[0].shape[axis]
    d = 1
    while d < n:
        early = [x.narrow(axis, 0, n - d) for x in xs]
        late = [x.narrow(axis, d, n - d) for x in xs]
        out = prog.exec_block(block, [*early, *late])
        # a result the region computes from constants alone is a scalar: one per element
        out = [torch.as_tensor(r).to(x.dtype).expand(x.shape) for r, x in zip(out, late)]
        xs = [torch.cat([x.narrow(axis, 0, d), r], dim=axis) for x, r in zip(xs, out)]
        d *= 2
    return [(x.flip(axis) if reverse else x).contiguous() for x in xs]


def _gather(prog: Any, op: Operation, v: list[Any]) -> Sequence[Any]:
    src, idx = v
    axis = op.axis.value.data  # type: ignore[attr-defined]
    n = src.shape[axis]
    bad = (idx < 0) | (idx >= n)
    if bool(bad.any()):
        at = [int(i) for i in bad.nonzero()[0]]
        raise InterpreterError(f"tl.gather: index {int(idx[tuple(at)])} at {at} is outside the source's "
                               f"axis {axis} (size {n})")
    return (torch.gather(src, axis, idx.long()),)


HANDLERS["tt.scan"] = _scan
HANDLERS["tt.gather"] = _gather
