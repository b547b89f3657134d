"""Handlers of `tt.scan` and `tt.gather`.

`tt.scan` (see `sparsecc.analysis.scan_plan` for the positions it relies on): each thread
scans its run of registers in order; the lanes along the axis then scan the runs' totals with
`shfl.sync.up` (Hillis-Steele: log2(T) steps, each combining the value `2^i` lanes earlier), and
each thread takes the inclusive value of the lane before it as the prefix of its run. Where
several warps or repetitions of the layout's tile share a row, the last lane of each warp
stores its tile's total to a small shared exchange, a barrier, and every thread combines the
totals before its own (earlier repetitions, then earlier warps). `reverse` runs the same steps
from the end: registers backwards, `shfl.sync.down`, the warps and repetitions in reverse.
The combine order is kept (earlier elements on the left), so the combine function need not be
commutative.

`tt.gather`: the source is stored row-major to a scratch buffer, a barrier, then each result
register loads the element at its own coordinates with the axis coordinate replaced by its
index.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from xdsl.dialects import arith
from xdsl.dialects.builtin import Float32Type, IntegerType, StringAttr, TensorType, f32, i1, i8, i32
from xdsl.ir import SSAValue

from sparsecc.analysis.layouts import distributed
from sparsecc.analysis.reduce_plan import WORD_BYTES, value_words
from sparsecc.analysis.scan_plan import ScanPlan, fast_scan_plan
from sparsecc.codegen.handlers.reduce import _warp_index, from_words, to_words
from sparsecc.codegen.handlers.table import handles
from sparsecc.codegen.handlers.views import row_major
from sparsecc.codegen.lower_base import LoweringError, Regs, Smem
from sparsecc.codegen.lower_mem import smem_addr, store_shared, unpack_words, word_type
from sparsecc.dialects import ptx, tt

if TYPE_CHECKING:
    from sparsecc.codegen.lower_state import LoweringState

Values = list[SSAValue]


def _combiner(L: LoweringState, op: tt.ScanOp):  # noqa: ANN202 - a (Values, Values) -> Values
    """The combine region lowered inline once per use (earlier values first)."""
    block = op.combine.block
    return lambda a, b: L.inline_block(block, [*a, *b], "a scan's combine region")


def _shfl(L: LoweringState, v: SSAValue, delta: int, down: bool) -> SSAValue:
    """`v` of the lane `delta` lanes before (`down`: after) this one."""
    kind, clamp = ("down", 0x1F) if down else ("up", 0)
    template = StringAttr(f"shfl.sync.{kind}.b32 $0, $1, {delta}, {clamp}, -1;")
    got = [L.em.val(ptx.AsmOp.create(operands=(w,), result_types=(w.type,), properties={"template": template}))
           for w in to_words(L, v)]
    return from_words(L, got, v.type)


def _select(L: LoweringState, c: SSAValue, a: Values, b: Values) -> Values:
    out = []
    for x, y in zip(a, b):
        if x.type == i1:
            out.append(from_words(L, [L.em.select(c, to_words(L, x)[0], to_words(L, y)[0])], i1))
        else:
            out.append(L.em.select(c, x, y))
    return out


def _lane_scan(L: LoweringState, plan: ScanPlan, totals: Values, combine, rev: bool) -> tuple[Values, Values, SSAValue]:  # noqa: ANN001
    """Hillis-Steele over the lanes along the axis: (inclusive, exclusive, has_prefix) of a
    run's total; the exclusive value is only meaningful where has_prefix."""
    em = L.em
    pos = em.remu(em.divu(L.ids.lane, 1 << plan.lane_shift), plan.lanes)
    if rev:
        pos = em.add(em.mul(pos, -1), plan.lanes - 1)  # rank in scan order
    incl = totals
    for i in range(plan.lanes.bit_length() - 1):
        got = [_shfl(L, v, (1 << i) << plan.lane_shift, rev) for v in incl]
        incl = _select(L, em.cmp("uge", pos, 1 << i), combine(got, incl), incl)
    excl = [_shfl(L, v, 1 << plan.lane_shift, rev) for v in incl]
    return incl, excl, em.cmp("ugt", pos, 0)


