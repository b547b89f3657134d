"""The `tl.atomic_*` builtins: one `tt.atomic_rmw` per call, its kind named after the builtin.

Triton's rules: the value (and cas's compare value) take the pointer's element type and
broadcast to the pointer's shape (never the pointer to theirs, see `builtins._to_pointer_shape`);
the mask too. Which element types each kind takes is what PTX's `atom` has (a float max/min
goes through the integer trick in the lowering, as Triton does); `sem` is one of Triton's four
orders, `scope` "gpu" or "cta" (a GPU-scope atomic is also atomic for the block), not "sys".
"""

from __future__ import annotations

from typing import Any

from xdsl.dialects.builtin import bf16, f16, f32, f64, i16, i32, i64
from xdsl.ir import Attribute, SSAValue

from sparsecc.dialects import tt
from sparsecc.dialects.tt import PointerType
from sparsecc.frontend import semantic as sem
from sparsecc.frontend.builtins import _mask, _to_pointer_shape, impl
from sparsecc.frontend.errors import SemanticError
from sparsecc.frontend.semantic import Emitter
from sparsecc.frontend.types import describe

_TYPES: dict[str, tuple[Attribute, ...]] = {
    "add": (f32, i32, i64, f16, bf16, f64),
    "max": (i32, i64, f32),
    "min": (i32, i64, f32),
    "and": (i32, i64),
    "or": (i32, i64),
    "xor": (i32, i64),
    "xchg": (i32, i64, f32),
    "cas": (i16, i32, i64, f16, f32),
}
"""Element types of memory each kind works on (PTX `atom` forms; bf16 add needs sm_90)."""
_SCOPES = ("gpu", "cta")


def _names(types: tuple[Attribute, ...]) -> str:
    return ", ".join(describe(t) for t in types)


def _atomic(em: Emitter, kind: str, pointer: Any, val: Any, mask: Any, order: Any, scope: Any,
            cmp: Any = None) -> SSAValue:
    """`tt.atomic_rmw kind` of `val` (and `cmp`) at `pointer` under `mask`; the old values."""
    name = "tl.atomic_" + kind
    p = sem.require_value(pointer, f"{name}'s pointer")
    sem.require_dense(p, name)
    if sem.is_block_pointer(p) or not sem.is_pointer(p):
        raise SemanticError(f"{name} needs a pointer or a tensor of pointers, got {describe(p.type)}")
    if order is not None and order not in tt.AtomicRMWOp.SEMS:
        raise SemanticError(f"{name}: sem={order!r} is not one of {', '.join(map(repr, tt.AtomicRMWOp.SEMS))}")
    if scope is not None and scope not in _SCOPES:
        raise SemanticError(f"{name}: scope={scope!r} is not supported (only 'gpu' and 'cta'; a system-scope "
                            "atomic needs host-coherent memory, which sparsecc does not model)")
    ptr_elem = sem.elem(p)
    assert isinstance(ptr_elem, PointerType)
    ty = ptr_elem.pointee
    if ty not in _TYPES[kind]:
        raise SemanticError(f"{name} supports {_names(_TYPES[kind])} memory, got {describe(ty)}")

    def operand(x: Any, what: str) -> SSAValue:
        v = sem.to_value(em, x, ty, what)
        sem.require_dense(v, what)
        if isinstance(sem.elem(v), PointerType):
            raise SemanticError(f"{what} must be a number, got {describe(v.type)}")
        return _to_pointer_shape(em, sem.cast(em, v, ty), p, what)

    v = operand(val, "the added value" if kind == "add" else f"{name}'s value")
    c = operand(cmp, f"{name}'s compare value") if kind == "cas" else None
    m = _mask(em, mask, p) if kind != "cas" else None
    return em.value(tt.AtomicRMWOp(kind, p, v, m, sem=order or "acq_rel", cmp=c))


@impl
def atomic_add(em: Emitter, pointer: Any, val: Any, mask: Any, sem: Any, scope: Any) -> Any:
    return _atomic(em, "add", pointer, val, mask, sem, scope)


@impl
def atomic_max(em: Emitter, pointer: Any, val: Any, mask: Any, sem: Any, scope: Any) -> Any:
    return _atomic(em, "max", pointer, val, mask, sem, scope)


@impl
def atomic_min(em: Emitter, pointer: Any, val: Any, mask: Any, sem: Any, scope: Any) -> Any:
    return _atomic(em, "min", pointer, val, mask, sem, scope)


@impl
def atomic_and(em: Emitter, pointer: Any, val: Any, mask: Any, sem: Any, scope: Any) -> Any:
    return _atomic(em, "and", pointer, val, mask, sem, scope)


@impl
def atomic_or(em: Emitter, pointer: Any, val: Any, mask: Any, sem: Any, scope: Any) -> Any:
    return _atomic(em, "or", pointer, val, mask, sem, scope)


@impl
def atomic_xor(em: Emitter, pointer: Any, val: Any, mask: Any, sem: Any, scope: Any) -> Any:
    return _atomic(em, "xor", pointer, val, mask, sem, scope)


@impl
def atomic_xchg(em: Emitter, pointer: Any, val: Any, mask: Any, sem: Any, scope: Any) -> Any:
    return _atomic(em, "xchg", pointer, val, mask, sem, scope)


@impl
def atomic_cas(em: Emitter, pointer: Any, cmp: Any, val: Any, sem: Any, scope: Any) -> Any:
    return _atomic(em, "cas", pointer, val, None, sem, scope, cmp=cmp)
