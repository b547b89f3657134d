"""The `tt` dialect: Triton's tile-level IR, with 2:4 sparsity as a tensor encoding.

What it models (names and syntax follow upstream Triton's `tt` dialect):
- `!tt.ptr<T>`: a global-memory pointer to a scalar `T`, or, for block pointers, to a
  tile `tensor<...>`. A pointer to scalars may carry an encoding: `!tt.ptr<f16, #tt.sparse<"NV24">>`
  is a pointer to a 2:4-sparse fp16 matrix (kernels address it as if it were dense).
- `#tt.sparse<"NV24">`: the sparse encoding. It may sit on a pointer, on a tensor of
  pointers, on a block-pointer's tile type and on loaded tensors. `DecomposeSparseTensors`
  removes every occurrence by splitting a sparse tensor into a values and a metadata array.
- Ops for the frontend: program ids, ranges, splat/broadcast/expand_dims/reshape, pointer
  arithmetic, block pointers (`make_tensor_ptr`, `advance`), `load`/`store`, `dot` (with an
  optional metadata operand and `sparseIndex`), `reduce`.

Deviations from upstream Triton, on purpose:
- `tt.reduce` carries the usual combiners as a `kind` ("sum", "max", "min"), which the
  interpreter runs as one torch call; any other (`tl.reduce`, `tl.argmax`) is kind `combine`
  with Triton's combine region.
- Elementwise math, constants and casts are plain `arith` ops; loops are `scf.for`.
- `tt.dot` has an optional fourth operand, the 2:4 metadata, and `sparseIndex` naming the
  operand whose values it describes (the design in seed 001).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    I1,
    ArrayAttr,
    DenseArrayBase,
    DictionaryAttr,
    FunctionType,
    IndexType,
    IntegerAttr,
    IntegerType,
    NoneAttr,
    StringAttr,
    SymbolNameConstraint,
    TensorType,
    UnitAttr,
    i32,
    i64,
)
from xdsl.dialects.utils import parse_func_op_like, print_func_op_like
from xdsl.ir import (
    Attribute,
    Block,
    Dialect,
    Operation,
    ParametrizedAttribute,
    Region,
    SSAValue,
    TypeAttribute,
)
from xdsl.irdl import (
    AnyAttr,
    AttrSizedOperandSegments,
    IRDLOperation,
    ParsePropInAttrDict,
    VarConstraint,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.traits import (
    HasParent,
    IsolatedFromAbove,
    IsTerminator,
    MemoryReadEffect,
    MemoryWriteEffect,
    Pure,
    SymbolOpInterface,
)
from xdsl.utils.exceptions import VerifyException

from sparsecc import formats

SPARSE_FORMATS = formats.names()
"""Sparse formats the compiler knows (each one file of `sparsecc.formats`)."""

REDUCE_KINDS = ("sum", "max", "min")


# --------------------------------------------------------------------------------------
# Attributes and types
# --------------------------------------------------------------------------------------


@irdl_attr_definition
class SparseEncodingAttr(ParametrizedAttribute):
    """`#tt.sparse<"NV24">`: marks a tensor (or pointer) as 2:4 structured sparse."""

    name = "tt.sparse"

    format: StringAttr

    def __init__(self, format: str | StringAttr = formats.NV24.name):
        if isinstance(format, str):
            format = StringAttr(format)
        super().__init__(format)

    def verify(self) -> None:
        try:
            formats.lookup(self.format.data)
        except formats.UnknownFormatError as e:
            raise VerifyException(str(e)) from None

    @property
    def definition(self) -> formats.SparseFormat:
        """The format this attribute names (`sparsecc.formats`)."""
        return formats.lookup(self.format.data)

    def check_element(self, ty: Attribute) -> None:
        """VerifyException unless the format can hold elements of IR type `ty`."""
        why = self.definition.rejects(ty)
        if why is not None:
            raise VerifyException(f"#tt.sparse<\"{self.format.data}\"> cannot hold {ty} elements: {why}")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> tuple[StringAttr]:
        with parser.in_angle_brackets():
            fmt = parser.parse_optional_str_literal()
            # xDSL lexes a literal with escaped non-ASCII bytes (how it prints "NV24.w4gé") as
            # bytes: decode it, so that the verifier names the format rather than the syntax.
            if fmt is None and (raw := parser.parse_optional_bytes_literal()) is not None:
                fmt = raw.decode("utf-8", "replace")
            if fmt is None:
                parser.raise_error("string literal expected (the sparse format, e.g. \"NV24\")")
        return (StringAttr(fmt),)

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_string_literal(self.format.data)


@irdl_attr_definition
class PointerType(ParametrizedAttribute, TypeAttribute):
    """`!tt.ptr<pointee[, encoding]>`: a global pointer to a scalar or to a tile."""

    name = "tt.ptr"

    pointee: Attribute
    encoding: Attribute

    def __init__(self, pointee: Attribute, encoding: Attribute | None = None):
        super().__init__(pointee, encoding if encoding is not None else NoneAttr())

    def verify(self) -> None:
        if not isinstance(self.encoding, NoneAttr | SparseEncodingAttr):
            raise VerifyException(f"!tt.ptr encoding must be #tt.sparse, got {self.encoding}")
        if isinstance(self.pointee, TensorType) and not isinstance(self.encoding, NoneAttr):
            raise VerifyException(
                "a block pointer carries its encoding on its tile type, not on the pointer"
            )
        if isinstance(self.encoding, SparseEncodingAttr):
            self.encoding.check_element(self.pointee)
        elif isinstance(self.pointee, TensorType) and isinstance(self.pointee.encoding, SparseEncodingAttr):
            self.pointee.encoding.check_element(self.pointee.element_type)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> tuple[Attribute, Attribute]:
        with parser.in_angle_brackets():
            pointee = parser.parse_type()
            encoding: Attribute = NoneAttr()
            if parser.parse_optional_punctuation(",") is not None:
                encoding = parser.parse_attribute()
        return (pointee, encoding)

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_attribute(self.pointee)
            if not isinstance(self.encoding, NoneAttr):
                printer.print_string(", ")
                printer.print_attribute(self.encoding)

    @property
    def is_block(self) -> bool:
        return isinstance(self.pointee, TensorType)


# --------------------------------------------------------------------------------------
# Type helpers shared by ops, passes and the frontend
# --------------------------------------------------------------------------------------


def sparse_encoding_of(ty: Attribute) -> SparseEncodingAttr | None:
    """The #tt.sparse encoding a type carries anywhere (pointer, tensor, block tile)."""
    if isinstance(ty, SparseEncodingAttr):
        return ty
    if isinstance(ty, PointerType):
        if isinstance(ty.encoding, SparseEncodingAttr):
            return ty.encoding
        return sparse_encoding_of(ty.pointee)
    if isinstance(ty, TensorType):
        if isinstance(ty.encoding, SparseEncodingAttr):
            return ty.encoding
        return sparse_encoding_of(ty.element_type)
    return None


def is_sparse(ty: Attribute) -> bool:
    return sparse_encoding_of(ty) is not None


def element_type(ty: Attribute) -> Attribute:
    """Scalar type of a tensor, or the type itself."""
    return ty.element_type if isinstance(ty, TensorType) else ty


def shape_of(ty: Attribute) -> tuple[int, ...]:
    return ty.get_shape() if isinstance(ty, TensorType) else ()


def with_encoding(ty: TensorType, encoding: Attribute | None) -> TensorType:
    return TensorType(ty.element_type, ty.get_shape(), encoding or NoneAttr())


def _type_str(ty: Attribute) -> str:
    from io import StringIO

    out = StringIO()
    Printer(stream=out).print_attribute(ty)
    return out.getvalue()


def _require(cond: bool, message: str | Callable[[], str]) -> None:
    """VerifyException(message) unless `cond`; a message that prints types is a callable, built
    only on failure (printing two types for every load of a large kernel cost a tenth of its
    verification)."""
    if not cond:
        raise VerifyException(message() if callable(message) else message)


# --------------------------------------------------------------------------------------
# Functions
# --------------------------------------------------------------------------------------


