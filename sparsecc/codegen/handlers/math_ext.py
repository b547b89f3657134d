"""Handlers of the math that PTX has no single instruction for: `math.erf`, `arith.remf`
(Triton's float `%`), `arith.mului_extended` (`tl.umulhi`).

Each is expanded per register into ops the printer knows (f32 arithmetic, `fma`, `ex2`, `cvt`,
`mul.hi` through `ptx.asm`); 16-bit floats are computed in f32 and rounded back once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from xdsl.dialects import arith
from xdsl.dialects import math as xmath
from xdsl.dialects.builtin import Float32Type, FloatAttr, IntegerType, TensorType, f32
from xdsl.ir import Attribute, Operation, SSAValue

from sparsecc.codegen.handlers.table import handles_name
from sparsecc.codegen.lower_base import LoweringError, Regs, cast
from sparsecc.dialects import ptx

if TYPE_CHECKING:
    from sparsecc.codegen.lower_state import LoweringState

_ERF_SMALL = (1.1283791665931537, -0.37612629877675824, 0.11283625725084011, -0.026855399452016256,
              0.005191218377288536, -0.0008034846649164699, 7.93349388392467e-05)
"""erf(a) / a as a polynomial in a*a on [0, 1] (least squares on Chebyshev nodes, fitted for
sparsecc): with the tail below, |error| < 1.7e-7 over all floats (measured in f32 arithmetic)."""
_ERF_TAIL = (0.00026400355545062746, -1.1299219846639053, -0.6325818033673221, -0.10902525210309111,
             0.025484067756108578, -0.004206082843435839, 0.00037656379340456406, 1.2279262757978042e-05,
             -8.218800289566358e-06, 9.603850237397784e-07, -4.104854426479699e-08)
"""log(erfc(a)) as a polynomial in a on [1, 4]; past 4, erfc < 2e-8 and erf rounds to 1."""
_LOG2_E = 1.4426950408889634


def _elementwise(L: LoweringState, op: Operation,
                 one: Callable[[list[SSAValue], Attribute], Sequence[SSAValue]]) -> None:
    """`one(scalar operands, element type) -> scalar results` once per register (or once for
    scalars); the results become `op`'s."""
    res_ty = op.results[0].type
    elt = res_ty.element_type if isinstance(res_ty, TensorType) else res_ty
    operands = [L.get(o) for o in op.operands]
    count = max((len(o.regs) for o in operands if isinstance(o, Regs)), default=0)
    if not isinstance(res_ty, TensorType) and not count:
        for r, v in zip(op.results, one(list(operands), elt)):
            L.set(r, v)
        return
    per_reg = [one([o.regs[i] if isinstance(o, Regs) else o for o in operands], elt) for i in range(count)]
    for k, r in enumerate(op.results):
        L.set(r, Regs(r.type, [vals[k] for vals in per_reg]))


def _f(L: LoweringState, v: float) -> SSAValue:
    return L.em.val(arith.ConstantOp(FloatAttr(v, f32)))


def _horner(L: LoweringState, coeffs: Sequence[float], t: SSAValue) -> SSAValue:
    em = L.em
    acc = _f(L, coeffs[-1])
    for c in reversed(coeffs[:-1]):
        acc = em.val(xmath.FmaOp(acc, t, _f(L, c)))
    return acc


def _in_f32(L: LoweringState, elt: Attribute, args: list[SSAValue],
            body: Callable[[list[SSAValue]], SSAValue]) -> SSAValue:
    """`body` on `args` widened to f32 when `elt` is a 16-bit float, its result rounded back."""
    if isinstance(elt, Float32Type):
        return body(args)
    if elt.name not in ("f16", "bf16"):
        raise LoweringError(f"the PTX lowering computes this math in f32, f16 or bf16, got {elt}")
    em = L.em
    wide = [em.val(cast(arith.ExtFOp, a, f32)) for a in args]
    return em.val(cast(arith.TruncFOp, body(wide), elt))


def _erf(L: LoweringState, x: SSAValue) -> SSAValue:
    """erf(x) = sign(x) * (|x| < 1 ? |x| * P(x*x) : 1 - exp(Q(min(|x|, 4))))."""
    em = L.em
    a = em.val(xmath.AbsFOp(x))
    small = em.val(arith.MulfOp(a, _horner(L, _ERF_SMALL, em.val(arith.MulfOp(a, a)))))
    tail_x = em.val(arith.MinimumfOp(a, _f(L, 4.0)))
    log_erfc = _horner(L, _ERF_TAIL, tail_x)
    erfc = em.val(xmath.Exp2Op(em.val(arith.MulfOp(log_erfc, _f(L, _LOG2_E)))))
    large = em.val(arith.SubfOp(_f(L, 1.0), erfc))
    mag = em.val(arith.SelectOp(em.val(arith.CmpfOp(a, _f(L, 1.0), "olt")), small, large))
    return em.val(arith.SelectOp(em.val(arith.CmpfOp(x, _f(L, 0.0), "olt")), em.val(arith.NegfOp(mag)), mag))


@handles_name("math.erf")
def _math_erf(L: LoweringState, op: Operation) -> None:
    _elementwise(L, op, lambda args, elt: [_in_f32(L, elt, args, lambda w: _erf(L, w[0]))])


def _fmod(L: LoweringState, x: SSAValue, y: SSAValue) -> SSAValue:
    """x - trunc(x / y) * y with one rounding (fma), as LLVM expands `frem` for NVPTX (what
    Triton runs); an infinite y gives x, as C's fmod. Exact while x / y < 2**24."""
    em = L.em
    q = em.val(xmath.TruncOp(em.val(arith.DivfOp(x, y))))
    r = em.val(xmath.FmaOp(em.val(arith.NegfOp(q)), y, x))
    inf = em.val(arith.CmpfOp(em.val(xmath.AbsFOp(y)), _f(L, float("inf")), "oeq"))
    return em.val(arith.SelectOp(inf, x, r))


@handles_name("arith.remf")
def _arith_remf(L: LoweringState, op: Operation) -> None:
    _elementwise(L, op, lambda args, elt: [_in_f32(L, elt, args, lambda w: _fmod(L, w[0], w[1]))])


@handles_name("arith.mului_extended")
def _mului_extended(L: LoweringState, op: Operation) -> None:
    """mul.lo and mul.hi.u32/.u64 of each element pair."""

    def one(args: list[SSAValue], elt: Attribute) -> list[SSAValue]:
        if not isinstance(elt, IntegerType) or elt.width.data not in (32, 64):
            raise LoweringError(f"arith.mului_extended on {elt}: only i32 and i64 have a PTX form", op)
        a, b = args
        lo = L.em.val(arith.MuliOp(a, b))
        hi = L.em.val(ptx.AsmOp(f"mul.hi.u{elt.width.data} $0, $1, $2;", [a, b], [elt], pure=True))
        return [lo, hi]

    _elementwise(L, op, one)
