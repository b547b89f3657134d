"""`SparseLinear` and `sparsify_`: nn.Linear layers with 2:4 sparse weights, the shape of
torchao's `sparsify_(model, ...)` and PyTorch's semi-structured path.

    model = sparsecc.nn.sparsify_(model)                  # every nn.Linear that fits, pruned by magnitude
    model = torch.compile(model, fullgraph=True)          # no graph break: a torch custom op
    torch.save(model.state_dict(), "sparse.pt")           # ships compressed (values + metadata)
    sparsify_(model, weight_dtype=torch.float8_e4m3fn)    # 8-bit 2:4 weights, activations per token
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from sparsecc.nn.quantize import QUANT_MAX, quantize_rows
from sparsecc.nn.torch_ops import sparse_linear_op, sparse_mm_op
from sparsecc.ops.sparse_linear import ACTIVATIONS
from sparsecc.runtime.compress import compress, prune_2to4
from sparsecc.runtime.sparse_tensor import SparseTensor

WEIGHT_DTYPES = (None, *QUANT_MAX)
"""`weight_dtype` choices: None (the weight in the layer's fp16/bf16) or an 8-bit type."""


class SparseLinear(nn.Module):
    """A linear layer whose weight is stored 2:4 compressed (buffers `values`, `meta`), with an
    optional activation fused into the kernel's epilogue.

        layer = SparseLinear.from_linear(nn.Linear(4096, 4096, dtype=torch.float16), activation="silu")
        y = layer(x)        # == silu(x @ prune_2to4(W).T + b)

    With `weight_dtype` torch.int8 or torch.float8_e4m3fn the kept weights are quantized per
    output channel (symmetric; fp32 buffer `weight_scale`) and each forward quantizes x per
    token the same way, so that the 8-bit sparse tensor cores compute `x @ W.T` with both
    scales applied in the kernel's epilogue (the layer's fp16/bf16 stays its input and output
    dtype; bias and activation then run in torch, not fused):

        layer = SparseLinear.from_linear(linear, weight_dtype=torch.float8_e4m3fn)
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 dtype: torch.dtype = torch.float16, device: torch.device | str | None = None,
                 activation: str = "none", weight_dtype: torch.dtype | None = None) -> None:
        super().__init__()
        if activation not in ACTIVATIONS:
            raise ValueError(f"SparseLinear: activation must be one of {ACTIVATIONS}, got {activation!r}")
        if weight_dtype not in WEIGHT_DTYPES:
            raise ValueError(f"SparseLinear: weight_dtype must be one of {WEIGHT_DTYPES}, got {weight_dtype}")
        if in_features % 16:
            raise ValueError(f"SparseLinear: in_features = {in_features} must be a multiple of 16 "
                             "(one metadata word covers 16 columns)")
        self.in_features, self.out_features, self.activation = in_features, out_features, activation
        self.weight_dtype = weight_dtype
        stored = weight_dtype or dtype
        empty = SparseTensor.from_dense(torch.zeros(out_features, in_features, dtype=stored, device=device))
        self.register_buffer("values", empty.values)
        self.register_buffer("meta", empty.meta)
        if weight_dtype is not None:
            self.register_buffer("weight_scale", torch.ones(out_features, dtype=torch.float32, device=device))
        self.bias = nn.Parameter(torch.zeros(out_features, dtype=dtype, device=device),
                                 requires_grad=False) if bias else None
        self.dtype = dtype

    @classmethod
    def from_linear(cls, linear: nn.Linear, prune: bool = True, activation: str = "none",
                    weight_dtype: torch.dtype | None = None) -> SparseLinear:
        """The sparse version of `linear`: its weight pruned to 2:4 by magnitude (`prune=True`) or
        checked to be 2:4 already (`prune=False`: a weight that is not is an error naming the
        group); with `weight_dtype` (torch.int8, torch.float8_e4m3fn) quantized per output
        channel after pruning."""
        weight = linear.weight.detach()
        layer = cls(linear.in_features, linear.out_features, linear.bias is not None, weight.dtype,
                    weight.device, activation, weight_dtype)
        pruned = prune_2to4(weight) if prune else weight
        if weight_dtype is None:
            w = compress(pruned)
        else:
            compress(pruned)  # the 2:4 check of prune=False, on the weight as given
            q, scale = quantize_rows(pruned, weight_dtype)
            w = compress(q)
            layer.weight_scale.copy_(scale)
        layer.values.copy_(w.values)
        layer.meta.copy_(w.meta)
        if linear.bias is not None:
            layer.bias.data.copy_(linear.bias.detach())
        return layer

    def weight(self) -> SparseTensor:
        """The weight as a SparseTensor (out × in), in its stored dtype (8-bit: without its scales)."""
        return SparseTensor(self.values, self.meta, (self.out_features, self.in_features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.weight_dtype is None:
            return sparse_linear_op(x, self.values, self.meta, self.in_features, self.bias, self.activation)
        lead = x.shape[:-1]
        xq, x_scale = quantize_rows(x.reshape(-1, self.in_features), self.weight_dtype)
        # W (out x in, sparse) @ xq.T (K-major: xq is row-major): out x tokens, both scales applied
        y = sparse_mm_op(self.values, self.meta, self.in_features, xq.t(), self.weight_scale, x_scale)
        y = y.t().to(x.dtype)
        if self.bias is not None:
            y = y + self.bias
        y = _activate(y, self.activation)
        return y.reshape(*lead, self.out_features)

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs) -> None:  # noqa: ANN001, ANN002, ANN003
        """A checkpoint of another format (fp16 values into an 8-bit layer, or the reverse) is an
        error: load_state_dict would otherwise cast the values silently."""
        values = state_dict.get(prefix + "values")
        if isinstance(values, torch.Tensor) and values.dtype != self.values.dtype:
            raise RuntimeError(f"SparseLinear {prefix or '(root)'}: the checkpoint's values are {values.dtype}, "
                               f"this layer stores {self.values.dtype} (weight_dtype={self.weight_dtype}); "
                               "sparsify the model with the checkpoint's weight_dtype")
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    def extra_repr(self) -> str:
        fmt = "NV24" if self.weight_dtype is None else f"NV24, weights {self.weight_dtype} per-channel scales, " \
                                                        "activations per-token"
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}, activation={self.activation!r}, format={fmt}")


def _activate(y: torch.Tensor, activation: str) -> torch.Tensor:
    if activation == "relu":
        return torch.relu(y)
    if activation == "gelu_tanh":
        return torch.nn.functional.gelu(y, approximate="tanh")
    if activation == "silu":
        return torch.nn.functional.silu(y)
    return y


def _fits(module: nn.Module) -> bool:
    return (isinstance(module, nn.Linear) and module.in_features % 16 == 0
            and module.weight.dtype in (torch.float16, torch.bfloat16))


def sparsify_(model: nn.Module, filter_fn: Callable[[nn.Module, str], bool] | None = None,
              prune: bool = True, weight_dtype: torch.dtype | None = None) -> nn.Module:
    """Replace, in place, every nn.Linear of `model` that `filter_fn(module, fqn)` accepts (default:
    fp16/bf16 weights with in_features a multiple of 16) by a SparseLinear; returns `model`.
    `weight_dtype` (torch.int8, torch.float8_e4m3fn) quantizes the sparse weights to 8 bits
    (see SparseLinear).

        sparsify_(model, filter_fn=lambda m, name: name.startswith("layers."))
        sparsify_(model, weight_dtype=torch.float8_e4m3fn)
    """
    if weight_dtype not in WEIGHT_DTYPES:
        raise ValueError(f"sparsify_: weight_dtype must be one of {WEIGHT_DTYPES}, got {weight_dtype}")
    accept = filter_fn or (lambda module, name: True)
    targets = [(name, module) for name, module in model.named_modules() if _fits(module) and accept(module, name)]
    for name, module in targets:
        parent_name, _, child = name.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        setattr(parent, child, SparseLinear.from_linear(module, prune=prune, weight_dtype=weight_dtype))
    return model
