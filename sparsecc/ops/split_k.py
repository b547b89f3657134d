"""Buffers of a split-K launch: fp32 partial tiles and the per-tile ticket counters.

A split-K kernel (`sparse_linear_splitk_kernel`) runs S programs per output tile; each writes its
partial tile, then takes a ticket (`tl.atomic_add(TICKETS + tile, 1, sem="acq_rel")`); the one
that draws S − 1 sums the partials and stores the result. Each launch gets counters of its own,
zeroed on its stream (a memset, about a microsecond in a CUDA graph): launches on several
streams, and CUDA graph captures and replays, never share them.

    >>> import torch
    >>> ticket_counters(6, torch.device("cpu")).tolist()
    [0, 0, 0, 0, 0, 0]
"""

from __future__ import annotations

import torch


def ticket_counters(count: int, device: torch.device) -> torch.Tensor:
    """`count` zeroed int32 ticket counters for one split-K launch on `device`."""
    return torch.zeros(count, dtype=torch.int32, device=device)


def partial_buffer(split_k: int, m: int, n: int, device: torch.device) -> torch.Tensor:
    """The fp32 partial tiles of one split-K launch: split_k × m × n, uninitialized (every
    element a program's tile covers is written before it is read)."""
    return torch.empty((split_k, m, n), dtype=torch.float32, device=device)


__all__ = ["partial_buffer", "ticket_counters"]
