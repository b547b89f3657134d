"""`arith` casts and `select` that accept tensors, which xDSL 0.74's versions do not.

xDSL 0.74 defines `arith.extsi/extui/trunci/sitofp/uitofp/fptosi/fptoui` on scalars only and
`arith.select` with a scalar i1 condition only, `arith.cmpi/cmpf` with a scalar
i1 result only, while MLIR (and Triton's IR) use them
elementwise on tensors. These subclasses keep the op names, syntax and Python classes (so
`isinstance(op, arith.ExtSIOp)` still holds) and widen the operand constraints. A context that
should parse such IR back loads `ARITH_WITH_TENSORS` in place of xDSL's `Arith`.
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects import arith
from xdsl.dialects.builtin import AnyFloat, IntegerAttr, IntegerType, TensorType, container_of
from xdsl.ir import Attribute, Dialect, Operation, SSAValue
from xdsl.irdl import (
    AnyAttr,
    IRDLOperation,
    VarConstraint,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

_INTS = container_of(IntegerType)
_FLOATS = container_of(AnyFloat)


def _elem(ty: Attribute) -> Attribute:
    return ty.element_type if isinstance(ty, TensorType) else ty


def _shape(ty: Attribute) -> tuple[int, ...]:
    return ty.get_shape() if isinstance(ty, TensorType) else ()


def _check_shapes(op: arith.IRDLOperation) -> None:
    if _shape(op.operands[0].type) != _shape(op.results[0].type):
        raise VerifyException(f"{op.name}: operand and result must have the same shape")


def _width(ty: Attribute) -> int:
    elem = _elem(ty)
    assert isinstance(elem, IntegerType)
    return elem.width.data


class _WidthCheck:
    """Shared verify for extensions (wider result) and truncations (narrower result)."""

    WIDER: ClassVar[bool]

    def verify_(self) -> None:
        _check_shapes(self)  # type: ignore[arg-type]
        a, r = _width(self.operands[0].type), _width(self.results[0].type)  # type: ignore[attr-defined]
        if (r > a) != self.WIDER or r == a:
            word = "larger" if self.WIDER else "smaller"
            raise VerifyException(f"Destination bit-width must be {word} than the input bit-width")


@irdl_op_definition
class ExtSIOp(_WidthCheck, arith.ExtSIOp):
    assembly_format = None
    input = operand_def(_INTS)
    result = result_def(_INTS)
    WIDER: ClassVar[bool] = True


@irdl_op_definition
class ExtUIOp(_WidthCheck, arith.ExtUIOp):
    assembly_format = None
    input = operand_def(_INTS)
    result = result_def(_INTS)
    WIDER: ClassVar[bool] = True


@irdl_op_definition
class TruncIOp(_WidthCheck, arith.TruncIOp):
    assembly_format = None
    input = operand_def(_INTS)
    result = result_def(_INTS)
    WIDER: ClassVar[bool] = False


class _ShapeCheck:
    def verify_(self) -> None:
        _check_shapes(self)  # type: ignore[arg-type]


@irdl_op_definition
class SIToFPOp(_ShapeCheck, arith.SIToFPOp):
    assembly_format = None
    input = operand_def(_INTS)
    result = result_def(_FLOATS)


@irdl_op_definition
class UIToFPOp(_ShapeCheck, arith.UIToFPOp):
    assembly_format = None
    input = operand_def(_INTS)
    result = result_def(_FLOATS)


@irdl_op_definition
class FPToSIOp(_ShapeCheck, arith.FPToSIOp):
    assembly_format = None
    input = operand_def(_FLOATS)
    result = result_def(_INTS)


@irdl_op_definition
class FPToUIOp(_ShapeCheck, arith.FPToUIOp):
    assembly_format = None
    input = operand_def(_FLOATS)
    result = result_def(_INTS)


@irdl_op_definition
class SelectOp(arith.SelectOp):
    """`arith.select %c, %a, %b : T` (scalar i1 condition) or `: tensor<..xi1>, T` (elementwise)."""

    assembly_format = None
    T: ClassVar = VarConstraint("T", AnyAttr())
    cond = operand_def(container_of(IntegerType(1)))
    lhs = operand_def(T)
    rhs = operand_def(T)
    result = result_def(T)

    def verify_(self) -> None:
        c = self.cond.type
        if isinstance(c, TensorType) and c.get_shape() != _shape(self.result.type):
            raise VerifyException("arith.select: a tensor condition must have the result's shape")

    @classmethod
    def parse(cls, parser: Parser) -> SelectOp:
        cond = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        lhs = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        rhs = parser.parse_unresolved_operand()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        t1 = parser.parse_type()
        cond_ty: Attribute = IntegerType(1)
        res_ty = t1
        if parser.parse_optional_punctuation(",") is not None:
            cond_ty, res_ty = t1, parser.parse_type()
        op = cls(
            parser.resolve_operand(cond, cond_ty),
            parser.resolve_operand(lhs, res_ty),
            parser.resolve_operand(rhs, res_ty),
        )
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list((self.cond, self.lhs, self.rhs), printer.print_operand)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        if isinstance(self.cond.type, TensorType):
            printer.print_attribute(self.cond.type)
            printer.print_string(", ")
        printer.print_attribute(self.result.type)





def _i1_like(ty: Attribute) -> Attribute:
    """i1 shaped like `ty`, keeping its layout encoding (ttgir tensors carry one)."""
    if not isinstance(ty, TensorType):
        return IntegerType(1)
    return TensorType(IntegerType(1), ty.get_shape(), ty.encoding)


@irdl_op_definition
class CmpiOp(arith.CmpiOp):
    """`arith.cmpi` whose result is i1 shaped like its operands (xDSL 0.74: scalar i1 only)."""

    predicate = prop_def(IntegerAttr)
    lhs = operand_def(arith.signlessIntegerLike)
    rhs = operand_def(arith.signlessIntegerLike)
    result = result_def(container_of(IntegerType(1)))

    def __init__(self, operand1: SSAValue | Operation, operand2: SSAValue | Operation, arg: int | str):
        a, b = SSAValue.get(operand1), SSAValue.get(operand2)
        arith.CmpiOp._validate_operand_types(a, b)
        pred = arg if isinstance(arg, int) else arith.CMPI_COMPARISON_OPERATIONS.index(arg)
        IRDLOperation.__init__(self, operands=[a, b], result_types=[_i1_like(a.type)],
                               properties={"predicate": IntegerAttr(pred, 64)})

    def verify_(self) -> None:
        if self.result.type != _i1_like(self.lhs.type):
            raise VerifyException("arith.cmpi result must be i1 with the operands' shape")

    @classmethod
    def parse(cls, parser: Parser) -> CmpiOp:
        pred, a, b, _, attrs = _parse_compare(parser, fastmath=False)
        op = cls(a, b, pred)
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        _print_compare(printer, self, arith.CMPI_COMPARISON_OPERATIONS[self.predicate.value.data], None)


@irdl_op_definition
class CmpfOp(arith.CmpfOp):
    """`arith.cmpf` whose result is i1 shaped like its operands."""

    predicate = prop_def(IntegerAttr)
    lhs = operand_def(arith.floatingPointLike)
    rhs = operand_def(arith.floatingPointLike)
    fastmath = prop_def(arith.FastMathFlagsAttr, default_value=arith.FastMathFlagsAttr("none"))
    result = result_def(container_of(IntegerType(1)))

    def __init__(self, operand1: SSAValue | Operation, operand2: SSAValue | Operation, arg: int | str,
                 fastmath: arith.FastMathFlagsAttr | None = None):
        a, b = SSAValue.get(operand1), SSAValue.get(operand2)
        arith.CmpfOp._validate_operand_types(a, b)
        pred = arg if isinstance(arg, int) else arith.CMPF_COMPARISON_OPERATIONS.index(arg)
        IRDLOperation.__init__(
            self, operands=[a, b], result_types=[_i1_like(a.type)],
            properties={"predicate": IntegerAttr(pred, 64),
                        "fastmath": fastmath or arith.FastMathFlagsAttr("none")})

    def verify_(self) -> None:
        if self.result.type != _i1_like(self.lhs.type):
            raise VerifyException("arith.cmpf result must be i1 with the operands' shape")

    @classmethod
    def parse(cls, parser: Parser) -> CmpfOp:
        pred, a, b, fastmath, attrs = _parse_compare(parser, fastmath=True)
        op = cls(a, b, pred, fastmath)
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        fastmath = None if self.fastmath == arith.FastMathFlagsAttr("none") else self.fastmath
        _print_compare(printer, self, arith.CMPF_COMPARISON_OPERATIONS[self.predicate.value.data], fastmath)


# The compares' syntax is MLIR's `$predicate, $lhs, $rhs (fastmath<...>)? attr-dict : type($lhs)`.
# xDSL 0.74's prints no attr-dict, so a pass's mark on a compare (`ttg.producer`) was lost in the
# printed IR (and the ttgir stage text did not lower as the module it was printed from).


def _parse_compare(parser: Parser, fastmath: bool) -> tuple[
        str, SSAValue, SSAValue, arith.FastMathFlagsAttr | None, dict[str, Attribute]]:
    """(predicate, lhs, rhs, fastmath flags or None, extra attributes) of a compare's text."""
    pred = parser.parse_identifier()
    parser.parse_punctuation(",")
    lhs = parser.parse_unresolved_operand()
    parser.parse_punctuation(",")
    rhs = parser.parse_unresolved_operand()
    flags = None
    if fastmath and parser.parse_optional_keyword("fastmath"):
        flags = arith.FastMathFlagsAttr(arith.FastMathFlagsAttr.parse_parameter(parser))
    attrs = parser.parse_optional_attr_dict()
    parser.parse_punctuation(":")
    ty = parser.parse_type()
    a, b = parser.resolve_operands([lhs, rhs], [ty, ty], parser.pos)
    return pred, a, b, flags, attrs


