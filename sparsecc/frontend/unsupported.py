"""Why some `triton.language` names are not in sparsecc: the located error for such a name
(`ast_to_ttir._unsupported_name`) says it after naming it.

    WHY_NOT["tl.float8e4b8"]   # "AMD's e4m3 fnuz fp8 ..."
"""

from __future__ import annotations

WHY_NOT: dict[str, str] = {
    "tl.float8e4b15": ("Triton's software fp8 for pre-sm_89 GPUs (4 exponent bits, bias 15), which no NVIDIA "
                       "instruction converts; use tl.float8e4nv (e4m3), the sm_89+ hardware format"),
    "tl.float8e4b8": ("AMD's e4m3 'fnuz' fp8 (bias 8, no negative zero), a format NVIDIA GPUs do not have (Triton "
                      "refuses it on NVIDIA too); use tl.float8e4nv"),
    "tl.float8e5b16": ("AMD's e5m2 'fnuz' fp8 (bias 16, no negative zero), a format NVIDIA GPUs do not have "
                       "(Triton refuses it on NVIDIA too); use tl.float8e5"),
}
"""`tl.<name>` -> why sparsecc does not have it."""
