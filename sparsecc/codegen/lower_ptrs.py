"""Tensors of pointers: `tt.addptr` and masked `tt.load`/`tt.store` through them, per element.

A pointer tensor lowers like any distributed tensor (lower_base.Regs): one 64-bit address per
register of its layout, so `tl.load(X + offs, mask=offs < n, other=0.0)` becomes, per register,
`addr = base + sext(off) * elem_bytes` and one predicated `ld.global`/`st.global` (a false mask
skips the access; a load then yields `other`). Where the axis analysis (analysis/axis_info.py)
proves a thread's consecutive registers contiguous and aligned in memory and the mask constant
over them, as Triton's coalescing does, they move as one vector of up to 16 bytes
(`ld.global.v4.b32`): one address and one predicate per vector.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from xdsl.dialects import arith
from xdsl.dialects.builtin import BFloat16Type, Float16Type, TensorType, f32, i1, i32, i64
from xdsl.ir import Attribute, SSAValue

from sparsecc.analysis.axis_info import AxisAnalysis
from sparsecc.analysis.dtypes import esize, pointee_bytes
from sparsecc.analysis.layouts import contiguous_run, distributed
from sparsecc.codegen.lower_base import LoweringError, Regs, cast
from sparsecc.codegen.lower_mem import (
    fast_dim,
    first_replica,
    pack_words,
    pad_value,
    unpack_words,
    word_type,
)
from sparsecc.dialects import ptx, tt
from sparsecc.dialects.ptx_atomics import AtomGlobalOp

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


def _sum_terms(em: object, v: SSAValue) -> tuple[tuple[int, ...], int]:
    """`v` as (the ids of its non-constant terms, the sum of its constant terms), through the
    `arith.addi` tree that built it (a register's column `s + (base + 512)` is its thread's
    first column `s + base` plus 512)."""
    k = em.known(v)  # type: ignore[attr-defined]
    if k is not None:
        return (), k
    owner = v.owner
    if isinstance(owner, arith.AddiOp):
        ta, ka = _sum_terms(em, owner.lhs)
        tb, kb = _sum_terms(em, owner.rhs)
        return tuple(sorted(ta + tb)), ka + kb
    return (id(v),), 0


def byte_offset(L: LoweringContext, off: SSAValue, nbytes: int) -> SSAValue:
    """sext(off) * nbytes as a 64-bit byte offset. An i32 offset takes one `mul.wide.s32` (one
    IMAD.WIDE; `cvt.s64.s32` + `mul.lo.s64` cost ptxas a 32-bit multiply and a sign fix-up,
    and a register for the high half), made once per block for every pointer it offsets
    (`x_ptr + cols`, `w_ptr + cols`, ...). An offset that is an earlier one plus a constant
    (the thread's next vector along a row) is that one's byte offset plus a constant, which
    ptxas folds into the address (`[R + 8192]`); as Triton, this takes the i32 sum not to
    wrap (an offset past 2**31 elements)."""
    em = L.em
    if off.type != i32 or nbytes == 1 or em.known(off) is not None:
        return em.mul(em.ext64(off), nbytes)
    cache: dict = L.caches.wide_offsets  # type: ignore[attr-defined]
    terms, k = _sum_terms(em, off)
    key = (terms, nbytes, id(em.block))
    hit = cache.get(key)
    if hit is None:
        wide = em.val(ptx.AsmOp(f"mul.wide.s32 $0, $1, {nbytes};", [off], [i64], pure=True))
        cache[key] = (wide, k)
        return wide
    wide, k0 = hit
    return wide if k == k0 else em.add(wide, em.c((k - k0) * nbytes, i64))


def scalar_byte_offset(L: LoweringContext, off: SSAValue, nbytes: int) -> SSAValue:
    """sext(off) * nbytes for a scalar pointer's offset (`q_ptr + head * stride_h`, a row's
    base): `cvt.s64.s32` + `mul.lo.s64`, not `byte_offset`'s `mul.wide.s32`. The wide multiply
    pays per register of a pointer tensor; a scalar offset is computed once per program, and
    there the form only steers ptxas's allocation: with `mul.wide.s32` for the head offset the
    fused attention kernel (128x64 tiles, 8 warps) took 130 registers, one block of 256 threads
    per SM where up to 128 let two in (the likely cause of its 1.19x -> 1.49x of Triton's time
    on the H200), against 119 with this form; the row kernels keep their register counts or need
    one or two fewer (bench/parity.py --ptx). Made per pointer: one shared by a row's x and y pointers
    stayed live across the row and cost layer norm and RMSNorm two registers."""
    return L.em.mul(L.em.ext64(off), nbytes)


def lower_addptr(L: LoweringContext, op: tt.AddPtrOp) -> None:
    """result = ptr + offset * sizeof(pointee), as 64-bit byte addresses, per element (a bool
    element is one byte: `pointee_bytes`)."""
    em = L.em
    nbytes = pointee_bytes(_pointee(op.result.type))
    ptr, off = L.get(op.ptr), L.get(op.offset)
    if not isinstance(ptr, Regs) and not isinstance(off, Regs):
        assert isinstance(ptr, SSAValue) and isinstance(off, SSAValue)
        L.set(op.result, em.add(ptr, scalar_byte_offset(L, off, nbytes)))
        return
    n = len((ptr if isinstance(ptr, Regs) else off).regs)
    ptrs, offs = _per_reg(ptr, n, "tt.addptr pointer"), _per_reg(off, n, "tt.addptr offset")
    out = [em.add(p, byte_offset(L, o, nbytes)) for p, o in zip(ptrs, offs)]
    L.set(op.result, Regs(op.result.type, out))


def vector_width(L: LoweringContext, op: tt.LoadOp | tt.StoreOp) -> int:
    """Elements each `ld`/`st.global` of a pointer-tensor access may move (1: one per register):
    the thread's run of consecutive registers along the layout's fast dim, capped at 16 bytes
    and at what the axis analysis proves of the pointers (contiguous, aligned) and of the mask
    and `other` (constant over the vector)."""
    ty = op.ptr.type
    if not isinstance(ty, TensorType) or _pointee(ty) == i1:  # (i1 has no packed word form)
        return 1
    nbytes = esize(_pointee(ty))
    fast = fast_dim(ty)
    run = contiguous_run(distributed(ty.encoding, ty.get_shape()), fast, max(1, 16 // nbytes))
    if run == 1:
        return 1
    caches = L.caches  # type: ignore[attr-defined]
    if caches.axes is None:
        caches.axes = AxisAnalysis(L.cfg.func, L.cfg.divs)  # type: ignore[attr-defined]
    other = op.other if isinstance(op, tt.LoadOp) else None
    return caches.axes.vector_width(op.ptr, op.mask, other, fast, run, nbytes)


def load_ptrs(L: LoweringContext, op: tt.LoadOp, ptrs: Regs) -> None:
    """One (predicated) `ld.global` per register, or per vector of `vector_width` registers
    (one address, one predicate, 16 bytes at most); masked-off registers get `other`."""
    n = len(ptrs.regs)
    elt = _pointee(op.ptr.type)
    masks = _per_reg(L.get(op.mask), n, "load mask") if op.mask is not None else [None] * n
    if op.other is not None:
        others = _per_reg(L.get(op.other), n, "load other")
    elif op.mask is not None and elt != i1:
        # masked-off elements without `other` are undefined; zero them as Triton does, or ptxas
        # sees the destination registers possibly read uninitialized and keeps them live from
        # the kernel's entry (16 registers for a w16 layer norm's `w` and `b`)
        others = [pad_value(L, elt, None)] * n
    else:
        others = [None] * n
    vec = vector_width(L, op)
    if vec > 1:
        L.set(op.result, Regs(op.result.type, _load_vectors(L, ptrs.regs, masks, others, elt, vec)))
        return
    out = []
    for addr, m, o in zip(ptrs.regs, masks, others):
        _check_addr(addr)
        other = [o] if (m is not None and o is not None) else []
        out.append(L.em.val(ptx.LdGlobalOp(addr, elt, 1, mask=m, other=other)))
    L.set(op.result, Regs(op.result.type, out))


def _load_vectors(L: LoweringContext, addrs: list[SSAValue], masks: list, others: list, elt: object,
                  vec: int) -> list[SSAValue]:
    """`ld.global.vN` of each run of `vec` registers: the run's first address and mask stand
    for the run (vector_width proved the rest follow); the other per-register addresses and
    predicates are left dead for the DCE at the end of the lowering."""
    wt, wn = word_type(elt, vec)
    out: list[SSAValue] = []
    packed: dict[tuple[SSAValue, ...], list[SSAValue]] = {}  # a splat `other` is packed once
    for r0 in range(0, len(addrs), vec):
        _check_addr(addrs[r0])
        m = masks[r0]
        other = []
        if m is not None and others[r0] is not None:
            run = tuple(others[r0:r0 + vec])
            other = packed.get(run) or packed.setdefault(run, pack_words(L, list(run)))
        ld = L.em.op(ptx.LdGlobalOp(addrs[r0], wt, wn, mask=m, other=other))
        out += unpack_words(L, list(ld.results), elt, vec)
    L.caches.vector_ptrs += 1  # type: ignore[attr-defined]
    return out


def store_ptrs(L: LoweringContext, op: tt.StoreOp, ptrs: Regs) -> None:
    """One (predicated) `st.global` per register, or per vector of `vector_width` registers;
    masked-off elements are not written."""
    n = len(ptrs.regs)
    vals = _per_reg(L.get(op.value), n, "stored value")
    masks = _per_reg(L.get(op.mask), n, "store mask") if op.mask is not None else [None] * n
    masks = _first_copies_only(L, op.ptr.type, masks)
    vec = vector_width(L, op)
    if vec > 1:
        for r0 in range(0, n, vec):
            _check_addr(ptrs.regs[r0])
            L.em.op(ptx.StGlobalOp(ptrs.regs[r0], _pack_rounded(L, vals[r0:r0 + vec]), mask=masks[r0]))
        L.caches.vector_ptrs += 1  # type: ignore[attr-defined]
        return
    for addr, v, m in zip(ptrs.regs, vals, masks):
        _check_addr(addr)
        L.em.op(ptx.StGlobalOp(addr, [v], mask=m))


def _pack_rounded(L: LoweringContext, vals: list[SSAValue]) -> list[SSAValue]:
    """`pack_words`, but a pair of f32 values just rounded to f16 (bf16) is rounded and packed
    by one `cvt.rn.f16x2.f32` (as Triton stores `y.to(tl.float16)`); the single roundings are
    left dead (the same results, bit for bit)."""
    pairs = [vals[i:i + 2] for i in range(0, len(vals), 2)]
    srcs = []
    for pair in pairs:
        ops = [v.owner for v in pair]
        if len(pair) != 2 or not all(isinstance(o, arith.TruncFOp) and o.input.type == f32 for o in ops):
            return pack_words(L, vals)
        srcs.append([o.input for o in ops])
    elt = vals[0].type
    if not isinstance(elt, Float16Type | BFloat16Type):
        return pack_words(L, vals)
    name = "f16" if isinstance(elt, Float16Type) else "bf16"
    return [L.em.val(ptx.CvtPackOp(lo, hi, name)) for lo, hi in srcs]


def _first_copies_only(L: LoweringContext, ty: Attribute, masks: list[SSAValue | None]) -> list[SSAValue | None]:
    """The store masks with, in a layout wider than its tensor (several threads hold each
    element), only the first copy's thread writing (as Triton's redundant-data mask): the
    copies need not agree (an atomic's old value is only in the thread that issued it), and
    two threads writing one address race."""
    dl = distributed(ty.encoding, ty.get_shape())
    out = []
    for r, m in enumerate(masks):
        owner = first_replica(L, dl, r)
        out.append(owner if m is None else (m if owner is None else L.em.band(m, owner)))
    return out


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
    """One (predicated) `atom.global.<kind>` per element, issued by the first thread that holds it
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
    cmps = _per_reg(L.get(op.cmp), n, "atomic compare value") if op.cmp is not None else [None] * n
    em = L.em
    ty = op.ptr.type
    order = op.memory_order
    if isinstance(ty, TensorType):  # threads that hold a replica of an element must not add it again
        guards = _first_copies_only(L, ty, masks)
    else:  # a scalar atomic is one per program, as in Triton
        owner = _thread_zero(L)
        if order in ("release", "acq_rel"):
            L.bar()
        guards = [owner if masks[0] is None else em.band(masks[0], owner)]
    olds = []
    for addr, v, guard, c in zip(addrs, vals, guards, cmps):
        _check_addr(addr)
        olds.append(_atom(L, op.kind.data, addr, v, guard, order, c))
    ty = op.result.type
    if isinstance(ty, TensorType):
        L.set(op.result, Regs(ty, olds))
        return
    if scratch is not None:  # thread 0's old value to every thread
        L.before_shared_write()
        em.op(ptx.StSharedOp(scratch, [olds[0]], mask=owner))
        L.after_shared_write()
        L.before_shared_read()
        olds[0] = em.op(ptx.LdSharedOp(scratch, olds[0].type)).results[0]
    L.set(op.result, olds[0])


_PTX_OP = {"add": "add", "max": "max", "min": "min", "umax": "max", "umin": "min", "and": "and", "or": "or",
           "xor": "xor", "xchg": "exch", "cas": "cas"}
"""`tt.atomic_rmw` kind -> PTX `atom` operation."""


def _atom(L: LoweringContext, kind: str, addr: SSAValue, v: SSAValue, guard: SSAValue | None, order: str,
          cmp: SSAValue | None) -> SSAValue:
    """One element's `atom.global` under `guard`; its old value."""
    em = L.em
    if kind == "add" and v.type in (f32, i32):  # the split-K add (its own op; PTX unchanged)
        return em.op(ptx.AtomGlobalAddOp(addr, v, guard, sem=order)).results[0]
    if kind in ("max", "min") and v.type == f32:
        return _float_minmax(L, kind, addr, v, guard, order)
    atom = AtomGlobalOp(_PTX_OP[kind], addr, v, guard, cmp=cmp, signed=kind not in ("umax", "umin"), sem=order)
    if atom.suffix() is None:
        raise LoweringError(f"tt.atomic_rmw {kind} on {v.type}: PTX has no atom form for it")
    return em.op(atom).results[0]


def _float_minmax(L: LoweringContext, kind: str, addr: SSAValue, v: SSAValue, guard: SSAValue | None,
                  order: str) -> SSAValue:
    """Triton's integer trick (PTX has no float atom.max/min): ordered by their bits, non-negative
    floats compare like signed ints and negative ones like unsigned ints reversed, so a value
    with the sign bit clear takes `atom.max.s32` (min: `min.s32`) and one with it set
    `atom.min.u32` (min: `max.u32`); the old value comes from whichever ran."""
    em = L.em
    bits = em.val(cast(arith.BitcastOp, v, i32))
    neg = em.cmp("slt", bits, 0)
    pos = em.cmp("sge", bits, 0)
    on_pos = pos if guard is None else em.band(guard, pos)
    on_neg = neg if guard is None else em.band(guard, neg)
    other = "min" if kind == "max" else "max"
    old_pos = em.op(AtomGlobalOp(kind, addr, bits, on_pos, signed=True, sem=order)).results[0]
    old_neg = em.op(AtomGlobalOp(other, addr, bits, on_neg, signed=False, sem=order)).results[0]
    return em.val(cast(arith.BitcastOp, em.select(neg, old_neg, old_pos), f32))


def _thread_zero(L: LoweringContext) -> SSAValue:
    """The predicate of the thread that issues a program's scalar stores and atomics."""
    return L.em.cmp("eq", L.ids.tid, L.em.c(0))


def _check_addr(addr: SSAValue) -> None:
    if addr.type != i64:
        raise LoweringError(f"pointer registers must be 64-bit addresses, got {addr.type}")


__all__ = ["atomic_ptrs", "vector_width", "store_scalar", "lower_addptr", "load_ptrs", "load_scalar", "store_ptrs"]
