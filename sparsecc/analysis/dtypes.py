"""Element sizes of the scalar types a GPU kernel stores: what shared-memory offsets, TMA boxes
and vector widths are counted in.

    >>> from xdsl.dialects.builtin import f16
    >>> esize(f16)
    2
"""

from __future__ import annotations

from xdsl.dialects.builtin import i1
from xdsl.ir import Attribute

from sparsecc.dialects import ptx


def esize(ty: Attribute) -> int:
    """Bytes of one element of scalar type `ty` (i1 counts as 0: it is never stored packed)."""
    return ptx.bit_width(ty) // 8


def pointee_bytes(ty: Attribute) -> int:
    """Bytes between consecutive elements behind a `!tt.ptr<ty>` in global memory: `esize`, but
    an i1 takes one byte there (a `torch.bool` is a 0/1 byte), so `X + offs` through a `*i1`
    pointer moves `offs` bytes.

        >>> pointee_bytes(i1), esize(i1)
        (1, 0)
    """
    return 1 if ty == i1 else esize(ty)


__all__ = ["esize", "pointee_bytes"]
