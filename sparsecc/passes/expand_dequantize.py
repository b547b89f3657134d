"""expand-dequantize: rewrite each `tt.dequantize` as plain tensor ops the GPU stages lower.

A tool pass: no stage of the compiler runs it (`passes.TOOL_PASSES`; the PTX backend lowers
`tt.dequantize` itself, straight into the dot's fragments, and the interpreter computes it). It
is there for a backend without its own dequantize lowering, and as the executable definition
of the op that the tests compare with it bit for bit:

    sparsecc-opt quantized.mlir -p "decompose-sparse-tensors,expand-dequantize"

Accepts: tt IR (before convert-tt-to-ttg) with `tt.dequantize` ops, as decompose-sparse-tensors
leaves them for quantized formats (`formats.quant`).
Guarantees afterwards: no `tt.dequantize` is left; each became, for an R x C result of b-bit
codes (P = 8 / b codes a byte) and R x S scales (C / S = Q kept values a scale):

    codes32 = arith.extui codes                                     R x C/P, i32
    spread  = reshape(broadcast(reshape(codes32, [R*C/P, 1]), [R*C/P, P]), [R, C])
              (element (r, j) holds byte j / P: P codes share one byte)
    code    = (spread >> (j % P) * b) & (2^b - 1)                 j = tl.arange(0, C)
    scale   = reshape(broadcast(reshape(scales, [R*S, 1]), [R*S, Q]), [R, C])
    value   = truncf((uitofp(code) - zero) * extf(scale))          zero: zeros or 2^(b-1)

which is the interpreter's `tt.dequantize` (`runtime/quant_codec.dequantize_tile`) bit for bit:
the difference is an integer, the product is rounded once. The reshapes are what make the
expansion layout-free (the GPU lowering takes them through shared memory); it is the correct
general form, not the fast one, which dequantizes in the dot operand's registers.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    Float32Type,
    ModuleOp,
    TensorType,
    f32,
    i32,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass

from sparsecc.dialects import arith as tensor_arith
from sparsecc.dialects import tt


class _Emit:
    """Ops inserted before an anchor, located at it."""

    def __init__(self, anchor: Operation):
        self.anchor = anchor

    def __call__(self, op: Operation) -> SSAValue:
        block = self.anchor.parent_block()
        assert block is not None
        block.insert_op_before(op, self.anchor)
        op.location = self.anchor.location
        return op.results[0]

    def const(self, value: int | float, elt: Attribute, shape: list[int]) -> SSAValue:
        ty = TensorType(elt, shape)
        return self(arith.ConstantOp(DenseIntOrFPElementsAttr.from_list(ty, [value])))

    def spread(self, v: SSAValue, rows: int, cols: int) -> SSAValue:
        """(r, j) -> v[r, j // (cols / v's columns)]: each element repeated along its row."""
        ty = v.type
        assert isinstance(ty, TensorType)
        r, c = ty.get_shape()
        if c == cols:
            return v
        elt = ty.element_type
        if c == 1:
            return self(tt.BroadcastOp(v, TensorType(elt, [rows, cols])))
        column = self(tt.ReshapeOp(v, TensorType(elt, [r * c, 1])))
        wide = self(tt.BroadcastOp(column, TensorType(elt, [r * c, cols // c])))
        return self(tt.ReshapeOp(wide, TensorType(elt, [rows, cols])))


def expand(op: tt.DequantizeOp) -> None:
    """Replace one `tt.dequantize` by the ops of the module docstring."""
    e = _Emit(op)
    bits = op.bits.value.data
    res_ty = op.result.type
    assert isinstance(res_ty, TensorType)
    rows, cols = res_ty.get_shape()
    codes_ty = op.codes.type
    assert isinstance(codes_ty, TensorType)
    codes = e(tensor_arith.ExtUIOp(op.codes, TensorType(i32, codes_ty.get_shape())))
    code = e.spread(codes, rows, cols)
    if bits < 8:
        per_byte = 8 // bits
        lane = e(tt.MakeRangeOp(0, cols))
        within = e(arith.RemUIOp(lane, e.const(per_byte, i32, [cols])))
        shift_row = e(arith.MuliOp(within, e.const(bits, i32, [cols])))
        shift_2d = e(tt.ExpandDimsOp(shift_row, 0))
        shift = e(tt.BroadcastOp(shift_2d, TensorType(i32, [rows, cols])))
        code = e(arith.ShRUIOp(code, shift))
    code = e(arith.AndIOp(code, e.const((1 << bits) - 1, i32, [rows, cols])))
    value = e(tensor_arith.UIToFPOp(code, TensorType(f32, [rows, cols])))
    if op.zeros is not None:
        zero = e.spread(_to_f32(e, op.zeros), rows, cols)
    else:
        zero = e.const(float(1 << (bits - 1)), f32, [rows, cols])
    scale = e.spread(_to_f32(e, op.scales), rows, cols)
    product = e(arith.MulfOp(e(arith.SubfOp(value, zero)), scale))
    out = e(arith.TruncFOp(product, res_ty))
    out.name_hint = op.result.name_hint
    op.result.replace_all_uses_with(out)
    op.detach()
    op.erase()


def _to_f32(e: _Emit, v: SSAValue) -> SSAValue:
    ty = v.type
    assert isinstance(ty, TensorType)
    if isinstance(ty.element_type, Float32Type):
        return v
    return e(arith.ExtFOp(v, TensorType(f32, ty.get_shape())))


@dataclass(frozen=True)
class ExpandDequantizePass(ModulePass):
    """Rewrite `tt.dequantize` as extui/shifts/reshapes/float ops (see the module docstring)."""

    name = "expand-dequantize"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for dq in [o for o in op.walk() if isinstance(o, tt.DequantizeOp)]:
            expand(dq)


__all__ = ["ExpandDequantizePass", "expand"]
