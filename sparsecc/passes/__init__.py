"""Every pass sparsecc has, by its command-line name: the one place that knows all of them
(loaded lazily: the front half never imports the GPU passes).

Each pass is one module of this package named after the pass (`tritongpu-pipeline` is
`tritongpu_pipeline.py`); the analyses and builders they share live in `sparsecc.analysis`, the
PTX emission they drive in `sparsecc.codegen`.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from xdsl.passes import ModulePass


def _decompose() -> type[ModulePass]:
    from sparsecc.passes.decompose_sparse_tensors import DecomposeSparseTensorsPass

    return DecomposeSparseTensorsPass


def _raise_pointer_tensors() -> type[ModulePass]:
    from sparsecc.passes.raise_pointer_tensors import RaisePointerTensorsPass

    return RaisePointerTensorsPass


def _sparse_to_lhs() -> type[ModulePass]:
    from sparsecc.passes.sparse_operand_to_lhs import SparseOperandToLhsPass

    return SparseOperandToLhsPass


def _fold_transposes() -> type[ModulePass]:
    from sparsecc.passes.fold_transposes import FoldTransposesPass

    return FoldTransposesPass


def _expand_dequantize() -> type[ModulePass]:
    from sparsecc.passes.expand_dequantize import ExpandDequantizePass

    return ExpandDequantizePass


def _to_gpu() -> type[ModulePass]:
    from sparsecc.passes.convert_tt_to_ttg import ConvertTTToTTGPass

    return ConvertTTToTTGPass


def _gpu_encoding() -> type[ModulePass]:
    from sparsecc.passes.sparse_gpu_encoding import SparseGPUEncodingPass

    return SparseGPUEncodingPass


def _pipeline() -> type[ModulePass]:
    from sparsecc.passes.tritongpu_pipeline import PipelinePass

    return PipelinePass


def _wgmma_unroll() -> type[ModulePass]:
    from sparsecc.passes.tritongpu_wgmma_unroll import WgmmaUnrollPass

    return WgmmaUnrollPass


def _sink_local_loads() -> type[ModulePass]:
    from sparsecc.passes.tritongpu_sink_local_loads import SinkLocalLoadsPass

    return SinkLocalLoadsPass


def _warp_specialize() -> type[ModulePass]:
    from sparsecc.passes.tritongpu_warp_specialize import WarpSpecializePass

    return WarpSpecializePass


def _insert_barriers() -> type[ModulePass]:
    from sparsecc.passes.tritongpu_insert_barriers import InsertBarriersPass

    return InsertBarriersPass


def _allocate_shared_memory() -> type[ModulePass]:
    from sparsecc.passes.allocate_shared_memory import AllocateSharedMemoryPass

    return AllocateSharedMemoryPass


def _convert_ttg_to_ptx() -> type[ModulePass]:
    from sparsecc.passes.convert_ttg_to_ptx import ConvertTTGToPTXPass

    return ConvertTTGToPTXPass


def _scale_after_dot() -> type[ModulePass]:
    from sparsecc.passes.tritongpu_scale_after_dot import ScaleAfterDotPass

    return ScaleAfterDotPass


def _coalesce_mma_stores() -> type[ModulePass]:
    from sparsecc.passes.tritongpu_coalesce_mma_stores import CoalesceMmaStoresPass

    return CoalesceMmaStoresPass


def _ptx_hoist() -> type[ModulePass]:
    from sparsecc.passes.ptx_hoist_loop_invariants import HoistLoopInvariantsPass

    return HoistLoopInvariantsPass


def _ptx_strength_reduce() -> type[ModulePass]:
    from sparsecc.passes.ptx_strength_reduce import StrengthReducePass

    return StrengthReducePass


def _canonicalize() -> type[ModulePass]:
    from xdsl.transforms.canonicalize import CanonicalizePass

    return CanonicalizePass


def _cse() -> type[ModulePass]:
    from xdsl.transforms.common_subexpression_elimination import (
        CommonSubexpressionElimination,
    )

    return CommonSubexpressionElimination


PASSES: dict[str, Callable[[], type[ModulePass]]] = {
    "raise-pointer-tensors": _raise_pointer_tensors,
    "sparse-operand-to-lhs": _sparse_to_lhs,
    "fold-transposes": _fold_transposes,
    "decompose-sparse-tensors": _decompose,
    "expand-dequantize": _expand_dequantize,
    "convert-tt-to-ttg": _to_gpu,
    "sparse-gpu-encoding": _gpu_encoding,
    "tritongpu-pipeline": _pipeline,
    "tritongpu-wgmma-unroll": _wgmma_unroll,
    "tritongpu-sink-local-loads": _sink_local_loads,
    "tritongpu-coalesce-mma-stores": _coalesce_mma_stores,
    "tritongpu-scale-after-dot": _scale_after_dot,
    "tritongpu-warp-specialize": _warp_specialize,
    "tritongpu-insert-barriers": _insert_barriers,
    "allocate-shared-memory": _allocate_shared_memory,
    "convert-ttg-to-ptx": _convert_ttg_to_ptx,
    "ptx-hoist-loop-invariants": _ptx_hoist,
    "ptx-strength-reduce": _ptx_strength_reduce,
    "canonicalize": _canonicalize,
    "cse": _cse,
}
"""Pass name (as given to `sparsecc-opt -p`) -> loader of the xDSL ModulePass class."""

TOOL_PASSES: dict[str, str] = {
    "expand-dequantize": "tool pass, in no compiler pipeline: tt.dequantize as plain tensor ops, "
                         "for a backend without its own dequantize lowering",
}
"""Passes the compiler's stages (`sparsecc.compiler.STAGE_TABLE`) never run, with what they are
for; `sparsecc-opt --list-passes` prints the text beside the name:

    >>> sorted(TOOL_PASSES)
    ['expand-dequantize']
"""


def get_all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """A copy of `PASSES` (the form xDSL's PassPipeline.parse_spec takes)."""
    return dict(PASSES)


_UNDOCUMENTED = {"cse": "Eliminate common subexpressions (xDSL's pass)."}
"""Descriptions of the registered passes whose class has no docstring."""


def describe(name: str) -> str:
    """The one-line description of pass `name` for `sparsecc-opt --list-passes`: the first
    sentence of its class docstring (loading the pass), without the pointer to its module.

    Example: `describe("allocate-shared-memory")` starts "Give every shared buffer"."""
    doc = " ".join((PASSES[name]().__doc__ or _UNDOCUMENTED.get(name, "")).strip().split("\n\n")[0].split())
    doc = re.sub(r"\s*\((see the )?module docstring\)", "", doc)
    return doc.split(". ")[0].rstrip(".")
