"""Fixtures shared by the torch-layer tests."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture
def poisoned(monkeypatch):
    """Interpret kernels, with every floating-point torch.empty (outputs, split-K partial tiles,
    scratch) filled with NaN: an element the kernel does not write, or a buffer read before it is
    written, shows as NaN."""
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    empty = torch.empty

    def nan_empty(*args, **kwargs):
        t = empty(*args, **kwargs)
        if t.is_floating_point():
            t.fill_(float("nan"))
        return t

    monkeypatch.setattr(torch, "empty", nan_empty)
