"""Which block-pointer copies the Hopper tensor memory accelerator (TMA) can do, and how.

A TMA copy (`cp.async.bulk.tensor.2d`) moves one box of a 2-D tensor described by a *tensor
map* (built on the host by `cuTensorMapEncodeTiled`: base address, dims, byte strides, box
size, swizzle mode) into shared memory, zero-filling what lies out of bounds, and completes on
an mbarrier. A block-pointer tile copy can use it when

* the shared tile is laid out exactly as a row of boxes lands (`box_plan`): each box is rows x
  W elements at consecutive offsets, its rows swizzled by one of the TMA modes (128/64/32-byte,
  or none): checked element by element against the tile's `#ttg.shared` encoding;
* the block pointer comes from a `tt.make_tensor_ptr` on a kernel argument whose shape and
  strides the host can compute from the other arguments (`host_recipe`: small expression
  trees over integer arguments), with a unit inner stride and an outer stride that is a
  multiple of 16 bytes for every launch (the divisibility analysis proves it).

The recipes travel in the launch metadata; the launcher evaluates them per launch
(`evaluate`) and passes each tensor map as a 128-byte kernel parameter.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, replace
from typing import Any

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IntegerAttr, StringAttr
from xdsl.ir import BlockArgument, SSAValue

from sparsecc.analysis.dtypes import esize
from sparsecc.analysis.layouts import stored_coords
from sparsecc.analysis.swizzle import MODES, box_offset
from sparsecc.dialects import tt
from sparsecc.dialects.ttg import MemDescType, SharedEncodingAttr

SWIZZLE_BYTES = (*MODES, 0)
"""TMA swizzle modes by row width in bytes (0: none), most preferred first."""
MAX_BOX = 256
"""Largest box extent per dimension, in elements."""
MAX_DIM = 1 << 32
"""Largest tensor-map dim (`cuTensorMapEncodeTiled`'s globalDim), in elements."""
UNBOUNDED_DIM = 1 << 40
"""The `tt.make_tensor_ptr` extent raise-pointer-tensors gives a dim that no mask bounds (an
unmasked load feeding a dot, such as attention's K and V tiles or a grouped GEMM's weights, or
a dot epilogue's unmasked store): that dim is never bounds-checked, and it exceeds MAX_DIM, so
no tensor map is built from it (`host_recipe`)."""
DTYPE_NAMES = {"f16": "fp16", "bf16": "bf16", "i16": "u16", "f32": "fp32", "i8": "u8", "f8E4M3FN": "u8", "f8E5M2": "u8",
               "i32": "u32"}


@dataclass(frozen=True)
class BoxPlan:
    """A tile as TMA boxes: `count` boxes of `rows` x `width` elements side by side along the
    row, box j at byte offset j * rows * width * esize of the tile, rows swizzled by `swizzle`.
    `transposed`: the tile is stored column-major (order [0, 1], e.g. a K-major B): its stored
    rows are the tile's columns, and the boxes' rows and widths are counted in that view."""

    rows: int
    width: int
    count: int
    swizzle: int  # bytes: 128 / 64 / 32, 0 = none
    esize: int
    transposed: bool = False
    row_parts: int = 1
    """A staged store's (`ttg.box_staged`): the tile's rows split into this many boxes of `rows`
    each, box (j, h) holding rows h * rows... of column block j (`staged`)."""

    @property
    def box_bytes(self) -> int:
        return self.rows * self.width * self.esize

    @property
    def bytes(self) -> int:
        return self.box_bytes * self.count * self.row_parts

    def staged(self, rows: int) -> BoxPlan | None:
        """This plan in boxes of `rows` rows (a `ttg.box_staged` store's), or None where they do
        not split the tile's rows into whole swizzle periods (8 rows).

            >>> BoxPlan(128, 64, 2, 128, 2, True).staged(64).row_parts
            2
        """
        if rows <= 0 or self.rows % rows or (self.swizzle and rows % 8):
            return None
        return replace(self, rows=rows, row_parts=self.row_parts * self.rows // rows)


@functools.lru_cache(maxsize=64)
def box_plan(mem_ty: MemDescType, esize: int) -> BoxPlan | None:
    """How TMA boxes fill a 2-D shared tile of type `mem_ty`, or None if no TMA mode lays it out
    as its encoding says (checked for every element)."""
    shape = mem_ty.get_shape()
    enc = mem_ty.encoding
    if len(shape) != 2 or not isinstance(enc, SharedEncodingAttr) or tuple(enc.order) not in ((1, 0), (0, 1)):
        return None
    transposed = tuple(enc.order) == (0, 1)
    rows, cols = (shape[1], shape[0]) if transposed else shape
    if rows > MAX_BOX:
        return None
    # every element at once (numpy arrays through the same int arithmetic): a compile meets
    # several 32k-element tiles, which an element-by-element Python loop took ~0.1 s for.
    # numpy is imported here, not at the top: `sparsecc-opt` runs that never plan a TMA box
    # (most lit tests) do not pay its import
    import numpy as np

    r, c = np.meshgrid(np.arange(rows, dtype=np.int64), np.arange(cols, dtype=np.int64), indexing="ij")
    stored_at = enc.swizzled_offset(*stored_coords(enc, *((c, r) if transposed else (r, c)), shape))
    for swizzle in SWIZZLE_BYTES:
        width = swizzle // esize if swizzle else min(cols, MAX_BOX)
        if width == 0 or cols % width or (width * esize) % 16 or width > MAX_BOX:
            continue
        if swizzle and rows % 8:
            continue
        if np.array_equal(stored_at * esize, box_offset(r, c, width, rows, esize, swizzle)):
            return BoxPlan(rows, width, cols // width, swizzle, esize, transposed)
    return None


# ------------------------------------------------------------------------------------ recipes

_BINARY = {
    "arith.addi": "add", "arith.subi": "sub", "arith.muli": "mul", "arith.divsi": "divs",
    "arith.divui": "divu", "arith.remsi": "rems", "arith.remui": "remu", "arith.maxsi": "max",
    "arith.minsi": "min", "arith.shli": "shl", "arith.shrsi": "shr", "arith.shrui": "shr",
    "arith.andi": "and", "arith.ori": "or",
}
_CASTS = ("arith.extsi", "arith.extui", "arith.trunci", "arith.index_cast")


def host_expr(v: SSAValue, func: tt.FuncOp) -> Any:
    """`v` as an expression over the kernel's arguments: ["arg", i], ["const", c] or
    [op, a, b] (ops of `_BINARY`); None when `v` depends on anything else (a program id, a
    loop, memory)."""
    if isinstance(v, BlockArgument):
        return ["arg", v.index] if v.owner is func.body.block else None
    op = v.owner
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        return ["const", op.value.value.data]
    if op.name in _CASTS:
        return host_expr(op.operands[0], func)
    if op.name in _BINARY:
        a, b = (host_expr(x, func) for x in op.operands)
        return None if a is None or b is None else [_BINARY[op.name], a, b]
    return None


def _trunc_div(a: int, b: int) -> int:
    """Integer division rounding toward zero (arith.divsi, C)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


_EVAL = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "divs": _trunc_div, "divu": _trunc_div,
    "rems": lambda a, b: a - b * _trunc_div(a, b), "remu": lambda a, b: a - b * _trunc_div(a, b),
    "max": max, "min": min, "shl": lambda a, b: a << b, "shr": lambda a, b: a >> b,
    "and": lambda a, b: a & b, "or": lambda a, b: a | b,
}
"""The binary operators of `host_expr` on Python ints (the values are sizes and strides: small
and non-negative, so signed and unsigned forms agree)."""


def evaluate(expr: Any, args: list[Any], available: dict[int, int] | None = None) -> int:
    """The value of a `host_expr` for the launch's (packed) arguments. `["rows", i, stride,
    cols]` (`sparsecc.analysis.tma_extents`) is the number of rows of `cols` elements, `stride`
    apart, that argument i's allocation holds whole from its base: it reads `available[i]`, the
    elements from argument i's address to the end of its storage (the launcher measures it)."""
    kind = expr[0]
    if kind == "arg":
        return int(args[expr[1]])
    if kind == "const":
        return int(expr[1])
    if kind == "rows":
        if available is None or expr[1] not in available:
            raise ValueError(f"tensor-map expression {expr!r} needs the size of argument {expr[1]}'s allocation")
        stride, cols = evaluate(expr[2], args, available), evaluate(expr[3], args, available)
        return max(1, (available[expr[1]] - cols) // stride + 1) if stride > 0 else 1
    fn = _EVAL.get(kind)
    if fn is None:
        raise ValueError(f"unknown tensor-map expression {kind!r}")
    return fn(evaluate(expr[1], args, available), evaluate(expr[2], args, available))


def arguments_of(expr: Any) -> set[int]:
    """The argument indices a `host_expr` reads."""
    if expr[0] == "arg":
        return {expr[1]}
    if expr[0] == "const":
        return set()
    if expr[0] == "rows":
        return {expr[1]} | arguments_of(expr[2]) | arguments_of(expr[3])
    return arguments_of(expr[1]) | arguments_of(expr[2])


def allocations_of(expr: Any) -> set[int]:
    """The arguments whose allocation size a `host_expr` reads (its `rows` terms)."""
    if expr[0] in ("arg", "const"):
        return set()
    if expr[0] == "rows":
        return {expr[1]} | allocations_of(expr[2]) | allocations_of(expr[3])
    return allocations_of(expr[1]) | allocations_of(expr[2])


def tensor_ptr_root(v: SSAValue) -> tt.MakeTensorPtrOp | None:
    """The tt.make_tensor_ptr a block pointer was advanced from (through tt.advance and the
    iter_args of scf.for loops), or None."""
    seen = 0
    while seen < 64:
        seen += 1
        owner = v.owner
        if isinstance(owner, tt.MakeTensorPtrOp):
            return owner
        if isinstance(owner, tt.AdvanceOp):
            v = owner.ptr
            continue
        if isinstance(v, BlockArgument) and isinstance(loop := v.owner.parent_op(), scf.ForOp) and v.index > 0:
            v = loop.iter_args[v.index - 1]
            continue
        if isinstance(owner, scf.ForOp):  # a loop result: what the loop started from
            v = owner.iter_args[v.index]
            continue
        if isinstance(owner, scf.IfOp) and owner.true_region.blocks:  # (unroll_by_two's last trip)
            y = owner.true_region.block.last_op
            v = y.operands[v.index]
            continue
        return None
    return None


@dataclass(frozen=True)
class TensorMapRecipe:
    """What the host needs to encode one tensor map (JSON-able through `as_json`)."""

    arg: int  # the kernel argument holding the base address
    dtype: str  # "fp16", "bf16", "u16", ...
    dims: tuple[Any, ...]  # innermost first (expressions)
    strides: tuple[Any, ...]  # byte strides of the outer dims (expressions, element strides x esize)
    box: tuple[int, int]  # (width, rows)
    swizzle: int
    esize: int
    guards: tuple[Any, ...] = ()
    """(lo, hi) expression pairs that must hold (lo <= hi) for the map to be exact
    (`sparsecc.analysis.tma_extents`); the launch refuses arguments that break one."""

    def as_json(self) -> dict[str, Any]:
        out = {"arg": self.arg, "dtype": self.dtype, "dims": list(self.dims), "strides": list(self.strides),
               "box": list(self.box), "swizzle": self.swizzle, "esize": self.esize}
        if self.guards:
            out["guards"] = [list(g) for g in self.guards]
        return out


def host_recipe(root: tt.MakeTensorPtrOp, func: tt.FuncOp, plan: BoxPlan, elt_name: str,
                outer_stride_div: int) -> TensorMapRecipe | None:
    """The tensor-map recipe of a 2-D block pointer made by `root` (row-major; or column-major,
    order [0, 1], for a transposed plan: the map then runs along the columns), or None when the
    host cannot build it (base not an argument, shape or strides not computable from the
    arguments, inner stride not 1, outer stride not provably a multiple of 16 bytes)."""
    base = root.base
    if not isinstance(base, BlockArgument) or base.owner is not func.body.block:
        return None
    if len(root.shape) != 2 or elt_name not in DTYPE_NAMES:
        return None
    want = (0, 1) if plan.transposed else (1, 0)
    if tuple(root.order.get_values()) != want:
        return None
    fast, slow = (0, 1) if plan.transposed else (1, 0)
    inner = host_expr(root.strides[fast], func)
    if inner != ["const", 1]:
        return None
    if (outer_stride_div * plan.esize) % 16:
        return None
    rows, cols = (host_expr(root.shape[d], func) for d in (slow, fast))
    stride = host_expr(root.strides[slow], func)
    guards: tuple[Any, ...] = ()
    extents = extents_of(root)
    if extents is not None:  # the pipeline's tma-extents: extents from the allocation
        (cols, rows), guards = extents["dims"], tuple(tuple(g) for g in extents["guards"])
    if rows is None or cols is None or stride is None or _too_large(rows) or _too_large(cols):
        return None
    return TensorMapRecipe(base.index, DTYPE_NAMES[elt_name], (cols, rows), (["mul", stride, ["const", plan.esize]],),
                           (plan.width, plan.rows), plan.swizzle, plan.esize, guards)


EXTENTS_ATTR = "tma.extents"
"""The `tt.make_tensor_ptr` attribute that carries `tma_extents.loop_extents`' result as JSON
(the pipeline records it; `host_recipe` reads it)."""


def extents_of(root: tt.MakeTensorPtrOp) -> dict[str, Any] | None:
    """The extents the pipeline recorded on `root` (`EXTENTS_ATTR`), or None."""
    attr = root.attributes.get(EXTENTS_ATTR)
    return json.loads(attr.data) if isinstance(attr, StringAttr) else None


def record_extents(root: tt.MakeTensorPtrOp, extents: dict[str, Any] | None) -> None:
    """Put `extents` on `root` (None: take them off)."""
    if extents is None:
        root.attributes.pop(EXTENTS_ATTR, None)
    else:
        root.attributes[EXTENTS_ATTR] = StringAttr(json.dumps(extents, separators=(",", ":")))


def _too_large(dim: Any) -> bool:
    """A dim the compiler knows (no argument in it) that no tensor map may have: above
    MAX_DIM (raise-pointer-tensors' UNBOUNDED extent of a dim its load never checks)."""
    return not arguments_of(dim) and evaluate(dim, []) > MAX_DIM


def tma_copy_plan(ptr: SSAValue, tile: MemDescType, func: tt.FuncOp, divs: Any, staged_rows: int | None = None
                  ) -> tuple[tt.MakeTensorPtrOp, BoxPlan, TensorMapRecipe] | None:
    """(root, boxes, recipe) when a copy of block pointer `ptr` into a shared tile of type
    `tile` can be a TMA copy, else None. `divs` is the function's Divisibility analysis (the
    outer stride must be a provable multiple of 16 bytes). The pipeline pass asks it to choose
    TMA, the lowering to build the tensor-map parameters: one rule for both. `staged_rows`: a
    `ttg.box_staged` store's boxes of that many rows (`BoxPlan.staged`)."""
    root = tensor_ptr_root(ptr)
    plan = box_plan(tile, esize(tile.element_type))
    if plan is not None and staged_rows is not None:
        plan = plan.staged(staged_rows)
    if root is None or plan is None:
        return None
    recipe = host_recipe(root, func, plan, str(tile.element_type), divs.of(root.strides[1 if plan.transposed else 0]))
    return None if recipe is None else (root, plan, recipe)


__all__ = ["EXTENTS_ATTR", "UNBOUNDED_DIM", "BoxPlan", "TensorMapRecipe", "allocations_of", "arguments_of", "tma_copy_plan", "box_plan", "evaluate", "extents_of", "record_extents", "host_expr", "host_recipe", "tensor_ptr_root"]
