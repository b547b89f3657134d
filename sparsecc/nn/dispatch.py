"""`SparseLinear`'s side of the dispatcher (`sparsecc.ops.dispatch`): which path a forward
takes, and the sparse16 / dense paths computed from the layer's stored arrays.

Everything here is traced by `torch.compile` without a graph break: the plan for the layer's
shape is one constant-folded call (`layer_plan`), the band for the token count a comparison
(a guard for a symbolic M), and the other paths are torch ops (inductor fuses the
dequantization / decompression into one kernel; eager code runs it as one sparsecc kernel,
`sparsecc.ops.densify.weight16`) plus the 2:4 custom op.

    layer = SparseLinear.from_linear(linear, quant="w4g128")
    layer.dispatch = "dense"                 # or SparseLinear(..., dispatch="dense")
    layer.keep_dense_weight()                # a cached dense copy: memory for speed
"""

from __future__ import annotations

import torch
from torch import nn

from sparsecc.nn.torch_ops import sparse_linear_op
from sparsecc.ops import densify, dispatch, dispatch_measure

_DTYPE_NAMES = {torch.float16: "float16", torch.bfloat16: "bfloat16", torch.float32: "float32"}


def _setting(layer: nn.Module) -> str | None:
    """The layer's own dispatch setting (a layer pickled before the dispatcher has none)."""
    return getattr(layer, "dispatch", None)


def _keeps(layer: nn.Module) -> bool:
    return getattr(layer, "keeps_dense", False)


def layer_scheme(layer: nn.Module) -> str:
    """The layer's dispatch scheme: "nv24" (16-bit weights), its quant scheme ("w4g128"), or
    "fp8" / "int8" for `weight_dtype` layers."""
    if layer.quant is not None:
        return layer.quant
    if layer.weight_dtype is None:
        return "nv24"
    return "fp8" if layer.weight_dtype == torch.float8_e4m3fn else "int8"


def layer_mode(layer: nn.Module, x: torch.Tensor) -> str:
    """The path ("sparse", "sparse16", "dense") of `layer(x)`; logs the choice once per shape
    and band of M."""
    m = x.numel() // layer.in_features
    eager = not torch.compiler.is_compiling()
    scheme = layer_scheme(layer)
    dtype = _DTYPE_NAMES.get(layer.dtype, "other")
    if eager and x.is_cuda:
        dispatch_measure.maybe_tune(layer.out_features, layer.in_features, layer.dtype, scheme, m, x.device)
    plan = dispatch.layer_plan(layer.out_features, layer.in_features, dtype, scheme, x.device.type,
                               x.device.index, _setting(layer), _keeps(layer))
    mode, band = dispatch.pick(plan, m)
    dispatch.announce(f"SparseLinear {layer.fqn!r}" if layer.fqn else "SparseLinear", layer.out_features,
                      layer.in_features, dtype, scheme, m if eager else None, band, mode)
    return mode


def weight16(layer: nn.Module, dense: bool) -> torch.Tensor:
    """The layer's weight in its 16-bit dtype: the kept values (N x K/2: dequantized codes, scaled
    8-bit values, or the stored values) or, with `dense`, the dense N x K matrix; one sparsecc kernel
    on CUDA (`sparsecc.ops.densify.weight16`)."""
    scales = zeros = weight_scale = None
    bits = 16
    if layer.quant is not None:
        scales, zeros = layer.scales, getattr(layer, "zeros", None)
        bits = 4 if layer.quant.startswith("w4") else 8
    elif layer.weight_dtype is not None:
        weight_scale = layer.weight_scale
    return densify.weight16(layer.values, layer.meta, scales, zeros, weight_scale, bits, layer.in_features,
                            layer.dtype, dense)


def forward_other(layer: nn.Module, x: torch.Tensor, mode: str, activation: str | None = None) -> torch.Tensor:
    """`layer(x)` the sparse16 way (16-bit kept values through the 16-bit 2:4 kernel, bias and
    activation fused) or the dense way (the dense weight, cached or made now, through
    F.linear). An 8-bit layer's x is not quantized here: both paths compute in the layer's
    dtype. `activation` (default: the layer's) is one of the kernels' epilogue activations."""
    activation = layer.activation if activation is None else activation
    if mode == "sparse16":
        return sparse_linear_op(x, weight16(layer, False), layer.meta, layer.in_features, layer.bias,
                                activation)
    w = layer._dense if _keeps(layer) else weight16(layer, True)
    return dispatch.activate(torch.nn.functional.linear(x, w, layer.bias), activation)


def keep_dense_weight(layer: nn.Module, keep: bool = True) -> None:
    """Keep (or drop) a dense 16-bit copy of the weight in a non-persistent buffer `_dense` (not
    in the state_dict); the dense path then skips the decompression and the cost model counts
    F.linear alone."""
    if keep:
        with torch.no_grad():
            layer.register_buffer("_dense", weight16(layer, True), persistent=False)
    elif "_dense" in layer._buffers:
        del layer._buffers["_dense"]
    layer.keeps_dense = keep


def describe(layer: nn.Module) -> str:
    """The dispatch part of SparseLinear's repr: the setting and the choices made so far, e.g.
    "dispatch='auto' (M <= 256: sparse, M > 256: sparse16)"."""
    setting = _setting(layer) or "auto"
    text = f"dispatch={setting!r}" + (", dense copy kept" if _keeps(layer) else "")
    seen = dispatch.seen_modes(layer.out_features, layer.in_features, _DTYPE_NAMES.get(layer.dtype, "other"),
                               layer_scheme(layer))
    if seen:
        text += " (" + ", ".join(f"{band}: {mode}" for band, mode in seen.items()) + ")"
    return text
