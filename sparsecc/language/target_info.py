"""`tl.target_info`: compile-time questions about the GPU a kernel is compiled for, as in
Triton, so that a kernel can pick an instruction by architecture:

    if tl.target_info.cuda_capability_geq(9, 0):
        y = tl.inline_asm_elementwise(...)   # sm_90 PTX
    else:
        y = portable(x)

Each answers a Python bool while the kernel compiles. On the CPU interpreter there is no target
(Triton's `current_target()` is None): every question answers False, so the portable branch runs.
"""

from __future__ import annotations

from typing import Any

from sparsecc.language.core import builtin

__all__ = ["current_target", "cuda_capability_geq", "is_cuda", "is_hip", "is_hip_cdna3", "is_hip_cdna4",
           "is_hip_gfx1250"]


@builtin
def current_target() -> Any:
    """The target being compiled for, as a string ("sm_90a", "sm_80"), or None on the interpreter."""


@builtin
def is_cuda() -> Any:
    """True when compiling for an NVIDIA GPU (always, except on the interpreter)."""


@builtin
def cuda_capability_geq(major: Any, minor: Any = 0) -> Any:
    """True when the target's compute capability is at least `major.minor`:
    `tl.target_info.cuda_capability_geq(9, 0)` on sm_90a."""


@builtin
def is_hip() -> Any:
    """False: sparsecc compiles for NVIDIA GPUs only."""


@builtin
def is_hip_cdna3() -> Any:
    """False (AMD only)."""


@builtin
def is_hip_cdna4() -> Any:
    """False (AMD only)."""


@builtin
def is_hip_gfx1250() -> Any:
    """False (AMD only)."""
