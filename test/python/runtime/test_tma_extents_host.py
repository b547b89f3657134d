"""The host side of tma_extents (sparsecc.analysis.tma_extents): what an allocation holds from
a tensor's address, the `rows` term of a tensor-map recipe, and the guards a launch must pass."""

from __future__ import annotations

import pytest
import torch

from sparsecc.analysis.tma import allocations_of, arguments_of, evaluate
from sparsecc.runtime.tensor_map import TensorMapError, available_elements, check_guards


def test_available_elements_counts_to_the_end_of_the_storage_not_the_view():
    buf = torch.empty(1000, dtype=torch.float16)
    assert available_elements(buf) == 1000
    assert available_elements(buf[100:200]) == 900  # a view reads on to its storage's end
    assert available_elements(buf.view(10, 100)[3]) == 700
    assert available_elements(torch.empty(7, 16, dtype=torch.int16)) == 112


@pytest.mark.parametrize("avail,rows", [(4096 * 10, 10), (4096 * 9 + 999, 9), (4096 * 9 + 1000, 10), (500, 1)])
def test_rows_term_counts_the_rows_the_allocation_holds_whole(avail, rows):
    """Rows of `cols` = 1000 elements, 4096 apart: a last row with its 1000 columns inside the
    allocation counts, one cut short does not (a too-small allocation still gives one row: a
    tensor map needs a positive extent, and the kernel reads past such an allocation anyway)."""
    expr = ["rows", 0, ["arg", 1], ["const", 1000]]
    assert evaluate(expr, [0, 4096], {0: avail}) == rows
    assert arguments_of(expr) == {0, 1} and allocations_of(expr) == {0}
    assert allocations_of(["add", ["arg", 0], ["const", 1]]) == set()


def test_rows_term_without_the_allocation_size_is_an_error():
    with pytest.raises(ValueError, match="size of argument 0's allocation"):
        evaluate(["rows", 0, ["const", 8], ["const", 8]], [0])


def test_guards_refuse_a_k_loop_that_reads_past_a_row():
    recipe = {"arg": 0, "guards": [[["const", 0], ["arg", 2]], [["arg", 1], ["arg", 3]]]}
    check_guards(recipe, [0, 4096, 0, 4096])
    with pytest.raises(TensorMapError, match=r"argument 'w'.*4160 <= 4096.*tma_extents=False"):
        check_guards(recipe, [0, 4160, 0, 4096], None, "k", ["w"])
    with pytest.raises(TensorMapError, match="0 <= -64"):
        check_guards(recipe, [0, 64, -64, 4096], None, "k", ["w"])
