"""Element sizes of the scalar types a GPU kernel stores: what shared-memory offsets, TMA boxes
and vector widths are counted in.

    >>> from xdsl.dialects.builtin import f16
    >>> esize(f16)
    2
"""

from __future__ import annotations

from xdsl.ir import Attribute

from sparsecc.dialects import ptx


def esize(ty: Attribute) -> int:
    """Bytes of one element of scalar type `ty` (i1 counts as 0: it is never stored packed)."""
    return ptx.bit_width(ty) // 8


__all__ = ["esize"]
