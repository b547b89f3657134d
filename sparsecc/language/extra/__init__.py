"""`tl.extra`: the vendor namespaces kernels import from (`tl.extra.cuda.libdevice`)."""

from sparsecc.language.extra import cuda

__all__ = ["cuda"]