@irdl_op_definition
class FuncOp(IRDLOperation):
    """`tt.func public @name(%arg0: !tt.ptr<f16>, ...) { ... }`: a kernel or device function."""

    name = "tt.func"

    body = region_def()
    sym_name = prop_def(SymbolNameConstraint())
    function_type = prop_def(FunctionType)
    sym_visibility = opt_prop_def(StringAttr)
    arg_attrs = opt_prop_def(ArrayAttr[DictionaryAttr])
    res_attrs = opt_prop_def(ArrayAttr[DictionaryAttr])

    traits = traits_def(IsolatedFromAbove(), SymbolOpInterface())

    def __init__(
        self,
        name: str,
        inputs: Sequence[Attribute],
        outputs: Sequence[Attribute] = (),
        region: Region | None = None,
        visibility: str | None = "public",
    ):
        function_type = FunctionType.from_lists(inputs, outputs)
        if region is None:
            region = Region(Block(arg_types=function_type.inputs))
        super().__init__(
            properties={
                "sym_name": StringAttr(name),
                "function_type": function_type,
                "sym_visibility": StringAttr(visibility) if visibility else None,
            },
            regions=[region],
        )

    def verify_(self) -> None:
        if not self.body.blocks:
            return
        block_types = tuple(self.body.blocks.first.arg_types)  # type: ignore[union-attr]
        _require(
            self.function_type.inputs.data == block_types,
            "entry block argument types must match the function's input types",
        )

    @classmethod
    def parse(cls, parser: Parser) -> FuncOp:
        visibility = parser.parse_optional_visibility_keyword()
        name, inputs, outputs, region, extra, arg_attrs, res_attrs = parse_func_op_like(
            parser, reserved_attr_names=("sym_name", "function_type", "sym_visibility")
        )
        op = FuncOp(name, inputs, outputs, region, visibility.data if visibility else None)
        if arg_attrs is not None:
            op.arg_attrs = arg_attrs
        if res_attrs is not None:
            op.res_attrs = res_attrs
        if extra is not None:
            op.attributes |= extra.data
        return op

    def print(self, printer: Printer) -> None:
        if self.sym_visibility:
            printer.print_string(" " + self.sym_visibility.data)
        print_func_op_like(
            printer,
            self.sym_name,
            self.function_type,
            self.body,
            self.attributes,
            arg_attrs=self.arg_attrs,
            res_attrs=self.res_attrs,
            reserved_attr_names=("sym_name", "function_type", "sym_visibility", "arg_attrs"),
        )


@irdl_op_definition
class ReturnOp(IRDLOperation):
    """`tt.return`: ends a `tt.func`."""

    name = "tt.return"
    args = var_operand_def()
    traits = traits_def(IsTerminator(), HasParent(FuncOp))
    assembly_format = "attr-dict ($args^ `:` type($args))?"

    def __init__(self, *args: SSAValue):
        super().__init__(operands=[args])


# --------------------------------------------------------------------------------------
# Program ids and ranges
# --------------------------------------------------------------------------------------

_AXES = ("x", "y", "z")


class _AxisOp(IRDLOperation):
    """Shared syntax of `tt.get_program_id x : i32` and `tt.get_num_programs`."""

    axis = prop_def(IntegerAttr[IntegerType])
    result = result_def(i32)
    traits = traits_def(Pure())

    def __init__(self, axis: int):
        super().__init__(properties={"axis": IntegerAttr(axis, i32)}, result_types=[i32])

    def verify_(self) -> None:
        _require(0 <= self.axis.value.data <= 2, "axis must be 0, 1 or 2 (x, y, z)")

    @classmethod
    def parse(cls, parser: Parser) -> _AxisOp:
        pos = parser.pos
        axis = parser.parse_identifier(" (the axis: x, y or z)")
        if axis not in _AXES:
            parser.raise_error(f"axis must be x, y or z, got '{axis}'", pos, parser.pos)
        parser.parse_punctuation(":")
        pos = parser.pos
        if parser.parse_type() != i32:
            parser.raise_error("the program index is an i32", pos, parser.pos)
        return cls(_AXES.index(axis))

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {_AXES[self.axis.value.data]} : i32")


@irdl_op_definition
class GetProgramIdOp(_AxisOp):
    """`tt.get_program_id x : i32`: this program's index along a grid axis."""

    name = "tt.get_program_id"


@irdl_op_definition
class GetNumProgramsOp(_AxisOp):
    """`tt.get_num_programs x : i32`: the grid size along an axis."""

    name = "tt.get_num_programs"


@irdl_op_definition
class MakeRangeOp(IRDLOperation):
    """`tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>`."""

    name = "tt.make_range"
    start = prop_def(IntegerAttr[IntegerType])
    end = prop_def(IntegerAttr[IntegerType])
    result = result_def(TensorType)
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "attr-dict `:` type($result)"

    def __init__(self, start: int, end: int, encoding: Attribute | None = None):
        super().__init__(
            properties={"start": IntegerAttr(start, i32), "end": IntegerAttr(end, i32)},
            result_types=[TensorType(i32, [end - start], encoding or NoneAttr())],
        )

    def verify_(self) -> None:
        start, end = self.start.value.data, self.end.value.data
        ty = self.result.type
        assert isinstance(ty, TensorType)
        _require(end > start, f"make_range end ({end}) must be greater than start ({start})")
        _require(ty.get_shape() == (end - start,), "make_range result must have end-start elements")
        _require(ty.element_type == i32, "make_range produces i32")


# --------------------------------------------------------------------------------------
# Shape manipulation
# --------------------------------------------------------------------------------------


@irdl_op_definition
class SplatOp(IRDLOperation):
    """`tt.splat %x : i32 -> tensor<32xi32>`: a tensor filled with one scalar."""

    name = "tt.splat"
    src = operand_def()
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$src attr-dict `:` type($src) `->` type($result)"

    def __init__(self, src: SSAValue, result_type: Attribute):
        super().__init__(operands=[src], result_types=[result_type])

    def verify_(self) -> None:
        res = self.result.type
        assert isinstance(res, TensorType)
        _require(
            element_type(res) == self.src.type or _strip_enc(element_type(res)) == _strip_enc(self.src.type),
            lambda: f"splat result element type {_type_str(element_type(res))} must match the "
            f"scalar type {_type_str(self.src.type)}",
        )


def _strip_enc(ty: Attribute) -> Attribute:
    if isinstance(ty, PointerType):
        return PointerType(ty.pointee)
    return ty


@irdl_op_definition
class BroadcastOp(IRDLOperation):
    """`tt.broadcast %x : tensor<32x1xi32> -> tensor<32x64xi32>`: size-1 dims grow."""

    name = "tt.broadcast"
    src = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$src attr-dict `:` type($src) `->` type($result)"

    def __init__(self, src: SSAValue, result_type: Attribute):
        super().__init__(operands=[src], result_types=[result_type])

    def verify_(self) -> None:
        s, r = shape_of(self.src.type), shape_of(self.result.type)
        _require(len(s) == len(r), "broadcast keeps the rank")
        for a, b in zip(s, r, strict=True):
            _require(a == b or a == 1, f"cannot broadcast shape {list(s)} to {list(r)}")
        _require(
            element_type(self.src.type) == element_type(self.result.type),
            "broadcast keeps the element type",
        )


@irdl_op_definition
class ExpandDimsOp(IRDLOperation):
    """`tt.expand_dims %x {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>`."""

    name = "tt.expand_dims"
    src = operand_def(TensorType)
    axis = prop_def(IntegerAttr[IntegerType])
    result = result_def(TensorType)
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$src attr-dict `:` type($src) `->` type($result)"

    def __init__(self, src: SSAValue, axis: int, result_type: Attribute | None = None):
        if result_type is None:
            st = src.type
            assert isinstance(st, TensorType)
            shape = list(st.get_shape())
            shape.insert(axis, 1)
            result_type = TensorType(st.element_type, shape, st.encoding)
        super().__init__(
            operands=[src],
            properties={"axis": IntegerAttr(axis, i32)},
            result_types=[result_type],
        )

    def verify_(self) -> None:
        s = list(shape_of(self.src.type))
        axis = self.axis.value.data
        _require(0 <= axis <= len(s), f"expand_dims axis {axis} out of range for rank {len(s)}")
        s.insert(axis, 1)
        _require(tuple(s) == shape_of(self.result.type), "expand_dims result shape mismatch")


@irdl_op_definition
class TransOp(IRDLOperation):
    """`tt.trans %x {order = array<i32: 0, 2, 1>} : tensor<2x8x4xf16> -> tensor<2x4x8xf16>`: result
    dim i is source dim order[i] (`tl.permute`, `tl.trans`). Without `order` it is the 2-D
    transpose, which the passes fold into the loads or stores around it (sparse-operand-to-lhs,
    fold-transposes); any other runs as a register shuffle on the GPU."""

    name = "tt.trans"
    src = operand_def(TensorType)
    order = opt_prop_def(DenseArrayBase)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$src attr-dict `:` type($src) `->` type($result)"

    def __init__(self, src: SSAValue, order: Sequence[int] | None = None):
        st = src.type
        assert isinstance(st, TensorType)
        shape = st.get_shape()
        perm = tuple(order) if order is not None else (1, 0)
        props = {} if order is None else {"order": DenseArrayBase.from_list(i32, list(order))}
        result_type = TensorType(st.element_type, [shape[d] for d in perm], st.encoding)
        super().__init__(operands=[src], properties=props, result_types=[result_type])

    @property
    def perm(self) -> tuple[int, ...]:
        """The permutation: result dim i is source dim perm[i] ((1, 0) when `order` is absent)."""
        return tuple(self.order.get_values()) if self.order is not None else (1, 0)

    def verify_(self) -> None:
        s, r = shape_of(self.src.type), shape_of(self.result.type)
        perm = self.perm
        _require(sorted(perm) == list(range(len(s))),
                 f"tt.trans order {list(perm)} must be a permutation of 0..{len(s) - 1}")
        want = tuple(s[d] for d in perm)
        _require(want == r, f"tt.trans of {list(s)} with order {list(perm)} must give {list(want)}")
        _require(element_type(self.src.type) == element_type(self.result.type), "tt.trans keeps the element type")


