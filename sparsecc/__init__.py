"""sparsecc: 2:4 structured sparsity as a first-class tensor encoding.

`import sparsecc` stays cheap: no torch.cuda, no GPU modules. The runtime pieces (SparseTensor,
compress, ops, autotune) load on first use.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.3.0.dev0"
"""The release, kept equal to pyproject.toml's `version` by test_version.py: `X.Y.Z.devN` while
CHANGELOG.md's top entry is "X.Y.Z (unreleased)" (PEP 440 puts it after every earlier release
and before X.Y.Z itself), `X.Y.Z` once that entry is released."""

_LAZY = {
    "STAGES": ("sparsecc.compiler", "STAGES"),
    "CompileOptions": ("sparsecc.compiler", "CompileOptions"),
    "CompilationError": ("sparsecc.frontend.errors", "CompilationError"),
    "CompiledKernel": ("sparsecc.frontend.compile", "CompiledKernel"),
    "JITFunction": ("sparsecc.frontend.jit", "JITFunction"),
    "compile": ("sparsecc.frontend.compile", "compile"),
    "jit": ("sparsecc.frontend.jit", "jit"),
    "SparseTensor": ("sparsecc.runtime.sparse_tensor", "SparseTensor"),
    "QuantizedSparseTensor": ("sparsecc.runtime.quant_tensor", "QuantizedSparseTensor"),
    "compress": ("sparsecc.runtime.compress", "compress"),
    "prune_2to4": ("sparsecc.runtime.compress", "prune_2to4"),
    "prune_1to2": ("sparsecc.runtime.compress", "prune_1to2"),
    "autotune": ("sparsecc.runtime.autotune", "autotune"),
    "Config": ("sparsecc.runtime.autotune", "Config"),
    "ops": ("sparsecc.ops", None),
    "nn": ("sparsecc.nn", None),
    "sparsify_": ("sparsecc.nn", "sparsify_"),
    "from_semi_structured": ("sparsecc.nn.semi_structured", "from_semi_structured"),
    "to_semi_structured": ("sparsecc.nn.semi_structured", "to_semi_structured"),
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'sparsecc' has no attribute '{name}'")
    module_name, attr = _LAZY[name]
    module = importlib.import_module(module_name)
    value = module if attr is None else getattr(module, attr)
    globals()[name] = value
    return value


__all__ = [
    "STAGES",
    "__version__",
    "CompilationError",
    "CompileOptions",
    "CompiledKernel",
    "Config",
    "JITFunction",
    "QuantizedSparseTensor",
    "SparseTensor",
    "autotune",
    "compile",
    "compress",
    "from_semi_structured",
    "jit",
    "nn",
    "ops",
    "prune_1to2",
    "prune_2to4",
    "sparsify_",
    "to_semi_structured",
]
