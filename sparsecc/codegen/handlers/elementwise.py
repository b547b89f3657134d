"""Handlers of scalar and elementwise ops: `arith` (constants included), `math`, program ids.

A tensor op is its scalar op once per register of the result's layout (operands are register
tensors of the same layout, or scalars broadcast to every register).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from xdsl.dialects import arith
from xdsl.dialects import math as xmath
from xdsl.dialects.arith import Arith
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    Float32Type,
    Float64Type,
    FloatAttr,
    IndexType,
    IntegerType,
    TensorType,
    f32,
    i32,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue

from sparsecc.analysis.layouts import distributed
from sparsecc.codegen.constancy import equal_registers
from sparsecc.codegen.handlers.table import handles, handles_name
from sparsecc.codegen.lower_base import LoweringError, Regs, cast
from sparsecc.dialects import tt
from sparsecc.dialects import ttg as ttgd

if TYPE_CHECKING:
    from sparsecc.codegen.lower_state import LoweringState

_ARITH_CLASSES = {cls.name: cls for cls in Arith.operations}
SUPPORTED_ARITH = tuple(
    "arith." + n for n in (
        "addi subi muli divsi divui remsi remui andi ori xori shli shrsi shrui maxsi minsi "
        "maxui minui cmpi select extsi extui trunci addf subf mulf divf negf maximumf minimumf "
        "maxnumf minnumf cmpf sitofp uitofp fptosi fptoui extf truncf bitcast index_cast"
    ).split()
)
"""arith ops the PTX printer has a form for (per element for tensors; arith.constant aside)."""
MATH_DIRECT = tuple("math." + n for n in "exp2 log2 sqrt rsqrt sin cos tanh floor ceil absf absi fma".split())
"""math ops the PTX printer has an instruction for."""
MATH_F64 = ("math.sqrt", "math.absf", "math.floor", "math.ceil", "math.fma")
"""The math ops with an exact f64 PTX instruction (`sqrt.rn.f64`, ...): the approximations
(ex2, lg2, sin, ...) have no f64 form."""
_LOG2_E = 1.4426950408889634
_LN_2 = 0.6931471805599453
_CASTS = {"arith.extsi", "arith.extui", "arith.trunci", "arith.sitofp", "arith.uitofp", "arith.fptosi",
          "arith.fptoui", "arith.extf", "arith.truncf", "arith.bitcast", "arith.index_cast"}


@handles(tt.GetProgramIdOp, tt.GetNumProgramsOp)
def _program_id(L: LoweringState, op: tt.GetProgramIdOp | tt.GetNumProgramsOp) -> None:
    kind = "ctaid" if isinstance(op, tt.GetProgramIdOp) else "nctaid"
    L.set(op.result, L.em.sreg(f"{kind}.{'xyz'[op.axis.value.data]}"))


@handles(arith.ConstantOp)
def _constant(L: LoweringState, op: arith.ConstantOp) -> None:
    """A scalar constant (integers are known to the emitter's folding), or a splat tensor."""
    ty = op.result.type
    if not isinstance(ty, TensorType):
        if isinstance(ty, IndexType):
            L.set(op.result, L.em.c(op.value.value.data, i32))
            return
        new = L.em.val(arith.ConstantOp(op.value, ty))
        if isinstance(ty, IntegerType):
            L.em.consts[new] = op.value.value.data
        L.set(op.result, new)
        return
    val = op.value
    if not isinstance(val, DenseIntOrFPElementsAttr) or not val.is_splat():
        raise LoweringError("only splat tensor constants are supported")
    elt = ty.element_type
    # first element only: get_attrs() would build one attribute per element (16k for 128x128)
    scalar_attr = next(iter(val.iter_attrs()), None) if hasattr(val, "iter_attrs") else None
    if scalar_attr is None:
        v = list(val.get_values())[0]
        scalar = L.em.c(int(v), elt) if isinstance(elt, IntegerType) else L.em.cf(float(v), elt)
    else:
        scalar = L.em.val(arith.ConstantOp(scalar_attr, elt))
    enc = ty.encoding
    if isinstance(enc, ttgd.DotOperandEncodingAttr):
        raise LoweringError("constants in #ttg.dot_op layouts are not supported")
    dl = distributed(enc, ty.get_shape())
    L.set(op.result, Regs(ty, [scalar] * dl.num_regs))


@handles_name(*SUPPORTED_ARITH)
def _arith(L: LoweringState, op: Operation) -> None:
    cls = _ARITH_CLASSES.get(op.name)
    if cls is None:
        raise LoweringError(f"{op.name}: not supported by the PTX lowering")
    res_ty = op.results[0].type
    operands = [L.get(o) for o in op.operands]
    tensor = isinstance(res_ty, TensorType) or any(isinstance(o, Regs) for o in operands)
    if not tensor:
        L.set(op.results[0], _scalar_arith(L, op, cls, list(operands), res_ty))
        return
    n = None
    for o in operands:
        if isinstance(o, Regs):
            n = len(o.regs)
    elt = res_ty.element_type if isinstance(res_ty, TensorType) else res_ty
    # registers the axis analysis proves equal (a mask constant over each vector) are computed once
    reps = equal_registers(L, op.results[0])
    if reps is not None and len(reps) != n:
        reps = None
    out = []
    for r in range(n):
        if reps is not None and reps[r] != r:
            out.append(out[reps[r]])
            continue
        args = [o.regs[r] if isinstance(o, Regs) else o for o in operands]
        out.append(_scalar_arith(L, op, cls, args, elt))
    L.set(op.results[0], Regs(res_ty, out))


def _scalar_arith(L: LoweringState, op: Operation, cls: type[Operation], args: list[SSAValue],
                  res_ty: Attribute) -> SSAValue:
    """One element of an arith op (integer add/sub/mul through the emitter's folding)."""
    em = L.em
    name = op.name
    if isinstance(res_ty, IndexType):
        res_ty = i32
    if name == "arith.index_cast":
        a = args[0]
        return em.ext64(a) if res_ty == i64 else em.to32(a)
    if name in _CASTS:
        return em.val(cast(cls, args[0], res_ty))
    if name == "arith.cmpi":
        return em.val(arith.CmpiOp(args[0], args[1], op.predicate.value.data))
    if name == "arith.cmpf":
        return em.val(arith.CmpfOp(args[0], args[1], op.predicate.value.data))
    if name == "arith.select":
        return em.val(arith.SelectOp(*args))
    if name == "arith.negf":
        return em.val(arith.NegfOp(args[0]))
    if name == "arith.addi":
        return em.add(args[0], args[1])
    if name == "arith.subi":
        return em.sub(args[0], args[1])
    if name == "arith.muli":
        return em.mul(args[0], args[1])
    if name == "arith.divf":  # keeps fastmath<afn>: Triton's '/' (div.full.f32), not div_rn
        return em.val(arith.DivfOp(args[0], args[1], op.fastmath))
    if len(args) == 2:
        return em.val(cls(args[0], args[1]))
    raise LoweringError(f"{name}: not supported by the PTX lowering")


@handles_name(*MATH_DIRECT, "math.exp", "math.log")
def _math(L: LoweringState, op: Operation) -> None:
    """Elementwise `math` ops, per register: what PTX has an instruction for directly;
    exp and log through ex2/lg2 and a constant factor."""
    res_ty = op.results[0].type
    elt = res_ty.element_type if isinstance(res_ty, TensorType) else res_ty
    if op.name != "math.absi" and not isinstance(elt, Float32Type) and not (
            isinstance(elt, Float64Type) and op.name in MATH_F64):
        raise LoweringError(f"{op.name} on {elt}: the GPU (PTX) lowering computes math in f32 "
                            f"(the frontend widens 16-bit floats; f64 has {', '.join(MATH_F64)} only)")
    operands = [L.get(o) for o in op.operands]
    count = max((len(o.regs) for o in operands if isinstance(o, Regs)), default=0)
    em = L.em

    def one(args: list[SSAValue]) -> SSAValue:
        if op.name == "math.exp":
            scaled = em.val(arith.MulfOp(args[0], em.val(arith.ConstantOp(FloatAttr(_LOG2_E, f32)))))
            return em.val(xmath.Exp2Op(scaled))
        if op.name == "math.log":
            lg2 = em.val(xmath.Log2Op(args[0]))
            return em.val(arith.MulfOp(lg2, em.val(arith.ConstantOp(FloatAttr(_LN_2, f32)))))
        return em.val(type(op).create(operands=args, result_types=[elt],
                                      properties=dict(op.properties)))

    if not isinstance(res_ty, TensorType) and not count:
        L.set(op.results[0], one(list(operands)))
        return
    regs = [one([o.regs[r] if isinstance(o, Regs) else o for o in operands]) for r in range(count)]
    L.set(op.results[0], Regs(res_ty, regs))
