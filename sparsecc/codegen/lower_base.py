"""Shared pieces of the ttgir -> ptx lowering: the value kinds and an emitting builder.

Every ttg value becomes one of:
- a scalar SSA value (i1/i16/i32/i64/f16/bf16/f32),
- `Regs`: a distributed tensor as this thread's list of scalar registers (analysis/layouts.py order),
- `Frag`: a dot operand in mma fragment registers (packed b32), keyed by (tile, k-step),
- `BlockPtr`: base address, shape, strides, offsets of a `tt.make_tensor_ptr`,
- `Smem`: a shared-memory buffer (32-bit shared address + its memdesc type),
- `None` for async tokens.
`Emitter` inserts ops at the end of the current block and folds integer constants, so the
address arithmetic that layouts produce stays small.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    FloatAttr,
    IntegerAttr,
    IntegerType,
    TensorType,
    f32,
    i1,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue

from sparsecc.analysis.layouts import DistLayout, Term
from sparsecc.codegen.lowering_parts import (
    Barriers,
    KernelConfig,
    LoweringCaches,
    Preamble,
    WgmmaGroups,
)
from sparsecc.dialects import ptx
from sparsecc.dialects.ttg import MemDescType


class LoweringError(Exception):
    """ttgir the lowering cannot handle; the message names the op, `op` is it (when known)."""

    op: Operation | None = None

    def __init__(self, message: str, op: Operation | None = None):
        super().__init__(message)
        self.op = op


@dataclass
class Regs:
    ty: TensorType
    regs: list[SSAValue]


@dataclass
class Frag:
    ty: TensorType
    frags: dict[tuple[int, int], list[SSAValue]]
    row_scales: dict[tuple[int, int], tuple[SSAValue, SSAValue]] | None = None
    """A dequantized A whose dot applies the scales (`ttg.scale_after_dot`): per (m16 tile, K
    step) the f32 scales of the thread's rows g and g + 8, one tuple object per scale group."""


@dataclass
class SmemOperand:
    """A dot operand the tensor core reads from shared memory itself (wgmma's B): no registers,
    just the buffer, whose matrix descriptor the dot builds."""

    sm: Smem
    ty: TensorType


@dataclass
class BlockPtr:
    base: SSAValue
    shape: list[SSAValue]
    strides: list[SSAValue]
    offsets: list[SSAValue]
    ptr_type: Attribute

    def fields(self) -> list[SSAValue]:
        return [self.base, *self.shape, *self.strides, *self.offsets]

    @staticmethod
    def from_fields(vals: list[SSAValue], ptr_type: Attribute) -> BlockPtr:
        rank = (len(vals) - 1) // 3
        return BlockPtr(vals[0], vals[1:1 + rank], vals[1 + rank:1 + 2 * rank], vals[1 + 2 * rank:], ptr_type)


@dataclass
class Smem:
    addr: SSAValue
    ty: MemDescType


_DEFAULT_PROPS: dict[object, dict[str, Attribute]] = {}


def _props(cls: type[Operation], *extra: object) -> dict[str, Attribute]:
    """The properties `cls(x, y, *extra)` gets from its builder, worked out once per class."""
    key = (cls, *extra)
    props = _DEFAULT_PROPS.get(key)
    if props is None:
        x, y = Block(arg_types=[i32, i32]).args
        props = _DEFAULT_PROPS[key] = dict(cls(x, y, *extra).properties)
    return props


def _fast(cls: type[Operation], operands: tuple[SSAValue, ...], ty: Attribute, *extra: object) -> Operation:
    """`cls(*operands, *extra)` without IRDL's generic builder (the lowering builds ~12k ops):
    the same operands, result type and properties via `create`, about 3x cheaper."""
    return cls.create(operands=operands, result_types=(ty,), properties=_props(cls, *extra))


_CAST_PROPS: dict[type[Operation], dict[str, Attribute]] = {}


def cast(cls: type[Operation], value: SSAValue, ty: Attribute) -> Operation:
    """`cls(value, ty)` for a one-operand cast (arith.extsi, arith.truncf, ...) as `_fast` builds
    ops: the first of each class through its builder, the rest via `create` with the properties
    that one got (a cast's do not depend on its value or type)."""
    props = _CAST_PROPS.get(cls)
    if props is None:
        op = cls(value, ty)  # type: ignore[call-arg]
        _CAST_PROPS[cls] = dict(op.properties)
        return op
    return cls.create(operands=(value,), result_types=(ty,), properties=props)


