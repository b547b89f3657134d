"""Compiler switches read from the environment, for A/B runs on the GPU (bench/quick_mm.py).

Each switch has one name and one default here; the modules that act on one read it once at
import (`enabled`) into a constant of their own (tests patch that constant), and the disk cache
keys every compile on the environment values of all of them (`NAMES`), so kernels built with
different switches never share a cache entry.
"""

from __future__ import annotations

import os

DEFAULTS: dict[str, bool] = {
    "SPARSECC_TMA": True,  # TMA copies + mbarriers for wgmma K loops (compiler.TMA_PIPELINE)
    "SPARSECC_WARP_SPECIALIZE": True,  # a producer warp for TMA kernels (lower.WARP_SPECIALIZE)
    "SPARSECC_MBARRIERS": False,  # mbarriers for cp.async wgmma loops too (compiler.MBARRIER_PIPELINE)
    "SPARSECC_WGMMA_UNROLL": False,  # unroll wgmma K loops by two (lower.UNROLL_WGMMA_LOOPS)
    "SPARSECC_WGMMA_A_SMEM": False,  # A through a descriptor outside TMA kernels (lower_dot)
}
NAMES = tuple(DEFAULTS)


def enabled(name: str) -> bool:
    """The switch's value: its default when unset or empty, else off for 0/false/off/no."""
    raw = os.environ.get(name, "").strip().lower()
    if not raw:
        return DEFAULTS[name]
    return raw not in ("0", "false", "off", "no")
