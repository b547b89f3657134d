"""Handlers of a pipelined loop's asynchronous ops: cp.async copies and their groups
(`ttg.async_copy_global_to_local`, `ttg.async_commit_group`, `ttg.async_wait`), mbarriers
(`ttg.init_barrier`, `ttg.wait_barrier`, `ttg.arrive_barrier`), TMA copies and stores
(`ttg.async_tma_copy`, `ttg.async_tma_store`, `ttg.async_tma_store_wait`) and wgmma waits
(`ttg.dot_wait`). The instructions are built in
codegen/lower_mem.py (cp.async) and codegen/lower_async.py (mbarriers, TMA)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sparsecc.codegen.handlers.memory import boundary_dims
from sparsecc.codegen.handlers.table import handles
from sparsecc.codegen.lower_async import (
    lower_arrive_barrier,
    lower_init_barrier,
    lower_tma_copy,
    lower_tma_store,
    lower_tma_store_wait,
    lower_wait_barrier,
)
from sparsecc.codegen.lower_base import LoweringError
from sparsecc.codegen.lower_mem import async_copy
from sparsecc.dialects import ptx
from sparsecc.dialects import ttg as ttgd

if TYPE_CHECKING:
    from sparsecc.codegen.lower_state import LoweringState

handles(ttgd.InitBarrierOp)(lower_init_barrier)
handles(ttgd.WaitBarrierOp)(lower_wait_barrier)
handles(ttgd.ArriveBarrierOp)(lower_arrive_barrier)
handles(ttgd.AsyncTmaCopyOp)(lower_tma_copy)
handles(ttgd.AsyncTmaStoreOp)(lower_tma_store)
handles(ttgd.AsyncTmaStoreWaitOp)(lower_tma_store_wait)


@handles(ttgd.AsyncCopyGlobalToLocalOp)
def _async_copy(L: LoweringState, op: ttgd.AsyncCopyGlobalToLocalOp) -> None:
    """The pipeline's marks say whether a WAR barrier is needed (`ttg.slot_safe`) and whether
    an mbarrier already proved the slot free (`ttg.slot_guarded`)."""
    if not op.is_block_pointer:
        raise LoweringError("only the block-pointer form is supported")
    bp, sm = L.get(op.src), L.get(op.dst)
    pad = op.padding.value.data if op.padding is not None else None
    async_copy(L, bp, sm, boundary_dims(op), pad, war_barrier=ttgd.SLOT_SAFE not in op.attributes,
               known=L.cfg.divs.ptr(op.src), guarded=ttgd.SLOT_GUARDED in op.attributes)
    L.set(op.token, None)


@handles(ttgd.AsyncCommitGroupOp)
def _commit_group(L: LoweringState, op: ttgd.AsyncCommitGroupOp) -> None:
    L.em.op(ptx.CpAsyncCommitGroupOp())
    L.set(op.result, None)


@handles(ttgd.AsyncWaitOp)
def _async_wait(L: LoweringState, op: ttgd.AsyncWaitOp) -> None:
    """`cp.async.wait_group n` + a CTA barrier: the copies' data is visible to every thread.
    Marked `ttg.wgmma_in_flight`, the wgmma group committed last goes on through the barrier."""
    L.em.op(ptx.CpAsyncWaitGroupOp(op.num_))
    L.bar(keep=1 if ttgd.WGMMA_IN_FLIGHT in op.attributes else 0)


@handles(ttgd.DotWaitOp)
def _dot_wait(L: LoweringState, op: ttgd.DotWaitOp) -> None:
    L.wgmma_drain(keep=op.pendings.value.data)
