"""`tt.elementwise_inline_asm` (`tl.inline_asm_elementwise`): the user's PTX once per `pack`
registers of each thread, as a `ptx.asm` whose `$i` are the results' registers then the
operands' (Triton's numbering). A constraint's register class decides the PTX register type
(`r` b32, `l` b64, `h` b16, `f` f32): a value of another type of that width is bitcast to it
(e.g. an fp32 result of "=r"), as LLVM does for Triton.

Packing several sub-32-bit elements into one register (`pack` > 1 with 8- or 16-bit values) is
not supported yet: it is refused with a located error.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerType, TensorType, f32, i16, i32, i64
from xdsl.ir import Attribute, SSAValue

from sparsecc.analysis.dtypes import esize
from sparsecc.codegen.handlers.table import handles
from sparsecc.codegen.lower_base import LoweringError, Regs
from sparsecc.dialects import ptx, tt

if TYPE_CHECKING:
    from sparsecc.codegen.lower_state import LoweringState

_CLASSES: dict[str, Attribute] = {"r": i32, "l": i64, "h": i16, "f": f32}
"""LLVM NVPTX constraint letter -> the register type it asks for."""



def bitwidth(ty: Attribute) -> int:
    """Bits of a scalar type (i1 is 1 bit; floats and wider ints their width)."""
    return ty.width.data if isinstance(ty, IntegerType) else esize(ty) * 8


def _elem(ty: Attribute) -> Attribute:
    return ty.element_type if isinstance(ty, TensorType) else ty


def _register_types(op: tt.ElementwiseInlineAsmOp, pack: int) -> list[Attribute]:
    """The register type of each `$i`, from the constraints (outputs first, then inputs)."""
    parts = [c.strip() for c in op.constraints.data.split(",") if c.strip()]
    regs = [c for c in parts if not c.startswith("~")]  # clobbers ("~{memory}") name no register
    want = (len(op.res) + len(op.args)) * pack
    if len(regs) != want:
        raise LoweringError(f"tl.inline_asm_elementwise: constraints {op.constraints.data!r} name {len(regs)} "
                            f"registers, but {len(op.res)} result(s) and {len(op.args)} argument(s) with pack={pack} "
                            f"need {want}", op)
    types = []
    for c in regs:
        letter = c.lstrip("=&")
        if letter not in _CLASSES:
            raise LoweringError(f"tl.inline_asm_elementwise: constraint {c!r} is not one of r, l, h, f "
                                "(optionally with '=')", op)
        types.append(_CLASSES[letter])
    outs = types[: len(op.res) * pack]
    if any(c.startswith("=") for c in regs[len(outs):]) or not all(c.startswith("=") for c in regs[: len(outs)]):
        raise LoweringError(f"tl.inline_asm_elementwise: constraints {op.constraints.data!r} must list the "
                            f"{len(outs)} outputs ('=r', ...) before the inputs", op)
    return types


def _to_class(L: LoweringState, v: SSAValue, ty: Attribute, op: tt.ElementwiseInlineAsmOp) -> SSAValue:
    """`v` in a register of type `ty` (a bitcast when the widths agree)."""
    if v.type == ty:
        return v
    if bitwidth(v.type) != bitwidth(ty):
        raise LoweringError(f"tl.inline_asm_elementwise: a {v.type} value cannot go in a {bitwidth(ty)}-bit "
                            f"register (constraint for {ty}); with pack > 1 or narrower values, not supported yet",
                            op)
    if isinstance(v.type, IntegerType) and isinstance(ty, IntegerType):
        return v
    return L.em.val(arith.BitcastOp(v, ty))


@handles(tt.ElementwiseInlineAsmOp)
def _inline_asm(L: LoweringState, op: tt.ElementwiseInlineAsmOp) -> None:
    pack = op.packed_element.value.data
    for v in [*op.res, *op.args]:
        if pack > 1 and bitwidth(_elem(v.type)) < 32:
            raise LoweringError("tl.inline_asm_elementwise with pack > 1 on 8- or 16-bit values (packed into one "
                                "32-bit register) is not supported yet; use pack=1", op)
    types = _register_types(op, pack)
    out_types, in_types = types[: len(op.res) * pack], types[len(op.res) * pack:]
    operands = [L.get(a) for a in op.args]
    count = max((len(o.regs) for o in operands if isinstance(o, Regs)), default=1)
    if count % pack:
        raise LoweringError(f"tl.inline_asm_elementwise: pack={pack} does not divide the {count} elements each "
                            "thread holds", op)
    per_result: list[list[SSAValue]] = [[] for _ in op.res]
    for g in range(0, count, pack):
        ins = []
        for k, o in enumerate(operands):
            for e in range(pack):
                reg = o.regs[g + e] if isinstance(o, Regs) else o
                ins.append(_to_class(L, reg, in_types[k * pack + e], op))
        asm = ptx.AsmOp(op.asm_string.data, ins, out_types, pure=bool(op.pure.value.data))
        L.em.op(asm)
        for r, res in enumerate(op.res):
            for e in range(pack):
                reg = asm.res[r * pack + e]
                per_result[r].append(_from_class(L, reg, _elem(res.type), op))
    for r, res in enumerate(op.res):
        if isinstance(res.type, TensorType):
            L.set(res, Regs(res.type, per_result[r]))
        else:
            L.set(res, per_result[r][0])


def _from_class(L: LoweringState, v: SSAValue, ty: Attribute, op: tt.ElementwiseInlineAsmOp) -> SSAValue:
    return _to_class(L, v, ty, op)
