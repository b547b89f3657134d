"""sparsecc.analysis.swizzle: the one XOR-swizzle implementation agrees with the hardware's bit
formula, with Triton's element formula, on ints and numpy arrays, and builds the same IR."""

from __future__ import annotations

import numpy as np
import pytest

from sparsecc.analysis import swizzle
from sparsecc.dialects.ttg import SharedEncodingAttr


def _triton(row: int, col: int, row_len: int, vec: int, per_phase: int, max_phase: int) -> int:
    return row * row_len + ((col // vec) ^ ((row // per_phase) % max_phase)) * vec + col % vec


@pytest.mark.parametrize("width", [16, 32, 64, 128])
def test_hardware_swizzle_is_the_bit_formula(width):
    """o ^ (((o >> 7) & (W/16 - 1)) << 4): the PTX ISA's 32/64/128-byte swizzle modes."""
    chunks = width // 16
    for o in range(0, 64 * width):
        assert swizzle.hardware_swizzle(o, width) == o ^ (((o >> 7) & (chunks - 1)) << 4)


@pytest.mark.parametrize("params", [(8, 1, 8), (8, 2, 4), (4, 4, 2), (1, 1, 1), (8, 1, 4)])
def test_element_formula_and_permutation(params):
    vec, per_phase, max_phase = params
    row_len = 64
    offs = [swizzle.swizzled_offset(r, c, row_len, vec, per_phase, max_phase) for r in range(32) for c in range(row_len)]
    assert offs == [_triton(r, c, row_len, vec, per_phase, max_phase) for r in range(32) for c in range(row_len)]
    assert sorted(offs) == list(range(32 * row_len))


def test_col_block_stores_sub_tiles_one_after_the_other():
    rows, row_len, cb = 16, 128, 32
    off = swizzle.swizzled_offset(5, 2 * cb + 9, row_len, 8, 2, 4, rows=rows, col_block=cb)
    assert off == 2 * rows * cb + _triton(5, 9, cb, 8, 2, 4)


def test_numpy_arrays_match_ints():
    r, c = np.meshgrid(np.arange(64), np.arange(128), indexing="ij")
    enc = SharedEncodingAttr(8, 1, 8, (1, 0), col_block=64)
    arr = enc.swizzled_offset(r, c, 128, 64)
    assert arr.dtype.kind == "i"
    assert all(arr[i, j] == enc.swizzled_offset(i, j, 128, 64) for i in range(64) for j in range(128))


@pytest.mark.parametrize("esize", [1, 2, 4])
@pytest.mark.parametrize("width", swizzle.MODES)
def test_element_mode_stores_like_the_hardware(width, esize):
    """A `#ttg.shared` tile with `element_mode` parameters and rows of `width` bytes puts every
    element where the hardware swizzle puts its bytes."""
    vec, per_phase, max_phase = swizzle.element_mode(width, esize)
    cols = width // esize
    for r in range(16):
        for c in range(cols):
            elem = swizzle.swizzled_offset(r, c, cols, vec, per_phase, max_phase)
            assert elem * esize == swizzle.hardware_swizzle(r * width + c * esize, width)


def test_box_offset_is_boxes_of_swizzled_rows():
    """TMA boxes of 64 x 64 halves (128-byte rows) side by side: element (r, c) of box j."""
    rows, width, esize = 64, 64, 2
    for r in (0, 3, 17):
        for c in (0, 5, 64 + 9, 128 + 63):
            box, cc = divmod(c, width)
            want = box * rows * width * esize + swizzle.hardware_swizzle(r * 128 + cc * esize, 128)
            assert swizzle.box_offset(r, c, width, rows, esize, 128) == want
    assert swizzle.box_offset(3, 70, 64, rows, esize, 0) == 1 * rows * 128 + 3 * 128 + 6 * 2


class _Rec:
    """A value that records the operations applied to it (as the lowering's IR values do)."""

    log: list[str] = []

    def __init__(self, name: str):
        self.name = name

    def _op(self, op: str, other) -> _Rec:
        out = _Rec(f"({self.name} {op} {getattr(other, 'name', other)})")
        _Rec.log.append(out.name)
        return out

    def __add__(self, o):
        return self._op("+", o)

    def __mul__(self, o):
        return self._op("*", o)

    def __floordiv__(self, o):
        return self._op("//", o)

    def __mod__(self, o):
        return self._op("%", o)

    def __xor__(self, o):
        return self._op("^", o)


def test_symbolic_values_see_a_fixed_order_of_operations():
    """The lowering builds its IR through these operators: the order is part of the PTX."""
    _Rec.log = []
    swizzle.swizzled_offset(_Rec("r"), _Rec("c"), 64, 8, 1, 8, rows=32, col_block=64)
    assert _Rec.log == ["(c // 64)", "((c // 64) * 2048)", "(c % 64)", "(r // 1)", "((r // 1) % 8)",
                        "((c % 64) // 8)", "(((c % 64) // 8) ^ ((r // 1) % 8))", "(r * 64)",
                        "((((c % 64) // 8) ^ ((r // 1) % 8)) * 8)",
                        "((r * 64) + ((((c % 64) // 8) ^ ((r // 1) % 8)) * 8))", "((c % 64) % 8)",
                        "(((r * 64) + ((((c % 64) // 8) ^ ((r // 1) % 8)) * 8)) + ((c % 64) % 8))",
                        "(((c // 64) * 2048) + (((r * 64) + ((((c % 64) // 8) ^ ((r // 1) % 8)) * 8)) + ((c % 64) % 8)))"]
