"""Shared-memory mbarriers and TMA bulk copies for the `ptx` dialect (sm_80+ `cp.async` arrivals,
sm_90 parity waits, TMA loads and stores).

A pipelined K loop whose warps synchronise through mbarriers instead of `bar.sync` needs these
PTX forms; each op here is a `ptx.TemplateOp` that prints one of them as a template (as in
ptx_wgmma: `$i` = results first, then operands):

    ptx.mbarrier.init       `@pred mbarrier.init.shared::cta.b64 [addr], count;` (one thread)
    ptx.mbarrier.init_fence `fence.mbarrier_init.release.cluster;`           (after the inits)
    ptx.mbarrier.arrive     `@pred mbarrier.arrive.shared::cta.b64 _, [addr];` (release)
    ptx.cp.async.mbarrier.arrive
                            `cp.async.mbarrier.arrive.noinc.shared::cta.b64 [addr];`: one
                            arrival once every cp.async this thread issued so far has landed
                            (`noinc`: the arrival is one of the `count` the barrier expects)
    ptx.mbarrier.wait       spin on `mbarrier.try_wait.parity.shared::cta.b64` until the phase
                            of parity `parity` has completed (acquire)
    ptx.mbarrier.arrive_expect_tx
                            `@pred mbarrier.arrive.expect_tx.shared::cta.b64 _, [addr], bytes;`:
                            one arrival that also announces `bytes` of async-proxy writes
    ptx.cp.async.bulk.tensor
                            `@pred cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::
                            complete_tx::bytes [dst], [tmap, {x, y}], [addr];` (sm_90): one TMA
                            box at coordinates (x innermost, y) of the tensor map at generic
                            address `tmap`, its bytes counted on the mbarrier at `addr`;
                            with `cta_mask`: `.multicast::cluster` into those CTAs
    ptx.cp.async.bulk.tensor.store
                            `@pred cp.async.bulk.tensor.2d.global.shared::cta.bulk_group
                            [tmap, {x, y}], [src];` (sm_90): one TMA box of shared memory
                            out to the tensor map's coordinates (x innermost, y); what lies
                            outside the map's dims is not written
    ptx.cp.async.bulk.commit_group
                            `@pred cp.async.bulk.commit_group;`: this thread's bulk stores so
                            far become one bulk group
    ptx.cp.async.bulk.wait_group.read
                            `@pred cp.async.bulk.wait_group.read n;`: wait until at most `n` of
                            this thread's bulk groups are still reading their shared sources
    ptx.mbarrier.remote_arrive
                            `mapa` + `mbarrier.arrive.shared::cluster`: arrive on the other
                            CTA's barrier at the same offset (a CTA pair)
    ptx.barrier.cluster     `barrier.cluster.arrive.release` + `wait.acquire` (every thread of
                            the cluster)

A barrier of `count` arrivals completes a phase when `count` arrivals reached it; its phases
alternate parity 0, 1, 0, ... `try_wait.parity p` succeeds once the phase of parity p is over,
and on a fresh barrier (phase 0 running) `p = 1` succeeds at once (the "previous" phase): a
producer's first wait on an empty-slot barrier passes.
"""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, i1, i32, i64
from xdsl.ir import Dialect, SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, opt_operand_def, opt_prop_def, prop_def
from xdsl.utils.exceptions import VerifyException

from sparsecc.dialects.ptx import TemplateOp


@irdl_op_definition
class MbarrierInitOp(TemplateOp):
    """`@pred mbarrier.init.shared::cta.b64 [addr], count;` (`pred`: true in one thread)."""

    name = "ptx.mbarrier.init"
    addr = operand_def(i32)
    pred = operand_def(i1)
    count = prop_def(IntegerAttr)

    def __init__(self, addr: SSAValue, pred: SSAValue, count: int):
        super().__init__(operands=[addr, pred], properties={"count": IntegerAttr(count, 32)})

    def verify_(self) -> None:
        if not 0 < self.count.value.data < 2**20:
            raise VerifyException("ptx.mbarrier.init: count must be in 1 .. 2**20 - 1")

    def asm_template(self) -> str:
        return f"@$1 mbarrier.init.shared::cta.b64 [$0], {self.count.value.data};"


