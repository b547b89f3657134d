"""Tensors of pointers: `tt.addptr` and masked `tt.load`/`tt.store` through them, per element.

A pointer tensor lowers like any distributed tensor (lower_base.Regs): one 64-bit address per
register of its layout, so `tl.load(X + offs, mask=offs < n, other=0.0)` becomes, per register,
`addr = base + sext(off) * elem_bytes` and one predicated `ld.global`/`st.global` (a false mask
skips the access; a load then yields `other`). No vectorization: correctness first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from xdsl.dialects.builtin import TensorType, i64
from xdsl.ir import SSAValue

from sparsecc.analysis.dtypes import esize
from sparsecc.analysis.layouts import distributed
from sparsecc.codegen.lower_base import LoweringError, Regs
from sparsecc.codegen.lower_mem import first_replica
from sparsecc.dialects import ptx, tt

if TYPE_CHECKING:
    from sparsecc.codegen.lower_base import LoweringContext


def _per_reg(x: object, n: int, what: str) -> list[SSAValue]:
    """`n` per-register values of `x`: a register tensor's own, or a scalar repeated."""
    if isinstance(x, Regs):
        if len(x.regs) != n:
            raise LoweringError(f"{what} holds {len(x.regs)} registers per thread, the pointers {n}"
                                " (layouts differ)")
        return list(x.regs)
    if isinstance(x, SSAValue):
        return [x] * n
    raise LoweringError(f"{what}: expected a register tensor or a scalar, got {type(x).__name__}")


def _pointee(ptr_type: object) -> object:
    pt = ptr_type.element_type if isinstance(ptr_type, TensorType) else ptr_type
    if not isinstance(pt, tt.PointerType) or pt.is_block:
        raise LoweringError("expected a pointer or a tensor of (non-block) pointers")
    return pt.pointee


def lower_addptr(L: LoweringContext, op: tt.AddPtrOp) -> None:
    """result = ptr + offset * sizeof(pointee), as 64-bit byte addresses, per element."""
    em = L.em
    nbytes = esize(_pointee(op.result.type))
    ptr, off = L.get(op.ptr), L.get(op.offset)
    if not isinstance(ptr, Regs) and not isinstance(off, Regs):
        assert isinstance(ptr, SSAValue) and isinstance(off, SSAValue)
        L.set(op.result, em.add(ptr, em.mul(em.ext64(off), nbytes)))
        return
    n = len((ptr if isinstance(ptr, Regs) else off).regs)
    ptrs, offs = _per_reg(ptr, n, "tt.addptr pointer"), _per_reg(off, n, "tt.addptr offset")
    out = [em.add(p, em.mul(em.ext64(o), nbytes)) for p, o in zip(ptrs, offs)]
    L.set(op.result, Regs(op.result.type, out))


def load_ptrs(L: LoweringContext, op: tt.LoadOp, ptrs: Regs) -> None:
    """One (predicated) scalar `ld.global` per register; masked-off registers get `other`."""
    n = len(ptrs.regs)
    elt = _pointee(op.ptr.type)
    masks = _per_reg(L.get(op.mask), n, "load mask") if op.mask is not None else [None] * n
    others = _per_reg(L.get(op.other), n, "load other") if op.other is not None else [None] * n
    out = []
    for addr, m, o in zip(ptrs.regs, masks, others):
        _check_addr(addr)
        other = [o] if (m is not None and o is not None) else []
        out.append(L.em.val(ptx.LdGlobalOp(addr, elt, 1, mask=m, other=other)))
    L.set(op.result, Regs(op.result.type, out))


def store_ptrs(L: LoweringContext, op: tt.StoreOp, ptrs: Regs) -> None:
    """One (predicated) scalar `st.global` per register; masked-off elements are not written."""
    n = len(ptrs.regs)
    vals = _per_reg(L.get(op.value), n, "stored value")
    masks = _per_reg(L.get(op.mask), n, "store mask") if op.mask is not None else [None] * n
    for addr, v, m in zip(ptrs.regs, vals, masks):
        _check_addr(addr)
        L.em.op(ptx.StGlobalOp(addr, [v], mask=m))


