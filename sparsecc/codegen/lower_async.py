"""Lowering of a pipelined loop's asynchronous machinery: mbarriers, TMA copies and warp
specialization (the ops tritongpu-pipeline{mbarriers/tma} emits).

* `lower_init_barrier` / `lower_wait_barrier` / `lower_arrive_barrier`: ttg.init_barrier
  (thread 0 initialises each slot's mbarrier, then fence + CTA barrier), ttg.wait_barrier (spin
  on the phase parity; a proxy fence before wgmma reads the data), ttg.arrive_barrier
  ("copies": cp.async arrivals, "warps": lane 0 of each warp, "threads": every thread, "tma":
  the TMA thread announces the stage's bytes). handlers/async_ops.py registers them.
* `plan_tensor_maps` / `lower_tma_copy` / `lower_tma_store` / `lower_tma_store_wait`: one
  128-byte tensor-map kernel parameter per TMA'd block pointer (its recipe goes to the launch
  metadata), the boxes of each copy, and the bulk groups of the stores out of shared memory.
* `producer_split` / `lower_specialized` / `skipped`: a TMA kernel that tritongpu-warp-specialize
  marked gets one extra producer warp that runs the copies and their empty-slot waits, while
  the compute warps run everything else.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from xdsl.dialects import scf
from xdsl.dialects.builtin import IntegerAttr, i32
from xdsl.ir import Block, Operation, Region, SSAValue

from sparsecc.analysis.divisibility import Divisibility
from sparsecc.analysis.shared_memory import staged_rows
from sparsecc.analysis.tma import BoxPlan, tensor_ptr_root, tma_copy_plan
from sparsecc.analysis.warp_sides import SIDES, lowered_on
from sparsecc.codegen.lower_base import BlockPtr, LoweringError, Smem, where
from sparsecc.codegen.lowering_parts import LoweringCaches, PingPongGroup, Preamble
from sparsecc.codegen.mma_stmatrix import BoxStagedTile, box_groups, store_box
from sparsecc.dialects import ptx, tt
from sparsecc.dialects import ttg as ttgd
from sparsecc.dialects.ptx_mbarrier import (
    ClusterBarrierOp,
    CpAsyncBulkCommitGroupOp,
    CpAsyncBulkTensor2dOp,
    CpAsyncBulkTensorStore2dOp,
    CpAsyncBulkWaitGroupReadOp,
    CpAsyncMbarrierArriveOp,
    MbarrierArriveExpectTxOp,
    MbarrierArriveOp,
    MbarrierInitFenceOp,
    MbarrierInitOp,
    MbarrierRemoteArriveOp,
    MbarrierWaitOp,
)
from sparsecc.dialects.ptx_wgmma import FenceProxyAsyncOp

if TYPE_CHECKING:
    from sparsecc.codegen.lower_base import LoweringContext


def producer_split(func: tt.FuncOp) -> tuple[int, int, int] | None:
    """(first, last, producer warps) when tritongpu-warp-specialize marked `func`: its
    `PRODUCER_WARPS` attribute and the contiguous run first..last of top-level ops marked
    `PRODUCER`; None when it is not marked. Marks that do not form one such run (or ask for
    a number of producer warps other than 1 or a warpgroup of 4) are a LoweringError."""
    warps = func.attributes.get(ttgd.PRODUCER_WARPS)
    ops = list(func.body.block.ops)
    marked = [i for i, op in enumerate(ops) if ttgd.PRODUCER in op.attributes]
    if warps is None:
        if marked:
            raise LoweringError(f"tt.func @{func.sym_name.data}: ops are marked {ttgd.PRODUCER} but the function has "
                                f"no {ttgd.PRODUCER_WARPS} (run tritongpu-warp-specialize)", ops[marked[0]])
        return None
    if not isinstance(warps, IntegerAttr) or warps.value.data not in ttgd.PRODUCER_WARP_COUNTS:
        raise LoweringError(f"tt.func @{func.sym_name.data}: {ttgd.PRODUCER_WARPS} must be one of "
                            f"{ttgd.PRODUCER_WARP_COUNTS}, got {warps}", func)
    if not marked or marked != list(range(marked[0], marked[-1] + 1)):
        raise LoweringError(f"tt.func @{func.sym_name.data}: the ops marked {ttgd.PRODUCER} must be one contiguous, "
                            "non-empty run of its top-level ops", ops[marked[-1]] if marked else func)
    return marked[0], marked[-1], warps.value.data


def lower_specialized(L: LoweringContext, block: Block, first: int, last: int) -> None:
    """Warp specialization of a TMA kernel: the ops before the first TMA copy run in every
    thread; then one extra warp (the producer) runs the copies of ops first..last with
    their empty-slot waits, and the compute warps (the consumers) run ops first.. without
    the copies: they wait only for data (full barriers), never for a slot to free up, so
    their wgmma groups follow each other while the producer runs up to S stages ahead.
    After the split, CTA barriers count the consumers only (named barrier 1).

    With a producer warpgroup (`ttg.producer-warps` = 4), its four warps first hand registers
    back to the CTA's pool (`setmaxnreg.dec`) and the compute warps take them
    (`setmaxnreg.inc`, `register_split`); only the first producer warp then runs the copies,
    the other three go straight to the end of the kernel.

    A ping-pong kernel (`ttg.consumer-groups` = 2) has two groups of `num_warps` compute warps
    before the producers: two ordering mbarriers are initialised before the split, and the
    consumer code is lowered once, as group `warp / num_warps` of either (`_enter_group`; its
    outer loop's trips alternate between the groups: handlers/control.py)."""
    ops = list(block.ops)
    for op in ops[:first]:
        L.lower_op(op)
    em = L.em
    outer = em.block
    # the warp index read from lane 0: provably warp-uniform, so ptxas sees no divergent
    # path around the consumers' wgmmas (it would serialise them)
    warp = em.val(ptx.AsmOp("shfl.sync.idx.b32 $0, $1, 0, 31, -1;", [L.ids.warp], [i32]))
    compute = L.cfg.compute_warps
    order = _init_order_barriers(L) if L.cfg.consumer_groups > 1 else None
    is_producer = em.cmp("uge", warp, em.c(compute))
    barriers, pending = L.barriers.state(), L.groups.pending
    split = register_split(compute) if L.cfg.producer_warps == 4 else None
    blocks = []
    for mode, part in (("producer", ops[first:last + 1]), ("consumer", ops[first:])):
        blk = Block()
        em.block = blk
        L.mode = mode
        L.barriers.restore(barriers)
        L.groups.pending = pending
        if split is not None:
            action, count = ("dec", split[0]) if mode == "producer" else ("inc", split[1])
            em.op(ptx.AsmOp(f"setmaxnreg.{action}.sync.aligned.u32 {count};"))
        body = blk
        if split is not None and mode == "producer":  # one warp of the four issues the copies
            body = Block()
            em.block = body
        outer_ids, outer_caches = L.ids, L.caches
        if order is not None and mode == "consumer":
            _enter_group(L, warp, order)
        for op in part:
            if not isinstance(op, tt.ReturnOp):
                L.lower_op(op)
        if L.ids.pingpong is not None:  # back to the whole CTA's thread indices and caches
            outer_caches.vector_ptrs += L.caches.vector_ptrs
            L.ids, L.caches = outer_ids, outer_caches
        if body is not blk:
            body.add_op(scf.YieldOp())
            em.block = blk
            em.op(scf.IfOp(em.cmp("eq", warp, em.c(compute)), [], Region(body), Region(Block([scf.YieldOp()]))))
        blk.add_op(scf.YieldOp())
        blocks.append(blk)
    em.block = outer
    outer.add_op(scf.IfOp(is_producer, [], Region(blocks[0]), Region(blocks[1])))
    L.mode = ""


def _init_order_barriers(L: LoweringContext) -> SSAValue:
    """A ping-pong kernel's two ordering mbarriers (each completed by the 4 warps of one group),
    initialised by thread 0 before the split; their address."""
    em = L.em
    assert L.ids.smem is not None
    addr = em.add(L.ids.smem, L.cfg.order_barriers)
    first = em.cmp("eq", L.ids.tid, em.c(0))
    for g in range(2):
        em.op(MbarrierInitOp(em.add(addr, 8 * g), first, L.cfg.num_warps))
    em.op(MbarrierInitFenceOp())
    em.op(ptx.BarSyncOp(0))
    return addr


def _enter_group(L: LoweringContext, warp: SSAValue, order: SSAValue) -> None:
    """Lower what follows as compute group `warp / num_warps` of a ping-pong kernel: thread,
    warp and lane indices within the group, its own copy of the private buffers, fresh address
    caches (what was computed for the whole CTA indexes the wrong threads)."""
    em = L.em
    n = L.cfg.num_warps
    group = em.divu(warp, n)
    private = L.cfg.group_private
    smem = L.ids.smem
    private_smem = em.add(smem, em.mul(group, private[1])) if private is not None and smem is not None else None
    L.ids = Preamble(em.remu(L.ids.tid, 32 * n), L.ids.lane, em.remu(warp, n), L.ids.cta_rank, smem,
                     PingPongGroup(group, private_smem, order))
    L.caches = LoweringCaches(axes=L.caches.axes)


PRODUCER_REGISTERS = 40
"""Registers a thread of a producer warpgroup keeps after `setmaxnreg.dec`: its warps only
compute tile coordinates and issue copies."""
REGISTER_FILE = 65536
"""32-bit registers an SM (and so a CTA that runs alone on it) has."""


def register_split(num_warps: int) -> tuple[int, int]:
    """(producer, compute) registers a thread after `setmaxnreg` in a kernel of `num_warps`
    compute warps and a producer warpgroup: the producers keep `PRODUCER_REGISTERS`, the compute
    warps take the rest of the register file, a multiple of 8 and at most 256.

        >>> register_split(8)  # two compute warpgroups: 232 registers a thread instead of 168
        (40, 232)
    """
    compute = (REGISTER_FILE - 128 * PRODUCER_REGISTERS) // (32 * num_warps) // 8 * 8
    return PRODUCER_REGISTERS, min(256, compute)


_SETMAXNREG = re.compile(r"setmaxnreg\.(inc|dec)\.sync\.aligned\.u32 (\d+);")


def check_register_pool(ptx_text: str, resources: dict, total: int) -> None:
    """A kernel of `total` threads whose warpgroups trade registers (`setmaxnreg`: one producer
    warpgroup gives, the compute warps take) deadlocks if the CTA's pool, what ptxas allocated
    for every thread at launch, is smaller than what they ask for in all: refused here as an
    internal error."""
    counts = {action: int(n) for action, n in _SETMAXNREG.findall(ptx_text)}
    if set(counts) != {"inc", "dec"} or len(resources) != 1:
        raise RuntimeError("internal error: setmaxnreg without one producer and one compute count")
    pool = next(iter(resources.values())).registers * total
    need = 128 * counts["dec"] + (total - 128) * counts["inc"]
    if need > pool:
        raise RuntimeError(f"internal error: setmaxnreg asks for {need} registers, but ptxas gave the "
                           f"CTA {pool} ({total} threads)")


def skipped(L: LoweringContext, op: Operation) -> bool:
    """Whether this side of a warp-specialized kernel leaves `op` to the other side
    (`sparsecc.analysis.warp_sides.lowered_on`); the producer binds the results of what it
    skips to what it carries instead (no accumulator, an if's passed-on values)."""
    assert L.mode in SIDES
    if lowered_on(op, L.mode):
        return False
    if L.mode == "producer":
        if isinstance(op, tt.DotOp):
            L.values[op.result] = L.get(op.c)  # the producer carries no accumulator
        elif isinstance(op, scf.IfOp) and ttgd.CONSUMER_ONLY in op.attributes and op.results:
            # the producer carries what the else branch passes on (it reads none of it)
            passed = op.false_region.block.last_op
            assert isinstance(passed, scf.YieldOp)
            for res, v in zip(op.results, passed.operands):
                if v in L.values:  # (an outer ring loop's epilogue passes on what the producer skipped)
                    L.values[res] = L.values[v]
    return True


def plan_tensor_maps(func: tt.FuncOp, divs: Divisibility, first_param: int) -> dict:
    """One tensor-map kernel parameter per block pointer (its tt.make_tensor_ptr) that
    ttg.async_tma_copy reads or ttg.async_tma_store writes, after the function's own
    parameters: root -> (param index, BoxPlan, TensorMapRecipe)."""
    tensor_maps: dict = {}
    for op in func.walk():
        if isinstance(op, ttgd.AsyncTmaCopyOp):
            ptr, tile = op.src, op.dst.type
        elif isinstance(op, ttgd.AsyncTmaStoreOp):
            ptr, tile = op.dst, op.src.type
        else:
            continue
        rows = staged_rows(op.src.owner) if isinstance(op, ttgd.AsyncTmaStoreOp) else None
        planned = tma_copy_plan(ptr, tile, func, divs, rows)
        if planned is None:
            raise LoweringError(f"{op.name}{where(op)}: no tensor map describes this copy (the block "
                                "pointer's tt.make_tensor_ptr, shared layout, base argument, or strides the host "
                                "cannot compute)")
        root, plan, recipe = planned
        known = tensor_maps.get(root)
        if known is not None and known[1] != plan:
            raise LoweringError(f"{op.name}{where(op)}: one block pointer copied into two layouts")
        if known is None:
            tensor_maps[root] = (first_param + len(tensor_maps), plan, recipe)
    return tensor_maps


def _barrier_addr(L: LoweringContext, ring: Smem, slot: SSAValue) -> SSAValue:
    """The shared address of mbarrier `slot` of `ring` (8 bytes each)."""
    return L.em.add(ring.addr, L.em.mul(L.em.to32(L.get(slot)), 8))


def _is_tma_thread(L: LoweringContext) -> SSAValue:
    return L.em.cmp("eq", L.ids.tid, L.em.c(L.cfg.tma_thread))


def _generic_proxy_fill(ring: SSAValue) -> bool:
    """Whether the slots behind `ring`'s barriers may be written through the generic proxy:
    some arrival on it is a cp.async one ("copies"), or none is found (assume so)."""
    kinds = {use.operation.kind.data for use in ring.uses if isinstance(use.operation, ttgd.ArriveBarrierOp)}
    return not kinds or "copies" in kinds


def lower_init_barrier(L: LoweringContext, op: ttgd.InitBarrierOp) -> None:
    """Thread 0 initialises each slot's mbarrier, then a fence and a CTA (or cluster) barrier."""
    em = L.em
    ring = L.get(op.ring)
    assert isinstance(ring, Smem)
    first = em.cmp("eq", L.ids.tid, em.c(0))
    for s in range(ring.ty.get_shape()[0]):
        em.op(MbarrierInitOp(em.add(ring.addr, 8 * s), first, op.count.value.data))
    em.op(MbarrierInitFenceOp())
    # every thread sees the initialised barriers (in a CTA pair, the other CTA's too,
    # before its copies and arrivals reach ours)
    em.op(ClusterBarrierOp() if L.cfg.cluster > 1 else ptx.BarSyncOp(0))
    L.barriers.synced()


def lower_wait_barrier(L: LoweringContext, op: ttgd.WaitBarrierOp) -> None:
    """Spin on the slot's phase parity; a proxy fence before wgmma reads cp.async data."""
    em = L.em
    ring = L.get(op.ring)
    assert isinstance(ring, Smem)
    em.op(MbarrierWaitOp(_barrier_addr(L, ring, op.slot), em.to32(L.get(op.parity))))
    # the arrivals released the copies' shared writes (the slot's data): no CTA barrier
    # before reading them. cp.async writes through the generic proxy, which wgmma (async
    # proxy) sees only after a proxy fence; TMA writes through the async proxy already
    if L.cfg.wgmma and _generic_proxy_fill(op.ring):
        em.op(FenceProxyAsyncOp())
    L.barriers.writes_pending = False


def lower_arrive_barrier(L: LoweringContext, op: ttgd.ArriveBarrierOp) -> None:
    """"copies": cp.async arrivals, "tma": the TMA thread announces the stage's bytes,
    "threads": every thread, "warps": lane 0 of each warp (and of the other CTA's, clustered)."""
    em = L.em
    ring = L.get(op.ring)
    assert isinstance(ring, Smem)
    addr = _barrier_addr(L, ring, op.slot)
    if op.kind.data == "copies":
        em.op(CpAsyncMbarrierArriveOp(addr))
    elif op.kind.data == "tma":
        em.op(MbarrierArriveExpectTxOp(addr, _is_tma_thread(L), op.bytes.value.data))
    elif op.kind.data == "threads":
        em.op(MbarrierArriveOp(addr))
    else:
        lane0 = em.cmp("eq", L.ids.lane, em.c(0))
        em.op(MbarrierArriveOp(addr, lane0))
        if L.cfg.cluster > 1:  # the other CTA's copies write into this slot too: it waits for us
            cta_rank = L.ids.cta_rank
            assert cta_rank is not None
            em.op(MbarrierRemoteArriveOp(addr, em.xor(cta_rank, 1), lane0))


def lower_tma_copy(L: LoweringContext, op: ttgd.AsyncTmaCopyOp) -> None:
    """The TMA thread (thread 0, or the producer warp's first) issues the tile's boxes
    (BoxPlan) at the block pointer's offsets."""
    em = L.em
    root = tensor_ptr_root(op.src)
    index, plan, _ = L.cfg.tensor_maps[root]
    bp, sm, ring = L.get(op.src), L.get(op.dst), L.get(op.ring)
    assert isinstance(bp, BlockPtr) and isinstance(sm, Smem) and isinstance(ring, Smem)
    bar = _barrier_addr(L, ring, op.slot)
    first = _is_tma_thread(L)
    tmap = L.kernel.args[index]
    row, col = (em.to32(o) for o in bp.offsets)
    if plan.transposed:  # a column-major tile: the map's rows are the tile's columns
        row, col = col, row
    issuers, cta_mask = [first], 0  # box j: issued where issuers[j % len(issuers)] holds
    if op.ctas > 1:  # a CTA pair: this CTA issues the boxes of its parity into both CTAs
        cta_rank = L.ids.cta_rank
        if L.cfg.cluster != op.ctas or cta_rank is None:
            raise LoweringError(f"ttg.async_tma_copy{where(op)}: multicast = {op.ctas} needs a module of CTA pairs "
                                f"(\"ttg.num-ctas\" = {op.ctas}), this one has {L.cfg.cluster}")
        if plan.count % op.ctas:
            raise LoweringError(f"ttg.async_tma_copy{where(op)}: {plan.count} boxes do not split over {op.ctas} CTAs")
        issuers = [em.band(first, em.cmp("eq", cta_rank, em.c(r))) for r in range(op.ctas)]
        cta_mask = (1 << op.ctas) - 1
    for j in range(plan.count):
        em.op(CpAsyncBulkTensor2dOp(em.add(sm.addr, j * plan.box_bytes), tmap, em.add(col, j * plan.width),
                                    row, bar, issuers[j % len(issuers)], cta_mask=cta_mask))


STORE_THREAD = 0
"""The thread that issues a CTA's TMA stores and waits for them: thread 0 computes in every
kernel (a warp-specialized kernel's producer warp comes after the compute warps)."""


def _is_store_thread(L: LoweringContext) -> SSAValue:
    return L.em.cmp("eq", L.ids.tid, L.em.c(STORE_THREAD))


def lower_tma_store(L: LoweringContext, op: ttgd.AsyncTmaStoreOp) -> None:
    """A CTA barrier (in a wgmma kernel every thread fences its writes of the tile for the async
    proxy before it), then the store thread issues the tile's boxes (BoxPlan) at the block
    pointer's offsets as one bulk group; a box-staged tile goes one box at a time
    (`_store_boxes`)."""
    em = L.em
    root = tensor_ptr_root(op.dst)
    index, plan, _ = L.cfg.tensor_maps[root]
    bp, sm = L.get(op.dst), L.get(op.src)
    staged = sm if isinstance(sm, BoxStagedTile) else None
    if staged is not None:
        sm = staged.sm
    assert isinstance(bp, BlockPtr) and isinstance(sm, Smem)
    if not L.cfg.wgmma:
        raise LoweringError(f"ttg.async_tma_store{where(op)}: a TMA store needs its tile on a 1 KiB boundary "
                            "(the swizzle follows address bits), which only a wgmma kernel's shared memory is "
                            "aligned to")
    if staged is None:
        L.bar()  # (a wgmma kernel's barrier fences the tile's writes for the async proxy first)
    tmap = L.kernel.args[index]
    row, col = (em.to32(o) for o in bp.offsets)
    if plan.transposed:  # a column-major tile: the map's rows are the tile's columns
        row, col = col, row
    first = _is_store_thread(L)
    if staged is not None:
        _store_boxes(L, op, staged, plan, tmap, row, col, first)
        return
    for j in range(plan.count):
        em.op(CpAsyncBulkTensorStore2dOp(em.add(sm.addr, j * plan.box_bytes), tmap, em.add(col, j * plan.width),
                                         row, first))
    em.op(CpAsyncBulkCommitGroupOp(first))
    L.barriers.reads_since_bar = True  # the TMA reads the tile until a ttg.async_tma_store_wait


def _store_boxes(L: LoweringContext, op: ttgd.AsyncTmaStoreOp, staged: BoxStagedTile, plan: BoxPlan,
                 tmap: SSAValue, row: SSAValue, col: SSAValue, first: SSAValue) -> None:
    """A box-staged tile (`ttg.box_staged`): for each box (column block j, rows h, in the
    tile's order), the compute threads write it into the one-box buffer (`stmatrix`), a barrier
    (fenced for the async proxy), the store thread stores it as one bulk group; before the next
    box overwrites the buffer, the store thread waits until the TMA has read it, then a
    barrier."""
    em = L.em
    planned = box_groups(L, staged)
    if planned is None or len(planned[1]) != plan.count * plan.row_parts:
        raise LoweringError(f"ttg.async_tma_store{where(op)}: internal error: a box-staged tile whose registers do "
                            "not fall into its TMA boxes one stmatrix group at a time")
    dl, boxes = planned
    for b, groups in enumerate(boxes):
        if b:
            em.op(CpAsyncBulkWaitGroupReadOp(first, 0))
            L.bar()
        store_box(L, staged, dl, groups, b)
        L.bar()
        j, h = divmod(b, plan.row_parts)
        em.op(CpAsyncBulkTensorStore2dOp(staged.sm.addr, tmap, em.add(col, j * plan.width),
                                         em.add(row, h * plan.rows), first))
        em.op(CpAsyncBulkCommitGroupOp(first))
    L.barriers.reads_since_bar = True  # the TMA reads the last box until a ttg.async_tma_store_wait


def lower_tma_store_wait(L: LoweringContext, op: ttgd.AsyncTmaStoreWaitOp) -> None:
    """The store thread waits for its stores' reads of shared memory, then a CTA barrier."""
    L.em.op(CpAsyncBulkWaitGroupReadOp(_is_store_thread(L), op.pendings.value.data))
    L.bar()
