"""The parity benchmark's small shapes as a GPU regression guard (bench/parity.py --small):
every kernel compiled by Triton and by sparsecc from the one source, checked against torch on
random data (NaN-poisoned outputs), then timed; the table with the ratios is printed (`-s`).
Speed is not asserted yet: correctness is, and that no kernel but the pending ones is refused."""

from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "bench"))

pytest.importorskip("triton")

import parity  # noqa: E402


@pytest.mark.gpu
@pytest.mark.parametrize("case", parity.cases(), ids=lambda c: c.name)
def test_parity_small_shape(case):
    import torch

    res = parity.run_case(case, case.shapes[0])
    print("\n" + parity.table([res], torch.cuda.get_device_name()))
    assert res.triton_ms, f"Triton side failed: {res.triton_note}"
    assert not res.sparsecc_note.startswith("WRONG"), res.sparsecc_note
    if case.name not in parity.PENDING:
        assert res.sparsecc_ms, f"sparsecc side failed: {res.sparsecc_note}"
