"""`tl.extra.cuda`: `libdevice`, the CUDA math names kernels call (mapped onto sparsecc's math)."""

from sparsecc.language.extra.cuda import libdevice

__all__ = ["libdevice"]
