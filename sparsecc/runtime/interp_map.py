"""The interpreter's `tt.map_elementwise`: the scalar region run once per group of `pack`
consecutive elements (in row-major order) of the operands, its results written back in place.
Slow (one region run per group) but exact: the region may branch per element."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from xdsl.ir import Operation

from sparsecc.runtime.interp_ops import HANDLERS
from sparsecc.runtime.interp_values import torch_dtype


def _map_elementwise(prog: Any, op: Operation, v: list[Any]) -> Sequence[Any]:
    pack = op.pack.value.data  # type: ignore[attr-defined]
    block = op.scalar_op.block  # type: ignore[attr-defined]
    shape = v[0].shape
    flat = [x.reshape(-1) for x in v]
    n = flat[0].numel() if flat else 0
    outs = [torch.empty(n, dtype=torch_dtype(r.type.element_type)) for r in op.results]
    for start in range(0, n, pack):
        args = [x[start + k] for x in flat for k in range(pack)]
        res = prog.exec_block(block, args)
        for j, out in enumerate(outs):
            for k in range(pack):
                out[start + k] = res[j * pack + k]
    return tuple(o.reshape(shape) for o in outs)


HANDLERS["tt.map_elementwise"] = _map_elementwise