def _writer(L: LoweringState, plan: ScanPlan, rev: bool) -> SSAValue:
    """The thread that stores its warp's tile total: the last lane in scan order along the
    axis, with the copy bits clear, in a warp that is no copy."""
    em, rp = L.em, plan.reduce
    last = 0 if rev else (plan.lanes - 1) << plan.lane_shift
    along = (plan.lanes - 1) << plan.lane_shift
    conds = [em.cmp("eq", em.band(L.ids.lane, em.c(rp.lane_copies | along)), last)]
    warp_bits = rp.warp_copies
    if L.cfg.num_warps > rp.warps:
        warp_bits |= (1 << 32) - rp.warps
    if warp_bits:
        conds.append(em.cmp("eq", em.band(L.ids.warp, em.c(warp_bits)), 0))
    out = conds[0]
    for c in conds[1:]:
        out = em.band(out, c)
    return out


@handles(tt.ScanOp)
def _scan(L: LoweringState, op: tt.ScanOp) -> None:
    st = op.src.type
    axis = op.axis.value.data
    plan = fast_scan_plan(st, axis)
    if plan is None:
        raise LoweringError(f"tt.scan along axis {axis} of {st}: the layout is not one the scan lowering "
                            "covers (a thread's run, then lanes, then warps along the axis)")
    rev = op.is_reverse
    combine = _combiner(L, op)
    srcs = [L.regs(v) for v in op.srcs]
    n = len(srcs)
    dl = distributed(st.encoding, tuple(st.get_shape()))
    out: dict[int, Values] = {}  # source register -> its results
    # per row and repetition: the run scanned in the thread, its total, the lanes' prefixes
    partial: list[list[list[tuple[int, Values]]]] = []
    tile_incl: list[list[Values]] = []
    for row in plan.rows:
        partial.append([])
        tile_incl.append([])
        for run in row:
            order = list(reversed(run)) if rev else list(run)
            acc: Values | None = None
            scanned = []
            for r in order:
                vals = [s.regs[r] for s in srcs]
                acc = vals if acc is None else combine(acc, vals)
                scanned.append((r, acc))
            assert acc is not None
            if plan.lanes > 1:
                incl, excl, has = _lane_scan(L, plan, acc, combine, rev)
                scanned = [(r, _select(L, has, combine(excl, v), v)) for r, v in scanned]
            else:
                incl = acc
            partial[-1].append(scanned)
            tile_incl[-1].append(incl)
    if plan.exchanges:
        _carry_in(L, op, plan, partial, tile_incl, combine, rev, dl)
    for row in partial:
        for scanned in row:
            for r, v in scanned:
                out[r] = v
    # registers that are copies of an element the thread holds take that element's result
    first: dict[tuple[int, ...], int] = {}
    for r, off in enumerate(dl.regs):
        key = tuple(o % s for o, s in zip(off, dl.shape))
        first.setdefault(key, r)
    for k in range(n):
        regs = []
        for off in dl.regs:
            src_r = first[tuple(o % s for o, s in zip(off, dl.shape))]
            regs.append(out[src_r][k])
        L.set(op.res[k], Regs(op.res[k].type, regs))


def _row_index(L: LoweringState, op: tt.ScanOp, dl, reg: int) -> SSAValue:  # noqa: ANN001
    """The row-major index of register `reg`'s row (its coordinates without the axis)."""
    shape = op.src.type.get_shape()
    axis = op.axis.value.data
    coords = L.coords(dl)[reg]
    lin, stride = L.em.c(0), 1
    for d in reversed(range(len(shape))):
        if d != axis:
            lin = L.em.add(lin, L.em.mul(coords[d], stride))
            stride *= shape[d]
    return lin