@dataclass
class Emitter:
    """Appends ops to `block`; int helpers fold constants."""

    block: Block
    consts: dict[SSAValue, int] = field(default_factory=dict)
    _const_cache: dict[tuple[int, int], SSAValue] = field(default_factory=dict)

    def op(self, op: Operation) -> Operation:
        self.block.add_op(op)
        return op

    def val(self, op: Operation) -> SSAValue:
        self.block.add_op(op)
        return op.results[0]

    # constants -------------------------------------------------------------------------
    def c(self, v: int, ty: Attribute = i32) -> SSAValue:
        assert isinstance(ty, IntegerType)
        w = ty.width.data
        if w > 1:
            v = ((v + (1 << (w - 1))) % (1 << w)) - (1 << (w - 1))
        key = (v, w)
        # constants are not cached across blocks (a region may not see them); cache per block
        cached = self._const_cache.get(key)
        if cached is not None and cached.owner.parent is self.block:  # type: ignore[union-attr]
            return cached
        # (arith.ConstantOp(attr) via `create`, as `_fast` builds ops)
        r = self.val(arith.ConstantOp.create(result_types=(ty,), properties={"value": IntegerAttr(v, ty)}))
        self.consts[r] = v
        self._const_cache[key] = r
        return r

    def cf(self, v: float, ty: Attribute = f32) -> SSAValue:
        return self.val(arith.ConstantOp(FloatAttr(v, ty)))

    def known(self, x: SSAValue) -> int | None:
        return self.consts.get(x)

    # integer arithmetic with folding -----------------------------------------------------
    def add(self, a: SSAValue, b: SSAValue | int) -> SSAValue:
        b = self._v(b, a.type)
        ka, kb = self.known(a), self.known(b)
        if ka is not None and kb is not None:
            return self.c(ka + kb, a.type)
        if ka == 0:
            return b
        if kb == 0:
            return a
        return self.val(_fast(arith.AddiOp, (a, b), a.type))

    def sub(self, a: SSAValue, b: SSAValue | int) -> SSAValue:
        b = self._v(b, a.type)
        ka, kb = self.known(a), self.known(b)
        if ka is not None and kb is not None:
            return self.c(ka - kb, a.type)
        if kb == 0:
            return a
        return self.val(_fast(arith.SubiOp, (a, b), a.type))

    def mul(self, a: SSAValue, b: SSAValue | int) -> SSAValue:
        b = self._v(b, a.type)
        ka, kb = self.known(a), self.known(b)
        if ka is not None and kb is not None:
            return self.c(ka * kb, a.type)
        if ka == 0 or kb == 0:
            return self.c(0, a.type)
        if ka == 1:
            return b
        if kb == 1:
            return a
        return self.val(_fast(arith.MuliOp, (a, b), a.type))

    def divu(self, a: SSAValue, d: int) -> SSAValue:
        ka = self.known(a)
        if ka is not None:
            return self.c(ka // d, a.type)
        if d == 1:
            return a
        if d & (d - 1) == 0:
            return self.val(_fast(arith.ShRUIOp, (a, self.c(d.bit_length() - 1, a.type)), a.type))
        return self.val(_fast(arith.DivUIOp, (a, self.c(d, a.type)), a.type))

    def remu(self, a: SSAValue, d: int) -> SSAValue:
        ka = self.known(a)
        if ka is not None:
            return self.c(ka % d, a.type)
        if d == 1:
            return self.c(0, a.type)
        if d & (d - 1) == 0:
            return self.val(_fast(arith.AndIOp, (a, self.c(d - 1, a.type)), a.type))
        return self.val(_fast(arith.RemUIOp, (a, self.c(d, a.type)), a.type))

    def xor(self, a: SSAValue, b: SSAValue | int) -> SSAValue:
        b = self._v(b, a.type)
        ka, kb = self.known(a), self.known(b)
        if ka is not None and kb is not None:
            return self.c(ka ^ kb, a.type)
        if kb == 0:
            return a
        if ka == 0:
            return b
        return self.val(_fast(arith.XOrIOp, (a, b), a.type))

    def band(self, a: SSAValue, b: SSAValue) -> SSAValue:
        if a.type == i1:
            ka, kb = self.known(a), self.known(b)
            if ka == 1:
                return b
            if kb == 1:
                return a
        return self.val(_fast(arith.AndIOp, (a, b), a.type))

    def shl(self, a: SSAValue, n: int) -> SSAValue:
        if n == 0:
            return a
        return self.val(_fast(arith.ShLIOp, (a, self.c(n, a.type)), a.type))

    def cmp(self, pred: str, a: SSAValue, b: SSAValue | int) -> SSAValue:
        b = self._v(b, a.type)
        return self.val(_fast(arith.CmpiOp, (a, b), i1, pred))

    def ext64(self, a: SSAValue, signed: bool = True) -> SSAValue:
        if a.type == i64:
            return a
        k = self.known(a)
        if k is not None:
            return self.c(k, i64)
        return self.val(cast(arith.ExtSIOp if signed else arith.ExtUIOp, a, i64))

    def to32(self, a: SSAValue) -> SSAValue:
        if a.type == i32:
            return a
        k = self.known(a)
        if k is not None:
            return self.c(k, i32)
        return self.val(arith.TruncIOp(a, i32))

    def select(self, c: SSAValue, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.val(arith.SelectOp.create(operands=(c, a, b), result_types=(a.type,)))

    def _v(self, b: SSAValue | int, ty: Attribute) -> SSAValue:
        return b if isinstance(b, SSAValue) else self.c(b, ty)

    # thread coordinates ------------------------------------------------------------------
    def term_sum(self, terms: tuple[Term, ...], lane: SSAValue, warp: SSAValue) -> SSAValue:
        acc = self.c(0)
        for t in terms:
            if t.mod == 1:
                continue
            x = lane if t.src == "lane" else warp
            acc = self.add(acc, self.mul(self.remu(self.divu(x, t.div), t.mod), t.mul))
        return acc

    def pred_true(self) -> SSAValue:
        r = self.val(arith.ConstantOp(IntegerAttr(1, i1)))
        self.consts[r] = 1
        return r

    def sreg(self, name: str) -> SSAValue:
        return self.val(ptx.SpecialRegOp(name))


def where(op: Operation) -> str:
    """" at <loc>" for an op that carries a source location (error messages), else ""."""
    loc = op.attributes.get("loc") if hasattr(op, "attributes") else None
    return f" at {loc}" if loc is not None else ""


def flatten(x: object) -> list[SSAValue]:
    """The registers of a lowered value, in the order `unflatten` reads them back (how values
    are carried through scf.for / scf.if)."""
    if x is None:
        return []
    if isinstance(x, SSAValue):
        return [x]
    if isinstance(x, Regs):
        return list(x.regs)
    if isinstance(x, BlockPtr):
        return x.fields()
    if isinstance(x, Smem):
        return [x.addr]
    if isinstance(x, Frag):
        return [r for k in sorted(x.frags) for r in x.frags[k]]
    raise LoweringError(f"cannot carry {type(x).__name__} through control flow")


def unflatten(like: object, vals: list[SSAValue]) -> object:
    """A value shaped as `like` over the registers `vals` (the inverse of `flatten`)."""
    if like is None:
        return None
    if isinstance(like, SSAValue):
        return vals[0]
    if isinstance(like, Regs):
        return Regs(like.ty, list(vals))
    if isinstance(like, BlockPtr):
        return BlockPtr.from_fields(list(vals), like.ptr_type)
    if isinstance(like, Smem):
        return Smem(vals[0], like.ty)
    if isinstance(like, Frag):
        out, pos = {}, 0
        for k in sorted(like.frags):
            n = len(like.frags[k])
            out[k] = list(vals[pos:pos + n])
            pos += n
        return Frag(like.ty, out)
    raise LoweringError(f"cannot carry {type(like).__name__}")



class LoweringContext(Protocol):
    """What the op helpers (lower_mem, lower_ptrs, lower_async, mma_store, lower_dot,
    lower_quant) read and write of the lowering in progress.
    `sparsecc.codegen.lower_state.LoweringState` is the one implementation; the handlers use
    it directly. Typed against this interface, the helpers need not import the module that
    dispatches to them.

    Values: `get`/`set` (and the `values` map), `coords` (per-register element coordinates),
    `em`; the kernel's facts `cfg`, its `kernel` op and top-of-kernel registers `ids`;
    barriers `barriers`, `bar`, `before_shared_read`/`before_shared_write`/
    `after_shared_write`; wgmma groups `groups` and `wgmma_drain`; the ldmatrix address cache
    `caches.ldsm_refs`; `mode` ("producer"/"consumer" inside a warp-specialized kernel) and
    `lower_op` for the ops a helper lowers in a region of its own."""

    em: Emitter
    cfg: KernelConfig
    kernel: ptx.KernelOp
    ids: Preamble
    values: dict[SSAValue, object]
    barriers: Barriers
    groups: WgmmaGroups
    caches: LoweringCaches
    mode: str

    def get(self, v: SSAValue) -> object: ...

    def set(self, v: SSAValue, lowered: object) -> None: ...

    def coords(self, dl: DistLayout) -> list[tuple[SSAValue, ...]]: ...

    def lower_op(self, op: Operation) -> None: ...

    def bar(self, keep: int = 0) -> None: ...

    def wgmma_drain(self, keep: int = 0) -> None: ...

    def before_shared_write(self) -> None: ...

    def after_shared_write(self) -> None: ...

    def before_shared_read(self) -> None: ...


__all__ = ["LoweringError", "Regs", "Frag", "SmemOperand", "BlockPtr", "Smem", "Emitter", "LoweringContext", "where",
           "flatten", "unflatten"]
