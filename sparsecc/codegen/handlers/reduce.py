"""Handler of `tt.reduce`, as Triton lowers it: combine the registers of each thread that hold
one result (a tree of neighbours), then the lanes along the reduced axis with `shfl.sync.bfly`
butterflies, then the warps along the axis through a small shared-memory exchange (one value
per warp and result, one barrier, then a last combine: of all the warps' words in each thread
for up to 4 warps, else of one word per lane and butterflies over lanes that hold the same
result, as Triton: `exchange_lanes`). `sparsecc.analysis.reduce_plan` says which registers, lanes and
warps take part; the PTX grows with a thread's registers, not with the tile.

Layouts the plan does not cover (a lane or warp bit that moves two dimensions at once, a result
layout that is not the source's slice) take the old path: the source is stored to shared
memory and each thread re-reads the whole axis for each of its results
(`_reduce_through_smem`). `sparsecc.analysis.shared_memory` sizes the scratch of either path.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    IntegerType,
    StringAttr,
    TensorType,
    f32,
    i1,
    i32,
)
from xdsl.ir import Attribute, Operation, SSAValue

from sparsecc.analysis.layouts import WARP, distributed
from sparsecc.analysis.reduce_plan import WORD_BYTES, ReducePlan, fast_reduce_plan, value_words
from sparsecc.codegen.handlers.table import handles
from sparsecc.codegen.handlers.views import row_major
from sparsecc.codegen.lower_base import LoweringError, Regs, Smem
from sparsecc.codegen.lower_mem import smem_addr, store_shared, unpack_words, word_type
from sparsecc.dialects import ptx, tt

if TYPE_CHECKING:
    from sparsecc.codegen.lower_state import LoweringState

_COMBINE: dict[tuple[str, bool], type[Operation]] = {
    ("sum", True): arith.AddfOp, ("sum", False): arith.AddiOp,
    ("max", True): arith.MaxnumfOp, ("max", False): arith.MaxSIOp,
    ("min", True): arith.MinnumfOp, ("min", False): arith.MinSIOp,
}
"""(kind, float element) -> the op that combines two elements (max/min ignore NaN, as
Triton's `maxnumf`/`minnumf`: PTX `max.f32`)."""

Values = list[SSAValue]
"""One element of each of the reduce's operands (argmax: value and index)."""
Combine = Callable[[Values, Values], Values]


def combiner(L: LoweringState, op: tt.ReduceOp) -> Combine:
    """How two partial results of `op` combine: its kind's arith op, or its combine region
    lowered inline once per use (the region's ops are scalar ops with their own handlers)."""
    kind = op.kind.data
    if kind != "combine":
        elt = op.src.type.element_type
        cls = _COMBINE.get((kind, not isinstance(elt, IntegerType)))
        if cls is None:
            raise LoweringError(f"tt.reduce {kind}: not supported by the PTX lowering")
        return lambda a, b: [L.em.val(cls(a[0], b[0]))]
    block = op.combine.block
    return lambda a, b: L.inline_block(block, [*a, *b], "a combine region")


# ---------------------------------------------------------------------------------------
# 32-bit words: what shfl.sync and the exchange move


def to_words(L: LoweringState, v: SSAValue) -> Values:
    """`v` as the 32-bit registers a shuffle or a shared word moves (see `from_words`)."""
    em, ty = L.em, v.type
    if isinstance(ty, Float32Type) or ty == i32:
        return [v]
    if isinstance(ty, Float16Type | BFloat16Type) or ty == IntegerType(16):
        return [em.val(ptx.PackOp.create(operands=(v, v), result_types=(i32,)))]
    if ty == i1:
        return [em.select(v, em.c(1), em.c(0))]
    if ty == IntegerType(8):
        return [em.val(arith.ExtUIOp(v, i32))]
    if ty == IntegerType(64):
        return list(em.op(ptx.AsmOp("mov.b64 {$0, $1}, $2;", [v], [i32, i32], pure=True)).results)
    raise LoweringError(f"tt.reduce of {ty}: no 32-bit form")


def from_words(L: LoweringState, words: Values, ty: Attribute) -> SSAValue:
    """The value `to_words` split into `words`."""
    em = L.em
    if isinstance(ty, Float32Type) or ty == i32:
        return words[0]
    if isinstance(ty, Float16Type | BFloat16Type) or ty == IntegerType(16):
        return em.op(ptx.UnpackOp(words[0], ty)).results[0]
    if ty == i1:
        return em.cmp("ne", words[0], 0)
    if ty == IntegerType(8):
        return em.val(arith.TruncIOp(words[0], ty))
    return em.val(ptx.AsmOp("mov.b64 $0, {$1, $2};", words, [ty], pure=True))


def shfl_xor(L: LoweringState, v: SSAValue, mask: int) -> SSAValue:
    """`v` of the lane `lane ^ mask` (every lane of the warp takes part)."""
    template = StringAttr(f"shfl.sync.bfly.b32 $0, $1, {mask}, 0x1f, -1;")
    got = [L.em.val(ptx.AsmOp.create(operands=(w,), result_types=(w.type,), properties={"template": template}))
           for w in to_words(L, v)]
    return from_words(L, got, v.type)


# ---------------------------------------------------------------------------------------
# The three steps


def reduce_in_thread(srcs: Sequence[Regs], plan: ReducePlan, combine: Combine) -> list[Values]:
    """Per result group of the thread, its registers combined as a balanced tree of neighbours
    ((r0 . r1) . (r2 . r3)), as Triton does: the operands keep their order (an associative
    combine gives the chain's result) and the dependency chain is log2 of the group, not its
    length."""
    out = []
    for group in plan.groups:
        level = [[s.regs[r] for s in srcs] for r in group]
        while len(level) > 1:
            pairs = [combine(level[i], level[i + 1]) for i in range(0, len(level) - 1, 2)]
            level = pairs + level[len(level) - len(level) % 2:]
        out.append(level[0])
    return out


def reduce_lanes(L: LoweringState, parts: list[Values], plan: ReducePlan, combine: Combine) -> list[Values]:
    """Butterflies over the lane bits along the axis: every lane ends with the whole warp's."""
    for mask in plan.lane_masks:
        parts = [combine(acc, [shfl_xor(L, v, mask) for v in acc]) for acc in parts]
    return parts


def _warp_index(L: LoweringState, plan: ReducePlan) -> SSAValue:
    """This warp's place among the warps along the axis (its axis bits, packed)."""
    em, warp = L.em, L.ids.warp
    bits = plan.warp_bits
    if list(bits) == list(range(len(bits))) and 1 << len(bits) >= L.cfg.num_warps and not L.cfg.producer_warps:
        return warp  # every warp id bit moves along the axis: the warp id is the place
    if list(bits) == list(range(bits[0], bits[0] + len(bits))):
        return em.remu(em.divu(warp, 1 << bits[0]), 1 << len(bits))
    idx = em.c(0)
    for i, b in enumerate(bits):
        idx = em.add(idx, em.mul(em.remu(em.divu(warp, 1 << b), 2), 1 << i))
    return idx


def _writer(L: LoweringState, plan: ReducePlan) -> SSAValue | None:
    """Whether this thread writes its warp's partials: lane 0 of its axis lanes and copies, in
    a warp that is no copy (None: every thread writes)."""
    em = L.em
    lane_bits = plan.lane_copies | sum(plan.lane_masks)
    warp_bits = plan.warp_copies
    if L.cfg.num_warps > plan.warps:
        warp_bits |= (1 << 32) - plan.warps  # the warps from plan.warps on hold copies
    conds = []
    if lane_bits == 31:  # every lane bit: lane 0 (the lane id is below 32)
        conds.append(em.cmp("eq", L.ids.lane, 0))
    elif lane_bits:
        conds.append(em.cmp("eq", em.band(L.ids.lane, em.c(lane_bits)), 0))
    if warp_bits:
        conds.append(em.cmp("eq", em.band(L.ids.warp, em.c(warp_bits)), 0))
    if not conds:
        return None
    out = conds[0]
    for c in conds[1:]:
        out = em.band(out, c)
    return out


def reduce_warps(L: LoweringState, op: tt.ReduceOp, parts: list[Values], plan: ReducePlan,
                 result_index: list[SSAValue], combine: Combine) -> list[Values]:
    """Across the warps along the axis through the op's scratch: word j of operand value k of
    result i from the warp at place w goes to word ((plane * results + i) * W + w), the writer
    of each warp stores, a barrier, then every thread reads the W words of each of its results
    (vectors of up to 4) and combines them in warp order; from `SHUFFLED_EXCHANGE` warps on,
    each lane reads one word and butterflies combine them (`_combine_exchange_by_lanes`)."""
    em = L.em
    wcount = plan.warps_along
    numel = op.src.type.get_shape()
    res_numel = 1
    for d, n in enumerate(numel):
        if d != op.axis.value.data:
            res_numel *= n
    plane = res_numel * wcount * WORD_BYTES
    base = L.scratch(op)
    widx = _warp_index(L, plan)
    pred = _writer(L, plan)
    L.wgmma_drain()
    L.before_shared_write()
    for acc, lin in zip(parts, result_index):
        addr = em.add(base, em.mul(em.add(em.mul(lin, wcount), widx), WORD_BYTES))
        words = [w for v in acc for w in to_words(L, v)]
        for j, w in enumerate(words):
            em.op(ptx.StSharedOp(addr, [w], mask=pred, offset=j * plane))
    L.after_shared_write()
    L.before_shared_read()
    types = [v.type for v in parts[0]]
    counts = [value_words(t) for t in types]
    # the exchange's registers: an f32 stays f32 (to_words keeps it), anything else is b32
    word_types = [f32 if isinstance(t, Float32Type) else i32 for t, n in zip(types, counts) for _ in range(n)]
    lanes = exchange_lanes(plan)
    if lanes is not None:
        return _combine_exchange_by_lanes(L, base, plane, lanes, result_index, types, counts, word_types, combine)
    out = []
    for lin in result_index:
        addr = em.add(base, em.mul(lin, wcount * WORD_BYTES))
        planes = []  # per word plane, the W words in warp order
        for j in range(sum(counts)):
            got: list[SSAValue] = []
            vec = min(wcount, 4)
            wty = word_types[j]
            for w0 in range(0, wcount, vec):
                ld = ptx.LdSharedOp(addr, wty, vec, offset=j * plane + w0 * WORD_BYTES)
                got += list(em.op(ld).results)
            planes.append(got)
        acc: Values | None = None
        for w in range(wcount):
            vals, j = [], 0
            for t, n in zip(types, counts):
                vals.append(from_words(L, [planes[j + k][w] for k in range(n)], t))
                j += n
            acc = vals if acc is None else combine(acc, vals)
        assert acc is not None
        out.append(acc)
    return out


SHUFFLED_EXCHANGE = 8
"""From this many warps along the axis on, the exchange is read back one word per lane and
combined with butterflies (`_combine_exchange_by_lanes`) instead of every thread reading all
the words: one register per result instead of `warps_along` (16 for a w16 layer norm), and a
log2 dependency chain. Only where `exchange_lanes` finds lanes to spread the words over."""


def exchange_lanes(plan: ReducePlan) -> tuple[int, ...] | None:
    """The lane-id bits over which `_combine_exchange_by_lanes` spreads the W = `warps_along`
    partials of a result (lane bit i of the returned bits picks bit i of the warp slot, and the
    butterflies run over these bits), or None where every thread reads all W words.

    The butterflies combine the words of partner lanes, so the partners must hold the same
    result: only lane bits along the reduced axis (after `reduce_lanes` those lanes hold the same
    result) or lanes holding copies qualify, never a lane bit that moves to another result (a
    reduction across rows whose lanes run along the row, or an mma accumulator's column lanes).
    The lowest log2(W) such bits are taken; a row kernel's are bits 0.. (the slot is lane % W).

        >>> from sparsecc.analysis.layouts import distributed
        >>> from sparsecc.analysis.reduce_plan import plan_reduce
        >>> from sparsecc.dialects.ttg import BlockedEncodingAttr, MmaEncodingAttr
        >>> exchange_lanes(plan_reduce(distributed(BlockedEncodingAttr([8], [32], [8], [0]), (4096,)), 0))
        (0, 1, 2)
        >>> exchange_lanes(plan_reduce(distributed(MmaEncodingAttr((8, 1)), (128, 64)), 0))
        (2, 3, 4)
        >>> exchange_lanes(plan_reduce(distributed(BlockedEncodingAttr([1, 4], [1, 32], [8, 1], [1, 0]), (8, 256)), 0)) is None
        True
    """
    wcount = plan.warps_along
    if wcount < SHUFFLED_EXCHANGE:
        return None
    same = plan.lane_copies | sum(plan.lane_masks)
    bits = tuple(b for b in range(WARP.bit_length() - 1) if same >> b & 1)
    need = wcount.bit_length() - 1
    return bits[:need] if len(bits) >= need else None


def _exchange_slot(L: LoweringState, lanes: tuple[int, ...]) -> SSAValue:
    """The warp place whose partial this lane reads: its `lanes` bits, packed."""
    em, lane = L.em, L.ids.lane
    if lanes == tuple(range(len(lanes))):
        return em.remu(lane, 1 << len(lanes))
    if lanes == tuple(range(lanes[0], lanes[0] + len(lanes))):
        return em.remu(em.divu(lane, 1 << lanes[0]), 1 << len(lanes))
    idx = em.c(0)
    for i, b in enumerate(lanes):
        idx = em.add(idx, em.mul(em.remu(em.divu(lane, 1 << b), 2), 1 << i))
    return idx


def _combine_exchange_by_lanes(L: LoweringState, base: SSAValue, plane: int, lanes: tuple[int, ...],
                               result_index: list[SSAValue], types: list[Attribute], counts: list[int],
                               word_types: list[Attribute], combine: Combine) -> list[Values]:
    """The second half of `reduce_warps` as Triton does it: lane l reads the partial of warp
    place `_exchange_slot` (its `lanes` bits) of each result, then butterflies over those lane
    bits combine them, so that every lane ends with all W = 2**len(lanes) partials (the
    partners hold the same result: `exchange_lanes`)."""
    em = L.em
    wcount = 1 << len(lanes)
    slot = em.mul(_exchange_slot(L, lanes), WORD_BYTES)
    out = []
    for lin in result_index:
        addr = em.add(em.add(base, em.mul(lin, wcount * WORD_BYTES)), slot)
        words = [em.op(ptx.LdSharedOp(addr, wty, 1, offset=j * plane)).results[0] for j, wty in enumerate(word_types)]
        acc, j = [], 0
        for t, n in zip(types, counts):
            acc.append(from_words(L, words[j:j + n], t))
            j += n
        for b in reversed(lanes):
            acc = combine(acc, [shfl_xor(L, v, 1 << b) for v in acc])
        out.append(acc)
    return out


def _result_index(L: LoweringState, op: tt.ReduceOp, plan: ReducePlan) -> list[SSAValue]:
    """Per result group, its row-major index in the result tensor."""
    shape = op.src.type.get_shape()
    axis = op.axis.value.data
    dl = distributed(op.src.type.encoding, shape)
    coords = L.coords(dl)
    dims = [d for d in range(len(shape)) if d != axis]
    out = []
    for group in plan.groups:
        lin, stride = L.em.c(0), 1
        for d in reversed(dims):
            lin = L.em.add(lin, L.em.mul(coords[group[0]][d], stride))
            stride *= shape[d]
        out.append(lin)
    return out


@handles(tt.ReduceOp)
def _reduce(L: LoweringState, op: tt.ReduceOp) -> None:
    """`tt.reduce` in registers where `fast_reduce_plan` covers the layouts (see the module
    docstring), else through shared memory."""
    plan = fast_reduce_plan(op.src.type, op.axis.value.data, [r.type for r in op.res])
    if plan is None:
        _reduce_through_smem(L, op)
        return
    combine = combiner(L, op)
    srcs = [L.regs(v) for v in op.srcs]
    parts = reduce_in_thread(srcs, plan, combine)
    parts = reduce_lanes(L, parts, plan, combine)
    if plan.warps_along > 1:
        parts = reduce_warps(L, op, parts, plan, _result_index(L, op, plan), combine)
    res_ty = op.result.type
    if not isinstance(res_ty, TensorType):
        for k, r in enumerate(op.res):
            L.set(r, parts[0][k])
        return
    index = {key: i for i, key in enumerate(plan.keys)}
    rshape = res_ty.get_shape()
    rdl = distributed(res_ty.encoding, rshape)
    picks = [index[tuple(o % s for o, s in zip(off, rshape))] for off in rdl.regs]
    for k, r in enumerate(op.res):
        L.set(r, Regs(r.type, [parts[i][k] for i in picks]))


def _reduce_through_smem(L: LoweringState, op: tt.ReduceOp) -> None:
    """`tt.reduce` through shared memory: the source is stored row-major, then each thread
    combines, for each of its result elements, the entries along the reduced axis (every
    thread of a scalar result computes the same value). Correct for any layout, but it reads
    the reduced extent once per result register: only for layouts the fast plan does not
    cover, and for one operand."""
    if len(op.srcs) != 1:
        raise LoweringError("a multi-operand tt.reduce needs a layout the register plan covers")
    em = L.em
    src = L.regs(op.src)
    st = op.src.type
    shape = st.get_shape()
    axis = op.axis.value.data
    elt = st.element_type
    sm = Smem(L.scratch(op), row_major(st))
    store_shared(L, sm, src)
    L.before_shared_read()
    combine = combiner(L, op)

    def fold(coords: list[tuple[SSAValue, ...]]) -> SSAValue:
        acc = None
        for c in coords:
            wt, wn = word_type(elt, 1)
            word = em.op(ptx.LdSharedOp(smem_addr(L, sm, c), wt, wn))
            value = unpack_words(L, list(word.results), elt, 1)[0]
            acc = value if acc is None else combine([acc], [value])[0]
        assert acc is not None
        return acc

    res_ty = op.result.type
    if not isinstance(res_ty, TensorType):
        L.set(op.result, fold([(em.c(i),) for i in range(shape[0])]))
        return
    dl = distributed(res_ty.encoding, res_ty.get_shape())
    regs = []
    for c in L.coords(dl):
        regs.append(fold([(*c[:axis], em.c(i), *c[axis:]) for i in range(shape[axis])]))
    L.set(op.result, Regs(res_ty, regs))
