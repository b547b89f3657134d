"""The state of one ttgir -> `ptx` lowering, small and explicit.

`LoweringState` is what every op handler (sparsecc/codegen/handlers/) receives: the lowered
values, the emitter, the registers read once at the top of the kernel (`Preamble`), the
immutable per-kernel facts (`KernelConfig`), and a few small bookkeeping objects with one job
each (`Barriers`: when a `bar.sync` is due; `WgmmaGroups`: which wgmma groups may still be in
flight; `ZeroRestart`: the restarted sums of persistent kernels; `LoweringCaches`: address
arithmetic shared between ops). A handler reads its operands with `get` and records its
results with `set`.

Barriers: in a function after tritongpu-insert-barriers (`ttg.explicit_barriers`) the pass
decided them: a `ttg.barrier` is issued right before the next op's first shared access (its
address arithmetic goes first), and an op that reads back its own writes (a convert_layout's
scratch) synchronises in between; after a warp-specialized split each side issues only its own
(`ttg.barrier {side = ...}`: the other side skips it, `lower_async.skipped`). Otherwise (ttgir
that did not go through the pass) a `bar.sync` is emitted lazily, before the first shared read after a shared write
(RAW) and before the first shared write after a shared read (WAR); loop bodies start
conservatively (both pending); `scf.if` conditions are assumed uniform (they are: the passes
only branch on scalars). `ttg.async_wait` is `cp.async.wait_group n` + `bar.sync`; async copies
count as writes only for WAR (their data is read only after an async_wait, which barriers).
tritongpu-sink-local-loads runs first, so one K step's shared stores all come before its reads
(one barrier each way per iteration).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.ir import Block, Operation, SSAValue

from sparsecc.analysis.kloops import reads_wgmma_result
from sparsecc.analysis.layouts import DistLayout, LayoutError
from sparsecc.codegen.handlers.table import handler_for
from sparsecc.codegen.lower_async import skipped
from sparsecc.codegen.lower_base import Emitter, LoweringError, Regs, where
from sparsecc.codegen.lowering_parts import (
    Barriers,
    KernelConfig,
    LoweringCaches,
    Preamble,
    WgmmaGroups,
    ZeroRestart,
)
from sparsecc.dialects import ptx
from sparsecc.dialects.ptx_wgmma import FenceProxyAsyncOp, WgmmaWaitGroupOp
from sparsecc.dialects.ttg import BarrierOp


@dataclass
class LoweringState:
    """The lowering in progress, as handlers see it (see the module docstring)."""

    cfg: KernelConfig
    kernel: ptx.KernelOp
    em: Emitter
    ids: Preamble
    values: dict[SSAValue, object] = field(default_factory=dict)
    barriers: Barriers = field(default_factory=Barriers)
    groups: WgmmaGroups = field(default_factory=WgmmaGroups)
    restart: ZeroRestart = field(default_factory=ZeroRestart)
    caches: LoweringCaches = field(default_factory=LoweringCaches)
    mode: str = ""
    """"producer" / "consumer" while lowering one side of a warp-specialized kernel."""

    # ---------------------------------------------------------------- values
    def get(self, v: SSAValue) -> object:
        try:
            return self.values[v]
        except KeyError:
            raise LoweringError(f"value {v.name_hint or v} used before it was lowered") from None

    def set(self, v: SSAValue, lowered: object) -> None:
        self.values[v] = lowered

    def regs(self, v: SSAValue) -> Regs:
        x = self.get(v)
        if not isinstance(x, Regs):
            raise LoweringError(f"expected a register tensor, got {type(x).__name__}")
        return x

    def scratch(self, op: Operation) -> SSAValue:
        """The shared address of `op`'s planned buffer or scratch."""
        assert self.ids.smem is not None
        off = self.cfg.smem_offsets[op]
        private = self.cfg.group_private
        group = self.ids.pingpong
        if group is not None and group.private_smem is not None and private and off >= private[0]:
            return self.em.add(group.private_smem, off)  # this group's copy
        return self.em.add(self.ids.smem, off)

    # ---------------------------------------------------------------- walking
    def lower_block(self, block: Block) -> None:
        for op in block.ops:
            self.lower_op(op)

    def inline_block(self, block: Block, args: list[SSAValue], what: str) -> list[SSAValue]:
        """Lower a scalar region (a reduce's or scan's combine, map_elementwise's function) once
        more, inline, with its arguments bound to `args`; its yielded scalars. `what` names the
        region in the error for a yield of anything else."""
        body = list(block.ops)
        for arg, v in zip(block.args, args, strict=True):
            self.set(arg, v)
        for inner in body[:-1]:
            self.lower_op(inner)
        out = [self.get(v) for v in body[-1].operands]
        if not all(isinstance(v, SSAValue) for v in out):
            raise LoweringError(f"{what} must compute scalars")
        return out  # type: ignore[return-value]

    def lower_op(self, op: Operation) -> None:
        """Lower `op` by its handler; errors name the op and where it came from."""
        if self.mode and skipped(self, op):
            return
        if self.groups.pending and reads_wgmma_result(op):
            self.wgmma_drain()  # e.g. a persistent GEMM's epilogue inside the loop
        self.barriers.op_wrote = False
        try:
            handler_for(op)(self, op)
            if self.barriers.due and not isinstance(op, BarrierOp):
                self.bar()  # a ttg.barrier before an op that accessed no shared memory after all
        except (LayoutError, LoweringError) as e:
            msg = str(e)
            if not msg.startswith(op.name):
                msg = f"{op.name}{where(op)}: {msg}"
            located = LoweringError(msg)
            located.op = getattr(e, "op", None) or op  # the innermost op: its kernel line
            raise located from None

    # ---------------------------------------------------------------- barriers
    def bar(self, keep: int = 0) -> None:
        """A CTA barrier; in a wgmma kernel after draining the wgmma groups in flight down to
        `keep` (1 only where the pipeline proved that the last group's slots stay unwritten
        until the next barrier: `ttg.WGMMA_IN_FLIGHT`; in a ring loop that
        `kloops.ring_in_flight` cleared, `groups.shared_keep` says 1 for every barrier)."""
        keep = max(keep, self.groups.shared_keep)
        if self.cfg.wgmma:
            # A barrier tells every warp that this one is done reading shared memory, but a wgmma
            # group in flight still reads it (B, and A from a descriptor) asynchronously: drain
            # first, or another warpgroup may overwrite a slot this one's group is reading
            # (wait_group only waits for the issuing warpgroup's own groups).
            self.wgmma_drain(keep)
            # shared stores and cp.async writes are generic-proxy writes; wgmma reads through
            # the async proxy: every writing thread fences before the barrier that publishes them
            self.em.op(FenceProxyAsyncOp())
        # after a warp-specialized split only the compute warps meet here
        if self.ids.pingpong is not None:  # the group's own named barrier, 1 + group
            self.em.op(ptx.AsmOp(f"bar.sync $0, {32 * self.cfg.num_warps};", [self.em.add(self.ids.pingpong.group, 1)]))
        else:
            self.em.op(ptx.BarSyncOp(1, 32 * self.cfg.num_warps) if self.mode == "consumer" else ptx.BarSyncOp(0))
        self.barriers.synced()

    def wgmma_drain(self, keep: int = 0) -> None:
        """`wgmma.wait_group keep` if a wgmma group may still be in flight: before shared memory
        it reads is overwritten and before its registers are reused or read by anything but a
        wgmma. `keep = 1` lets the group committed last go on (fragment reloads in an unrolled
        loop: that group reads the other copy's registers)."""
        g = self.groups
        done = any(block is self.em.block and k <= keep for block, k in g.drained)
        if g.pending and not done and self.mode != "producer":
            self.em.op(WgmmaWaitGroupOp(keep))
            g.drained.append((self.em.block, keep))
            if self.em.block is self.kernel.body.block:
                g.pending = False

    def before_shared_write(self) -> None:
        b = self.barriers
        if b.due or (b.reads_since_bar and not b.explicit):
            self.bar()

    def after_shared_write(self) -> None:
        self.barriers.writes_pending = self.barriers.op_wrote = True

    def before_shared_read(self) -> None:
        b = self.barriers
        if b.due or b.op_wrote or (b.writes_pending and not b.explicit):
            self.bar()
        b.reads_since_bar = True

    # ---------------------------------------------------------------- coordinates
    def coords(self, dl: DistLayout) -> list[tuple[SSAValue, ...]]:
        """Per register, the element coordinates (i32 SSA values) this thread holds."""
        key = (dl, id(self.em.block))
        hit = self.caches.coords.get(key)
        if hit is not None:
            return hit
        em = self.em
        bases = [em.term_sum(terms, self.ids.lane, self.ids.warp) for terms in dl.base]
        out = []
        for off in dl.regs:
            c = []
            for d, b in enumerate(bases):
                v = em.add(b, off[d])
                if dl.wrap[d]:
                    v = em.remu(v, dl.shape[d])
                c.append(v)
            out.append(tuple(c))
        self.caches.coords[key] = out
        return out


__all__ = ["Barriers", "KernelConfig", "LoweringCaches", "LoweringState", "Preamble", "WgmmaGroups",
           "ZeroRestart"]
