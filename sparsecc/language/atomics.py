"""`tl.atomic_*`: read-modify-write of global memory, per element, returning the old values.

As in Triton: `pointer` is a scalar pointer or a tensor of pointers; `val` (and `mask`)
broadcast to its shape; masked-off elements touch no memory. `sem` is "acq_rel" (the default,
as in Triton: a lock taken with `atomic_cas` sees what its last holder wrote), "acquire",
"release" or "relaxed" (no ordering: counters, histograms); `scope` "gpu" (default) or "cta". A scalar atomic
is one per program. Element types: see each function; on the GPU they lower to PTX `atom`.

    @sparsecc.jit
    def col_max(X, Out, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        x = tl.load(X + offs, mask=offs < n, other=float("-inf"))
        tl.atomic_max(Out, tl.max(x, axis=0))
"""

from __future__ import annotations

from typing import Any

from sparsecc.language.core import builtin


@builtin
def atomic_max(pointer: Any, val: Any, mask: Any = None, sem: Any = None, scope: Any = None) -> Any:
    """`*pointer = max(*pointer, val)` (int32, int64, float32): `tl.atomic_max(Out, tile_max)`."""


@builtin
def atomic_min(pointer: Any, val: Any, mask: Any = None, sem: Any = None, scope: Any = None) -> Any:
    """`*pointer = min(*pointer, val)` (int32, int64, float32): `tl.atomic_min(Out + i, v, mask=m)`."""


@builtin
def atomic_and(pointer: Any, val: Any, mask: Any = None, sem: Any = None, scope: Any = None) -> Any:
    """`*pointer &= val` (int32, int64): `tl.atomic_and(Flags + i, ~bit)`."""


@builtin
def atomic_or(pointer: Any, val: Any, mask: Any = None, sem: Any = None, scope: Any = None) -> Any:
    """`*pointer |= val` (int32, int64): `tl.atomic_or(Flags + i, 1 << bit)`."""


@builtin
def atomic_xor(pointer: Any, val: Any, mask: Any = None, sem: Any = None, scope: Any = None) -> Any:
    """`*pointer ^= val` (int32, int64): `tl.atomic_xor(Parity + i, v)`."""


@builtin
def atomic_xchg(pointer: Any, val: Any, mask: Any = None, sem: Any = None, scope: Any = None) -> Any:
    """`*pointer = val`, returning the old value (int32, int64, float32): releasing a lock,
    `tl.atomic_xchg(Lock, 0)`."""


@builtin
def atomic_cas(pointer: Any, cmp: Any, val: Any, sem: Any = None, scope: Any = None) -> Any:
    """Where `*pointer == cmp` (bit for bit), `*pointer = val`; the old value either way (int16,
    float16, int32, float32, int64): taking a lock, `tl.atomic_cas(Lock, 0, 1) == 0`."""