def _print_compare(printer: Printer, op: CmpiOp | CmpfOp, pred: str,
                   fastmath: arith.FastMathFlagsAttr | None) -> None:
    printer.print_string(f" {pred}, ")
    printer.print_list((op.lhs, op.rhs), printer.print_operand)
    if fastmath is not None:
        printer.print_string(" fastmath")
        fastmath.print_parameter(printer)
    printer.print_op_attributes(op.attributes)
    printer.print_string(" : ")
    printer.print_attribute(op.lhs.type)


@irdl_op_definition
class RemFOp(arith.FloatingPointLikeBinaryOperation):
    """`arith.remf`: the float remainder with the sign of the dividend, C's fmod (Triton's
    `x % y` on floats); MLIR has it, xDSL 0.74 does not."""

    name = "arith.remf"
    traits = traits_def(Pure())


TENSOR_OPS = (ExtSIOp, ExtUIOp, TruncIOp, SIToFPOp, UIToFPOp, FPToSIOp, FPToUIOp, SelectOp, CmpiOp,
              CmpfOp)
ARITH_WITH_TENSORS = Dialect(
    "arith",
    [*(next((t for t in TENSOR_OPS if t.name == op.name), op) for op in arith.Arith.operations), RemFOp],
    list(arith.Arith.attributes),
)
"""xDSL's arith dialect with the tensor-capable ops above in place of the scalar-only ones."""