@irdl_op_definition
class ReshapeOp(IRDLOperation):
    """`tt.reshape %x : tensor<32xi32> -> tensor<2x16xi32>`: same elements, row-major.
    `allow_reorder` (tl.reshape(..., can_reorder=True)) lets the compiler permute the elements;
    sparsecc keeps the row-major order anyway (so the interpreter and the GPU agree)."""

    name = "tt.reshape"
    src = operand_def(TensorType)
    allow_reorder = opt_prop_def(UnitAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$src attr-dict `:` type($src) `->` type($result)"

    def __init__(self, src: SSAValue, result_type: Attribute, allow_reorder: bool = False):
        props = {"allow_reorder": UnitAttr()} if allow_reorder else {}
        super().__init__(operands=[src], properties=props, result_types=[result_type])

    def verify_(self) -> None:
        import math

        a, b = shape_of(self.src.type), shape_of(self.result.type)
        _require(math.prod(a) == math.prod(b), f"cannot reshape {list(a)} to {list(b)}")


@irdl_op_definition
class JoinOp(IRDLOperation):
    """`tt.join %a, %b : tensor<4x8xf32> -> tensor<4x8x2xf32>`: `tl.join`, the two tensors side
    by side in a new minor dim (result[..., 0] = a, result[..., 1] = b)."""

    name = "tt.join"
    T: ClassVar = VarConstraint("T", AnyAttr())
    lhs = operand_def(T)
    rhs = operand_def(T)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$lhs `,` $rhs attr-dict `:` type($lhs) `->` type($result)"

    def __init__(self, lhs: SSAValue, rhs: SSAValue):
        st = lhs.type
        assert isinstance(st, TensorType)
        super().__init__(operands=[lhs, rhs],
                         result_types=[TensorType(st.element_type, [*st.get_shape(), 2], st.encoding)])

    def verify_(self) -> None:
        _require(self.lhs.type == self.rhs.type, "tt.join operands must have the same type")
        s = shape_of(self.lhs.type)
        _require(shape_of(self.result.type) == (*s, 2), f"tt.join of {list(s)} must give {[*s, 2]}")
        _require(element_type(self.lhs.type) == element_type(self.result.type), "tt.join keeps the element type")


@irdl_op_definition
class SplitOp(IRDLOperation):
    """`tt.split %x : tensor<4x8x2xf32> -> tensor<4x8xf32>`: `tl.split`, the inverse of tt.join
    (outLHS = x[..., 0], outRHS = x[..., 1])."""

    name = "tt.split"
    src = operand_def(TensorType)
    T: ClassVar = VarConstraint("T", AnyAttr())
    outLHS = result_def(T)  # noqa: N815 - upstream's names
    outRHS = result_def(T)  # noqa: N815
    traits = traits_def(Pure())
    assembly_format = "$src attr-dict `:` type($src) `->` type($outLHS)"

    def __init__(self, src: SSAValue):
        st = src.type
        assert isinstance(st, TensorType)
        half = TensorType(st.element_type, list(st.get_shape())[:-1], st.encoding)
        super().__init__(operands=[src], result_types=[half, half])

    def verify_(self) -> None:
        s = shape_of(self.src.type)
        _require(len(s) >= 2 and s[-1] == 2, f"tt.split needs a last dim of 2 (and rank >= 2), got {list(s)}")
        _require(self.outLHS.type == self.outRHS.type, "tt.split results must have the same type")
        _require(shape_of(self.outLHS.type) == s[:-1], f"tt.split of {list(s)} must give {list(s[:-1])}")
        _require(element_type(self.src.type) == element_type(self.outLHS.type), "tt.split keeps the element type")


@irdl_op_definition
class CatOp(IRDLOperation):
    """`tt.cat %a, %b {dim = 1 : i32} : tensor<4x8xf32> -> tensor<4x16xf32>`: `tl.cat`, `b` after
    `a` along `dim` (upstream's tt.cat has no `dim`: it concatenates 1-D tensors in an order
    of the compiler's choosing; sparsecc keeps the order, so both forms are this op)."""

    name = "tt.cat"
    T: ClassVar = VarConstraint("T", AnyAttr())
    lhs = operand_def(T)
    rhs = operand_def(T)
    dim = opt_prop_def(IntegerAttr[IntegerType])
    result = result_def(TensorType)
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$lhs `,` $rhs attr-dict `:` type($lhs) `->` type($result)"

    def __init__(self, lhs: SSAValue, rhs: SSAValue, dim: int = 0):
        st = lhs.type
        assert isinstance(st, TensorType)
        shape = list(st.get_shape())
        shape[dim] *= 2
        props = {"dim": IntegerAttr(dim, i32)} if dim else {}
        super().__init__(operands=[lhs, rhs], properties=props,
                         result_types=[TensorType(st.element_type, shape, st.encoding)])

    @property
    def axis(self) -> int:
        """The dim `rhs` follows `lhs` along (0 when `dim` is absent)."""
        return self.dim.value.data if self.dim is not None else 0

    def verify_(self) -> None:
        _require(self.lhs.type == self.rhs.type, "tt.cat operands must have the same type")
        s = list(shape_of(self.lhs.type))
        _require(0 <= self.axis < len(s), f"tt.cat dim {self.axis} out of range for rank {len(s)}")
        s[self.axis] *= 2
        _require(shape_of(self.result.type) == tuple(s), f"tt.cat result must have shape {s}")
        _require(element_type(self.lhs.type) == element_type(self.result.type), "tt.cat keeps the element type")


# --------------------------------------------------------------------------------------
# Pointers
# --------------------------------------------------------------------------------------


@irdl_op_definition
class AddPtrOp(IRDLOperation):
    """`tt.addptr %p, %off : tensor<32x!tt.ptr<f16>>, tensor<32xi32>`: p + off elements."""

    name = "tt.addptr"
    T: ClassVar = VarConstraint("T", AnyAttr())
    ptr = operand_def(T)
    offset = operand_def()
    result = result_def(T)
    traits = traits_def(Pure())
    assembly_format = "$ptr `,` $offset attr-dict `:` type($result) `,` type($offset)"

    def __init__(self, ptr: SSAValue, offset: SSAValue):
        super().__init__(operands=[ptr, offset], result_types=[ptr.type])

    def verify_(self) -> None:
        _require(
            isinstance(element_type(self.ptr.type), PointerType),
            "addptr's first operand must be a pointer or a tensor of pointers",
        )
        _require(
            isinstance(element_type(self.offset.type), IntegerType),
            "addptr's offset must be an integer or a tensor of integers",
        )
        _require(
            shape_of(self.ptr.type) == shape_of(self.offset.type),
            "addptr's pointer and offset must have the same shape",
        )
        _require(self.ptr.type == self.result.type, "addptr's result type is its pointer type")


@irdl_op_definition
class MakeTensorPtrOp(IRDLOperation):
    """`tt.make_tensor_ptr %base, shape=[..], strides=[..], offsets=[..] {order} : !tt.ptr<tensor<..>>`.

    A block pointer: a `block_shape` tile (the result's tile type) at `offsets` inside a
    `shape` tensor laid out with `strides` (in elements) from `base`.
    """

    name = "tt.make_tensor_ptr"
    base = operand_def()
    shape = var_operand_def(i64)
    strides = var_operand_def(i64)
    offsets = var_operand_def(i32)
    order = prop_def(DenseArrayBase)
    result = result_def(PointerType)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    traits = traits_def(Pure())

    def __init__(
        self,
        base: SSAValue,
        shape: Sequence[SSAValue],
        strides: Sequence[SSAValue],
        offsets: Sequence[SSAValue],
        order: Sequence[int],
        result_type: PointerType,
    ):
        super().__init__(
            operands=[base, shape, strides, offsets],
            properties={"order": DenseArrayBase.from_list(i32, list(order))},
            result_types=[result_type],
        )

    @property
    def tile_type(self) -> TensorType:
        ty = self.result.type
        assert isinstance(ty, PointerType) and isinstance(ty.pointee, TensorType)
        return ty.pointee

    def verify_(self) -> None:
        ty = self.result.type
        _require(
            isinstance(ty, PointerType) and isinstance(ty.pointee, TensorType),
            "make_tensor_ptr produces a block pointer !tt.ptr<tensor<...>>",
        )
        rank = len(self.tile_type.get_shape())
        for what, vals in (("shape", self.shape), ("strides", self.strides), ("offsets", self.offsets)):
            _require(len(vals) == rank, f"make_tensor_ptr needs {rank} {what} (one per tile dim), got {len(vals)}")
        order = self.order.get_values()
        _require(sorted(order) == list(range(rank)), f"order must be a permutation of 0..{rank - 1}")
        base = self.base.type
        _require(isinstance(base, PointerType) and not base.is_block, "base must be a scalar pointer")
        assert isinstance(base, PointerType)
        _require(
            base.pointee == self.tile_type.element_type,
            "base pointee type must match the tile's element type",
        )
        _require(
            is_sparse(base) == is_sparse(self.tile_type),
            "a block pointer into a sparse tensor must carry #tt.sparse on its tile (and only then)",
        )

    @classmethod
    def parse(cls, parser: Parser) -> MakeTensorPtrOp:
        base = parser.parse_unresolved_operand()
        lists = []
        for key in ("shape", "strides", "offsets"):
            parser.parse_punctuation(",")
            parser.parse_keyword(key)
            parser.parse_punctuation("=")
            lists.append(
                parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_unresolved_operand)
            )
        props = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        pos = parser.pos
        ty = parser.parse_type()
        if not isinstance(ty, PointerType) or not isinstance(ty.pointee, TensorType):
            parser.raise_error("expected a block pointer type !tt.ptr<tensor<...>>", pos, parser.pos)
        tile = ty.pointee
        base_ty = PointerType(tile.element_type, tile.encoding if is_sparse(tile) else None)
        op = cls(
            parser.resolve_operand(base, base_ty),
            [parser.resolve_operand(v, i64) for v in lists[0]],
            [parser.resolve_operand(v, i64) for v in lists[1]],
            [parser.resolve_operand(v, i32) for v in lists[2]],
            [],
            ty,
        )
        order = props.pop("order", None)
        if not isinstance(order, DenseArrayBase):
            parser.raise_error("make_tensor_ptr needs {order = array<i32: ...>}")
        op.order = order
        op.attributes |= props
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.base)
        for key, vals in (("shape", self.shape), ("strides", self.strides), ("offsets", self.offsets)):
            printer.print_string(f", {key}=[")
            printer.print_list(vals, printer.print_operand)
            printer.print_string("]")
        printer.print_string(" {order = ")
        printer.print_attribute(self.order)
        for name, attr in self.attributes.items():  # one dict, as `parse` reads it (tma.extents)
            printer.print_string(f", {name} = ")
            printer.print_attribute(attr)
        printer.print_string("}")
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)