def load_scalar(L: LoweringContext, op: tt.LoadOp, addr: SSAValue) -> None:
    """A scalar load (`tl.load(X + pid)`): every thread loads the one value (as in Triton,
    whose scalar loads are uniform), so that each has it in a register; a false mask skips
    the access and yields `other` (or an undefined value without one, as in Triton)."""
    _check_addr(addr)
    mask = L.get(op.mask) if op.mask is not None else None
    other = [L.get(op.other)] if (mask is not None and op.other is not None) else []
    L.set(op.result, L.em.val(ptx.LdGlobalOp(addr, _pointee(op.ptr.type), 1, mask=mask, other=other)))


def store_scalar(L: LoweringContext, op: tt.StoreOp, addr: SSAValue) -> None:
    """A scalar store is one per program (as in Triton), by thread 0, under the op's mask."""
    _check_addr(addr)
    em = L.em
    owner = _thread_zero(L)
    guard = owner if op.mask is None else em.band(L.get(op.mask), owner)
    em.op(ptx.StGlobalOp(addr, [L.get(op.value)], mask=guard))


def atomic_ptrs(L: LoweringContext, op: tt.AtomicRMWOp, scratch: SSAValue | None = None) -> None:
    """One (predicated) `atom.global.add` per element, issued by the first thread that holds it
    (a layout wider than its tile gives some elements to several threads); the old values are
    the result.

    A scalar atomic is one per program, issued by thread 0. With release semantics a CTA
    barrier comes first, so that it publishes every thread's earlier writes, not only thread
    0's; its result, when used, goes through `scratch` (a shared word) to every thread, after a
    barrier that also orders the other threads' later accesses after an acquire."""
    ptrs = L.get(op.ptr)
    addrs = ptrs.regs if isinstance(ptrs, Regs) else [ptrs]
    n = len(addrs)
    vals = _per_reg(L.get(op.value), n, "atomic value")
    masks = _per_reg(L.get(op.mask), n, "atomic mask") if op.mask is not None else [None] * n
    em = L.em
    ty = op.ptr.type
    order = op.memory_order
    if isinstance(ty, TensorType):  # threads that hold a replica of an element must not add it again
        dl = distributed(ty.encoding, ty.get_shape())
        owners = [first_replica(L, dl, r) for r in range(n)]
    else:  # a scalar atomic is one per program, as in Triton
        owners = [_thread_zero(L)]
        if order in ("release", "acq_rel"):
            L.bar()
    olds = []
    for addr, v, m, owner in zip(addrs, vals, masks, owners):
        _check_addr(addr)
        guard = owner if m is None else (m if owner is None else em.band(m, owner))
        olds.append(em.op(ptx.AtomGlobalAddOp(addr, v, guard, sem=order)).results[0])
    ty = op.result.type
    if isinstance(ty, TensorType):
        L.set(op.result, Regs(ty, olds))
        return
    if scratch is not None:  # thread 0's old value to every thread
        L.before_shared_write()
        em.op(ptx.StSharedOp(scratch, [olds[0]], mask=owners[0]))
        L.after_shared_write()
        L.before_shared_read()
        olds[0] = em.op(ptx.LdSharedOp(scratch, olds[0].type)).results[0]
    L.set(op.result, olds[0])


def _thread_zero(L: LoweringContext) -> SSAValue:
    """The predicate of the thread that issues a program's scalar stores and atomics."""
    return L.em.cmp("eq", L.ids.tid, L.em.c(0))


def _check_addr(addr: SSAValue) -> None:
    if addr.type != i64:
        raise LoweringError(f"pointer registers must be 64-bit addresses, got {addr.type}")


__all__ = ["atomic_ptrs", "store_scalar", "lower_addptr", "load_ptrs", "load_scalar", "store_ptrs"]
