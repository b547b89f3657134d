"""Library ops built on `@sparsecc.jit` kernels (`sparsecc.ops.sparse_mm`, `sparsecc.ops.sparse_linear`,
`sparsecc.ops.sparse_glu`)."""

from sparsecc.ops.linear_config import LinearConfig
from sparsecc.ops.sparse_glu import sparse_swiglu
from sparsecc.ops.sparse_linear import quantized_linear_config, sparse_linear, sparse_linear_kernel
from sparsecc.ops.sparse_mm import MMConfig, default_config, sparse_mm, sparse_mm_kernel

__all__ = ["LinearConfig", "MMConfig", "default_config", "quantized_linear_config", "sparse_linear",
           "sparse_linear_kernel", "sparse_mm", "sparse_mm_kernel", "sparse_swiglu"]