@irdl_op_definition
class AdvanceOp(IRDLOperation):
    """`tt.advance %p, [%dm, %dk] : !tt.ptr<tensor<..>>`: move a block pointer's offsets."""

    name = "tt.advance"
    ptr = operand_def(PointerType)
    offsets = var_operand_def(i32)
    result = result_def(PointerType)
    traits = traits_def(Pure())

    def __init__(self, ptr: SSAValue, offsets: Sequence[SSAValue]):
        super().__init__(operands=[ptr, offsets], result_types=[ptr.type])

    def verify_(self) -> None:
        ty = self.ptr.type
        _require(isinstance(ty, PointerType) and ty.is_block, "advance needs a block pointer")
        assert isinstance(ty, PointerType) and isinstance(ty.pointee, TensorType)
        rank = len(ty.pointee.get_shape())
        _require(len(self.offsets) == rank, f"advance needs {rank} offsets, got {len(self.offsets)}")
        _require(self.result.type == ty, "advance's result type is its pointer type")

    @classmethod
    def parse(cls, parser: Parser) -> AdvanceOp:
        ptr = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        offs = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_unresolved_operand)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        ty = parser.parse_type()
        op = cls(parser.resolve_operand(ptr, ty), [parser.resolve_operand(o, i32) for o in offs])
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.ptr)
        printer.print_string(", [")
        printer.print_list(self.offsets, printer.print_operand)
        printer.print_string("]")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.ptr.type)


# --------------------------------------------------------------------------------------
# Memory
# --------------------------------------------------------------------------------------

PADDING_OPTIONS = {"zero": 1, "nan": 2}


def loaded_type(ptr_type: Attribute) -> Attribute:
    """What `tt.load` of a pointer (tensor) yields: the tile, the scalar, or a tensor of them.

    A tensor of `#tt.sparse` pointers loads a sparse tensor even when the encoding sits only on
    its pointers (`tensor<16x16x!tt.ptr<f16, #tt.sparse<"NV24">>>`): the data is sparse either
    way, and decompose-sparse-tensors splits the load by the encoding of its result."""
    if isinstance(ptr_type, PointerType):
        return ptr_type.pointee
    if isinstance(ptr_type, TensorType) and isinstance(ptr_type.element_type, PointerType):
        encoding = ptr_type.encoding
        if isinstance(encoding, NoneAttr) and isinstance(ptr_type.element_type.encoding, SparseEncodingAttr):
            encoding = ptr_type.element_type.encoding
        return TensorType(ptr_type.element_type.pointee, ptr_type.get_shape(), encoding)
    raise VerifyException(f"expected a pointer or a tensor of pointers, got {_type_str(ptr_type)}")


def _mask_type(ptr_type: Attribute) -> Attribute:
    shape = shape_of(ptr_type)
    if not shape:
        return IntegerType(1)
    # a ttgir pointer tensor's layout (not a #tt.sparse storage encoding) applies to its mask
    enc = ptr_type.encoding if isinstance(ptr_type, TensorType) else None
    if enc is None or isinstance(enc, SparseEncodingAttr):
        return TensorType(IntegerType(1), shape)
    return TensorType(IntegerType(1), shape, enc)


def _parse_ptr_mask_other(parser: Parser) -> tuple[list, dict, Attribute]:
    operands = [parser.parse_unresolved_operand()]
    while parser.parse_optional_punctuation(",") is not None:
        operands.append(parser.parse_unresolved_operand())
    attrs = parser.parse_optional_attr_dict()
    parser.parse_punctuation(":")
    ty = parser.parse_type()
    return operands, attrs, ty


@irdl_op_definition
class LoadOp(IRDLOperation):
    """`tt.load %ptr[, %mask[, %other]] {boundaryCheck, padding} : ptr-type`.

    Block pointers take `boundaryCheck` (dims to bounds-check) and `padding`
    (1 = zero, 2 = nan) for out-of-bounds elements; tensors of pointers take a mask and
    an `other` value instead.
    """

    name = "tt.load"
    ptr = operand_def()
    mask = opt_operand_def()
    other = opt_operand_def()
    boundaryCheck = opt_prop_def(DenseArrayBase)
    padding = opt_prop_def(IntegerAttr[IntegerType])
    result = result_def()
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    traits = traits_def(MemoryReadEffect())

    def __init__(
        self,
        ptr: SSAValue,
        mask: SSAValue | None = None,
        other: SSAValue | None = None,
        boundary_check: Sequence[int] = (),
        padding: int | None = None,
    ):
        props: dict[str, Attribute] = {}
        if boundary_check:
            props["boundaryCheck"] = DenseArrayBase.from_list(i32, list(boundary_check))
        if padding is not None:
            props["padding"] = IntegerAttr(padding, i32)
        super().__init__(
            operands=[ptr, [mask] if mask else [], [other] if other else []],
            properties=props,
            result_types=[loaded_type(ptr.type)],
        )

    def verify_(self) -> None:
        _require(
            self.result.type == loaded_type(self.ptr.type),
            lambda: f"load result type {_type_str(self.result.type)} does not match pointer type "
            f"{_type_str(self.ptr.type)}",
        )
        if self.mask is not None:
            _require(self.mask.type == _mask_type(self.ptr.type), "load mask must be i1 with the pointer's shape")
        if self.other is not None:
            _require(self.mask is not None, "load 'other' needs a mask")
            _require(
                shape_of(self.other.type) == shape_of(self.result.type)
                and element_type(self.other.type) == element_type(self.result.type),
                "load 'other' must have the result's shape and element type",
            )
        is_block = isinstance(self.ptr.type, PointerType) and self.ptr.type.is_block
        if is_block:
            _require(self.mask is None, "block-pointer loads use boundaryCheck, not a mask")
            rank = len(shape_of(self.result.type))
            if self.boundaryCheck is not None:
                for d in self.boundaryCheck.get_values():
                    _require(0 <= d < rank, f"boundaryCheck dim {d} out of range for rank {rank}")
        else:
            _require(self.boundaryCheck is None, "boundaryCheck applies to block pointers only")
        if self.padding is not None:
            _require(self.padding.value.data in PADDING_OPTIONS.values(), "padding must be 1 (zero) or 2 (nan)")

    @classmethod
    def parse(cls, parser: Parser) -> LoadOp:
        operands, attrs, ty = _parse_ptr_mask_other(parser)
        resolved = [parser.resolve_operand(operands[0], ty)]
        if len(operands) > 1:
            resolved.append(parser.resolve_operand(operands[1], _mask_type(ty)))
        if len(operands) > 2:
            # `other` is a plain fill value: the frontend builds it without the #tt.sparse
            # encoding the loaded tensor carries (the verifier compares shape and dtype only).
            lt = loaded_type(ty)
            if isinstance(lt, TensorType) and is_sparse(lt):
                lt = with_encoding(lt, None)
            resolved.append(parser.resolve_operand(operands[2], lt))
        if len(operands) > 3:
            parser.raise_error("tt.load takes at most ptr, mask, other")
        bc = attrs.pop("boundaryCheck", None)
        pad = attrs.pop("padding", None)
        op = cls(*resolved)
        if bc is not None:
            op.boundaryCheck = bc
        if pad is not None:
            op.padding = pad
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list(self.operands, printer.print_operand)
        props = {}
        if self.boundaryCheck is not None:
            props["boundaryCheck"] = self.boundaryCheck
        if self.padding is not None:
            props["padding"] = self.padding
        printer.print_op_attributes(props | dict(self.attributes))
        printer.print_string(" : ")
        printer.print_attribute(self.ptr.type)


