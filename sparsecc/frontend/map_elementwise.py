"""The IR of `tl.map_elementwise(scalar_fn, *args, pack=P)` (Triton 3.5's semantics): the
arguments are broadcast to one shape; `scalar_fn` is inlined once into the region of a
`tt.map_elementwise`, called with P scalars of each argument (all of the first argument's, then
the second's, ...), and returns P scalars of each result in the same order. One result is
returned as a tensor, several as a tuple. The back ends run the region per element (group)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from xdsl.ir import Block, Region, SSAValue

from sparsecc.dialects import tt
from sparsecc.dialects.tt import PointerType
from sparsecc.frontend import semantic as sem
from sparsecc.frontend.builtins import _int, impl
from sparsecc.frontend.errors import SemanticError
from sparsecc.frontend.semantic import Emitter
from sparsecc.frontend.types import describe

MAP_CALLS_JIT = frozenset({"map_elementwise"})
"""The builtin here that calls a @jit function (it gets the code generator's `_inline`)."""


def _operands(em: Emitter, args: tuple[Any, ...]) -> list[SSAValue]:
    vals = [sem.require_value(a, "tl.map_elementwise's argument") if isinstance(a, SSAValue) else a for a in args]
    tensors = [v for v in vals if isinstance(v, SSAValue) and sem.is_tensor(v)]
    if not tensors:
        raise SemanticError("tl.map_elementwise needs at least one tensor argument")
    shape: tuple[int, ...] = ()
    for v in tensors:
        shape = sem.broadcast_shapes(shape, sem.shape(v)) if shape else tuple(sem.shape(v))
    out = []
    for k, v in enumerate(vals):
        if not isinstance(v, SSAValue):
            v = sem.to_value(em, v, None, f"tl.map_elementwise's argument {k}")
        sem.require_dense(v, "tl.map_elementwise")
        if isinstance(sem.elem(v), PointerType):
            raise SemanticError(f"tl.map_elementwise maps values, not pointers: argument {k} is {describe(v.type)}")
        out.append(sem.splat(em, v, shape) if not sem.is_tensor(v) else sem.broadcast_to(em, v, shape))
    return out


@impl
def map_elementwise(em: Emitter, scalar_fn: Any, args: tuple[Any, ...], pack: Any = 1, *,
                    _inline: Callable[[Any, list[Any], dict[str, Any]], Any]) -> Any:
    if getattr(scalar_fn, "__sparsecc_jit__", False) is not True:
        raise SemanticError(f"tl.map_elementwise's scalar_fn must be a @sparsecc.jit function, got "
                            f"{sem.py_desc(scalar_fn)}")
    p = _int(pack, "tl.map_elementwise's pack")
    if p < 1:
        raise SemanticError(f"tl.map_elementwise's pack must be at least 1, got {p}")
    vals = _operands(em, args)
    shape = sem.shape(vals[0])
    numel = 1
    for d in shape:
        numel *= d
    if numel % p:
        raise SemanticError(f"tl.map_elementwise: pack={p} does not divide the {numel} elements of shape {list(shape)}")
    block = Block(arg_types=[sem.elem(v) for v in vals for _ in range(p)])
    old = em.move_to(block)
    try:
        out = _inline(scalar_fn, list(block.args), {})
        outs = list(out) if isinstance(out, tuple | list) else [out]
        if not outs or len(outs) % p:
            raise SemanticError(f"tl.map_elementwise: scalar_fn returns {len(outs)} values, which is not "
                                f"{p} (pack) per result")
        scalars = []
        for k, o in enumerate(outs):
            o = sem.to_value(em, o, None, "scalar_fn's result") if not isinstance(o, SSAValue) else o
            if sem.is_tensor(o):
                raise SemanticError(f"tl.map_elementwise: scalar_fn must return scalars, result {k} is "
                                    f"{describe(o.type)}")
            scalars.append(o)
        groups = [scalars[i:i + p] for i in range(0, len(scalars), p)]
        for g in groups:
            if any(o.type != g[0].type for o in g):
                raise SemanticError("tl.map_elementwise: the pack values of one result must have one type, got "
                                    + ", ".join(describe(o.type) for o in g))
        em.insert(tt.ReduceReturnOp(scalars))
    finally:
        em.move_to(old)
    types = [sem.like(vals[0].type, g[0].type) for g in groups]
    op = tt.MapElementwiseOp(vals, types, p, Region([block]))
    em.insert(op)
    res = list(op.results)
    return res[0] if len(res) == 1 else tuple(res)