def _carry_in(L: LoweringState, op: tt.ScanOp, plan: ScanPlan, partial, tile_incl, combine, rev: bool,  # noqa: ANN001
              dl) -> None:  # noqa: ANN001
    """Across warps and repetitions: word j of the total of (row, repetition h, warp w) goes to
    word ((row * reps + h) * W + w) of plane j; a barrier; each thread combines, in scan order,
    the totals before its own tile and puts that carry in front of each of its results."""
    em = L.em
    W, H = plan.warps, plan.reps
    shape = op.src.type.get_shape()
    axis = op.axis.value.data
    rows_total = 1
    for d, s in enumerate(shape):
        if d != axis:
            rows_total *= s
    plane = rows_total * H * W * WORD_BYTES
    base = L.scratch(op)
    widx = _warp_index(L, plan.reduce) if W > 1 else em.c(0)
    wrank = em.add(em.mul(widx, -1), W - 1) if rev else widx
    pred = _writer(L, plan, rev)
    types = [v.type for v in tile_incl[0][0]]
    counts = [value_words(t) or 1 for t in types]
    word_types = [f32 if isinstance(t, Float32Type) else i32 for t, c in zip(types, counts) for _ in range(c)]
    row_lin = [_row_index(L, op, dl, row[0][0]) for row in plan.rows]
    L.wgmma_drain()
    L.before_shared_write()
    for lin, incls in zip(row_lin, tile_incl):
        for h, incl in enumerate(incls):
            addr = em.add(base, em.mul(em.add(em.mul(em.add(em.mul(lin, H), h), W), widx), WORD_BYTES))
            words = [w for v in incl for w in to_words(L, v)]
            for j, w in enumerate(words):
                em.op(ptx.StSharedOp(addr, [w], mask=pred, offset=j * plane))
    L.after_shared_write()
    L.before_shared_read()
    for ri, lin in enumerate(row_lin):
        planes = _read_totals(L, em.add(base, em.mul(lin, H * W * WORD_BYTES)), word_types, H * W, min(W, 4), plane)

        def total(q: int, planes: list[list[SSAValue]] = planes) -> Values:
            vals, j = [], 0
            for t, c in zip(types, counts):
                vals.append(from_words(L, [planes[j + k][q] for k in range(c)], t))
                j += c
            return vals

        # the tiles in scan order: repetition-major, then warps
        hs = list(reversed(range(H))) if rev else list(range(H))
        ws = list(reversed(range(W))) if rev else list(range(W))
        seq = [total(h * W + w) for h in hs for w in ws]
        prefix: list[Values | None] = [None]  # prefix[q]: the combination of seq[:q]
        for q in range(len(seq) - 1):
            prefix.append(seq[q] if prefix[-1] is None else combine(prefix[-1], seq[q]))
        for hrank, h in enumerate(hs):
            # this thread's tile in repetition h is number hrank * W + wrank in scan order
            cands = prefix[hrank * W: hrank * W + W]
            carry: Values | None = None
            for w, cand in enumerate(cands):
                if cand is None:
                    continue
                carry = cand if carry is None else _select(L, em.cmp("eq", wrank, w), cand, carry)
            if carry is None:
                continue
            has = em.cmp("ugt", wrank, 0) if hrank == 0 else None
            scanned = partial[ri][h]
            for i, (r, v) in enumerate(scanned):
                c = combine(carry, v)
                scanned[i] = (r, c if has is None else _select(L, has, c, v))


def _read_totals(L: LoweringState, addr: SSAValue, word_types: list, count: int, vec: int,
                 plane: int) -> list[list[SSAValue]]:
    """The `count` tile totals of one row, word plane by word plane, `vec` words a load."""
    planes = []
    for j, wty in enumerate(word_types):
        got: list[SSAValue] = []
        for q0 in range(0, count, vec):
            got += list(L.em.op(ptx.LdSharedOp(addr, wty, vec, offset=j * plane + q0 * WORD_BYTES)).results)
        planes.append(got)
    return planes


@handles(tt.GatherOp)
def _gather(L: LoweringState, op: tt.GatherOp) -> None:
    em = L.em
    st = op.src.type
    elt = st.element_type
    src = L.regs(op.src)
    if elt == i1:  # bools travel as bytes
        st = TensorType(i8, st.get_shape(), st.encoding)
        src = Regs(st, [em.val(arith.ExtUIOp(r, i8)) for r in src.regs])
    sm = Smem(L.scratch(op), row_major(st))
    store_shared(L, sm, src)
    L.before_shared_read()
    res_ty = op.result.type
    idx = L.regs(op.indices)
    axis = op.axis.value.data
    dl = distributed(res_ty.encoding, tuple(res_ty.get_shape()))
    regs = []
    for r, c in enumerate(L.coords(dl)):
        i = idx.regs[r]
        if isinstance(i.type, IntegerType) and i.type.width.data > 32:
            i = em.val(arith.TruncIOp(i, i32))
        elif isinstance(i.type, IntegerType) and i.type.width.data < 32:
            i = em.val(arith.ExtSIOp(i, i32))
        at = (*c[:axis], i, *c[axis + 1:])
        wt, wn = word_type(st.element_type, 1)
        word = em.op(ptx.LdSharedOp(smem_addr(L, sm, at), wt, wn))
        v = unpack_words(L, list(word.results), st.element_type, 1)[0]
        regs.append(em.cmp("ne", em.val(arith.ExtUIOp(v, i32)), 0) if elt == i1 else v)
    L.set(op.result, Regs(res_ty, regs))