@irdl_op_definition
class StoreOp(IRDLOperation):
    """`tt.store %ptr, %value[, %mask] {boundaryCheck} : ptr-type`."""

    name = "tt.store"
    ptr = operand_def()
    value = operand_def()
    mask = opt_operand_def()
    boundaryCheck = opt_prop_def(DenseArrayBase)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    traits = traits_def(MemoryWriteEffect())

    def __init__(
        self,
        ptr: SSAValue,
        value: SSAValue,
        mask: SSAValue | None = None,
        boundary_check: Sequence[int] = (),
    ):
        props: dict[str, Attribute] = {}
        if boundary_check:
            props["boundaryCheck"] = DenseArrayBase.from_list(i32, list(boundary_check))
        super().__init__(operands=[ptr, value, [mask] if mask else []], properties=props)

    def verify_(self) -> None:
        _require(
            self.value.type == loaded_type(self.ptr.type),
            lambda: f"stored value type {_type_str(self.value.type)} does not match pointer type "
            f"{_type_str(self.ptr.type)}",
        )
        if self.mask is not None:
            _require(self.mask.type == _mask_type(self.ptr.type), "store mask must be i1 with the pointer's shape")

    @classmethod
    def parse(cls, parser: Parser) -> StoreOp:
        operands, attrs, ty = _parse_ptr_mask_other(parser)
        if len(operands) not in (2, 3):
            parser.raise_error("tt.store takes ptr, value[, mask]")
        resolved = [parser.resolve_operand(operands[0], ty), parser.resolve_operand(operands[1], loaded_type(ty))]
        if len(operands) == 3:
            resolved.append(parser.resolve_operand(operands[2], _mask_type(ty)))
        bc = attrs.pop("boundaryCheck", None)
        op = cls(*resolved)
        if bc is not None:
            op.boundaryCheck = bc
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list(self.operands, printer.print_operand)
        props = {"boundaryCheck": self.boundaryCheck} if self.boundaryCheck is not None else {}
        printer.print_op_attributes(props | dict(self.attributes))
        printer.print_string(" : ")
        printer.print_attribute(self.ptr.type)


@irdl_op_definition
class AtomicRMWOp(IRDLOperation):
    """`tt.atomic_rmw add, %ptr, %value[, %mask] {sem = "acq_rel"} : ptr-type`: per element,
    atomically `*ptr = *ptr <kind> value` and return the old value (`tl.atomic_add`, split-K
    reductions). Masked-off elements touch no memory and return an unspecified value. `sem`
    (default relaxed) orders the program's other memory accesses around it at GPU scope: a
    `release` publishes every write the program made before it, an `acquire` makes the writes
    published by the releases it reads visible to everything the program does after it.

    Kinds: add, max, min (signed integers, or floats: the larger/smaller value), umax, umin
    (unsigned integers), and, or, xor (integers), xchg (store `value`), and cas (`tl.atomic_cas`:
    with the compare operand, `cmp %c`, store `value` where `*ptr == c`, bit for bit)."""

    name = "tt.atomic_rmw"
    kind = prop_def(StringAttr)
    sem = opt_prop_def(StringAttr)
    ptr = operand_def()
    value = operand_def()
    mask = opt_operand_def()
    cmp = opt_operand_def()
    result = result_def()
    irdl_options = (AttrSizedOperandSegments(as_property=True), ParsePropInAttrDict())
    traits = traits_def(MemoryWriteEffect())
    assembly_format = ("$kind `,` $ptr `,` $value (`,` $mask^)? (`cmp` $cmp^)? attr-dict `:` type($ptr) `,` "
                       "type($value) (`,` type($mask)^)? (`cmp` type($cmp)^)? `->` type($result)")

    KINDS: ClassVar[tuple[str, ...]] = ("add", "max", "min", "umax", "umin", "and", "or", "xor", "xchg", "cas")
    SEMS: ClassVar[tuple[str, ...]] = ("relaxed", "acquire", "release", "acq_rel")

    def __init__(self, kind: str, ptr: SSAValue, value: SSAValue, mask: SSAValue | None = None,
                 sem: str = "relaxed", cmp: SSAValue | None = None):
        props: dict[str, Attribute] = {"kind": StringAttr(kind)}
        if sem != "relaxed":
            props["sem"] = StringAttr(sem)
        super().__init__(operands=[ptr, value, [mask] if mask else [], [cmp] if cmp else []], properties=props,
                         result_types=[value.type])

    @property
    def memory_order(self) -> str:
        """The op's `sem`: relaxed unless given."""
        return self.sem.data if self.sem is not None else "relaxed"

    def verify_(self) -> None:
        _require(self.kind.data in self.KINDS, f"tt.atomic_rmw kind must be one of {self.KINDS}")
        _require(self.memory_order in self.SEMS, f"tt.atomic_rmw sem must be one of {self.SEMS}, "
                 f"got {self.memory_order!r}")
        _require(self.value.type == loaded_type(self.ptr.type),
                 lambda: f"atomic value type {_type_str(self.value.type)} does not match pointer type "
                 f"{_type_str(self.ptr.type)}")
        _require((self.cmp is not None) == (self.kind.data == "cas"),
                 "tt.atomic_rmw takes a compare operand (cmp) with kind cas, and only then")
        if self.cmp is not None:
            _require(self.cmp.type == self.value.type, "tt.atomic_rmw's compare operand must have the value's type")
        if self.mask is not None:
            _require(self.mask.type == _mask_type(self.ptr.type), "atomic mask must be i1 with the pointer's shape")


# --------------------------------------------------------------------------------------
# Compute
# --------------------------------------------------------------------------------------


def meta_shape(m: int, k: int) -> tuple[int, int]:
    """Shape of the metadata of a decomposed sparse dot's m×k (dense) A tile: for NV24
    ceil(m/16) × k of i16 (`sparsecc.formats.DOT_FORMAT`)."""
    return formats.DOT_FORMAT.metadata.shape(formats.INT, m, k)


