"""Every pass sparsecc has, by its command-line name (loaded lazily: the front half never
imports the GPU passes)."""

from __future__ import annotations

from collections.abc import Callable

from xdsl.passes import ModulePass


def _decompose() -> type[ModulePass]:
    from sparsecc.passes.decompose_sparse import DecomposeSparseTensorsPass

    return DecomposeSparseTensorsPass


def _to_gpu() -> type[ModulePass]:
    from sparsecc.passes.to_gpu import ConvertTTToTTGPass

    return ConvertTTToTTGPass


def _gpu_encoding() -> type[ModulePass]:
    from sparsecc.passes.gpu_encoding import SparseGPUEncodingPass

    return SparseGPUEncodingPass


def _pipeline() -> type[ModulePass]:
    from sparsecc.passes.pipeline import PipelinePass

    return PipelinePass


def _canonicalize() -> type[ModulePass]:
    from xdsl.transforms.canonicalize import CanonicalizePass

    return CanonicalizePass


def _cse() -> type[ModulePass]:
    from xdsl.transforms.common_subexpression_elimination import (
        CommonSubexpressionElimination,
    )

    return CommonSubexpressionElimination


PASSES: dict[str, Callable[[], type[ModulePass]]] = {
    "decompose-sparse-tensors": _decompose,
    "convert-tt-to-ttg": _to_gpu,
    "sparse-gpu-encoding": _gpu_encoding,
    "tritongpu-pipeline": _pipeline,
    "canonicalize": _canonicalize,
    "cse": _cse,
}
"""Pass name (as given to `sparsecc-opt -p`) -> loader of the xDSL ModulePass class."""


def get_all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    return dict(PASSES)
