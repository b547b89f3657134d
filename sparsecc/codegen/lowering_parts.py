"""The small pieces of a lowering's state, each with one job (`LoweringState` in lower_state.py
holds one of each): the immutable per-kernel facts (`KernelConfig`), the registers read once at
the top (`Preamble`), when a `bar.sync` is due (`Barriers`), which wgmma groups may still be in
flight (`WgmmaGroups`), the restarted sums of persistent kernels (`ZeroRestart`) and address
arithmetic worth reusing (`LoweringCaches`). Op helpers that must not import the handlers'
module (lower_dot.py, lower_quant.py) type their context against these.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.ir import Operation, SSAValue

from sparsecc.analysis.divisibility import Divisibility
from sparsecc.dialects import tt


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
    narrow_copies: bool
    """Async copies of tiles whose rows hold 4 or 8 contiguous bytes go as cp.async.ca chunks
    of that size (CompileOptions.narrow_copies), not as synchronous loads and shared stores."""
    consumer_groups: int = 1
    """Compute warpgroups of `num_warps` warps each that take an outer ring loop's trips in turn
    (2: ping-pong, the function's `ttg.consumer-groups`); 1: all compute warps work together."""
    group_private: tuple[int, int] | None = None
    """(start, stride) of the buffers each ping-pong group has to itself
    (`analysis.shared_memory.group_private`)."""
    order_barriers: int = 0
    """Ping-pong: the offset of the two mbarriers by which each group lets the other start its
    next K loop (8 bytes each)."""

    @property
    def compute_warps(self) -> int:
        return self.num_warps * self.consumer_groups

    @property
    def threads(self) -> int:
        return 32 * (self.compute_warps + self.producer_warps)


@dataclass(frozen=True)
class PingPongGroup:
    """The compute group a ping-pong kernel's consumer code is being lowered for: its index
    (a uniform register, 0 or 1), the base of its own buffers' copy and the two ordering
    mbarriers (group g waits on barrier g before its K loop; the other group arrives on it
    after its own)."""

    group: SSAValue
    private_smem: SSAValue | None
    order: SSAValue


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
    pingpong: PingPongGroup | None = None
    """In a ping-pong kernel's consumer code: the compute group the indices above are within."""


@dataclass
class Barriers:
    """Whether a `bar.sync` is due before the next shared read (RAW) or write (WAR).

    Two modes. Lazy (the default): the state below decides, op by op. Explicit (a function
    after tritongpu-insert-barriers, `explicit`): a `ttg.barrier` makes one `due`, issued at the
    next op's first shared access; besides, only an op that reads back what it wrote itself
    (`op_wrote`: a convert_layout's scratch) synchronises on its own."""

    writes_pending: bool = False
    reads_since_bar: bool = False
    explicit: bool = False
    """The function's barriers are `ttg.barrier` ops (tritongpu-insert-barriers placed them)."""
    due: bool = False
    """A `ttg.barrier` was lowered: the next shared access (or the end of the next op) issues it."""
    op_wrote: bool = False
    """The op being lowered wrote shared memory (its own read-back needs a barrier)."""

    def state(self) -> tuple[bool, bool]:
        return self.writes_pending, self.reads_since_bar

    def restore(self, state: tuple[bool, bool]) -> None:
        self.writes_pending, self.reads_since_bar = state

    def conservative(self) -> None:
        """Both pending: the entry and exit of a loop body, whose other iterations are unseen."""
        self.writes_pending = self.reads_since_bar = True

    def synced(self) -> None:
        self.writes_pending = self.reads_since_bar = self.due = self.op_wrote = False


@dataclass
class WgmmaGroups:
    """Which committed wgmma groups may still be running (so that a `wgmma.wait_group` comes
    before their registers or shared memory are reused), drained at most once per block."""

    pending: bool = False
    """A committed wgmma group may still be running (a K-loop dot left it in flight)."""
    frag_keep: int = 0
    """Groups that may stay in flight while a dot of this loop reloads its fragment registers."""
    shared_keep: int = 0
    """Groups that may stay in flight through this loop body's CTA barriers and scratch stores
    (1 in an mbarrier ring loop that `analysis.kloops.ring_in_flight` cleared, else 0)."""
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
    wide_offsets: dict = field(default_factory=dict)
    """(an i32 offset's non-constant terms, element bytes, block id) -> (its 64-bit byte offset,
    its constant term): `lower_ptrs.byte_offset`."""
    axes: object = None
    """The function's AxisAnalysis (analysis/axis_info.py), made at the first pointer-tensor access."""
    vector_ptrs: int = 0
    """Vectorized pointer-tensor accesses emitted: their per-register addresses and masks past
    each vector's first are dead, removed at the end of the lowering (`lower_function`)."""


__all__ = ["Barriers", "KernelConfig", "LoweringCaches", "PingPongGroup", "Preamble", "WgmmaGroups", "ZeroRestart"]
