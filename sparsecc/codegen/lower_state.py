"""The state of one ttgir -> `ptx` lowering, small and explicit.

`LoweringState` is what every op handler (sparsecc/codegen/handlers/) receives: the lowered
values, the emitter, the registers read once at the top of the kernel (`Preamble`), the
immutable per-kernel facts (`KernelConfig`), and a few small bookkeeping objects with one job
each (`Barriers`: when a `bar.sync` is due; `WgmmaGroups`: which wgmma groups may still be in
flight; `ZeroRestart`: the restarted sums of persistent kernels; `LoweringCaches`: address
arithmetic shared between ops). A handler reads its operands with `get` and records its
results with `set`.

Barriers: a `bar.sync` is emitted lazily, before the first shared read after a shared write
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

from sparsecc.analysis.divisibility import Divisibility
from sparsecc.analysis.kloops import reads_wgmma_result
from sparsecc.analysis.layouts import DistLayout, LayoutError
from sparsecc.codegen.handlers import handler_for
from sparsecc.codegen.lower_async import skipped
from sparsecc.codegen.lower_base import Emitter, LoweringError, Regs, where
from sparsecc.dialects import ptx, tt
from sparsecc.dialects.ptx_wgmma import FenceProxyAsyncOp, WgmmaWaitGroupOp


@dataclass(frozen=True, eq=False)
class KernelConfig:
    """What is decided about the kernel before its first op is lowered; never changes after.

    Example: `KernelConfig(func, "sm_90a", num_warps=4, ...).threads` is 128 (160 with one
    producer warp)."""

    func: tt.FuncOp
    target: str
    num_warps: int
    cluster: int
    """CTAs per cluster (`ttg.num-ctas`): 2 when a TMA loop multicasts a tile to a CTA pair."""
    wgmma: bool
    """The kernel issues sm_90a warpgroup MMAs (a #ttg.mma version 3 dot)."""
    a_from_shared: bool
    """wgmma reads A values through a descriptor (TMA kernels, or CompileOptions.wgmma_a_smem)."""
    producer_warps: int
    """Warps after the `num_warps` compute warps that only issue TMA copies (the function's
    `ttg.producer-warps`, set by tritongpu-warp-specialize)."""
    tma_thread: int
    """The thread that issues TMA copies and announces their bytes."""
    divs: Divisibility
    smem_offsets: dict[Operation, int]
    """Op -> byte offset of its shared buffer or scratch in the kernel's one `smem` array."""
    smem_bytes: int
    tensor_maps: dict
    """tt.make_tensor_ptr -> (kernel param index, BoxPlan, TensorMapRecipe) of its TMA copies."""

    @property
    def threads(self) -> int:
        return 32 * (self.num_warps + self.producer_warps)


@dataclass(frozen=True)
class Preamble:
    """Registers read once at the top of the kernel."""

    tid: SSAValue
    lane: SSAValue
    warp: SSAValue
    cta_rank: SSAValue | None
    """This CTA's rank in its cluster (%cluster_ctarank), when clustered."""
    smem: SSAValue | None
    """The (aligned) base address of the dynamic shared array, when the kernel uses one."""


@dataclass
class Barriers:
    """Whether a `bar.sync` is due before the next shared read (RAW) or write (WAR)."""

    writes_pending: bool = False
    reads_since_bar: bool = False

    def state(self) -> tuple[bool, bool]:
        return self.writes_pending, self.reads_since_bar

    def restore(self, state: tuple[bool, bool]) -> None:
        self.writes_pending, self.reads_since_bar = state

    def conservative(self) -> None:
        """Both pending: the entry and exit of a loop body, whose other iterations are unseen."""
        self.writes_pending = self.reads_since_bar = True

    def synced(self) -> None:
        self.writes_pending = self.reads_since_bar = False


@dataclass
class WgmmaGroups:
    """Which committed wgmma groups may still be running (so that a `wgmma.wait_group` comes
    before their registers or shared memory are reused), drained at most once per block."""

    pending: bool = False
    """A committed wgmma group may still be running (a K-loop dot left it in flight)."""
    frag_keep: int = 0
    """Groups that may stay in flight while a dot of this loop reloads its fragment registers."""
    drained: list = field(default_factory=list)
    """(block, keep) of blocks that already waited for every group issued so far."""


@dataclass
class ZeroRestart:
    """`analysis.kloops.zero_restart`: the persistent loops whose sum restarts at a dot."""

    flags: dict = field(default_factory=dict)
    """dot -> its loop's `fresh` register (1: the sum restarts at this dot)."""
    ifs: dict = field(default_factory=dict)
    """epilogue scf.if -> (result index, [its `fresh` value for the next iteration, set when the
    if is lowered])."""


@dataclass
class LoweringCaches:
    """Address arithmetic worth reusing within a block."""

    coords: dict = field(default_factory=dict)
    """(layout, block id) -> per-register element coordinates."""
    ldsm_refs: dict = field(default_factory=dict)
    """(memdesc type, block) -> [(per-thread offsets, offset register)] of earlier ldmatrix."""


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
        return self.em.add(self.ids.smem, self.cfg.smem_offsets[op])

    # ---------------------------------------------------------------- walking
    def lower_block(self, block: Block) -> None:
        for op in block.ops:
            self.lower_op(op)

    def lower_op(self, op: Operation) -> None:
        """Lower `op` by its handler; errors name the op and where it came from."""
        if self.mode and skipped(self, op):
            return
        if self.groups.pending and reads_wgmma_result(op):
            self.wgmma_drain()  # e.g. a persistent GEMM's epilogue inside the loop
        try:
            handler_for(op)(self, op)
        except (LayoutError, LoweringError) as e:
            msg = str(e)
            if not msg.startswith(op.name):
                msg = f"{op.name}{where(op)}: {msg}"
            located = LoweringError(msg)
            located.op = getattr(e, "op", None) or op  # the innermost op: its kernel line
            raise located from None

    # ---------------------------------------------------------------- barriers
    def bar(self) -> None:
        if self.cfg.wgmma:
            # A barrier tells every warp that this one is done reading shared memory, but a wgmma
            # group in flight still reads it (B, and A from a descriptor) asynchronously: drain
            # first, or another warpgroup may overwrite a slot this one's group is reading
            # (wait_group only waits for the issuing warpgroup's own groups).
            self.wgmma_drain()
            # shared stores and cp.async writes are generic-proxy writes; wgmma reads through
            # the async proxy: every writing thread fences before the barrier that publishes them
            self.em.op(FenceProxyAsyncOp())
        # after a warp-specialized split only the compute warps meet here
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
        if self.barriers.reads_since_bar:
            self.bar()

    def after_shared_write(self) -> None:
        self.barriers.writes_pending = True

    def before_shared_read(self) -> None:
        if self.barriers.writes_pending:
            self.bar()
        self.barriers.reads_since_bar = True

    # ---------------------------------------------------------------- coordinates
    def coords(self, dl: DistLayout) -> list[tuple[SSAValue, ...]]:
        """Per register, the element coordinates (i32 SSA values) this thread holds."""
        key = (dl, id(self.em.block))
        hit = self.caches.coords.get(key)
        if hit is not None:
            return hit
        em = self.em
        bases = [em.term_sum(terms, self.lane, self.warp) for terms in dl.base]
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

    # ------------------------------------------- read-only views the op helpers use
    # (lower_dot.py and lower_quant.py read these names; see lower_base.LoweringContext)
    @property
    def tid(self) -> SSAValue:
        return self.ids.tid

    @property
    def lane(self) -> SSAValue:
        return self.ids.lane

    @property
    def warp(self) -> SSAValue:
        return self.ids.warp

    @property
    def num_warps(self) -> int:
        return self.cfg.num_warps

    @property
    def a_from_shared(self) -> bool:
        return self.cfg.a_from_shared

    @property
    def ldsm_refs(self) -> dict:
        return self.caches.ldsm_refs

    @property
    def wgmma_frag_keep(self) -> int:
        return self.groups.frag_keep

    @property
    def wgmma_drained(self) -> list:
        return self.groups.drained

    @property
    def wgmma_pending(self) -> bool:
        return self.groups.pending

    @wgmma_pending.setter
    def wgmma_pending(self, value: bool) -> None:
        self.groups.pending = value


__all__ = ["Barriers", "KernelConfig", "LoweringCaches", "LoweringState", "Preamble", "WgmmaGroups",
           "ZeroRestart"]
