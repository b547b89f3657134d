"""Every pass sparsecc has, by its command-line name: the one place that knows all of them
(loaded lazily: the front half never imports the GPU passes).

The ttgir passes live in this package; the conversion to the `ptx` dialect and the passes over
it live with the rest of the PTX backend in `sparsecc.codegen` (convert_ttg_to_ptx.py,
ptx_hoist.py), which imports nothing from here.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.passes import ModulePass


def _decompose() -> type[ModulePass]:
    from sparsecc.passes.decompose_sparse import DecomposeSparseTensorsPass

    return DecomposeSparseTensorsPass


def _raise_pointer_tensors() -> type[ModulePass]:
    from sparsecc.passes.raise_pointer_tensors import RaisePointerTensorsPass

    return RaisePointerTensorsPass


def _sparse_to_lhs() -> type[ModulePass]:
    from sparsecc.passes.sparse_to_lhs import SparseOperandToLhsPass

    return SparseOperandToLhsPass


def _fold_transposes() -> type[ModulePass]:
    from sparsecc.passes.fold_transposes import FoldTransposesPass

    return FoldTransposesPass


def _expand_dequantize() -> type[ModulePass]:
    from sparsecc.passes.expand_dequantize import ExpandDequantizePass

    return ExpandDequantizePass


def _to_gpu() -> type[ModulePass]:
    from sparsecc.passes.to_gpu import ConvertTTToTTGPass

    return ConvertTTToTTGPass


def _gpu_encoding() -> type[ModulePass]:
    from sparsecc.passes.gpu_encoding import SparseGPUEncodingPass

    return SparseGPUEncodingPass


def _pipeline() -> type[ModulePass]:
    from sparsecc.passes.pipeline import PipelinePass

    return PipelinePass


def _wgmma_unroll() -> type[ModulePass]:
    from sparsecc.passes.wgmma_unroll import WgmmaUnrollPass

    return WgmmaUnrollPass


def _sink_local_loads() -> type[ModulePass]:
    from sparsecc.passes.sink_local_loads import SinkLocalLoadsPass

    return SinkLocalLoadsPass


def _warp_specialize() -> type[ModulePass]:
    from sparsecc.passes.warp_specialize import WarpSpecializePass

    return WarpSpecializePass


def _convert_ttg_to_ptx() -> type[ModulePass]:
    from sparsecc.codegen.convert_ttg_to_ptx import ConvertTTGToPTXPass

    return ConvertTTGToPTXPass


def _ptx_hoist() -> type[ModulePass]:
    from sparsecc.codegen.ptx_hoist import HoistLoopInvariantsPass

    return HoistLoopInvariantsPass


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
    "tritongpu-warp-specialize": _warp_specialize,
    "convert-ttg-to-ptx": _convert_ttg_to_ptx,
    "ptx-hoist-loop-invariants": _ptx_hoist,
    "canonicalize": _canonicalize,
    "cse": _cse,
}
"""Pass name (as given to `sparsecc-opt -p`) -> loader of the xDSL ModulePass class."""


def get_all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """A copy of `PASSES` (the form xDSL's PassPipeline.parse_spec takes)."""
    return dict(PASSES)
