"""The XOR swizzle of shared-memory tiles: the one implementation of its arithmetic.

A tile whose rows start a multiple of 128 bytes apart puts a column of it in one bank of shared
memory; the swizzle spreads it by permuting groups of `vec` elements within each row with an
XOR that depends on the row:

    offset(row, col) = row * row_len + ((col // vec) ^ ((row // per_phase) % max_phase)) * vec
                       + col % vec

This is the `#ttg.shared<{vec, perPhase, maxPhase}>` layout (element units), and also the
hardware's: the 32/64/128-byte swizzle modes of TMA copies and of wgmma matrix descriptors are
the same formula in byte units with rows of W bytes, vec = 16 bytes, per_phase = 128 / W and
max_phase = W / 16 (`mode`), which is the hardware's `o ^ (((o >> 7) & (W/16 - 1)) << 4)` for a
byte offset o. `col_block` cuts the rows into `rows x col_block` sub-tiles stored one after the
other, each swizzled on its own (wgmma's MN-major canonical layout; a row of TMA boxes).

Its users: `SharedEncodingAttr.swizzled_offset` (dialects/ttg), the TMA box check
(`analysis/tma`, on numpy arrays: every element of a tile at once), `ptx_wgmma.swizzle_offset`
(bytes), and the lowering's `smem_offset`, which passes IR values whose `+ * // % ^` emit arith
ops. So the functions here use nothing but those operators (and compare only the static
parameters), in a fixed order: the IR built from them is the same on every run.

Layering: this module imports nothing (from sparsecc or elsewhere). It sits with the other
shared GPU models in `sparsecc.analysis`, but being a leaf it may also be imported by the
dialects, which are below `analysis` (test/python/test_imports.py ranks it with them and checks
that it stays a leaf). `sparsecc/analysis/__init__.py` imports nothing either, so the dialects
loading it pull in no other part of the compiler.

    >>> swizzled_offset(1, 0, 64, vec=8, per_phase=1, max_phase=8)   # row 1: group 0 ^ 1
    72
    >>> hardware_swizzle(3 * 128 + 16, 128)                           # chunk 1 of row 3 -> 2
    416
"""

from __future__ import annotations

from typing import Any

MODES = (128, 64, 32)
"""Row widths in bytes of the hardware swizzle modes (TMA and wgmma), widest first."""


def swizzled_offset(row: Any, col: Any, row_len: int, vec: int, per_phase: int, max_phase: int,
                    rows: int = 0, col_block: int = 0) -> Any:
    """Offset of element (row, col) of a row-major tile with rows of `row_len` elements under
    the XOR swizzle (vec, per_phase, max_phase); with `col_block`, the tile of `rows` rows is
    stored as `rows x col_block` sub-tiles one after the other. `row` and `col` may be ints,
    numpy arrays or any values with `+ * // % ^` (the static parameters are ints)."""
    base = None
    if col_block:
        base = (col // col_block) * (rows * col_block)
        col = col % col_block
        row_len = col_block
    if max_phase == 1:
        off = row * row_len + col
    else:
        phase = (row // per_phase) % max_phase
        group = (col // vec) ^ phase
        off = row * row_len + group * vec + col % vec
    return off if base is None else base + off


def mma_swizzle_params(row_len: int, elem_bytes: int) -> tuple[int, int, int]:
    """(vec, perPhase, maxPhase) of Triton's MMAv2 swizzle for rows of `row_len` elements:
    16-byte units XOR-ed by row so that 8 consecutive rows, read 16 bytes each (ldmatrix), fall
    in 8 different bank groups (`passes/sparse_gpu_encoding.py` explains the bank math).

        >>> mma_swizzle_params(64, 2)   # 128-byte rows: a new phase every row
        (8, 1, 8)
    """
    vec = max(1, min(16 // elem_bytes, row_len))
    per_phase = max(1, 128 // (row_len * elem_bytes))
    max_phase = max(1, min(max(1, 8 // per_phase), row_len // vec))
    return vec, per_phase, max_phase


def mode(width: int) -> tuple[int, int, int]:
    """(vec, per_phase, max_phase) in bytes of the hardware swizzle with rows of `width` bytes
    (128, 64, 32; 16 is "none": max_phase 1)."""
    return 16, max(1, 128 // width), max(1, width // 16)


def element_mode(width: int, esize: int) -> tuple[int, int, int]:
    """`mode(width)` in elements of `esize` bytes: the `#ttg.shared` parameters that store a
    tile exactly as the hardware swizzle of rows of `width` bytes does."""
    vec, per_phase, max_phase = mode(width)
    return vec // esize, per_phase, max_phase


def hardware_swizzle(offset: Any, width: int) -> Any:
    """Where byte `offset` of an unswizzled tile with rows of `width` bytes (8-row atoms aligned
    to 8 x width) lands under the hardware swizzle of that width (identity for 16: "none")."""
    return swizzled_offset(offset // width, offset % width, width, *mode(width))


def box_offset(row: Any, col: Any, width: int, rows: int, esize: int, swizzle: int) -> Any:
    """Byte offset at which TMA copies of `rows x width`-element boxes, laid side by side along
    the row (box j at byte j * rows * width * esize), put element (row, col) of the tile, with
    the hardware swizzle of `swizzle` bytes (0: none)."""
    row_bytes = width * esize
    params = mode(swizzle) if swizzle else (1, 1, 1)
    return swizzled_offset(row, col * esize, row_bytes, *params, rows=rows, col_block=row_bytes)


__all__ = ["MODES", "box_offset", "element_mode", "hardware_swizzle", "mode", "swizzled_offset"]