@irdl_op_definition
class DotOp(IRDLOperation):
    """`d = a · b + c`, with 2:4 sparsity either as an encoding or as explicit metadata.

    Dense or not-yet-decomposed:  `tt.dot %a, %b, %c : Ta * Tb -> Td`
    Decomposed (seed 001):         `tt.dot %a, %b, %meta, %c, sparseIndex = 0 : Ta, Tmeta * Tb -> Td`
    where `a` then holds the values (M × K/2) and `meta` is i16 of shape ceil(M/16) × K.
    """

    name = "tt.dot"
    a = operand_def(TensorType)
    b = operand_def(TensorType)
    c = operand_def(TensorType)
    meta = opt_operand_def(TensorType)
    sparseIndex = opt_prop_def(IntegerAttr[IntegerType])
    result = result_def(TensorType)
    traits = traits_def(Pure())

    def __init__(
        self,
        a: SSAValue,
        b: SSAValue,
        c: SSAValue,
        meta: SSAValue | None = None,
        sparse_index: int | None = None,
        result_type: Attribute | None = None,
    ):
        super().__init__(
            operands=[a, b, c, [meta] if meta else []],
            properties={"sparseIndex": IntegerAttr(sparse_index, i32)} if sparse_index is not None else {},
            result_types=[result_type or c.type],
        )

    def verify_(self) -> None:
        a, b, c, d = (shape_of(v.type) for v in (self.a, self.b, self.c, self.result))
        _require(len(a) == 2 and len(b) == 2 and len(c) == 2, "dot operands must be 2-D tensors")
        _require(c == d, "dot accumulator and result must have the same shape")
        m, n = d
        _require(a[0] == m and b[1] == n, f"dot shapes do not agree: {list(a)} * {list(b)} -> {list(d)}")
        _require(not (is_sparse(self.a.type) and is_sparse(self.b.type)),
                 "at most one operand of tt.dot may be sparse")
        if self.meta is None:
            _require(self.sparseIndex is None, "sparseIndex needs a metadata operand")
            _require(a[1] == b[0], f"dot reduction dims differ: {list(a)} * {list(b)}")
            return
        _require(self.sparseIndex is not None, "a dot with metadata needs sparseIndex")
        assert self.sparseIndex is not None
        _require(self.sparseIndex.value.data == 0, "sparseIndex must be 0 (only A may be sparse)")
        _require(not is_sparse(self.a.type), "decomposed dot operands carry no #tt.sparse")
        mt = self.meta.type
        fmt = formats.of_dot_metadata(element_type(mt))
        k = b[0]
        vk = fmt.values.shape(formats.INT, m, k)[1]
        _require(a[1] == vk, f"sparse dot values operand must have K/{k // vk} = {vk} columns, got {a[1]}")
        rows, cols = fmt.metadata.shape(formats.INT, m, k)
        meta_ty = fmt.array_element(fmt.metadata, element_type(self.a.type))
        _require(
            shape_of(mt) == (rows, cols) and element_type(mt) == meta_ty,
            lambda: f"sparse dot metadata must be tensor<{rows}x{cols}x{meta_ty}>, got {_type_str(mt)}",
        )

    @classmethod
    def parse(cls, parser: Parser) -> DotOp:
        names = [parser.parse_unresolved_operand()]
        while parser.parse_optional_punctuation(",") is not None:
            if parser.parse_optional_keyword("sparseIndex") is not None:
                parser.parse_punctuation("=")
                sparse_index = parser.parse_integer()
                break
            names.append(parser.parse_unresolved_operand())
        else:
            sparse_index = None
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        ta = parser.parse_type()
        tm = None
        if parser.parse_optional_punctuation(",") is not None:
            tm = parser.parse_type()
        parser.parse_punctuation("*")
        tb = parser.parse_type()
        parser.parse_punctuation("->")
        td = parser.parse_type()
        if (tm is None) != (sparse_index is None) or len(names) != (4 if tm else 3):
            parser.raise_error("expected `%a, %b, %c : Ta * Tb -> Td` or `%a, %b, %meta, %c, sparseIndex = N : Ta, Tmeta * Tb -> Td`")
        a = parser.resolve_operand(names[0], ta)
        b = parser.resolve_operand(names[1], tb)
        if tm is not None:
            meta = parser.resolve_operand(names[2], tm)
            c = parser.resolve_operand(names[3], td)
        else:
            meta = None
            c = parser.resolve_operand(names[2], td)
        op = cls(a, b, c, meta, sparse_index, td)
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        operands = [self.a, self.b] + ([self.meta] if self.meta else []) + [self.c]
        printer.print_list(operands, printer.print_operand)
        if self.sparseIndex is not None:
            printer.print_string(f", sparseIndex = {self.sparseIndex.value.data}")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.a.type)
        if self.meta is not None:
            printer.print_string(", ")
            printer.print_attribute(self.meta.type)
        printer.print_string(" * ")
        printer.print_attribute(self.b.type)
        printer.print_string(" -> ")
        printer.print_attribute(self.result.type)


@irdl_op_definition
class DequantizeOp(IRDLOperation):
    """Kept values of a quantized 2:4 tile (`formats.quant`) from their codes and scales.

        %w = tt.dequantize %codes, %scales {bits = 4 : i32}
               : tensor<64x32xi8>, tensor<64x2xf16> -> tensor<64x64xf16>

    `codes` holds 8 / bits codes a byte (kept value 2j in the low nibble of byte j), R x C/(8/bits);
    `scales` (and the optional `zeros`, same type) R x S with S dividing C: kept value j is
    `(code - zero) * scales[r, j // (C / S)]`, zero 2^(bits-1) when `zeros` is absent. The result
    (R x C, the scales' element type) is what `decompose-sparse-tensors` hands the sparse dot as
    its values, so every later stage sees one op to lower.
    """

    name = "tt.dequantize"
    codes = operand_def(TensorType)
    scales = operand_def(TensorType)
    zeros = opt_operand_def(TensorType)
    bits = prop_def(IntegerAttr[IntegerType])
    result = result_def(TensorType)
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = ("$codes `,` $scales (`,` $zeros^)? attr-dict `:` type($codes) `,` type($scales) "
                       "(`,` type($zeros)^)? `->` type($result)")

    def __init__(self, codes: SSAValue, scales: SSAValue, zeros: SSAValue | None, bits: int,
                 result_type: Attribute):
        super().__init__(operands=[codes, scales, [zeros] if zeros is not None else []],
                         properties={"bits": IntegerAttr(bits, i32)}, result_types=[result_type])

    def verify_(self) -> None:
        bits = self.bits.value.data
        _require(bits in (4, 8), f"tt.dequantize: bits must be 4 or 8, got {bits}")
        codes, scales, out = (shape_of(v.type) for v in (self.codes, self.scales, self.result))
        _require(len(codes) == 2 and len(scales) == 2 and len(out) == 2,
                 "tt.dequantize operands must be 2-D tensors")
        per_byte = 8 // bits
        _require(element_type(self.codes.type) == IntegerType(8),
                 lambda: f"tt.dequantize codes must be i8, got {_type_str(self.codes.type)}")
        _require(out == (codes[0], codes[1] * per_byte),
                 f"tt.dequantize: {bits}-bit codes {list(codes)} hold {[codes[0], codes[1] * per_byte]} "
                 f"values, not {list(out)}")
        _require(element_type(self.scales.type) == element_type(self.result.type),
                 "tt.dequantize scales and result must have the same element type")
        _require(scales[0] == out[0] and scales[1] >= 1 and out[1] % scales[1] == 0,
                 f"tt.dequantize scales {list(scales)} must have {out[0]} rows and a column count "
                 f"dividing {out[1]}")
        if self.zeros is not None:
            _require(self.zeros.type == self.scales.type, "tt.dequantize zeros must have the scales' type")


