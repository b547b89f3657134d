"""The default launch options, stated once: every layer that takes them (`CompileOptions`,
`sparsecc.compile`, `kernel[grid](...)`, the autotuner's `Config`, the ops' tile configs and
the passes' `num-warps` / `num-stages` / `num-ctas` options) names these constants, so a change
here changes them all (`test_defaults.py` checks that no other module writes them as literals).

    >>> from sparsecc import CompileOptions
    >>> from sparsecc.defaults import NUM_STAGES
    >>> CompileOptions(target="sm_90a").num_stages == NUM_STAGES
    True
"""

from __future__ import annotations

NUM_WARPS = 4
"""Warps per program (one warpgroup: the smallest tile wgmma runs on)."""
NUM_STAGES = 3
"""Slots of a pipelined K loop's shared-memory ring."""
NUM_CTAS = 1
"""CTAs per cluster: 1, or 2 for CTA pairs that share B tiles."""
MAX_NUMEL = 1 << 20
"""Most elements one tensor of a kernel may hold (Triton's TRITON_MAX_TENSOR_NUMEL): the
frontend's limit, and the IR parser's (`sparsecc.tools.diagnostics`)."""

MIN_MAXNREG, MAX_MAXNREG = 24, 255
"""The `maxnreg` caps (registers a thread) a kernel may ask of ptxas (`.maxnreg`; 255 is the
hardware's most)."""
