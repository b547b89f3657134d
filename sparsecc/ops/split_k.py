"""Buffers of a split-K launch: fp32 partial tiles and the per-tile ticket counters.

A split-K kernel (`sparse_linear_splitk_kernel`) runs S programs per output tile; each writes its
partial tile, then takes a ticket (`tl.atomic_add(TICKETS + tile, 1, sem="acq_rel")`); the one
that draws S − 1 sums the partials and stores the result, then sets the counter back to 0. The
counters are therefore zero before and after every launch, and one zeroed buffer per device and
stream serves every launch on that stream (launches on one stream never overlap; two streams
get two buffers). The buffer is made when a launch first needs more counters than it holds;
inside CUDA graph capture, a buffer that is too small is not replaced (a capture must not free
memory the graph may use) but a fresh zeroed one is made for that launch alone.

    >>> import torch
    >>> ticket_counters(6, torch.device("cpu")).tolist()
    [0, 0, 0, 0, 0, 0]
"""

from __future__ import annotations

import torch

_TICKETS: dict[tuple[torch.device, int], torch.Tensor] = {}


def _stream_key(device: torch.device) -> tuple[torch.device, int]:
    if device.type == "cuda":
        return device, torch.cuda.current_stream(device).cuda_stream
    return device, 0


def ticket_counters(count: int, device: torch.device) -> torch.Tensor:
    """At least `count` zeroed int32 counters for split-K launches on `device`'s current stream
    (the kernel leaves them zeroed)."""
    key = _stream_key(device)
    held = _TICKETS.get(key)
    if held is not None and held.numel() >= count:
        return held
    fresh = torch.zeros(max(count, 1024), dtype=torch.int32, device=device)
    if device.type == "cuda" and torch.cuda.is_current_stream_capturing():
        return fresh
    _TICKETS[key] = fresh
    return fresh


def partial_buffer(split_k: int, m: int, n: int, device: torch.device) -> torch.Tensor:
    """The fp32 partial tiles of one split-K launch: split_k × m × n, uninitialized (every
    element a program's tile covers is written before it is read)."""
    return torch.empty((split_k, m, n), dtype=torch.float32, device=device)


__all__ = ["partial_buffer", "ticket_counters"]
