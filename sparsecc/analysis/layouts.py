"""Which thread holds which tensor element: the per-thread register maps of ttg layouts.

A distributed layout for a given shape assigns every thread (warp w, lane l) a list of
registers; register r of that thread holds element

    coord[d] = (base[d](w, l) + regs[r][d]) mod shape[d]        (mod only where `wrap[d]`)

`base[d]` is a sum of terms `((x // div) % mod) * mul` with x the lane or the warp id, so the
lowering computes it once per kernel from %tid.x; `regs[r]` are compile-time constants. The
`mod shape` models Triton's replication when the layout's CTA tile is larger than the tensor.

Layouts (upstream Triton semantics unless said otherwise):

- `#ttg.blocked`: lane and warp ids are delinearised along `order` (order[0] fastest); a thread
  owns `sizePerThread` contiguous elements; the CTA tile repeats over larger tensors.
  Registers enumerate repetitions (outer) and the sizePerThread block (inner), each with
  order[0] fastest, so a thread's contiguous run along order[0] is consecutive registers.
- `#ttg.slice<{dim, parent}>`: the parent's registers over the shape with a 1 inserted at
  `dim`, with `dim` dropped (so `tt.expand_dims` is the identity on register lists).
- `#ttg.mma` (m16n8 accumulators, v2): warp w sits at (wm, wn) = (w // wN % wM, w % wN);
  with g = lane // 4, t = lane % 4, each warp tile (i, j) holds
  c0 = (16*(i*wM + wm) + g, 8*(j*wN + wn) + 2t), c1 = same row, col + 1, c2/c3 = row + 8.
  Registers: for i (rows of tiles), for j (cols of tiles): c0, c1, c2, c3.

Dot-operand fragments (`#ttg.dot_op`) are not element lists: the lowering keeps them as
packed b32 registers keyed by (tile, k-step). PTX ISA "Matrix fragments for sparse
mma.m16n8k32 with .f16/.bf16" (and mma.m16n8k16), g = lane >> 2, t = lane % 4:

- A values (16 x 16 compressed halves of a 16 x 32 sparse tile), 4 b32 registers:
  a0 = V[g][2t:2t+2], a1 = V[g+8][2t:2t+2], a2 = V[g][2t+8:2t+10], a3 = V[g+8][2t+8:2t+10]
  (= ldmatrix.x4 of the quadrants (rows 0-7, cols 0-7), (8-15, 0-7), (0-7, 8-15), (8-15, 8-15)).
  Dense m16n8k16 A has the same register layout on a 16 x 16 dense tile.
- B (32 x 8, K x N): 4 b32, b[j] = {B[8j+2t][g], B[8j+2t+1][g]} (dense k16: b0, b1 of a 16 x 8)
  = ldmatrix.x4.trans of the four 8 x 8 K-row blocks of a row-major (K x N) tile.
- C/D (16 x 8 f32): c0 = C[g][2t], c1 = C[g][2t+1], c2 = C[g+8][2t], c3 = C[g+8][2t+1].
- Metadata: one b32 per thread; with sparsity selector s only the lanes t = 2s, 2s+1 of every
  quad supply it; lane t (h = t % 2) holds the 16-bit words of 16-column half h of the
  16 x 32 tile: bits [15:0] = row g, bits [31:16] = row g + 8 (2 bits per kept element, the
  4-column group j of the half at bits 4j..4j+3, smaller index in the low 2 bits).
  (This is the layout XLA's Triton sparse lowering uses; the hardware test in
  test/python/codegen/test_gpu_lower.py checks it end to end.)
  In the NV24 tile (i16, row r = 16-row block, word 16c + m for 16-column chunk c and row
  m), the 64 words [64q, 64q + 64) of block row r viewed as an 8 x 8 b16 matrix
  (row R = 2c' + m // 8 for chunk c = 4q + c', col m % 8) loaded with ldmatrix.trans give
  lane (g, t) = {M[2t][g], M[2t+1][g]} = {(row g, chunk 4q+t), (row g+8, chunk 4q+t)}: the
  metadata register of k-step 2q with selector 0 (t = 0, 1) and of k-step 2q+1 with
  selector 1 (t = 2, 3) at once (seed 003's trick), straight from the row-major NV24 layout.

Shared memory (`#ttg.shared<{vec, perPhase, maxPhase, order=[1, 0]}>`): element (row, col) of
a row-major tile with rows of L elements is at
    row*L + ((col // vec) ^ ((row // perPhase) % maxPhase))*vec + col % vec
(`SharedEncodingAttr.swizzled_offset`, computed by `sparsecc.analysis.swizzle`; `stored_coords`
gives (row, col) of a logical element). `metaPack = 1` is accepted and stored exactly like plain
row-major (it requires vec = perPhase = maxPhase = 1): the lowering reads NV24
metadata with ldmatrix.trans (above), which needs no permutation.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import product
from typing import Any

from xdsl.ir import Attribute

from sparsecc.dialects.ttg import (
    BlockedEncodingAttr,
    MmaEncodingAttr,
    SharedEncodingAttr,
    SliceEncodingAttr,
)

WARP = 32


class LayoutError(Exception):
    """A layout/shape combination the lowering does not support."""


@dataclass(frozen=True)
class Term:
    """`((x // div) % mod) * mul` where x is the lane id ("lane") or warp id ("warp")."""

    src: str
    div: int
    mod: int
    mul: int

    def eval(self, lane: int, warp: int) -> int:
        x = lane if self.src == "lane" else warp
        return ((x // self.div) % self.mod) * self.mul


@dataclass(frozen=True)
class DistLayout:
    """Per-thread element map of a distributed layout over one shape (see module docstring)."""

    shape: tuple[int, ...]
    base: tuple[tuple[Term, ...], ...]
    regs: tuple[tuple[int, ...], ...]
    wrap: tuple[bool, ...]

    def coord(self, warp: int, lane: int, r: int) -> tuple[int, ...]:
        """The element register r of thread (warp, lane) holds (Python evaluation)."""
        out = []
        for d, terms in enumerate(self.base):
            v = sum(t.eval(lane, warp) for t in terms) + self.regs[r][d]
            out.append(v % self.shape[d] if self.wrap[d] else v)
        return tuple(out)

    @property
    def num_regs(self) -> int:
        return len(self.regs)


def _check_pow2(shape: tuple[int, ...], what: str) -> None:
    for s in shape:
        if s < 1 or s & (s - 1):
            raise LayoutError(f"{what}: tensor dims must be powers of two, got shape {list(shape)}")


def blocked(layout: BlockedEncodingAttr, shape: tuple[int, ...]) -> DistLayout:
    rank = len(shape)
    spt, tpw, wpc, order = layout.size_per_thread, layout.threads_per_warp, layout.warps_per_cta, layout.order
    base: list[tuple[Term, ...]] = [() for _ in range(rank)]
    lane_div = warp_div = 1
    for d in order:
        base[d] = (
            Term("lane", lane_div, tpw[d], spt[d]),
            Term("warp", warp_div, wpc[d], spt[d] * tpw[d]),
        )
        lane_div *= tpw[d]
        warp_div *= wpc[d]
    tile = [spt[d] * tpw[d] * wpc[d] for d in range(rank)]
    reps = [max(1, shape[d] // tile[d]) for d in range(rank)]
    wrap = tuple(tile[d] > shape[d] for d in range(rank))
    # enumerate with order[0] fastest: build index tuples in reversed order, then reorder
    rev = list(reversed(order))
    regs: list[tuple[int, ...]] = []
    for rep in product(*[range(reps[d]) for d in rev]):
        for inner in product(*[range(spt[d]) for d in rev]):
            off = [0] * rank
            for k, d in enumerate(rev):
                off[d] = rep[k] * tile[d] + inner[k]
            regs.append(tuple(off))
    return DistLayout(tuple(shape), tuple(base), tuple(regs), wrap)


def mma(layout: MmaEncodingAttr, shape: tuple[int, ...]) -> DistLayout:
    if len(shape) != 2:
        raise LayoutError(f"#ttg.mma describes 2-D tensors, got shape {list(shape)}")
    wm, wn = layout.warps_per_cta
    m, n = shape
    tm, tn = 16 * wm, 8 * wn
    base = (
        (Term("lane", 4, 8, 1), Term("warp", wn, wm, 16)),
        (Term("lane", 1, 4, 2), Term("warp", 1, wn, 8)),
    )
    regs = []
    for i in range(max(1, m // tm)):
        for j in range(max(1, n // tn)):
            for dr, dc in ((0, 0), (0, 1), (8, 0), (8, 1)):
                regs.append((tm * i + dr, tn * j + dc))
    return DistLayout((m, n), base, tuple(regs), (tm > m, tn > n))


def distributed(layout: Attribute, shape: tuple[int, ...]) -> DistLayout:
    """The element map of `layout` over `shape` (blocked, slice or mma)."""
    shape = tuple(shape)
    _check_pow2(shape, str(layout))
    if isinstance(layout, BlockedEncodingAttr):
        return blocked(layout, shape)
    if isinstance(layout, MmaEncodingAttr):
        return mma(layout, shape)
    if isinstance(layout, SliceEncodingAttr):
        dim = layout.dim
        full = shape[:dim] + (1,) + shape[dim:]
        p = distributed(layout.parent, full)
        drop = lambda t: t[:dim] + t[dim + 1:]  # noqa: E731
        return DistLayout(shape, drop(p.base), tuple(drop(r) for r in p.regs), drop(p.wrap))
    raise LayoutError(f"no register map for layout {layout}")


def mma_warp_coords(layout: MmaEncodingAttr) -> tuple[Term, Term]:
    """(wm, wn) of a warp in an mma layout, as Terms with mul 1."""
    wm, wn = layout.warps_per_cta
    return Term("warp", wn, wm, 1), Term("warp", 1, wn, 1)


def stored_coords(enc: SharedEncodingAttr, i0: Any, i1: Any, shape: Sequence[int]) -> tuple[Any, Any, int, int]:
    """(row, col, row_len, rows) of logical element (i0, i1) of a 2-D tile as `enc` stores it:
    order [1, 0] keeps dim 1 contiguous (rows are dim 0), order [0, 1] stores the transpose
    (a K-major B tile: rows are its N columns). Works on ints and on IR values alike."""
    if tuple(enc.order) == (0, 1):
        return i1, i0, shape[0], shape[1]
    return i0, i1, shape[1], shape[0]


def contiguous_run(dl: DistLayout, fast: int, limit: int) -> int:
    """Largest power-of-two run of consecutive registers that are consecutive along `fast`
    (starting at a multiple of the run), capped at `limit`."""
    run = 1
    while run * 2 <= limit and dl.num_regs % (run * 2) == 0:
        cand = run * 2
        ok = True
        for r0 in range(0, dl.num_regs, cand):
            first = dl.regs[r0]
            for k in range(1, cand):
                want = list(first)
                want[fast] += k
                if dl.regs[r0 + k] != tuple(want):
                    ok = False
                    break
            if not ok or first[fast] % cand:
                ok = False
                break
        if not ok:
            break
        # the thread base along `fast` must be a multiple of the run as well
        if any(t.mul % cand for t in dl.base[fast]):
            break
        if dl.wrap[fast] and dl.shape[fast] % cand:
            break
        run = cand
    return run


def num_elems(shape: tuple[int, ...]) -> int:
    return math.prod(shape)


__all__ = [
    "LayoutError",
    "Term",
    "DistLayout",
    "blocked",
    "mma",
    "distributed",
    "mma_warp_coords",
    "stored_coords",
    "contiguous_run",
    "WARP",
]
