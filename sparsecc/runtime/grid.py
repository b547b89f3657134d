"""Launch grids: the one check every launch path applies.

`kernel[grid](...)`, the CPU interpreter (`interpreter.run`) and the GPU launcher
(`launcher.launch`) all take their grid through `check_grid`, so a grid the GPU would refuse is
refused on the interpreter too, with the same message, and a float or bool extent is an error
rather than a silently truncated int.
"""

from __future__ import annotations

import operator
from typing import Any

__all__ = ["GRID_MAX", "check_grid"]

GRID_MAX = (2**31 - 1, 65535, 65535)
"""CUDA's largest grid extents along x, y and z (cudaDeviceProp.maxGridSize on every GPU since
sm_30)."""


def check_grid(grid: Any, kernel: str = "") -> tuple[int, int, int]:
    """`grid` (an int, or a tuple/list of 1 to 3 ints) as (x, y, z), missing extents 1; errors
    start with `kernel` when given.

    An extent must be an int (numpy and torch integer scalars pass `operator.index`; a float or
    a bool is a TypeError, never truncated), non-negative and within `GRID_MAX` (ValueError).
    A zero extent is allowed: the launch does nothing, as in Triton (`cdiv(0, BLOCK)` of an
    empty input).

        >>> check_grid((4, 2))
        (4, 2, 1)
        >>> check_grid((1.9,))
        Traceback (most recent call last):
        ...
        TypeError: grid extent x must be an int, got float 1.9 (grid (1.9,))
    """
    who = f"{kernel}: " if kernel else ""
    dims = (grid,) if isinstance(grid, int) and not isinstance(grid, bool) else grid
    if not isinstance(dims, tuple | list) or not 1 <= len(dims) <= 3:
        raise TypeError(f"{who}grid must be a tuple of 1 to 3 ints (or a callable returning one), got {grid!r}")
    out = [1, 1, 1]
    for i, g in enumerate(dims):
        axis = "xyz"[i]
        if isinstance(g, bool | float):
            raise TypeError(f"{who}grid extent {axis} must be an int, got {type(g).__name__} {g!r} (grid {grid!r})")
        try:
            v = operator.index(g)
        except TypeError:
            raise TypeError(f"{who}grid extent {axis} must be an int, got {type(g).__name__} {g!r} "
                            f"(grid {grid!r})") from None
        if v < 0:
            raise ValueError(f"{who}grid extent {axis} must be non-negative, got {v} (grid {grid!r})")
        if v > GRID_MAX[i]:
            raise ValueError(f"{who}grid extent {axis} = {v} exceeds CUDA's limit of {GRID_MAX[i]} "
                             f"(x <= 2**31-1, y and z <= 65535; grid {grid!r})")
        out[i] = v
    return out[0], out[1], out[2]
