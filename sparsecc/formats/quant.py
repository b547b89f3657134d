"""Quantized 2:4: NV24 whose kept values are 4- or 8-bit codes with a scale per group along K.

A composed format is named `BASE.SCHEME`, e.g. `NV24.w4g128`: the 2:4 structure (and metadata)
of `BASE` with the kept values stored as integer codes. The scheme reads

    w<bits>g<G>[z]    bits 4 or 8; one scale per G dense columns of a row (G a power of two >= 16)
    w<bits>c[z]       one scale per row (per output channel)

and `z` adds a zero point per scale (asymmetric); without it the codes are offset binary with a
fixed zero point of 2^(bits-1) (symmetric). The logical element type, the one a kernel computes
with and `#tt.sparse<"NV24.w4g128">` tensors hold, is fp16 or bf16. For a dense M x K matrix:

* `values` is i8, M x K/4 for 4 bits (kept value 2j in the low nibble of byte j, 2j + 1 in the
  high one) and M x K/2 for 8 bits; a code is unsigned, 0 .. 2^bits - 1;
* `meta` is NV24's metadata, unchanged (`formats.nv24`);
* `scales` has the logical element type, M x K/G (M x 1 per channel): the scale of dense
  columns [G*s, G*(s+1)) of a row, which hold that row's kept values [G/2*s, G/2*(s+1));
* `zeros` (asymmetric only) has the shape and type of `scales` and holds integral zero points.

A kept value is `(code - zero) * scale`, the product rounded once to the logical type (exact: the
difference is a small integer). The decomposed dot dequantizes its values tile in the IR
(`tt.dequantize`), so a BLOCK_K tile must cover whole groups: a multiple of G.
"""

from __future__ import annotations

import dataclasses

from sparsecc.formats.base import ArrayMap, SparseFormat
from sparsecc.formats.elements import BF16, FP16, I8
from sparsecc.formats.scheme import QuantScheme, QuantSchemeError

__all__ = ["QuantScheme", "QuantSchemeError", "compose"]

def compose(base: SparseFormat, scheme: QuantScheme) -> SparseFormat:
    """`base` with its kept values quantized by `scheme`: the format `NV24.w4g128`.

        >>> from sparsecc.formats.nv24 import NV24
        >>> f = compose(NV24, QuantScheme.parse("w4g128"))
        >>> f.name, [a.suffix for a in f.arrays], f.values.col_div
        ('NV24.w4g128', ['values', 'meta', 'scales'], 4)
    """
    kept_per_byte = scheme.codes_per_byte
    dense_per_kept = base.group.size // base.group.kept
    values = ArrayMap(suffix="values", element=I8, row_div=1,
                      col_div=dense_per_kept * kept_per_byte,
                      row_stride_div=dense_per_kept * kept_per_byte, masked_fill=0)
    group = scheme.group
    # A masked-off scale of 0 dequantizes every code it covers to 0, whatever the code.
    scales = ArrayMap(suffix="scales", element=None, row_div=1, col_div=group or 0,
                      row_stride_div=group or 0, masked_fill=0)
    extra = (scales,)
    if scheme.zero_point:
        extra += (dataclasses.replace(scales, suffix="zeros"),)
    return dataclasses.replace(
        base,
        name=f"{base.name}.{scheme.spec}",
        summary=f"{base.summary}, kept values as {scheme.bits}-bit codes with "
                + (f"a scale per {group} columns" if group else "a scale per row")
                + (" and a zero point" if scheme.zero_point else ""),
        element_types=(FP16, BF16),
        element_kind="a 16-bit floating-point element type",
        runtime_element_types=(FP16, BF16),
        values=values,
        extra=extra,
        quant=scheme,
        instructions=base.instructions[:2],
    )
