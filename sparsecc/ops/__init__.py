"""Library ops built on `@sparsecc.jit` kernels (`sparsecc.ops.sparse_mm`)."""

from sparsecc.ops.sparse_mm import default_config, sparse_mm, sparse_mm_kernel

__all__ = ["default_config", "sparse_mm", "sparse_mm_kernel"]
