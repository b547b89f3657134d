"""Tune the dispatcher (`sparsecc.ops.dispatch`) on this GPU for a model's layer shapes.

    model = sparsecc.sparsify_(model.cuda(), quant="w4g128")
    sparsecc.nn.tuning.tune(model, tokens=(1, 16, 2048))     # before compiling or capturing
    model = torch.compile(model)
"""

from __future__ import annotations

from pathlib import Path

from torch import nn

from sparsecc.nn.dispatch import layer_scheme
from sparsecc.nn.linear import SparseLinear
from sparsecc.ops import dispatch, dispatch_measure

__all__ = ["tune"]


def tune(model: nn.Module, tokens: tuple[int, ...] = (1, 16, 64, 256, 2048)) -> Path | None:
    """Time every distinct SparseLinear shape (scheme, dtype, N x K) of `model` on its GPU at the
    buckets of `tokens` and keep the results in the cache folder, where later plans read them
    over the shipped table (`sparsecc.ops.dispatch.tuned_path`); returns that file, or None for
    a model without CUDA SparseLinear layers. Run it before torch.compile / CUDA graph capture.

        sparsecc.nn.tuning.tune(model, tokens=(1, 16, 2048))
    """
    shapes: dict[tuple, None] = {}
    device = None
    for module in model.modules():
        if isinstance(module, SparseLinear) and module.values.is_cuda:
            device = module.values.device
            shapes[(layer_scheme(module), module.dtype, module.out_features, module.in_features)] = None
    if device is None:
        return None
    return dispatch_measure.tune_shapes(list(shapes), [dispatch.bucket(m) for m in tokens], device)
