"""Library ops built on `@sparsecc.jit` kernels (`sparsecc.ops.sparse_mm`)."""

from sparsecc.ops.sparse_mm import MMConfig, default_config, sparse_mm, sparse_mm_kernel

__all__ = ["MMConfig", "default_config", "sparse_mm", "sparse_mm_kernel"]
