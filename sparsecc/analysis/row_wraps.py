"""Wrapped rows of a sparse operand: where they are, and whether anyone can see them.

Triton kernels keep the A tile's addresses in bounds by wrapping its rows instead of masking
them: `offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M` (tutorial 03, torchao's int8
matmul) or `offs_am = tl.where(offs_am < M, offs_am, 0)` (tutorial 09). A row `r >= M` then
reads row `r % M` (or row 0), and its result is garbage that the store's mask `offs_cm < M`
drops. For a 2:4 operand the garbage rows also need metadata: 16 rows share a row of metadata
words, and the word for tile row `r` is taken at position `r % 16` of its group. A wrapped row
lands at another position (unless M is a multiple of 16), so its result is wrong, but only its
own result: harmless exactly when it is never stored. decompose-sparse-tensors asks this module

  - `find_wraps(rows)`: the `%` and `tl.where` wraps inside a row term (per-row tensors only;
    `pid % group_size_m` in the program-id swizzle is a scalar and no wrap), and
  - `rows_past_bound_unseen(ptr, bound, index)`: every tile loaded through `ptr` is operand A
    of a `tt.dot` whose result reaches memory only through stores masked by `index < bound`
    (following the accumulator through the K loop, `acc += ...` and casts). Index terms are
    read through sign extensions, so FlagGems' mm (an i64 program id: `rn % extsi(N)`, stored
    under `(rn < N)[None, :]`, which sparse-operand-to-lhs makes the rows of a 2:4 B) qualifies.

    wraps = find_wraps(row_term)                    # [Wrap(op, bound, index), ...]
    rows_past_bound_unseen(a_ptrs, w.bound, w.index)  # True for the tutorial's epilogue
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue

from sparsecc.analysis.linear_index import J, clamp_wrap, linear
from sparsecc.analysis.value_equality import same_linear
from sparsecc.dialects import tt


@dataclass(frozen=True)
class Wrap:
    """One wrap of a row index: `op` is the `arith.remsi` (`index % bound`) or the
    `arith.select` (`tl.where(index < bound, index, 0)`)."""

    op: Operation
    bound: SSAValue
    index: SSAValue

    @property
    def is_rem(self) -> bool:
        return isinstance(self.op, arith.RemSIOp)


def _scalar_of(v: SSAValue) -> SSAValue:
    """The scalar a splat (through broadcasts and integer widenings) was made from, else `v`.

    A 64-bit row term widens its bound: FlagGems' `rn % N` with an i64 program id is
    `rn % extsi(splat(N))`. Widening keeps the value and so its divisibility; the bound is `N`.
    """
    while isinstance(v.owner, tt.BroadcastOp | tt.ExpandDimsOp | arith.ExtSIOp | arith.ExtUIOp):
        v = v.owner.operands[0]
    if isinstance(v.owner, tt.SplatOp) and not isinstance(v.owner.src.type, TensorType):
        return v.owner.src
    return v


def find_wraps(rows: SSAValue) -> list[Wrap]:
    """The wraps on the per-row path of a row term (tensors only: a scalar `%` such as the
    program-id swizzle's `pid % group_size_m` is the same for every row and wraps nothing)."""
    found: list[Wrap] = []
    stack, seen = [rows], set()
    while stack:
        v = stack.pop()
        if v in seen or not isinstance(v.owner, Operation) or not isinstance(v.type, TensorType):
            continue
        seen.add(v)
        owner = v.owner
        if isinstance(owner, tt.SplatOp):
            continue  # a scalar, the same for every row
        if isinstance(owner, arith.RemSIOp):
            found.append(Wrap(owner, _scalar_of(owner.rhs), owner.lhs))
        elif (clamped := clamp_wrap(v)) is not None:
            found.append(Wrap(owner, clamped[0], clamped[1]))
        stack.extend(owner.operands)
    return found


def _row_condition(term: SSAValue, rows: int, bound: SSAValue, index: dict | None) -> bool:
    """`term` is `index[:, None] < bound` or `(index < bound)[:, None]` (FlagGems' form),
    broadcast to the tile."""
    while isinstance(term.owner, tt.BroadcastOp):
        term = term.owner.src
    shape = tt.shape_of(term.type)
    if len(shape) != 2 or shape != (rows, 1):
        return False
    if isinstance(term.owner, tt.ExpandDimsOp):  # (rows,) -> (rows, 1): the rows' own condition
        term = term.owner.src
    cmp = term.owner
    if not isinstance(cmp, arith.CmpiOp) or cmp.predicate.value.data != 2:  # slt
        return False
    # the same rows: the same form, or one computed again the same way (value_equality)
    return (linear(cmp.rhs, widen=True) == {bound: 1} and index is not None
            and same_linear(linear(cmp.lhs, widen=True), index))


def _block_store_checks_rows(store: tt.StoreOp, bound: SSAValue, index: dict | None) -> bool:
    """A block-pointer store (raise-pointer-tensors makes one of the masked epilogue) whose
    rows start where `index` does and are bounds-checked against `bound`."""
    make = store.ptr.owner
    checked = store.boundaryCheck.get_values() if store.boundaryCheck is not None else ()
    if not isinstance(make, tt.MakeTensorPtrOp) or 0 not in checked or index is None:
        return False
    rows = make.shape[0]
    while isinstance(rows.owner, arith.ExtSIOp):
        rows = rows.owner.input
    start = {k: v for k, v in index.items() if k != J}
    return rows is bound and index.get(J) == 1 and same_linear(linear(make.offsets[0], widen=True), start)


def _mask_terms(mask: SSAValue) -> list[SSAValue]:
    src = mask
    while isinstance(src.owner, tt.BroadcastOp):
        src = src.owner.src
    if isinstance(src.owner, arith.AndIOp):
        return [t for o in src.owner.operands for t in _mask_terms(o)]
    return [mask]


def _results_rows_unseen(v: SSAValue, bound: SSAValue, index: dict | None, seen: set[SSAValue]) -> bool:
    """Every row `i` of `v` whose `index[i] >= bound` is dropped before memory: `v` flows
    (elementwise, through the loop's accumulator, as another dot's C) only into stores masked
    by `index[:, None] < bound`."""
    if v in seen:
        return True
    seen.add(v)
    rows = tt.shape_of(v.type)[0] if isinstance(v.type, TensorType) else None
    for use in v.uses:
        op = use.operation
        if isinstance(op, tt.StoreOp):
            if use.index != 1 or rows is None:
                return False
            if not (_block_store_checks_rows(op, bound, index) or op.mask is not None and any(
                    _row_condition(t, rows, bound, index) for t in _mask_terms(op.mask))):
                return False
        elif isinstance(op, tt.DotOp) and use.index == 2:  # the accumulator of the next dot
            if not _results_rows_unseen(op.results[0], bound, index, seen):
                return False
        elif isinstance(op, scf.YieldOp) and isinstance(op.parent_op(), scf.ForOp):
            loop = op.parent_op()
            assert isinstance(loop, scf.ForOp)
            for carried in (loop.results[use.index], loop.body.block.args[use.index + 1]):
                if not _results_rows_unseen(carried, bound, index, seen):
                    return False
        elif isinstance(op, scf.ForOp) and use.index >= 3:  # an iter_arg's initial value
            i = use.index - 3
            for carried in (op.results[i], op.body.block.args[i + 1]):
                if not _results_rows_unseen(carried, bound, index, seen):
                    return False
        elif op.dialect_name() == "arith" and len(op.results) == 1 \
                and tt.shape_of(op.results[0].type) == tt.shape_of(v.type):
            if not _results_rows_unseen(op.results[0], bound, index, seen):
                return False  # elementwise: row i stays row i
        else:
            return False
    return True


def _loads_through(ptr: SSAValue, seen: set[SSAValue]) -> list[tt.LoadOp] | None:
    """The loads of tiles addressed by `ptr` and pointers advanced from it (through the K
    loop), or None when it goes anywhere else."""
    if ptr in seen:
        return []
    seen.add(ptr)
    loads: list[tt.LoadOp] = []
    for use in ptr.uses:
        op = use.operation
        nexts: list[SSAValue]
        if isinstance(op, tt.LoadOp) and use.index == 0:
            loads.append(op)
            continue
        if isinstance(op, tt.AddPtrOp | tt.BroadcastOp) and use.index == 0:
            nexts = [op.results[0]]
        elif isinstance(op, scf.ForOp) and use.index >= 3:
            nexts = [op.results[use.index - 3], op.body.block.args[use.index - 2]]
        elif isinstance(op, scf.YieldOp) and isinstance(op.parent_op(), scf.ForOp):
            loop = op.parent_op()
            assert isinstance(loop, scf.ForOp)
            nexts = [loop.results[use.index], loop.body.block.args[use.index + 1]]
        else:
            return None
        for n in nexts:
            more = _loads_through(n, seen)
            if more is None:
                return None
            loads += more
    return loads


def rows_past_bound_unseen(ptr: SSAValue, bound: SSAValue, index: SSAValue) -> bool:
    """Rows of the tiles loaded through `ptr` whose `index` is `>= bound` never reach memory:
    each load is operand A of a `tt.dot` whose result is stored only under `index < bound`
    (the same row index, before the wrap: `offs_cm` is `pid_m * BLOCK_M + tl.arange(...)`
    as `offs_am` was)."""
    loads = _loads_through(ptr, set())
    form = linear(index, widen=True)
    if not loads or form is None:
        return False
    seen: set[SSAValue] = set()
    for load in loads:
        for use in load.results[0].uses:
            if not isinstance(use.operation, tt.DotOp) or use.index != 0:
                return False
            if not _results_rows_unseen(use.operation.results[0], bound, form, seen):
                return False
    return True
