"""PTX `atom` on global memory beyond the f32/s32 add of `ptx.atom.global.add`: every kind of
`tt.atomic_rmw` on the element types PTX has (PTX ISA, "Parallel Synchronization and
Communication Instructions: atom").

    atom{.sem.gpu}.global.<op>.<type>  d, [a], b        (op: add max min and or xor exch)
    atom{.sem.gpu}.global.cas.b<N>     d, [a], b, c     (b: compare value, c: new value)

A float max/min has no `atom` form; the lowering uses Triton's integer trick (two of these, one
per sign), so the types here are integers, f16/bf16/f64 add, and the bit types.
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerType,
    StringAttr,
    i1,
    i64,
)
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
)
from xdsl.utils.exceptions import VerifyException

from sparsecc.dialects.ptx import TemplateOp


def _type_suffix(op: str, ty: Attribute, signed: bool) -> str | None:
    """The `.type` of `atom.<op>` for values of `ty`, or None if PTX has none."""
    if isinstance(ty, IntegerType):
        w = ty.width.data
        if op in ("and", "or", "xor", "exch", "cas"):
            return f"b{w}" if w in ((16, 32, 64) if op == "cas" else (32, 64)) else None
        if op == "add":
            return {32: "s32", 64: "u64"}.get(w)  # add.s64 does not exist; the bits are the same
        if op in ("max", "min"):
            return f"{'s' if signed else 'u'}{w}" if w in (32, 64) else None
        return None
    if op == "add" and isinstance(ty, Float16Type | BFloat16Type):
        return f"noftz.{'f16' if isinstance(ty, Float16Type) else 'bf16'}"
    if op == "add" and isinstance(ty, Float32Type | Float64Type):
        return "f32" if isinstance(ty, Float32Type) else "f64"
    if op in ("exch", "cas") and isinstance(ty, Float16Type | Float32Type):
        w = 16 if isinstance(ty, Float16Type) else 32
        return f"b{w}" if op == "cas" or w == 32 else None
    return None


@irdl_op_definition
class AtomGlobalOp(TemplateOp):
    """One `atom.global` of kind `op` (predicated by `mask` when given); the old value. `signed`
    picks `.s`/`.u` for max/min; `cmp` is cas's compare value; `sem` as in `ptx.atom.global.add`."""

    name = "ptx.atom.global"
    op = prop_def(StringAttr)
    signed = opt_prop_def(StringAttr)
    sem = opt_prop_def(StringAttr)
    addr = operand_def(i64)
    value = operand_def()
    cmp = opt_operand_def()
    mask = opt_operand_def(i1)
    result = result_def()
    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    OPS: ClassVar[tuple[str, ...]] = ("add", "max", "min", "and", "or", "xor", "exch", "cas")

    def __init__(self, op: str, addr: SSAValue, value: SSAValue, mask: SSAValue | None = None, *,
                 cmp: SSAValue | None = None, signed: bool = True, sem: str = "relaxed"):
        props: dict[str, Attribute] = {"op": StringAttr(op)}
        if not signed:
            props["signed"] = StringAttr("u")
        if sem != "relaxed":
            props["sem"] = StringAttr(sem)
        super().__init__(operands=[addr, value, [cmp] if cmp is not None else [], [mask] if mask is not None else []],
                         result_types=[value.type], properties=props)

    def suffix(self) -> str | None:
        return _type_suffix(self.op.data, self.value.type, self.signed is None)

    def verify_(self) -> None:
        if self.op.data not in self.OPS:
            raise VerifyException(f"{self.name}: op must be one of {self.OPS}, got {self.op.data!r}")
        if self.suffix() is None:
            raise VerifyException(f"{self.name}: PTX has no atom.{self.op.data} on {self.value.type}")
        if (self.cmp is not None) != (self.op.data == "cas"):
            raise VerifyException(f"{self.name}: a compare value goes with op cas, and only there")

    def asm_template(self) -> str:
        n = 3 + (self.cmp is not None)
        guard = f"@${n} " if self.mask is not None else ""
        order = f".{self.sem.data}.gpu" if self.sem is not None else ""
        # cas takes the compare value first (b), then the value it stores (c)
        values = "$3, $2" if self.cmp is not None else "$2"
        return f"{guard}atom{order}.global.{self.op.data}.{self.suffix()} $0, [$1], {values};"


ATOMIC_OPS = (AtomGlobalOp,)