@irdl_op_definition
class MbarrierInitFenceOp(TemplateOp):
    """`fence.mbarrier_init.release.cluster;`: publish the inits (before the CTA barrier)."""

    name = "ptx.mbarrier.init_fence"

    def __init__(self):
        super().__init__()

    def asm_template(self) -> str:
        return "fence.mbarrier_init.release.cluster;"


@irdl_op_definition
class MbarrierArriveOp(TemplateOp):
    """`[@pred] mbarrier.arrive.shared::cta.b64 _, [addr];`: one arrival (release semantics) per
    thread that executes it (only where `pred` holds, when given)."""

    name = "ptx.mbarrier.arrive"
    addr = operand_def(i32)
    pred = opt_operand_def(i1)

    def __init__(self, addr: SSAValue, pred: SSAValue | None = None):
        super().__init__(operands=[addr, [pred] if pred is not None else []])

    def asm_template(self) -> str:
        guard = "@$1 " if self.pred is not None else ""
        return guard + "mbarrier.arrive.shared::cta.b64 _, [$0];"


@irdl_op_definition
class CpAsyncMbarrierArriveOp(TemplateOp):
    """`cp.async.mbarrier.arrive.noinc.shared::cta.b64 [addr];`: arrive once this thread's
    cp.async copies issued so far have landed."""

    name = "ptx.cp.async.mbarrier.arrive"
    addr = operand_def(i32)

    def __init__(self, addr: SSAValue):
        super().__init__(operands=[addr])

    def asm_template(self) -> str:
        return "cp.async.mbarrier.arrive.noinc.shared::cta.b64 [$0];"


@irdl_op_definition
class MbarrierWaitOp(TemplateOp):
    """Wait (spinning on try_wait) until the barrier's phase of parity `parity` (0/1) is over."""

    name = "ptx.mbarrier.wait"
    addr = operand_def(i32)
    parity = operand_def(i32)

    def __init__(self, addr: SSAValue, parity: SSAValue):
        super().__init__(operands=[addr, parity])

    def asm_template(self) -> str:
        # the label is local to the braces: the block may be printed many times per kernel
        return "\n".join([
            "{",
            ".reg .pred %done;",
            "MBAR_WAIT:",
            "mbarrier.try_wait.parity.shared::cta.b64 %done, [$0], $1;",
            "@!%done bra.uni MBAR_WAIT;",
            "}",
        ])


@irdl_op_definition
class MbarrierArriveExpectTxOp(TemplateOp):
    """`@pred mbarrier.arrive.expect_tx.shared::cta.b64 _, [addr], bytes;`."""

    name = "ptx.mbarrier.arrive_expect_tx"
    addr = operand_def(i32)
    pred = operand_def(i1)
    tx_bytes = prop_def(IntegerAttr)

    def __init__(self, addr: SSAValue, pred: SSAValue, nbytes: int):
        super().__init__(operands=[addr, pred], properties={"tx_bytes": IntegerAttr(nbytes, 32)})

    def verify_(self) -> None:
        if not 0 < self.tx_bytes.value.data < 2**20:
            raise VerifyException("ptx.mbarrier.arrive_expect_tx: bytes must be in 1 .. 2**20 - 1")

    def asm_template(self) -> str:
        return f"@$1 mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], {self.tx_bytes.value.data};"


@irdl_op_definition
class CpAsyncBulkTensor2dOp(TemplateOp):
    """One 2-D TMA box into shared memory, completing on an mbarrier (see the module docstring)."""

    name = "ptx.cp.async.bulk.tensor"
    dst = operand_def(i32)
    tmap = operand_def(i64)
    x = operand_def(i32)
    y = operand_def(i32)
    bar = operand_def(i32)
    pred = operand_def(i1)

    cta_mask = opt_prop_def(IntegerAttr)
    """Multicast: the box lands at the same offset in every CTA of the cluster whose bit is
    set, and completes bytes on each one's mbarrier at `bar`'s offset."""

    def __init__(self, dst: SSAValue, tmap: SSAValue, x: SSAValue, y: SSAValue, bar: SSAValue, pred: SSAValue,
                 cta_mask: int = 0):
        props = {"cta_mask": IntegerAttr(cta_mask, i32)} if cta_mask else {}
        super().__init__(operands=[dst, tmap, x, y, bar, pred], properties=props)

    def asm_template(self) -> str:
        copy = "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
        if self.cta_mask is None:
            return f"@$5 {copy} [$0], [$1, {{$2, $3}}], [$4];"
        return "\n".join([
            "{",
            ".reg .b16 %mask;",
            f"mov.b16 %mask, {self.cta_mask.value.data};",
            f"@$5 {copy}.multicast::cluster [$0], [$1, {{$2, $3}}], [$4], %mask;",
            "}",
        ])