@irdl_op_definition
class ReduceOp(IRDLOperation):
    """`tt.reduce sum %x {axis = 1 : i32} : tensor<32x64xf32> -> tensor<32xf32>`, or with a
    combine region over several operands (Triton's form; `tl.reduce`, `tl.argmax`):

        %v, %i = tt.reduce combine %x, %idx {axis = 0 : i32} : tensor<64xf32>, tensor<64xi32> -> f32, i32 ({
        ^bb0(%a: f32, %ia: i32, %b: f32, %ib: i32):
          ...
          tt.reduce.return %m, %im : f32, i32
        })

    The region takes the two partial results (first all of one, then all of the other) and
    returns their combination; it must be associative and commutative (the reduction order is
    the lowering's). `max`/`min` of floats ignore NaN unless every element is NaN (Triton's
    `maxnumf`)."""

    name = "tt.reduce"
    srcs = var_operand_def(TensorType)
    kind = prop_def(StringAttr)
    axis = prop_def(IntegerAttr[IntegerType])
    res = var_result_def()
    combine = region_def()
    traits = traits_def(Pure())

    def __init__(self, src: SSAValue | Sequence[SSAValue], kind: str, axis: int, region: Region | None = None,
                 result_types: Sequence[Attribute] | None = None):
        """`result_types`: as given (a parsed op keeps its printed types, layouts included); by
        default each operand's shape without `axis`, with no layout."""
        srcs = [src] if isinstance(src, SSAValue) else list(src)
        if result_types is None:
            result_types = []
            for v in srcs:
                st = v.type
                assert isinstance(st, TensorType)
                shape = list(st.get_shape())
                del shape[axis]
                result_types.append(TensorType(st.element_type, shape) if shape else st.element_type)
        super().__init__(
            operands=[srcs],
            properties={"kind": StringAttr(kind), "axis": IntegerAttr(axis, i32)},
            result_types=[result_types],
            regions=[region if region is not None else Region()],
        )

    @property
    def src(self) -> SSAValue:
        """The first (for the builtin kinds: the only) operand."""
        return self.srcs[0]

    @property
    def result(self) -> SSAValue:
        """The first (for the builtin kinds: the only) result."""
        return self.res[0]

    def verify_(self) -> None:
        kind = self.kind.data
        _require(kind in REDUCE_KINDS or kind == "combine",
                 f"reduce kind must be one of {', '.join(REDUCE_KINDS)} or combine")
        _require(len(self.srcs) == len(self.res) and len(self.srcs) >= 1, "tt.reduce needs one result per operand")
        _require(kind == "combine" or len(self.srcs) == 1, f"tt.reduce {kind} takes one operand")
        shape = list(shape_of(self.src.type))
        axis = self.axis.value.data
        _require(0 <= axis < len(shape), f"reduce axis {axis} out of range for rank {len(shape)}")
        del shape[axis]
        for src, res in zip(self.srcs, self.res):
            _require(len(shape_of(src.type)) == len(shape) + 1 and
                     tuple(shape) == shape_of(res.type), "reduce result shape mismatch")
            _require(element_type(res.type) == element_type(src.type), "reduce keeps the element type")
            _require(not is_sparse(src.type), "cannot reduce a sparse tensor")
        if kind != "combine":
            _require(not self.combine.blocks, f"tt.reduce {kind} has no combine region")
            return
        _require(len(self.combine.blocks) == 1, "tt.reduce combine needs a one-block combine region")
        block = self.combine.block
        elts = [element_type(v.type) for v in self.srcs]
        _require([a.type for a in block.args] == elts + elts,
                 "the combine region takes two sets of the operands' element types")
        last = block.last_op
        _require(isinstance(last, ReduceReturnOp) and [v.type for v in last.operands] == elts,
                 "the combine region must end with tt.reduce.return of the operands' element types")

    @classmethod
    def parse(cls, parser: Parser) -> ReduceOp:
        kind = parser.parse_identifier(" (sum, max, min or combine)")
        srcs = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_unresolved_operand)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        types = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
        parser.parse_punctuation("->")
        result_types = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
        region = None
        if parser.parse_optional_punctuation("(") is not None:
            region = parser.parse_region()
            parser.parse_punctuation(")")
        axis = attrs.pop("axis", None)
        if not isinstance(axis, IntegerAttr):
            parser.raise_error("tt.reduce needs {axis = N : i32}")
        if len(types) != len(srcs) or len(result_types) != len(srcs):
            parser.raise_error("tt.reduce needs one operand type and one result type per operand")
        operands = [parser.resolve_operand(v, t) for v, t in zip(srcs, types)]
        op = cls(operands, kind, axis.value.data, region, result_types)
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.kind.data} ")
        printer.print_list(self.srcs, printer.print_operand)
        printer.print_op_attributes({"axis": self.axis} | dict(self.attributes))
        printer.print_string(" : ")
        printer.print_list([v.type for v in self.srcs], printer.print_attribute)
        printer.print_string(" -> ")
        printer.print_list([v.type for v in self.res], printer.print_attribute)
        if self.combine.blocks:
            printer.print_string(" (")
            printer.print_region(self.combine)
            printer.print_string(")")


@irdl_op_definition
class ReduceReturnOp(IRDLOperation):
    """`tt.reduce.return %a, %b : f32, i32`: the end of a `tt.reduce` or `tt.scan` combine
    region, the combined values."""

    name = "tt.reduce.return"
    values = var_operand_def()
    traits = traits_def(IsTerminator())

    def __init__(self, values: Sequence[SSAValue]):
        super().__init__(operands=[list(values)])

    @classmethod
    def parse(cls, parser: Parser) -> ReduceReturnOp:
        vals = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_unresolved_operand)
        parser.parse_punctuation(":")
        types = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
        return cls([parser.resolve_operand(v, t) for v, t in zip(vals, types, strict=True)])

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list(self.values, printer.print_operand)
        printer.print_string(" : ")
        printer.print_list([v.type for v in self.values], printer.print_attribute)


# --------------------------------------------------------------------------------------
# Debugging
# --------------------------------------------------------------------------------------


@irdl_op_definition
class AssertOp(IRDLOperation):
    """`tt.assert %cond, "message"`: `tl.device_assert` with debugging on; every element of
    `cond` must be true (the interpreter names the message, the GPU traps)."""

    name = "tt.assert"
    condition = operand_def()
    message = prop_def(StringAttr)
    traits = traits_def(MemoryWriteEffect())
    assembly_format = "$condition `,` $message attr-dict `:` type($condition)"

    def __init__(self, condition: SSAValue, message: str):
        super().__init__(operands=[condition], properties={"message": StringAttr(message)})


@irdl_op_definition
class PrintOp(IRDLOperation):
    """`tt.print " x: " {hex = false} %a, %b`: `tl.device_print` (the interpreter prints each
    program's values; the GPU lowering drops it, see docs/language.md)."""

    name = "tt.print"
    prefix = prop_def(StringAttr)
    hex = prop_def(IntegerAttr)
    args = var_operand_def()
    traits = traits_def(MemoryWriteEffect())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$prefix attr-dict ($args^ `:` type($args))?"

    def __init__(self, prefix: str, args: Sequence[SSAValue], hex: bool = False):
        super().__init__(operands=[list(args)], properties={"prefix": StringAttr(prefix),
                                                            "hex": IntegerAttr(int(hex), i32)})


@irdl_op_definition
class DebugBarrierOp(IRDLOperation):
    """`tt.debug_barrier`: `tl.debug_barrier()`, every thread of the program waits for the others
    (`bar.sync 0`); a no-op on the interpreter, which runs a program as one thread."""

    name = "tt.debug_barrier"
    traits = traits_def(MemoryWriteEffect())
    assembly_format = "attr-dict"

    def __init__(self) -> None:
        super().__init__()


# --------------------------------------------------------------------------------------
# Scans and gathers (tl.associative_scan, tl.cumsum, tl.gather; issue 29)
# --------------------------------------------------------------------------------------


@irdl_op_definition
class ScanOp(IRDLOperation):
    """`tt.scan %x {axis = 0 : i32, reverse = false} : tensor<128xf32> ({ ^bb0(%a: f32, %b: f32):
    ... tt.reduce.return %s : f32 })`: inclusive prefix combination of one or more same-shape
    tensors along `axis` (`tl.associative_scan`, `tl.cumsum`). The region gets the running
    result first and the next element second; it must be associative (not commutative: the
    order of the elements is kept). `reverse` scans from the end (as if the tensors were
    flipped along `axis`, scanned and flipped back)."""

    name = "tt.scan"
    srcs = var_operand_def(TensorType)
    axis = prop_def(IntegerAttr[IntegerType])
    reverse = prop_def(IntegerAttr[IntegerType])
    res = var_result_def()
    combine = region_def()
    traits = traits_def(Pure())

    def __init__(self, srcs: Sequence[SSAValue], axis: int, reverse: bool, region: Region):
        super().__init__(
            operands=[list(srcs)],
            properties={"axis": IntegerAttr(axis, i32), "reverse": IntegerAttr(int(reverse), IntegerType(1))},
            result_types=[[v.type for v in srcs]],
            regions=[region],
        )

    @property
    def src(self) -> SSAValue:
        return self.srcs[0]

    @property
    def is_reverse(self) -> bool:
        return bool(self.reverse.value.data)

    def verify_(self) -> None:
        _require(len(self.srcs) >= 1 and len(self.srcs) == len(self.res), "tt.scan needs one result per operand")
        shape = shape_of(self.src.type)
        axis = self.axis.value.data
        _require(0 <= axis < len(shape), f"scan axis {axis} out of range for rank {len(shape)}")
        for src, res in zip(self.srcs, self.res):
            _require(shape_of(src.type) == shape, "tt.scan operands must have one shape")
            _require(res.type == src.type, "tt.scan results have the operands' types")
            _require(not is_sparse(src.type), "cannot scan a sparse tensor")
        _require(len(self.combine.blocks) == 1, "tt.scan needs a one-block combine region")
        block = self.combine.block
        elts = [element_type(v.type) for v in self.srcs]
        _require([a.type for a in block.args] == elts + elts,
                 "the combine region takes two sets of the operands' element types")
        last = block.last_op
        _require(isinstance(last, ReduceReturnOp) and [v.type for v in last.operands] == elts,
                 "the combine region must end with tt.reduce.return of the operands' element types")

    @classmethod
    def parse(cls, parser: Parser) -> ScanOp:
        srcs = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_unresolved_operand)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        types = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
        parser.parse_punctuation("(")
        region = parser.parse_region()
        parser.parse_punctuation(")")
        axis = attrs.pop("axis", None)
        reverse = attrs.pop("reverse", None)
        if not isinstance(axis, IntegerAttr):
            parser.raise_error("tt.scan needs {axis = N : i32}")
        if len(types) != len(srcs):
            parser.raise_error("tt.scan needs one type per operand")
        rev = bool(reverse.value.data) if isinstance(reverse, IntegerAttr) else False
        operands = [parser.resolve_operand(v, t) for v, t in zip(srcs, types)]
        op = cls(operands, axis.value.data, rev, region)
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list(self.srcs, printer.print_operand)
        printer.print_op_attributes({"axis": self.axis, "reverse": self.reverse} | dict(self.attributes))
        printer.print_string(" : ")
        printer.print_list([v.type for v in self.srcs], printer.print_attribute)
        printer.print_string(" (")
        printer.print_region(self.combine)
        printer.print_string(")")


