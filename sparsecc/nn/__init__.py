"""torch modules with 2:4 sparse weights: `SparseLinear`, `sparsify_` (and the torch custom ops
`torch.ops.sparsecc.sparse_linear`, `torch.ops.sparsecc.sparse_linear_q` for quantized weights,
they call).

    sparsify_(model)                      # fp16/bf16 2:4 weights
    sparsify_(model, quant="w4g128")      # 4-bit codes, a scale per 128 input features
"""

from sparsecc.nn.linear import LAYER_DTYPES, SparseLinear, SparsifySkipWarning, sparsify_

__all__ = ["LAYER_DTYPES", "SparseLinear", "SparsifySkipWarning", "sparsify_"]
