"""torch modules with 2:4 sparse weights: `SparseLinear`, `sparsify_` (and the torch custom op
`torch.ops.sparsecc.sparse_linear` they call)."""

from sparsecc.nn.linear import SparseLinear, sparsify_

__all__ = ["SparseLinear", "sparsify_"]
