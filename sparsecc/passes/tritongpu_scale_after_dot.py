"""`tritongpu-scale-after-dot`: a quantized weight's scales applied to the MMA's sums, not to
each dequantized value.

A fragment dequantization (`analysis.dequantize.fragment_dequantize`) builds an mma.sp A
operand as `(code - zero) * scale` per value: one f16x2 subtraction and one multiplication a
pair of values. `code - zero` is an integer that f16 holds exactly, so the multiplication can
wait: the MMA sums `(code - zero) * x` over one scale group's K steps into fp32 registers of
their own, and one fp32 FMA a register then adds `scale * sum` to the accumulator. A w4g128
group (128 columns of the dense K, 64 kept ones) spans four m16n8k32 steps, so the 16 f16x2
multiplications a thread made per group and m16 tile become 4 FMAs and 2 conversions. The
result differs from dequantize-then-MMA by rounding only: the weight is no longer rounded to
f16 after scaling.

The pass marks each eligible `tt.dequantize` with the unit attribute `ttg.scale_after_dot`; the
lowering (`codegen/lower_quant.py`, `codegen/lower_dot.py`) does the rest. Eligible: the op's
only user is a sparse `tt.dot` (mma.sp, `#ttg.mma` version 2) whose A it is, it builds that
operand's fragments itself, and each scale covers whole 16-column MMA steps. wgmma dots keep
the per-value scaling (their accumulators are read asynchronously).

    sparsecc-opt kernel.mlir -p tritongpu-scale-after-dot
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType, UnitAttr
from xdsl.ir import Operation
from xdsl.passes import ModulePass

from sparsecc.analysis.dequantize import feeding_dot, fragment_dequantize
from sparsecc.dialects import tt
from sparsecc.dialects import ttg as ttgd

MMA_STEP_COLUMNS = 16
"""Kept columns of one m16n8k32 mma.sp step's A fragment (f16)."""


def scale_after_dot_eligible(op: tt.DequantizeOp) -> bool:
    """Whether `op`'s scales can be applied to its dot's sums (module docstring)."""
    dot = feeding_dot(op)
    if dot is None:
        return False
    res_ty, dot_ty, scales_ty = op.result.type, dot.result.type, op.scales.type
    if not (isinstance(res_ty, TensorType) and isinstance(dot_ty, TensorType) and isinstance(scales_ty, TensorType)):
        return False
    mma = dot_ty.encoding
    if dot.meta is None or not isinstance(mma, ttgd.MmaEncodingAttr) or mma.version_major != 2:
        return False
    cols = res_ty.get_shape()[1]
    per_scale = cols // scales_ty.get_shape()[1]
    return fragment_dequantize(op, res_ty.encoding) and per_scale % MMA_STEP_COLUMNS == 0


def mark_scale_after_dot(root: Operation) -> int:
    """Mark every eligible `tt.dequantize` under `root`; returns how many were marked."""
    marked = 0
    for op in root.walk():
        if isinstance(op, tt.DequantizeOp) and scale_after_dot_eligible(op):
            op.attributes[ttgd.SCALE_AFTER_DOT] = UnitAttr()
            marked += 1
    return marked


@dataclass(frozen=True)
class ScaleAfterDotPass(ModulePass):
    """Mark the dequantizations whose scales their mma.sp dot applies (module docstring).

    Accepts: ttgir after sparse-gpu-encoding. Guarantees: the same ops; each eligible
    `tt.dequantize` carries `ttg.scale_after_dot`, which changes its lowering only.
    """

    name = "tritongpu-scale-after-dot"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        mark_scale_after_dot(op)


__all__ = ["MMA_STEP_COLUMNS", "ScaleAfterDotPass", "mark_scale_after_dot",
           "scale_after_dot_eligible"]
