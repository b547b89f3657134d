"""Whether ptxas is here, for tests that assemble PTX (`needs_ptxas` skips them without it)."""

from __future__ import annotations

import pytest

from sparsecc.codegen import ptxas


def have_ptxas() -> bool:
    """True when `sparsecc.codegen.ptxas` finds a ptxas (CUDA toolkit or the `ptx` extra)."""
    try:
        ptxas.find_ptxas()
        return True
    except ptxas.ToolNotFoundError:
        return False


needs_ptxas = pytest.mark.skipif(not have_ptxas(), reason="no ptxas (CUDA toolkit or `pip install triton`)")
