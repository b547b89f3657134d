"""Checks the torch-integration tests share: a module compiles fullgraph and exports with its
sparsecc custom op in the graph, both giving eager's result."""

from __future__ import annotations

from collections.abc import Callable

import torch


def assert_compiles_and_exports(model: torch.nn.Module, x: torch.Tensor, op: str,
                                close: Callable[[torch.Tensor, torch.Tensor], None]) -> torch.Tensor:
    """`torch.compile(model, fullgraph=True)` (aot_eager) and `torch.export` of `model` at `x`
    both give eager's output (by `close(got, eager)`), and the exported graph calls the custom op
    `op` (e.g. "sparsecc.sparse_linear_q"); returns eager's output."""
    with torch.no_grad():
        eager = model(x)
        close(torch.compile(model, fullgraph=True, backend="aot_eager")(x), eager)
        exported = torch.export.export(model, (x,))
        assert any(op in str(n.target) for n in exported.graph.nodes), f"{op} is not in the exported graph"
        close(exported.module()(x), eager)
    return eager