@irdl_op_definition
class GatherOp(IRDLOperation):
    """`%r = tt.gather %src[%idx] {axis = 0 : i32} : (tensor<64xf32>, tensor<32xi32>) -> tensor<32xf32>`:
    `r[i...] = src[i... with i[axis] replaced by idx[i...]]` (`tl.gather`, torch's `gather`).
    The index has the source's rank and shape except along `axis`; the result has the index's
    shape and the source's element type. An index outside the axis is undefined (as in Triton)."""

    name = "tt.gather"
    src = operand_def(TensorType)
    indices = operand_def(TensorType)
    axis = prop_def(IntegerAttr[IntegerType])
    result = result_def(TensorType)
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$src `[` $indices `]` attr-dict `:` functional-type(operands, results)"

    def __init__(self, src: SSAValue, indices: SSAValue, axis: int, result_type: Attribute | None = None):
        st, it = src.type, indices.type
        assert isinstance(st, TensorType) and isinstance(it, TensorType)
        if result_type is None:
            result_type = TensorType(st.element_type, it.get_shape())
        super().__init__(operands=[src, indices], properties={"axis": IntegerAttr(axis, i32)},
                         result_types=[result_type])

    def verify_(self) -> None:
        s, i, r = shape_of(self.src.type), shape_of(self.indices.type), shape_of(self.result.type)
        axis = self.axis.value.data
        _require(len(s) == len(i) and 0 <= axis < len(s), "tt.gather: the index needs the source's rank")
        _require(all(a == b for d, (a, b) in enumerate(zip(s, i)) if d != axis),
                 "tt.gather: the index must have the source's shape except along the axis")
        _require(r == i and element_type(self.result.type) == element_type(self.src.type),
                 "tt.gather: the result has the index's shape and the source's element type")
        _require(isinstance(element_type(self.indices.type), IntegerType), "tt.gather: the index must be integers")


@irdl_op_definition
class ElementwiseInlineAsmOp(IRDLOperation):
    """`tt.elementwise_inline_asm`: `tl.inline_asm_elementwise`, the PTX `asm_string` run on each
    `packed_element` elements of the (same-shaped) operands; `$0..` name the results' registers,
    then the operands' (Triton's order), `constraints` gives one LLVM constraint per register."""

    name = "tt.elementwise_inline_asm"
    args = var_operand_def()
    res = var_result_def()
    asm_string = prop_def(StringAttr)
    constraints = prop_def(StringAttr)
    pure = prop_def(IntegerAttr)
    packed_element = prop_def(IntegerAttr)
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$asm_string attr-dict ($args^ `:` type($args))? `->` type($res)"

    def __init__(self, asm: str, constraints: str, args: Sequence[SSAValue], result_types: Sequence[Attribute],
                 pure: bool, pack: int):
        super().__init__(operands=[list(args)], result_types=[list(result_types)],
                         properties={"asm_string": StringAttr(asm), "constraints": StringAttr(constraints),
                                     "pure": IntegerAttr(int(pure), i32), "packed_element": IntegerAttr(pack, i32)})


@irdl_op_definition
class MapElementwiseOp(IRDLOperation):
    """`tl.map_elementwise(fn, *args, pack=P)`: the scalar region run on each group of `pack`
    elements of the (same-shaped) operands. The region takes, for each operand, its `pack`
    scalars; it ends with `tt.reduce.return` of, for each result, its `pack` scalars."""

    name = "tt.map_elementwise"
    args = var_operand_def()
    res = var_result_def()
    pack = prop_def(IntegerAttr)
    scalar_op = region_def()

    def __init__(self, args: Sequence[SSAValue], result_types: Sequence[Attribute], pack: int, region: Region):
        super().__init__(operands=[list(args)], result_types=[list(result_types)],
                         properties={"pack": IntegerAttr(pack, i32)}, regions=[region])

    def verify_(self) -> None:
        shapes = {shape_of(v.type) for v in (*self.args, *self.res)}
        _require(len(shapes) == 1, "tt.map_elementwise: operands and results must have one shape")
        pack = self.pack.value.data
        block = self.scalar_op.block
        _require(len(block.args) == pack * len(self.args),
                 lambda: f"tt.map_elementwise: the region takes {pack} scalars per operand")
        term = block.last_op
        _require(term is not None and len(term.operands) == pack * len(self.res),
                 lambda: f"tt.map_elementwise: the region returns {pack} scalars per result")


class _PointerCastOp(IRDLOperation):
    """A shape-keeping cast whose sides are pointers or i64 as the subclass names them
    (`SRC_PTR`, `DST_PTR`): `%r = <name> %src : <src type> -> <result type>`."""

    SRC_PTR: ClassVar[bool]
    DST_PTR: ClassVar[bool]
    src = operand_def()
    result = result_def()
    traits = traits_def(Pure())
    assembly_format = "$src attr-dict `:` type($src) `->` type($result)"

    def __init__(self, src: SSAValue, result_type: Attribute):
        super().__init__(operands=[src], result_types=[result_type])

    def verify_(self) -> None:
        src, dst = self.src.type, self.result.type
        _require(shape_of(src) == shape_of(dst),
                 lambda: f"{self.name} keeps the shape: {_type_str(src)} -> {_type_str(dst)}")
        for ty, ptr in ((element_type(src), self.SRC_PTR), (element_type(dst), self.DST_PTR)):
            ok = isinstance(ty, PointerType) if ptr else (isinstance(ty, IntegerType) and ty.width.data == 64)
            _require(ok, lambda ty=ty, ptr=ptr: f"{self.name}: {_type_str(ty)} must be "
                     f"{'a pointer' if ptr else 'i64'}")


@irdl_op_definition
class IntToPtrOp(_PointerCastOp):
    """`tt.int_to_ptr %a : i64 -> !tt.ptr<f16>`: an address as a pointer (`x.to(tl.pointer_type(
    tl.float16))` on an int64 loaded from a table of data pointers, as grouped GEMMs do)."""

    name = "tt.int_to_ptr"
    SRC_PTR: ClassVar[bool] = False
    DST_PTR: ClassVar[bool] = True


@irdl_op_definition
class PtrToIntOp(_PointerCastOp):
    """`tt.ptr_to_int %p : !tt.ptr<f16> -> i64`: a pointer's address (`p.to(tl.int64)`)."""

    name = "tt.ptr_to_int"
    SRC_PTR: ClassVar[bool] = True
    DST_PTR: ClassVar[bool] = False


@irdl_op_definition
class PtrBitcastOp(_PointerCastOp):
    """`tt.bitcast %p : !tt.ptr<f16> -> !tt.ptr<i16>`: the same address, another pointee
    (`p.to(tl.pointer_type(tl.int16))`)."""

    name = "tt.bitcast"
    SRC_PTR: ClassVar[bool] = True
    DST_PTR: ClassVar[bool] = True


TT = Dialect(
    "tt",
    [
        FuncOp,
        ReturnOp,
        GetProgramIdOp,
        GetNumProgramsOp,
        MakeRangeOp,
        SplatOp,
        BroadcastOp,
        ExpandDimsOp,
        TransOp,
        AtomicRMWOp,
        ReshapeOp,
        JoinOp,
        SplitOp,
        CatOp,
        AddPtrOp,
        MakeTensorPtrOp,
        AdvanceOp,
        LoadOp,
        StoreOp,
        DotOp,
        DequantizeOp,
        ReduceOp,
        AssertOp,
        PrintOp,
        DebugBarrierOp,
        ReduceReturnOp,
        ScanOp,
        GatherOp,


        ElementwiseInlineAsmOp,
        IntToPtrOp,
        PtrToIntOp,
        PtrBitcastOp,
        MapElementwiseOp,
    ],
    [SparseEncodingAttr, PointerType],
)

__all__ = [
    "TT",
    "I1",
    "IndexType",
    "Operation",
    "SparseEncodingAttr",
    "PointerType",
    "sparse_encoding_of",
    "is_sparse",
    "element_type",
    "shape_of",
    "with_encoding",
    "loaded_type",
    "meta_shape",
]
