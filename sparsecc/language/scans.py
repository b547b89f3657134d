"""Scans, sorting and gathers of Triton's language (markers, as in `core`): `associative_scan`,
`cumsum`, `cumprod`, `gather`, `flip`, `sort`, `topk`, `bitonic_merge`, `histogram`,
`reduce_or` and `softmax` (issue 29)."""

from __future__ import annotations

from typing import Any

from sparsecc.language.core import builtin


@builtin
def associative_scan(input: Any, axis: Any, combine_fn: Any, reverse: bool = False) -> Any:
    """Inclusive scan of `input` (a tensor or a tuple of same-shape tensors) along `axis` by the
    @jit `combine_fn(a..., b...)` (the running result first); it must be associative. Example::

        @sparsecc.jit
        def add(a, b):
            return a + b

        c = tl.associative_scan(x, 0, add)  # tl.cumsum(x, 0)
    """


@builtin
def cumsum(input: Any, axis: Any = 0, reverse: bool = False, dtype: Any = None) -> Any:
    """Running sum along `axis` (ints narrower than 32 bits sum in int32 unless `dtype` is
    given): `c = tl.cumsum(x, 0)`, `x.cumsum(0, reverse=True)`."""


@builtin
def cumprod(input: Any, axis: Any = 0, reverse: bool = False) -> Any:
    """Running product along `axis` (bf16 in fp32, as in Triton): `p = tl.cumprod(x, 0)`."""


@builtin
def gather(src: Any, index: Any, axis: Any) -> Any:
    """`out[i...] = src[i... with i[axis] = index[i...]]` (torch.gather): the index has the
    source's rank and shape except along `axis`: `y = tl.gather(x, idx, 0)`."""


@builtin
def flip(x: Any, dim: Any = None) -> Any:
    """`x` reversed along `dim` (the last by default): `y = tl.flip(x, 0)`."""


@builtin
def sort(x: Any, dim: Any = None, descending: Any = 0) -> Any:
    """`x` sorted along `dim` (the last by default; a power-of-two length), a bitonic network:
    `s = tl.sort(x, descending=True)`."""


@builtin
def topk(x: Any, k: Any, dim: Any = None, descending: Any = True) -> Any:
    """The `k` largest (smallest when not `descending`) values along `dim` in sorted order; `k` a
    power of two: `t = tl.topk(x, 4)`."""


@builtin
def bitonic_merge(x: Any, dim: Any = None, descending: Any = 0) -> Any:
    """Sorts a bitonic sequence along `dim` (the last): the last stage of `sort`:
    `s = tl.bitonic_merge(tl.join(up, down).reshape(64))`-style uses."""


@builtin
def histogram(input: Any, num_bins: Any, mask: Any = None) -> Any:
    """Counts of each value 0..num_bins-1 in a 1-D int32 tensor (int32; values outside the bins
    and masked-off ones are dropped): `h = tl.histogram(x, 16, mask=m)`."""


@builtin
def reduce_or(input: Any, axis: Any, keep_dims: bool = False) -> Any:
    """Bitwise or of the integers along `axis`: `any_set = tl.reduce_or(flags, 0)`."""


@builtin
def softmax(x: Any, dim: Any = None, keep_dims: Any = None, ieee_rounding: Any = False) -> Any:
    """exp(x - max) / sum along `dim` (0 by default, as in Triton): `p = tl.softmax(x, 1)`."""


__all__ = ["associative_scan", "bitonic_merge", "cumprod", "cumsum", "flip", "gather", "histogram", "reduce_or",
           "softmax", "sort", "topk"]
