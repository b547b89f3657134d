"""Quantization schemes of the composed formats (`formats.quant`): `w4g128`, `w8c`, `w4g64z`.

Kept apart from `quant.py` so that `base.SparseFormat` can name the type without importing
the format definitions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# [0-9], not \d: `\d` and int() also take other scripts' digits (w4g١٢٨), which would name a
# format whose printed IR does not parse back.
_SCHEME = re.compile(r"w(?P<bits>[0-9]+)(?:g(?P<group>[0-9]+)|(?P<channel>c))(?P<zero>z?)")


class QuantSchemeError(ValueError):
    """A quantization scheme that cannot be spelled or stored (`w3g128`, `w4g100`)."""


@dataclass(frozen=True)
class QuantScheme:
    """How the kept values of a composed format are quantized (see the module docstring).

        >>> s = QuantScheme.parse("w4g128")
        >>> s.bits, s.group, s.zero_point, s.codes_per_byte, s.fixed_zero
        (4, 128, False, 2, 8)
    """

    bits: int
    group: int | None
    """Dense columns per scale; None: one scale per row."""
    zero_point: bool

    @classmethod
    def parse(cls, text: str) -> QuantScheme:
        """The scheme spelled `text` ("w4g128", "w8c", "w4g64z"); QuantSchemeError otherwise."""
        m = _SCHEME.fullmatch(text)
        if m is None:
            raise QuantSchemeError(
                f'unknown quantization scheme "{text}": expected w<bits>g<group>[z] or '
                'w<bits>c[z], e.g. "w4g128", "w8g64z", "w4c"')
        bits = int(m["bits"])
        if bits not in (4, 8):
            raise QuantSchemeError(f'quantization scheme "{text}": bits must be 4 or 8, got {bits}')
        group = int(m["group"]) if m["group"] is not None else None
        if group is not None and (group < 16 or group & (group - 1)):
            raise QuantSchemeError(f'quantization scheme "{text}": the group size must be a power of two '
                                   f">= 16 (a kernel's BLOCK_K, a power of two, covers whole groups; a "
                                   f"metadata word covers 16 columns), got {group}")
        return cls(bits, group, bool(m["zero"]))

    @property
    def spec(self) -> str:
        """The scheme's spelling: `w4g128`, `w8c`, `w4g64z`."""
        where = f"g{self.group}" if self.group is not None else "c"
        return f"w{self.bits}{where}{'z' if self.zero_point else ''}"

    @property
    def codes_per_byte(self) -> int:
        """Codes one byte of `values` holds (2 for 4 bits)."""
        return 8 // self.bits

    @property
    def max_code(self) -> int:
        """The largest code (15 for 4 bits)."""
        return (1 << self.bits) - 1

    @property
    def fixed_zero(self) -> int:
        """The zero point of the symmetric scheme: codes are offset binary (8 for 4 bits)."""
        return 1 << (self.bits - 1)

    def check_tile(self, bk: int) -> str | None:
        """Why a dense tile BK columns wide cannot be dequantized (None: it can)."""
        if self.group is not None and bk % self.group:
            return (f"a {self.spec} tile must cover whole quantization groups: BLOCK_K must be a "
                    f"multiple of {self.group}, got {bk}")
        return None
