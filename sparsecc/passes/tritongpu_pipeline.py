"""tritongpu-pipeline: software-pipeline K loops with async copies into S-slot shared rings.

Accepts: an `scf.for` whose body (directly) does, for one or more operands,
    %x = tt.load %p {boundaryCheck, padding}        %p: a loop-carried block pointer
    %m = ttg.local_alloc %x : (...) -> !ttg.memdesc<T, #shared>   (only use of %x)
    %v = ttg.local_load %m ...                      (only uses of %m)
and yields `tt.advance %p, [offsets]` for that pointer (the form sparse-gpu-encoding leaves for
the values, metadata and B tiles of a GEMM K loop). The offsets are loop-invariant (a K loop),
or computed in the body by arith ops from the induction variable and loop invariants alone (a
persistent GEMM's flat (tile, K step) loop, which jumps to the next tile): those ops are cloned
with the induction value of the iteration whose pointer advances (lb + s*step in the prologue,
iv + (S-1)*step for the prefetch pointers).

Produces, for num-stages = S >= 2 (the async forms of sparsecc/dialects/ttg.py):
    %buf = ttg.local_alloc : () -> !ttg.memdesc<SxT, #shared, mutable>      (one ring per load)
    prologue, for s in 0..S-2:  scf.if (lb + s*step < ub) { async_copy p_s -> buf[s] };
                                commit; p_{s+1} = advance(p_s)
    scf.for ... iter_args(..., q = p_{S-1}, rd = 0, wr = S-1) {
        ttg.async_wait {num = S-2}           group of iteration i has landed (+ CTA barrier)
        %v = ttg.local_load buf[rd]          replaces the old local_load
        scf.if (i + (S-1)*step < ub) { async_copy q -> buf[wr] }   prefetch iteration i+S-1
        commit; ...original body (dot)...; yield ..., advance(q), (rd+1)%S, (wr+1)%S
    }
    ttg.async_wait {num = 0}                 nothing in flight after the loop
Why: the copy of iteration i+S-1 overlaps the mma of iterations i..i+S-2. Each iteration (and
each prologue stage) commits exactly one group, empty or not, so "at most S-2 pending" at
the top of iteration i means the group of iteration i has landed. Slot wr = (i-1) % S is
the slot every warp read in iteration i-1, before the barrier of this iteration's
async_wait: the lowering must emit `cp.async.wait_group N` followed by `bar.sync` for
ttg.async_wait (as Triton does). The scf.if guard keeps copies of iterations past the loop
end from reading memory (simple and correct for any boundaryCheck); the copies keep the
load's boundaryCheck/padding, so partial tiles are zero-filled as before.
num-stages = 1, or a loop that does not match, is left unchanged.

With `prefetch` (default), the operand reads move to the end of the previous iteration:
    prologue ...; ttg.async_wait {num = S-2}; %v0 = ttg.local_load buf[0]
    scf.for ... iter_args(..., v = %v0) {
        scf.if (...) { async_copy q -> buf[wr] {ttg.slot_safe} }; commit; ...dot(v)...
        ttg.async_wait {num = S-2}           group of iteration i+1 has landed (+ barrier)
        %vn = ttg.local_load buf[(rd+1)%S]; yield ..., %vn
    }
so the CTA barrier and the ldmatrix latency of iteration i+1 overlap the mma ops of
iteration i still running in the tensor pipe. The copy at the top writes slot (i-1)%S, last
read before the barrier at the end of iteration i-1 (the reads after it are of slot i%S):
`ttg.slot_safe` tells the lowering it needs no barrier of its own.

wgmma loops (a dot with a #ttg.mma version 3 result) can instead be synchronised through two
mbarriers per slot (`_pipeline_mbarriers`): with `tma` (on by default in the compiler) when
every stream can be a TMA copy (sparsecc.analysis.tma: a box layout that matches its shared
encoding, a tensor map the host can build), then one thread issues `ttg.async_tma_copy`
boxes whose bytes the full barrier counts; with `mbarriers`, cp.async copies arrive on it.
Either way the loop has no CTA barrier: warps wait for the data they read and, before a slot
is overwritten, for the wgmma groups that read it (`ttg.dot_wait` + the empty barrier).
With `num-ctas=2` a TMA loop's B copies carry `{multicast = 2}`: the kernel runs as CTA pairs
that read the same B tiles, each CTA issues half of the boxes into both, and the empty barriers
count both CTAs' warps (the lowering adds the cluster, the remote arrivals and its barriers).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial

from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, UnitAttr, i32, i64
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import DiagnosticException

from sparsecc.analysis.divisibility import Divisibility
from sparsecc.analysis.dtypes import esize
from sparsecc.analysis.kloops import carried_advance
from sparsecc.analysis.tma import box_plan, tensor_ptr_root, tma_copy_plan
from sparsecc.analysis.tma_extents import extents_of, loop_extents, record_extents
from sparsecc.defaults import NUM_CTAS, NUM_STAGES
from sparsecc.dialects import arith as arith_ext
from sparsecc.dialects import ptx_targets, tt
from sparsecc.dialects.ttg import (
    MAX_STAGES,
    SLOT_GUARDED,
    SLOT_SAFE,
    WGMMA_IN_FLIGHT,
    ArriveBarrierOp,
    AsyncCommitGroupOp,
    AsyncCopyGlobalToLocalOp,
    AsyncTmaCopyOp,
    AsyncWaitOp,
    BarrierOp,
    DotOperandEncodingAttr,
    DotWaitOp,
    InitBarrierOp,
    LocalAllocOp,
    LocalLoadOp,
    MemDescSubviewOp,
    MemDescType,
    MmaEncodingAttr,
    SharedEncodingAttr,
    WaitBarrierOp,
    module_num_warps,
    module_target,
)
from sparsecc.passes.continued_rings import carry_counter, ring_outer_loop, ring_start, trip_count
from sparsecc.passes.register_prefetch import prefetch_register_loads


class PipelineError(DiagnosticException):
    """A K loop the pass will not pipeline as asked (its rings would not fit the target's
    shared memory); `op` is the loop, whose location the error reports."""

    def __init__(self, message: str, op: Operation):
        super().__init__(message)
        self.op = op


@dataclass
class _Body:
    """A pipelined loop's new body: prefetch pointers, read/write slots (and their initial
    values before the loop) and the insertion point at its top."""

    block: Block
    q_args: list[SSAValue]
    rd: SSAValue
    wr: SSAValue
    rd0: SSAValue
    wr0: SSAValue
    top: InsertPoint


@dataclass
class _Stream:
    """One pipelined operand: its load chain in the body and where its pointer comes from."""

    arg_index: int  # index among the loop's iter_args
    load: tt.LoadOp
    alloc: LocalAllocOp
    local_loads: list[LocalLoadOp]
    advance: tt.AdvanceOp
    offset_ops: list[Operation]  # `_offset_slice`: the body ops the advance offsets come from
    invariant: list[SSAValue] | None = None  # offsets hoisted before the loop, when loop-invariant


def _offset_slice(adv: tt.AdvanceOp, loop: scf.ForOp) -> list[Operation] | None:
    """The body ops (arith only, in body order) that `adv`'s offsets are computed from, when
    those depend on nothing but the induction variable and values from outside the loop;
    None otherwise. A K loop's offsets are constants (an empty slice); a persistent GEMM's
    flat (tile, K step) loop computes the jump to the next tile from the step."""
    body = loop.body.block
    iv = body.args[0]
    needed: set[Operation] = set()
    pending = list(adv.offsets)
    while pending:
        v = pending.pop()
        if v is iv or _defined_outside(v, loop):
            continue
        owner = v.owner
        if not isinstance(owner, Operation) or owner.parent_block() is not body or not owner.name.startswith("arith."):
            return None
        if owner not in needed:
            needed.add(owner)
            pending.extend(owner.operands)
    return [o for o in body.ops if o in needed]


def _defined_outside(v: SSAValue, loop: scf.ForOp) -> bool:
    owner = v.owner
    op = owner if isinstance(owner, Operation) else owner.parent_op()
    while op is not None:
        if op is loop:
            return False
        op = op.parent_op()
    return True


def _find_streams(loop: scf.ForOp) -> list[_Stream]:
    body = loop.body.block
    streams = []
    for load in body.ops:
        if not isinstance(load, tt.LoadOp):
            continue
        adv = carried_advance(loop, load)
        if adv is None:
            continue
        users = [u.operation for u in load.result.uses]
        if len(users) != 1 or not isinstance(users[0], LocalAllocOp):
            continue
        alloc = users[0]
        lls = [u.operation for u in alloc.result.uses]
        if not lls or not all(isinstance(ll, LocalLoadOp) and ll.parent_block() is body for ll in lls):
            continue
        offset_ops = _offset_slice(adv, loop)
        if offset_ops is None:
            continue
        idx = body.args.index(load.ptr) - 1  # type: ignore[arg-type]
        streams.append(_Stream(idx, load, alloc, lls, adv, offset_ops))  # type: ignore[arg-type]
    return streams


def _in_a_loop(loop: scf.ForOp) -> bool:
    """Whether `loop` runs inside another loop (a grouped GEMM's K loop in the `while` over an
    expert's token tiles). Its prologue copies then follow the previous outer trip's shared
    reads (this ring's, the epilogue's scratch): tritongpu-insert-barriers, which starts an outer
    loop's body from an unknown state, would give each copy (one scf.if per stream and stage)
    a barrier of its own; one `ttg.barrier` before the prologue orders them all."""
    op = loop.parent_op()
    while op is not None and not isinstance(op, tt.FuncOp):
        if isinstance(op, scf.ForOp | scf.WhileOp):
            return True
        op = op.parent_op()
    return False


def _wgmma_dots(loop: scf.ForOp, dense_only: bool = False) -> int:
    """How many dots with a #ttg.mma version 3 (wgmma) result the loop body (directly) holds
    (`dense_only`: without a 2:4 operand)."""
    return sum(isinstance(o, tt.DotOp) and isinstance(enc := o.result.type.encoding, MmaEncodingAttr)
               and enc.version_major == 3 and not (dense_only and o.meta is not None) for o in loop.body.block.ops)


def _wgmma_loop(loop: scf.ForOp) -> bool:
    """Whether the loop body (directly) holds a dot with a #ttg.mma version 3 (wgmma) result."""
    return _wgmma_dots(loop) > 0


def _tma_streams(loop: scf.ForOp, streams: list[_Stream], extents: bool = False) -> bool:
    """Whether every stream's tile can be a TMA copy (sparsecc.analysis.tma.tma_copy_plan: a box
    layout that matches its shared encoding and a tensor map the host can build). With
    `extents`, a stream whose pointer has no host extents may take them from its allocation
    (`sparsecc.analysis.tma_extents`): recorded on its root when the whole loop qualifies."""
    func = loop.parent_op()
    while func is not None and not isinstance(func, tt.FuncOp):
        func = func.parent_op()
    if func is None:
        return False
    divs = Divisibility(func)
    recorded: list[tt.MakeTensorPtrOp] = []
    for st in streams:
        ptr = loop.iter_args[st.arg_index]
        if tma_copy_plan(ptr, st.alloc.result.type, func, divs) is not None:
            continue
        root = tensor_ptr_root(ptr)
        found = None
        if extents and root is not None and len(st.local_loads) == 1 and extents_of(root) is None:
            found = loop_extents(root, loop, func, st.advance, st.local_loads[0].result)
        if found is not None:
            record_extents(root, found)
            recorded.append(root)
        if found is None or tma_copy_plan(ptr, st.alloc.result.type, func, divs) is None:
            for r in recorded:
                record_extents(r, None)
            return False
    return True


def _multicast_stream(streams: list[_Stream]) -> int | None:
    """The index of the stream that feeds the dot's B operand, when a CTA pair can share it:
    its TMA boxes split evenly between the two CTAs. None otherwise (each CTA copies its own)."""
    for j, st in enumerate(streams):
        enc = st.local_loads[0].result.type.encoding if st.local_loads else None
        if isinstance(enc, DotOperandEncodingAttr) and enc.op_idx == 1:
            mt = st.alloc.result.type
            plan = box_plan(mt, esize(mt.element_type))
            return j if plan is not None and plan.count % 2 == 0 else None
    return None


def _tma_bytes(streams: list[_Stream]) -> int:
    """Bytes one stage of TMA copies brings (whole tiles: out-of-bounds parts count, as zeros)."""
    types = [st.alloc.result.type for st in streams]
    return sum(math.prod(mt.get_shape()) * esize(mt.element_type) for mt in types)


def _stage_bytes(streams: list[_Stream]) -> int:
    """Shared memory one stage of a loop's rings takes: a tile of every pipelined load."""
    return sum(math.prod(st.alloc.result.type.get_shape()) * esize(st.alloc.result.type.element_type)
               for st in streams)


def _step_index(iv: SSAValue, loop: scf.ForOp, at: InsertPoint) -> SSAValue:
    """(iv - lb) / step as i32: the iteration number (plain iv for lb = 0, step = 1)."""
    def const_of(v: SSAValue) -> int | None:
        o = v.owner
        return o.value.value.data if isinstance(o, arith.ConstantOp) and isinstance(o.value, IntegerAttr) else None

    n = iv
    if const_of(loop.lb) != 0:
        n = _insert(arith.SubiOp(n, loop.lb), at).results[0]
    if const_of(loop.step) != 1:
        n = _insert(arith.DivUIOp(n, loop.step), at).results[0]
    return n


def _parity(step: SSAValue, stages: int, at: InsertPoint, flip: bool = False) -> SSAValue:
    """((step / stages) & 1) [^ 1]: the parity of the phase a slot's barrier is in at `step`."""
    use = _insert(arith.DivUIOp(step, _const(stages, i32, at)), at).results[0]
    bit = _insert(arith.AndIOp(use, _const(1, i32, at)), at).results[0]
    if flip:
        bit = _insert(arith.XOrIOp(bit, _const(1, i32, at)), at).results[0]
    return bit


def _const(value: int, ty, at: InsertPoint) -> SSAValue:
    op = arith.ConstantOp(IntegerAttr(value, ty))
    Rewriter.insert_op(op, at)
    return op.result


def _slot_view(ring: SSAValue, slot: SSAValue, zero: SSAValue, at: InsertPoint) -> SSAValue:
    """`ttg.memdesc_subview ring[slot, 0, ...]`: one slot of a ring."""
    ring_ty = ring.type
    assert isinstance(ring_ty, MemDescType)
    shape = ring_ty.get_shape()
    sub = MemDescSubviewOp(ring, [slot] + [zero] * (len(shape) - 1), ring_ty.with_shape(shape[1:]))
    return _insert(sub, at).results[0]


def _insert(op: Operation, at: InsertPoint) -> Operation:
    Rewriter.insert_op(op, at)
    return op


LOOP_STAGES = "tt.num_stages"
"""The scf.for attribute `tl.range(..., num_stages=S)` sets: that loop's stage count."""


def loop_stages(loop: scf.ForOp, default: int) -> int:
    """The stages of `loop`: its `tt.num_stages` (a PipelineError at the loop when outside
    1..MAX_STAGES), else `default` (the launch's num_stages)."""
    attr = loop.attributes.get(LOOP_STAGES)
    if not isinstance(attr, IntegerAttr):
        return default
    stages = attr.value.data
    if not 1 <= stages <= MAX_STAGES:
        raise PipelineError(f"tritongpu-pipeline: tl.range(num_stages={stages}) must be in 1..{MAX_STAGES}", loop)
    return stages


@dataclass(frozen=True)
class PipelinePass(ModulePass):
    """Multi-buffer the block-pointer loads of scf.for K loops (num-stages S >= 2)."""

    name = "tritongpu-pipeline"

    num_stages: int = NUM_STAGES
    prefetch: bool = False
    """Read iteration i+1's operands at the end of iteration i (see the module docstring)."""
    mbarriers: bool = False
    """Synchronise wgmma K loops through full/empty mbarriers per slot instead of CTA barriers
    (see `_pipeline_mbarriers`); loops of other dots keep the barrier form."""
    tma: bool = False
    """Pipeline a wgmma loop with TMA copies and mbarriers when every stream of the loop can
    be a TMA copy (`_tma_streams`; one thread issues the boxes, the full barrier counts their
    bytes); other loops keep the form the other options say."""
    tma_extents: bool = False
    """With `tma`: a stream whose block pointer has no extents the host can compute may take
    them from its allocation at launch (`sparsecc.analysis.tma_extents`: an unmasked grouped-GEMM
    weight, a token bound loaded on the device past which nothing is stored)."""
    continue_rings: bool = False
    """With `tma`: the ring of a TMA K loop that runs inside an outer loop (a grouped GEMM's token
    tiles) is allocated and initialised once, before the outer loop, whose trips carry its step
    counter (`sparsecc.passes.continued_rings`; the protocol: `_pipeline_mbarriers`). Without
    it every outer trip initialises the ring again, behind a CTA barrier."""
    wgmma_in_flight: bool = False
    """In the CTA-barrier form of a wgmma loop (num-stages >= 3), keep the wgmma group of
    iteration i-1 running through iteration i's barrier: the copies run S-2 steps ahead (slot
    (i-2) % S, whose group every warp retired with `wgmma.wait_group 1` before the barrier),
    and the async_wait carries `ttg.wgmma_in_flight`. Without it each barrier drains the group,
    so the tensor cores idle through the barrier and the next step's copy issue."""
    ring_in_flight: bool = False
    """In the cp.async mbarrier form of a wgmma loop, mark the top wait on the full barrier
    `ttg.wgmma_in_flight`: the CTA barriers and scratch stores of the body (a layout convert's)
    may then keep the wgmma group committed last running, where `analysis.kloops.ring_in_flight`
    proves that group reads no shared memory but the ring's guarded slots. Without it each such
    barrier drains every group (bf16 quantized weights: once per K step)."""
    num_ctas: int = NUM_CTAS
    """2: the kernel runs in clusters of two CTAs (programs 2j and 2j+1) whose K loops read the
    same B tiles (the kernel's promise, as Triton's num_ctas). A TMA loop then multicasts B:
    each CTA issues half of B's boxes into both CTAs, and a slot is free once both CTAs' warps
    released it (`_multicast_stream`). The module gets `ttg.num-ctas = 2` when it does."""

    def __post_init__(self) -> None:
        """Options are checked when the pass is made (before any IR is read or rewritten)."""
        if isinstance(self.num_stages, bool) or not 1 <= self.num_stages <= MAX_STAGES:
            raise ValueError(f"tritongpu-pipeline: num-stages must be in 1..{MAX_STAGES}, got {self.num_stages}")
        if self.num_ctas not in (1, 2):
            raise ValueError(f"tritongpu-pipeline: num-ctas must be 1 or 2, got {self.num_ctas}")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        loops = [o for o in op.walk() if isinstance(o, scf.ForOp)]
        if self.num_stages == 1 and all(loop_stages(loop, 1) == 1 for loop in loops):
            return  # nothing to pipeline (the module's num-warps is then not read either)
        warps = module_num_warps(op)
        self._check_shared_budget(op)
        for loop in loops:
            stages = loop_stages(loop, self.num_stages)
            if stages != self.num_stages:  # `tl.range(..., num_stages=S)` overrides the launch's for this loop
                if stages > 1:
                    replace(self, num_stages=stages)._pipeline_loop(loop, warps, op)
                continue
            self._pipeline_loop(loop, warps, op)

    def _pipeline_loop(self, loop: scf.ForOp, warps: int, op: ModuleOp) -> None:
        """Pipeline one loop with this pass's num_stages (unchanged when it does not match)."""
        streams = _find_streams(loop)
        wgmma = streams and _wgmma_loop(loop) and loop.lb.type == i32
        if wgmma:  # registers a dequantization reads, loaded a step ahead (outside the rings)
            prefetched = prefetch_register_loads(loop)
            if prefetched is not loop:  # a new loop: its streams' iter_args moved
                loop, streams = prefetched, _find_streams(prefetched)
        tma = wgmma and self.tma and _tma_streams(loop, streams, self.tma_extents)
        if wgmma and (self.mbarriers or tma):
            if self.prefetch:
                raise ValueError("tritongpu-pipeline: prefetch and mbarriers do not combine")
            multicast = _multicast_stream(streams) if tma and self.num_ctas == 2 else None
            if multicast is not None:
                op.attributes["ttg.num-ctas"] = IntegerAttr(2, i32)
            self._pipeline_mbarriers(loop, streams, warps, tma, multicast)
        elif streams:
            self._pipeline(loop, streams)

    def _depth(self, loop: scf.ForOp) -> int:
        """How many steps ahead a CTA-barrier loop's copies run: S-1, or S-2 where a wgmma group
        stays in flight through the barrier: every wgmma loop with `wgmma_in_flight`, and
        without it a loop of two or more wgmma dots (attention's Q·Kᵀ and P·V), whose step has
        work enough to hide a copy one step ahead and whose last dot then runs on into the next
        step's first (H200: attention 1.06-1.08x Triton's time against 1.08-1.13x; a one-dot
        GEMM loop measured slower with it, NOTES stop 21 runs 7 and 11). Dense dots only: the
        form ran on the GPU for attention with dense K, not yet with a 2:4 K."""
        wanted = (self.wgmma_in_flight and _wgmma_loop(loop)) or _wgmma_dots(loop, dense_only=True) >= 2
        keep = wanted and not self.prefetch and self.num_stages >= 3
        return self.num_stages - (2 if keep else 1)

    def _check_shared_budget(self, module: ModuleOp) -> None:
        """Refuse, before rewriting anything, num-stages whose rings alone exceed the shared
        memory one block of the module's `ttg.target` may use (the kernel could never launch);
        convert-ttg-to-ptx checks the exact total, with every other buffer, after lowering."""
        target = module_target(module)
        if target is None:
            return
        limit = ptx_targets.shared_limit(target)
        loops = [(o, _stage_bytes(_find_streams(o))) for o in module.walk() if isinstance(o, scf.ForOp)]
        per_stage = sum(b for _, b in loops)
        used = 0
        for loop, stage in loops:
            stages = loop_stages(loop, self.num_stages)
            if stages == 1:
                continue
            used += stages * stage
            if stage and used > limit:
                fit = limit // per_stage
                others = used - stages * stage
                advice = f"at most {fit} stages fit" if fit >= 2 else "no pipelining fits: use smaller tiles"
                raise PipelineError(
                    f"tritongpu-pipeline: num-stages={stages} needs {stages} x {stage} = "
                    f"{stages * stage} bytes of shared memory for this loop's rings"
                    + (f" (and {others} for earlier loops)" if others else "")
                    + f", more than the {limit} bytes ({limit // 1024} KiB) one block may use on {target}; "
                    + advice, loop)

    @staticmethod
    def _hoist_invariant_offsets(loop: scf.ForOp, streams: list[_Stream]) -> None:
        """Streams whose offsets do not depend on the iteration (a K loop's constants) get them
        cloned once before the loop (`_Stream.invariant`)."""
        for st in streams:
            if all(isinstance(o, arith.ConstantOp) for o in st.offset_ops):
                mapping: dict[SSAValue, SSAValue] = {}
                for o in st.offset_ops:
                    _insert(o.clone(value_mapper=mapping), InsertPoint.before(loop))
                st.invariant = [mapping.get(o, o) for o in st.advance.offsets]

    def _offsets_at(self, st: _Stream, body_iv: SSAValue, iv: SSAValue, at: InsertPoint) -> list[SSAValue]:
        """The advance offsets of iteration `iv` (the pointer of iteration iv + step): loop
        invariants as hoisted, else the offset ops cloned at `at` with `iv` for `body_iv`, the
        induction variable they read (the old body's, or the new one's once the ops moved)."""
        if st.invariant is not None:
            return st.invariant
        mapping: dict[SSAValue, SSAValue] = {body_iv: iv}
        for o in st.offset_ops:
            _insert(o.clone(value_mapper=mapping), at)
        return [mapping.get(o, o) for o in st.advance.offsets]

    def _copy(self, s: _Stream, ptr: SSAValue, ring: SSAValue, slot: SSAValue, pred: SSAValue, at: InsertPoint,
              slot_safe: bool = False, guarded: bool = False) -> None:
        """`scf.if %pred { async_copy ptr -> ring[slot] }` followed by a commit."""
        sub = _slot_view(ring, slot, _const(0, i32, at), at)
        bc = s.load.boundaryCheck.get_values() if s.load.boundaryCheck is not None else ()
        pad = s.load.padding.value.data if s.load.padding is not None else None
        copy = AsyncCopyGlobalToLocalOp(ptr, sub, boundary_check=bc, padding=pad)
        if slot_safe:
            copy.attributes[SLOT_SAFE] = UnitAttr()
        if guarded:
            copy.attributes[SLOT_GUARDED] = UnitAttr()
        _insert(scf.IfOp(pred, [], Region(Block([copy, scf.YieldOp()]))), at)

    def _read_slots(self, streams: list[_Stream], rings: list[SSAValue], slot: SSAValue, at: InsertPoint,
                    replace: bool = False) -> list[SSAValue]:
        """local_load every stream's operands from ring[slot] (replacing the old loads' uses)."""
        zero = _const(0, i32, at)
        out = []
        for j, s in enumerate(streams):
            sub = _slot_view(rings[j], slot, zero, at)
            for ll in s.local_loads:
                new_ll = _insert(LocalLoadOp(sub, ll.result.type), at)
                if replace:
                    ll.result.replace_all_uses_with(new_ll.results[0])
                out.append(new_ll.results[0])
        return out

    def _barrier_ring(self, at: InsertPoint, count: int) -> SSAValue:
        """A ring of S mbarriers in shared memory, each expecting `count` arrivals per phase."""
        enc = SharedEncodingAttr(1, 1, 1, (0,))
        ring = _insert(LocalAllocOp(MemDescType((self.num_stages,), i64, enc, mutable=True)), at).results[0]
        _insert(InitBarrierOp(ring, count), at)
        return ring

    def _tma_group(self, streams: list[_Stream], ptrs: list[SSAValue], rings: list[SSAValue], full: SSAValue,
                   slot: SSAValue, pred: SSAValue, at: InsertPoint, empty_wait: Operation | None = None,
                   multicast: int | None = None) -> None:
        """`scf.if %pred { [wait empty]; arrive full[slot] (tma, stage bytes); TMA copies }`
        (stream `multicast`'s copy into both CTAs of the pair)."""
        body = Block()
        end = InsertPoint.at_end(body)
        if empty_wait is not None:
            _insert(empty_wait, end)
        _insert(ArriveBarrierOp(full, slot, "tma", _tma_bytes(streams)), end)
        zero = _const(0, i32, end)
        for j in range(len(streams)):
            _insert(AsyncTmaCopyOp(ptrs[j], _slot_view(rings[j], slot, zero, end), full, slot,
                                   2 if j == multicast else 1), end)
        body.add_op(scf.YieldOp())
        _insert(scf.IfOp(pred, [], Region(body)), at)

    # ------------------------------------------------------------ shared by both forms
    def _rings(self, loop: scf.ForOp, streams: list[_Stream], at: InsertPoint | None = None) -> list[SSAValue]:
        """One S-slot shared ring per stream, before the loop (or at `at`)."""
        rings = []
        for st in streams:
            mt = st.alloc.result.type
            assert isinstance(mt, MemDescType)
            ring = LocalAllocOp(MemDescType((self.num_stages, *mt.get_shape()), mt.element_type, mt.encoding,
                                            mutable=True))
            rings.append(_insert(ring, at or InsertPoint.before(loop)).results[0])
        return rings

    def _prologue(self, loop: scf.ForOp, streams: list[_Stream], issue: Callable[..., None],
                  depth: int | None = None, base: SSAValue | None = None) -> list[SSAValue]:
        """Stages 0..depth-1 (depth: S-1 unless given) before the loop: `issue(pointers, slot,
        step exists)` each, then the pointers advance. Returns the pointers of stage `depth`
        (the loop's first prefetch). With `base` (a continued ring's steps before this loop),
        stage s is the ring's step base + s: slot (base + s) % S, and `issue` gets that step
        as a fourth argument."""
        before = InsertPoint.before(loop)
        ptrs = [loop.iter_args[st.arg_index] for st in streams]
        for stage in range(self.num_stages - 1 if depth is None else depth):
            k = _const(stage, loop.lb.type, before)
            iv = _insert(arith.MuliOp(k, loop.step), before).results[0]
            iv = _insert(arith.AddiOp(loop.lb, iv), before).results[0]
            pred = _insert(arith_ext.CmpiOp(iv, loop.ub, "slt"), before).results[0]
            if base is None:
                issue(ptrs, _const(stage, i32, before), pred)
            else:
                gstep = _insert(arith.AddiOp(base, _const(stage, i32, before)), before).results[0]
                slot = _insert(arith.RemUIOp(gstep, _const(self.num_stages, i32, before)), before).results[0]
                issue(ptrs, slot, pred, gstep)
            ptrs = [_insert(tt.AdvanceOp(p, self._offsets_at(streams[j], loop.body.block.args[0], iv, before)),
                            before).results[0]
                    for j, p in enumerate(ptrs)]
        return ptrs

    def _new_body(self, loop: scf.ForOp, ptrs: list[SSAValue], depth: int | None = None) -> _Body:
        """The loop body moved into a block with the prefetch pointers and the read and write
        slots (the write slot `depth` steps ahead, S-1 unless given) as extra arguments."""
        before = InsertPoint.before(loop)
        old_body = loop.body.block
        n_old = len(loop.iter_args)
        rd0 = _const(0, i32, before)
        wr0 = _const(self.num_stages - 1 if depth is None else depth, i32, before)
        block = Block(arg_types=[a.type for a in old_body.args] + [p.type for p in ptrs] + [i32, i32])
        for old, new in zip(old_body.args, block.args):
            old.replace_all_uses_with(new)
        for o in list(old_body.ops):
            o.detach()
            block.add_op(o)
        first = block.first_op
        assert first is not None
        return _Body(block, list(block.args[1 + n_old: 1 + n_old + len(ptrs)]), block.args[-2], block.args[-1],
                     rd0, wr0, InsertPoint.before(first))

    def _ahead(self, loop: scf.ForOp, iv: SSAValue, at: InsertPoint,
               depth: int | None = None) -> tuple[SSAValue, SSAValue]:
        """(whether iteration iv + depth*step exists (depth: S-1 unless given), that iteration's
        induction value): its copies are issued in this one."""
        k = _const(self.num_stages - 1 if depth is None else depth, loop.lb.type, at)
        ahead = _insert(arith.MuliOp(k, loop.step), at).results[0]
        ahead = _insert(arith.AddiOp(iv, ahead), at).results[0]
        return _insert(arith_ext.CmpiOp(ahead, loop.ub, "slt"), at).results[0], ahead

    def _advance_and_rotate(self, streams: list[_Stream], body: _Body, iv_ahead: SSAValue,
                            at: InsertPoint) -> list[SSAValue]:
        """The prefetch pointers advanced (by the offsets of their iteration, `iv_ahead`) and
        the slots rotated, for the yield."""
        new_q = [_insert(tt.AdvanceOp(q, self._offsets_at(streams[j], body.block.args[0], iv_ahead, at)), at).results[0]
                 for j, q in enumerate(body.q_args)]
        one, zero = _const(1, i32, at), _const(0, i32, at)
        ns = _const(self.num_stages, i32, at)
        rotated = []
        for x in (body.rd, body.wr):
            # a slot is in [0, S): (x + 1) % S is x + 1 unless that is S. A compare and a
            # select, where ptxas turns a remainder by S (not a power of two) into a division
            # sequence (~15 SASS instructions each iteration)
            inc = _insert(arith.AddiOp(x, one), at).results[0]
            below = _insert(arith_ext.CmpiOp(inc, ns, "slt"), at).results[0]
            rotated.append(_insert(arith.SelectOp(below, inc, zero), at).results[0])
        return new_q + rotated

    @staticmethod
    def _erase_old_chains(streams: list[_Stream]) -> None:
        for st in streams:
            for ll in st.local_loads:
                ll.detach()
                ll.erase()
            st.alloc.detach()
            st.alloc.erase()
            st.load.detach()
            st.load.erase()

    @staticmethod
    def _replace_loop(loop: scf.ForOp, body: Block, inits: list[SSAValue]) -> scf.ForOp:
        new_loop = scf.ForOp(loop.lb, loop.ub, loop.step, inits, Region(body))
        Rewriter.insert_op(new_loop, InsertPoint.before(loop))
        for old, new in zip(loop.results, new_loop.results[:len(loop.results)]):
            old.replace_all_uses_with(new)
        loop.detach()
        loop.erase()
        return new_loop

    # ------------------------------------------------------------ the mbarrier form
    def _pipeline_mbarriers(self, loop: scf.ForOp, streams: list[_Stream], warps: int, tma: bool = False,
                            multicast: int | None = None) -> None:
        """The ring pipeline of a wgmma K loop, synchronised through two mbarriers per slot.

            full[s]  each thread arrives once its copies into slot s landed (count = threads);
                     with TMA: one thread announces the stage's bytes (count = 1)
            empty[s] each thread arrives once the wgmma group reading s retired (count =
                     threads); with TMA: lane 0 of each warp (count = warps)
            prologue, for s in 0..S-2:  scf.if (step s exists) { copies -> buf[s] }
                                        arrive full[s] (copies)
            scf.for ... iter_args(..., q, rd = 0, wr = S-1) {            (iteration j)
                wait full[rd], parity (j / S) & 1;  %v = local_load buf[rd]
                ...original body (dot j)...
                ttg.dot_wait {pendings = 1}                 the group of step j-1 retired
                scf.if (j > 0) { arrive empty[wr] }         slot wr = (j-1) % S is free
                scf.if (step j+S-1 exists) { wait empty[wr], parity ((j+S-1) / S & 1) ^ 1;
                                             copies q -> buf[wr] }
                arrive full[wr] (copies); yield ..., advance(q), (rd+1)%S, (wr+1)%S
            }
        (TMA: the arrival announcing the bytes and the copies both sit in the guarded scf.if.
        With a multicast stream (a CTA pair) empty[s] counts the warps of both CTAs: each warp's
        arrival goes to its own CTA's barrier and to the peer's, since either CTA's copy writes
        into both.)
        No CTA barrier in the loop: a warpgroup waits only for the data it reads and, before
        overwriting a slot, for the wgmma groups that read it; its own next group keeps the
        tensor cores busy meanwhile (the barrier form drains every group at each barrier).
        With cp.async copies every thread arrives on empty[s]: each releases its own reads of
        the slot (ldmatrix, ld.shared) before other threads' copies and zero-fill stores write
        it; a lane-0 arrival would release only lane 0's reads, and compute-sanitizer's
        racecheck reports the other lanes' reads racing with the next fill of the slot.

        Continued rings (`continue_rings`, TMA, a K loop inside an outer loop): the rings are
        made once before the outer loop and step j of a trip is the ring's step g + j above;
        `sparsecc.passes.continued_rings` gives what changes and the ordering argument.
        """
        S = self.num_stages
        before = InsertPoint.before(loop)
        outer = ring_outer_loop(loop) if tma and self.continue_rings and multicast is None else None
        home = InsertPoint.before(outer) if outer is not None else before
        rings = self._rings(loop, streams, home)
        full = self._barrier_ring(home, 1 if tma else 32 * warps)
        empty = self._barrier_ring(home, (warps if tma else 32 * warps) * (2 if multicast is not None else 1))
        base, finish = carry_counter(outer, _const(0, i32, home)) if outer is not None else (None, None)
        self._hoist_invariant_offsets(loop, streams)

        issue = partial(self._issue_stage, streams, rings, (full, empty), before, tma, multicast)
        ptrs = self._prologue(loop, streams, issue, base=base)
        body = self._new_body(loop, ptrs)
        if base is not None:  # the ring's slots go on where the last trip left them
            body.rd0, body.wr0 = ring_start(base, S, before)
        step, gstep = self._wait_and_read(loop, streams, body, rings, full, base, tma)
        yield_op = body.block.last_op
        assert isinstance(yield_op, scf.YieldOp)
        at = InsertPoint.before(yield_op)
        iv_ahead = self._release_and_refill(loop, streams, body, rings, (full, empty), step, at, tma, multicast,
                                            gstep)
        carried = self._advance_and_rotate(streams, body, iv_ahead, at)
        Rewriter.replace_op(yield_op, scf.YieldOp(*yield_op.operands, *carried))
        lb, ub, step_v = loop.lb, loop.ub, loop.step
        new_loop = self._replace_loop(loop, body.block, [*loop.iter_args, *ptrs, body.rd0, body.wr0])
        if base is not None and finish is not None:
            self._release_last(new_loop, empty, base, finish)
        elif _in_a_loop(new_loop):
            self._retire_barriers(new_loop, (lb, ub, step_v), full, tma)

    def _issue_stage(self, streams: list[_Stream], rings: list[SSAValue], barriers: tuple[SSAValue, SSAValue],
                     before: InsertPoint, tma: bool, multicast: int | None, ptrs: list[SSAValue], slot: SSAValue,
                     pred: SSAValue, gstep: SSAValue | None = None) -> None:
        """One stage's copies into `slot` of a ring loop (`_pipeline_mbarriers`), where `pred`
        holds: TMA boxes counted on the full barrier (after waiting for the slot's empty barrier
        at ring step `gstep`, when given), or cp.async copies and their arrival on it."""
        full, empty = barriers
        if tma:
            wait = None if gstep is None else WaitBarrierOp(empty, slot, _parity(gstep, self.num_stages, before,
                                                                                 flip=True))
            self._tma_group(streams, ptrs, rings, full, slot, pred, before, wait, multicast=multicast)
            return
        for j, st in enumerate(streams):
            self._copy(st, ptrs[j], rings[j], slot, pred, before)
        _insert(ArriveBarrierOp(full, slot, "copies"), before)

    def _wait_and_read(self, loop: scf.ForOp, streams: list[_Stream], body: _Body, rings: list[SSAValue],
                       full: SSAValue, base: SSAValue | None, tma: bool) -> tuple[SSAValue, SSAValue]:
        """The top of a ring loop's body (`_pipeline_mbarriers`): the wait on slot rd's full
        barrier, then the streams' tiles read from that slot in place of their loads. Returns the
        iteration number and the ring's step (the same, unless a continued ring starts at
        `base`)."""
        rd, iv, top = body.rd, body.block.args[0], body.top
        step = _step_index(iv, loop, top)
        gstep = step if base is None else _insert(arith.AddiOp(base, step), top).results[0]
        top_wait = _insert(WaitBarrierOp(full, rd, _parity(gstep, self.num_stages, top)), top)
        if self.ring_in_flight and not tma:
            top_wait.attributes[WGMMA_IN_FLIGHT] = UnitAttr()
        self._read_slots(streams, rings, rd, top, replace=True)
        self._erase_old_chains(streams)
        return step, gstep

    @staticmethod
    def _release_last(loop: scf.ForOp, empty: SSAValue, base: SSAValue, finish: Callable[[SSAValue], None]) -> None:
        """After a continued ring's loop (see `_pipeline_mbarriers`): once the last wgmma group
        retired, release the slot of the trip's last step (the loop's final wr), and pass the
        ring's step count on to the next trip."""
        at = InsertPoint.after(loop)
        _insert(DotWaitOp(0), at)
        n = trip_count(loop, at)
        ran = _insert(arith_ext.CmpiOp(n, _const(0, i32, at), "sgt"), at).results[0]
        last = loop.results[-1]
        _insert(scf.IfOp(ran, [], Region(Block([ArriveBarrierOp(empty, last, "warps"), scf.YieldOp()]))), at)
        finish(_insert(arith.AddiOp(base, n), at).results[0])

    def _retire_barriers(self, loop: scf.ForOp, bounds: tuple[SSAValue, SSAValue, SSAValue], full: SSAValue,
                         tma: bool) -> None:
        """After a ring loop that runs inside another loop, whose next trip initialises the
        same barriers again: wait until nothing can still arrive on them, then a CTA barrier.

        cp.async arrivals (`cp.async.mbarrier.arrive.noinc`) land asynchronously, and the last
        S-1 iterations (or the prologue, for short loops) issue them for steps n .. n+S-2 that
        no iteration waits for; one landing after the re-initialisation would complete the new
        phase early. Waiting for those steps' phases (slot (n+t) % S, parity ((n+t) / S) & 1)
        proves every arrival landed. The CTA barrier then keeps thread 0 from initialising the
        barriers while another warp still waits on one of them. (TMA rings issue nothing past
        the last step: the barrier alone.)"""
        S = self.num_stages
        at = InsertPoint.after(loop)
        if not tma:
            lb, ub, step = bounds
            span = _insert(arith.SubiOp(ub, lb), at).results[0]
            span = _insert(arith.AddiOp(span, _insert(arith.SubiOp(step, _const(1, i32, at)), at).results[0]),
                           at).results[0]
            n = _insert(arith.DivSIOp(span, step), at).results[0]
            n = _insert(arith.MaxSIOp(n, _const(0, i32, at)), at).results[0]  # trip count
            for t in range(S - 1):
                stage = _insert(arith.AddiOp(n, _const(t, i32, at)), at).results[0] if t else n
                slot = _insert(arith.RemUIOp(stage, _const(S, i32, at)), at).results[0]
                _insert(WaitBarrierOp(full, slot, _parity(stage, S, at)), at)
        _insert(BarrierOp(), at)

    def _release_and_refill(self, loop: scf.ForOp, streams: list[_Stream], body: _Body, rings: list[SSAValue],
                            barriers: tuple[SSAValue, SSAValue], step: SSAValue, at: InsertPoint, tma: bool,
                            multicast: int | None, gstep: SSAValue | None = None) -> SSAValue:
        """The end of iteration j of an mbarrier ring (see `_pipeline_mbarriers`): once the
        group of step j-1 retired, release slot wr = (j-1) % S (from j = 1 on), then wait for
        it to be empty and refill it with step j+S-1 when that step exists. Returns the
        induction value of that step. `gstep`: the ring's step of iteration j (g + j in a
        continued ring), whose phases the empty wait uses; j unless given."""
        S, (full, empty), wr = self.num_stages, barriers, body.wr
        release = "warps" if tma else "threads"
        _insert(DotWaitOp(1), at)
        started = _insert(arith_ext.CmpiOp(step, _const(0, i32, at), "sgt"), at).results[0]
        _insert(scf.IfOp(started, [], Region(Block([ArriveBarrierOp(empty, wr, release), scf.YieldOp()]))), at)
        pred, iv_ahead = self._ahead(loop, body.block.args[0], at)
        wstep = _insert(arith.AddiOp(step if gstep is None else gstep, _const(S - 1, i32, at)), at).results[0]
        empty_wait = WaitBarrierOp(empty, wr, _parity(wstep, S, at, flip=True))
        if tma:
            self._tma_group(streams, body.q_args, rings, full, wr, pred, at, empty_wait, multicast)
        else:
            _insert(scf.IfOp(pred, [], Region(Block([empty_wait, scf.YieldOp()]))), at)
            for j, st in enumerate(streams):
                self._copy(st, body.q_args[j], rings[j], wr, pred, at, guarded=True)
            _insert(ArriveBarrierOp(full, wr, "copies"), at)
        return iv_ahead

    # ------------------------------------------------------------ the CTA-barrier form
    def _pipeline(self, loop: scf.ForOp, streams: list[_Stream]) -> None:
        S = self.num_stages
        before = InsertPoint.before(loop)
        rings = self._rings(loop, streams)
        self._hoist_invariant_offsets(loop, streams)
        if _in_a_loop(loop):
            _insert(BarrierOp(), before)  # one barrier for the whole prologue (`_in_a_loop`)

        def issue(ptrs: list[SSAValue], slot: SSAValue, pred: SSAValue) -> None:
            for j, st in enumerate(streams):
                self._copy(st, ptrs[j], rings[j], slot, pred, before)
            _insert(AsyncCommitGroupOp(), before)

        depth = self._depth(loop)
        in_flight = depth == S - 2
        ptrs = self._prologue(loop, streams, issue, depth)
        body = self._new_body(loop, ptrs, depth)
        new_body, rd, wr, iv, top = body.block, body.rd, body.wr, body.block.args[0], body.top
        if self.prefetch:
            # Operands of iteration i arrive as iter_args, read at the end of iteration i-1
            # (or before the loop), right after that iteration's mma ops were issued.
            frag_types = [ll.result.type for st in streams for ll in st.local_loads]
            frag_args = [new_body.insert_arg(t, len(new_body.args)) for t in frag_types]
            pos = 0
            for st in streams:
                for ll in st.local_loads:
                    ll.result.replace_all_uses_with(frag_args[pos])
                    pos += 1
            _insert(AsyncWaitOp([], S - 2), before)
            frag0 = self._read_slots(streams, rings, body.rd0, before)
        else:
            # Top of the body: wait, read the current slots.
            wait = _insert(AsyncWaitOp([], depth - 1), top)
            if in_flight:
                wait.attributes[WGMMA_IN_FLIGHT] = UnitAttr()
            self._read_slots(streams, rings, rd, top, replace=True)
        # Prefetch iteration i + depth.
        pred, iv_ahead = self._ahead(loop, iv, top, depth)
        # (Copies go first also in wgmma loops: issuing them after the dot, so that the
        # asynchronous group runs under the copy issue, measured 13% slower on the H100 — the
        # data gets an iteration less to land.)
        for j, st in enumerate(streams):
            # slot wr = (i-1) % S was last read in iteration i-1, before this iteration's
            # async_wait barrier: the copy needs no barrier of its own (in both modes). In
            # flight: slot (i-2) % S, whose wgmma group every warp retired before that barrier.
            self._copy(st, body.q_args[j], rings[j], wr, pred, top, slot_safe=True, guarded=in_flight)
        _insert(AsyncCommitGroupOp(), top)
        self._erase_old_chains(streams)
        # Yield: advance prefetch pointers, rotate slots.
        yield_op = new_body.last_op
        assert isinstance(yield_op, scf.YieldOp)
        at = InsertPoint.before(yield_op)
        carried = self._advance_and_rotate(streams, body, iv_ahead, at)
        frag_next: list[SSAValue] = []
        if self.prefetch:
            _insert(AsyncWaitOp([], S - 2), at)  # the group of iteration i+1 has landed
            frag_next = self._read_slots(streams, rings, carried[-2], at)
        Rewriter.replace_op(yield_op, scf.YieldOp(*yield_op.operands, *carried, *frag_next))
        new_loop = self._replace_loop(loop, new_body, [*loop.iter_args, *ptrs, body.rd0, body.wr0,
                                                       *(frag0 if self.prefetch else [])])
        _insert(AsyncWaitOp([], 0), InsertPoint.after(new_loop))


__all__ = ["PipelinePass"]
