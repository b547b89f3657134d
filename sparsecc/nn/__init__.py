"""torch modules with 2:4 sparse weights: `SparseLinear`, `sparsify_` (and the torch custom ops
`torch.ops.sparsecc.sparse_linear`, `torch.ops.sparsecc.sparse_linear_q` for quantized weights,
they call), and compressed-tensors checkpoints in and out (`load_compressed_tensors`,
`save_compressed_tensors`).

    sparsify_(model)                      # fp16/bf16 2:4 weights
    sparsify_(model, quant="w4g128")      # 4-bit codes, a scale per 128 input features
    parallelize_module(model, mesh, sparse_plan(plan))   # tensor parallelism (sparsecc.nn.parallel)
    load_compressed_tensors(path, model)  # an llm-compressor 2:4 checkpoint, as stored
"""

from sparsecc.nn.checkpoints import (
    CheckpointError,
    load_compressed_tensors,
    save_compressed_tensors,
)
from sparsecc.nn.linear import LAYER_DTYPES, SparseLinear, SparsifySkipWarning, sparsify_

__all__ = ["LAYER_DTYPES", "CheckpointError", "SparseLinear", "SparsifySkipWarning", "load_compressed_tensors",
           "save_compressed_tensors", "sparsify_"]

# Tensor parallelism (sparsecc.nn.parallel) loads on first use: it imports torch.distributed.tensor
# (~0.4 s), which a single-GPU user does not need, and which some torch builds lack.
_PARALLEL = ("FusedColwiseParallel", "SparseColwiseParallel", "SparseRowwiseParallel", "fuse_linears",
             "shard_fused_sparse_linear", "shard_sparse_linear", "sparse_plan")


def __getattr__(name: str):  # noqa: ANN202 - module __getattr__ (PEP 562)
    if name in _PARALLEL:
        from sparsecc.nn import parallel

        return getattr(parallel, name)
    raise AttributeError(f"module 'sparsecc.nn' has no attribute {name!r}")
