"""Where `tt.dequantize` can build a dot operand's fragments itself (no shared-memory round trip).

sparse-gpu-encoding gives such an op the dot's `#ttg.dot_op` encoding; the lowering
(`codegen/lower_quant.py`) then builds the fragment registers straight from the codes.
"""

from __future__ import annotations

from xdsl.dialects.builtin import TensorType, f16

from sparsecc.dialects import tt
from sparsecc.dialects import ttg as ttgd


def fragment_dequantize(op: tt.DequantizeOp, enc: object) -> bool:
    """Whether `op` can produce the dot operand of encoding `enc` straight in its fragment
    registers: an f16 result for the values (meta = 0) of an mma.sp / wgmma.sp A operand, 4- or
    8-bit codes in rows of whole 16-byte chunks, m16 row tiles, each scale covering whole
    8-column halves of the 16-column steps."""
    res_ty, codes_ty, scales_ty = op.result.type, op.codes.type, op.scales.type
    if not (isinstance(enc, ttgd.DotOperandEncodingAttr) and enc.op_idx == 0 and enc.meta == 0
            and isinstance(enc.parent, ttgd.MmaEncodingAttr)):
        return False
    assert isinstance(res_ty, TensorType) and isinstance(codes_ty, TensorType) and isinstance(scales_ty, TensorType)
    rows, cols = res_ty.get_shape()
    bits = op.bits.value.data
    per_scale = cols // scales_ty.get_shape()[1]
    return (res_ty.element_type == f16 and bits in (4, 8) and rows % 16 == 0
            and codes_ty.get_shape()[1] % 16 == 0 and cols % 16 == 0 and per_scale % 8 == 0)


__all__ = ["fragment_dequantize"]