@irdl_op_definition
class MbarrierRemoteArriveOp(TemplateOp):
    """`@pred` arrive on the mbarrier at shared offset `addr` of CTA `rank` of the cluster
    (`mapa` maps the offset into that CTA's window). The default semantics, as CUTLASS's
    cluster barriers use them: what the arrival publishes is that this warp's wgmma reads of the
    slot retired (wgmma.wait_group), before the other CTA's TMA overwrites it. The
    `.release.cluster` / `.acquire.cluster` forms cost 40% of the GEMM's speed
    (bench/results/NOTES.md)."""

    name = "ptx.mbarrier.remote_arrive"
    addr = operand_def(i32)
    rank = operand_def(i32)
    pred = operand_def(i1)

    def __init__(self, addr: SSAValue, rank: SSAValue, pred: SSAValue):
        super().__init__(operands=[addr, rank, pred])

    def asm_template(self) -> str:
        return "\n".join([
            "{",
            ".reg .b32 %remote;",
            "mapa.shared::cluster.u32 %remote, $0, $1;",
            "@$2 mbarrier.arrive.shared::cluster.b64 _, [%remote];",
            "}",
        ])


@irdl_op_definition
class ClusterBarrierOp(TemplateOp):
    """Every thread of every CTA of the cluster meets here (release / acquire at cluster
    scope): after it, the other CTA's mbarriers are initialised, or it no longer needs ours."""

    name = "ptx.barrier.cluster"

    def __init__(self):
        super().__init__()

    def asm_template(self) -> str:
        return "barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;"


@irdl_op_definition
class CpAsyncBulkTensorStore2dOp(TemplateOp):
    """One 2-D TMA box from shared memory out to global memory (see the module docstring)."""

    name = "ptx.cp.async.bulk.tensor.store"
    src = operand_def(i32)
    tmap = operand_def(i64)
    x = operand_def(i32)
    y = operand_def(i32)
    pred = operand_def(i1)

    def __init__(self, src: SSAValue, tmap: SSAValue, x: SSAValue, y: SSAValue, pred: SSAValue):
        super().__init__(operands=[src, tmap, x, y, pred])

    def asm_template(self) -> str:
        return "@$4 cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [$1, {$2, $3}], [$0];"


@irdl_op_definition
class CpAsyncBulkCommitGroupOp(TemplateOp):
    """The issuing thread's bulk stores so far become one bulk group (see the module docstring)."""

    name = "ptx.cp.async.bulk.commit_group"
    pred = operand_def(i1)

    def __init__(self, pred: SSAValue):
        super().__init__(operands=[pred])

    def asm_template(self) -> str:
        return "@$0 cp.async.bulk.commit_group;"


@irdl_op_definition
class CpAsyncBulkWaitGroupReadOp(TemplateOp):
    """Wait until at most `pendings` of this thread's bulk groups still read shared memory."""

    name = "ptx.cp.async.bulk.wait_group.read"
    pred = operand_def(i1)
    pendings = prop_def(IntegerAttr)

    def __init__(self, pred: SSAValue, pendings: int = 0):
        super().__init__(operands=[pred], properties={"pendings": IntegerAttr(pendings, i32)})

    def asm_template(self) -> str:
        return f"@$0 cp.async.bulk.wait_group.read {self.pendings.value.data};"


MBARRIER_OPS = (MbarrierInitOp, MbarrierInitFenceOp, MbarrierArriveOp, CpAsyncMbarrierArriveOp, MbarrierWaitOp,
                MbarrierArriveExpectTxOp, CpAsyncBulkTensor2dOp, MbarrierRemoteArriveOp, ClusterBarrierOp,
                CpAsyncBulkTensorStore2dOp, CpAsyncBulkCommitGroupOp, CpAsyncBulkWaitGroupReadOp)
PTX_MBARRIER = Dialect("ptx_mbarrier", list(MBARRIER_OPS), [])


def load_into(ctx: Context) -> None:
    """Let `ctx` parse the ops of this module."""
    for op in MBARRIER_OPS:
        if ctx.get_optional_op(op.name) is None:
            ctx.load_op(op)
