"""`SparseLinear` and `sparsify_`: nn.Linear layers with 2:4 sparse weights, the shape of
torchao's `sparsify_(model, ...)` and PyTorch's semi-structured path.

    model = sparsecc.nn.sparsify_(model)                  # every nn.Linear that fits, pruned by magnitude
    model = torch.compile(model, fullgraph=True)          # no graph break: a torch custom op
    torch.save(model.state_dict(), "sparse.pt")           # ships compressed (values + metadata)
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from sparsecc.nn.torch_ops import sparse_linear_op
from sparsecc.ops.sparse_linear import ACTIVATIONS
from sparsecc.runtime.compress import compress, prune_2to4
from sparsecc.runtime.sparse_tensor import SparseTensor


class SparseLinear(nn.Module):
    """A linear layer whose weight is stored 2:4 compressed (buffers `values`, `meta`), with an
    optional activation fused into the kernel's epilogue.

        layer = SparseLinear.from_linear(nn.Linear(4096, 4096, dtype=torch.float16), activation="silu")
        y = layer(x)        # == silu(x @ prune_2to4(W).T + b)
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 dtype: torch.dtype = torch.float16, device: torch.device | str | None = None,
                 activation: str = "none") -> None:
        super().__init__()
        if activation not in ACTIVATIONS:
            raise ValueError(f"SparseLinear: activation must be one of {ACTIVATIONS}, got {activation!r}")
        if in_features % 16:
            raise ValueError(f"SparseLinear: in_features = {in_features} must be a multiple of 16 "
                             "(one metadata word covers 16 columns)")
        self.in_features, self.out_features, self.activation = in_features, out_features, activation
        empty = SparseTensor.from_dense(torch.zeros(out_features, in_features, dtype=dtype, device=device))
        self.register_buffer("values", empty.values)
        self.register_buffer("meta", empty.meta)
        self.bias = nn.Parameter(torch.zeros(out_features, dtype=dtype, device=device),
                                 requires_grad=False) if bias else None

    @classmethod
    def from_linear(cls, linear: nn.Linear, prune: bool = True, activation: str = "none") -> SparseLinear:
        """The sparse version of `linear`: its weight pruned to 2:4 by magnitude (`prune=True`) or
        checked to be 2:4 already (`prune=False`: a weight that is not is an error naming the group)."""
        weight = linear.weight.detach()
        layer = cls(linear.in_features, linear.out_features, linear.bias is not None, weight.dtype,
                    weight.device, activation)
        w = compress(prune_2to4(weight) if prune else weight)
        layer.values.copy_(w.values)
        layer.meta.copy_(w.meta)
        if linear.bias is not None:
            layer.bias.data.copy_(linear.bias.detach())
        return layer

    def weight(self) -> SparseTensor:
        """The weight as a SparseTensor (out × in)."""
        return SparseTensor(self.values, self.meta, (self.out_features, self.in_features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return sparse_linear_op(x, self.values, self.meta, self.in_features, self.bias, self.activation)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}, activation={self.activation!r}, format=NV24")


def _fits(module: nn.Module) -> bool:
    return (isinstance(module, nn.Linear) and module.in_features % 16 == 0
            and module.weight.dtype in (torch.float16, torch.bfloat16))


def sparsify_(model: nn.Module, filter_fn: Callable[[nn.Module, str], bool] | None = None,
              prune: bool = True) -> nn.Module:
    """Replace, in place, every nn.Linear of `model` that `filter_fn(module, fqn)` accepts (default:
    fp16/bf16 weights with in_features a multiple of 16) by a SparseLinear; returns `model`.

        sparsify_(model, filter_fn=lambda m, name: name.startswith("layers."))
    """
    accept = filter_fn or (lambda module, name: True)
    targets = [(name, module) for name, module in model.named_modules() if _fits(module) and accept(module, name)]
    for name, module in targets:
        parent_name, _, child = name.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        setattr(parent, child, SparseLinear.from_linear(module, prune=prune))
    return model
