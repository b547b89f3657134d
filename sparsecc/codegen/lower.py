"""The ttgir -> `ptx` dialect lowering behind convert-ttg-to-ptx (sparsecc/passes/convert_ttg_to_ptx.py).

One `tt.func` becomes one `ptx.kernel` (`Lowerer.build`). Values are lowered per thread
(lower_base.py): a distributed tensor is the list of registers its layout gives this thread
(analysis/layouts.py), dot
operands are mma fragments, block pointers are their scalar fields, shared buffers are 32-bit
shared addresses into one dynamic `smem` array planned statically here. Memory ops live in
lower_mem.py, ldmatrix/mma in lower_dot.py.

Barriers: a `bar.sync` is emitted lazily, before the first shared read after a shared write
(RAW) and before the first shared write after a shared read (WAR); loop bodies start
conservatively (both pending); `scf.if` conditions are assumed uniform (they are: the passes
only branch on scalars). `ttg.async_wait` is `cp.async.wait_group n` + `bar.sync`; async copies
count as writes only for WAR (their data is read only after an async_wait, which barriers).
tritongpu-sink-local-loads runs first, so one K step's shared stores all come before its reads
(one barrier each way per iteration).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from xdsl.dialects import arith, scf
from xdsl.dialects import math as xmath
from xdsl.dialects.arith import Arith
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    Float32Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    TensorType,
    f32,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from sparsecc.analysis.divisibility import Divisibility
from sparsecc.analysis.dtypes import esize
from sparsecc.analysis.kloops import accumulation_chains as _accumulation_chains
from sparsecc.analysis.kloops import only_feeds_next_iteration as _only_feeds_next_iteration
from sparsecc.analysis.kloops import reads_wgmma_result as _reads_wgmma_result
from sparsecc.analysis.kloops import uses_wgmma as _uses_wgmma
from sparsecc.analysis.kloops import zero_restart as _zero_restart
from sparsecc.analysis.layouts import DistLayout, LayoutError, distributed
from sparsecc.analysis.swizzle import mma_swizzle_params
from sparsecc.codegen.lower_async import (
    lower_barrier_op,
    lower_specialized,
    lower_tma_copy,
    plan_tensor_maps,
    producer_split,
    skipped,
)
from sparsecc.codegen.lower_base import (
    BlockPtr,
    Emitter,
    Frag,
    LoweringError,
    Regs,
    Smem,
    SmemOperand,
    where,
)
from sparsecc.codegen.lower_dot import load_frag, lower_dot
from sparsecc.codegen.lower_mem import (
    async_copy,
    load_block,
    load_shared,
    smem_addr,
    store_block,
    store_shared,
    unpack_words,
    word_type,
)
from sparsecc.codegen.lower_ptrs import (
    atomic_needs_broadcast,
    atomic_ptrs,
    load_ptrs,
    lower_addptr,
    store_ptrs,
    store_scalar,
)
from sparsecc.codegen.lower_quant import lower_dequantize
from sparsecc.codegen.lower_quant import reads_in_place as dequantize_reads_in_place
from sparsecc.codegen.lower_quant import scratch_bytes as dequantize_scratch_bytes
from sparsecc.dialects import ptx, tt
from sparsecc.dialects import ttg as ttgd
from sparsecc.dialects.ptx_mbarrier import ClusterBarrierOp
from sparsecc.dialects.ptx_wgmma import FenceProxyAsyncOp, WgmmaWaitGroupOp

SMEM_ALIGN = 128
WGMMA_ALIGN = 1024
_ARITH_CLASSES = {cls.name: cls for cls in Arith.operations}
_SUPPORTED_ARITH = {
    "arith." + n for n in (
        "constant addi subi muli divsi divui remsi remui andi ori xori shli shrsi shrui maxsi minsi "
        "maxui minui cmpi select extsi extui trunci addf subf mulf divf negf maximumf minimumf "
        "maxnumf minnumf cmpf sitofp uitofp fptosi fptoui extf truncf bitcast index_cast"
    ).split()
}
"""arith ops the PTX printer has a form for (per element for tensors)."""
_MATH_DIRECT = {"math." + n for n in "exp2 log2 sqrt rsqrt sin cos tanh floor ceil absf absi fma".split()}
"""math ops the PTX printer has an instruction for."""
_LOG2_E = 1.4426950408889634
_LN_2 = 0.6931471805599453
_CASTS = {"arith.extsi", "arith.extui", "arith.trunci", "arith.sitofp", "arith.uitofp", "arith.fptosi",
          "arith.fptoui", "arith.extf", "arith.truncf", "arith.bitcast", "arith.index_cast"}


@dataclass
class Lowerer:
    func: tt.FuncOp
    target: str
    num_warps: int
    kernel: ptx.KernelOp = field(init=False)
    em: Emitter = field(init=False)
    values: dict[SSAValue, object] = field(default_factory=dict)
    smem_plan: dict[Operation, int] = field(default_factory=dict)
    smem_bytes: int = 0
    writes_pending: bool = False
    reads_since_bar: bool = False
    _coord_cache: dict = field(default_factory=dict)
    wgmma: bool = False
    """The kernel issues sm_90a warpgroup MMAs (a #ttg.mma version 3 dot)."""
    wgmma_pending: bool = False
    """A committed wgmma group may still be running (a K-loop dot left it in flight)."""
    wgmma_frag_keep: int = 0
    """Groups that may stay in flight while a dot of this loop reloads its fragment registers."""
    wgmma_drained: list = field(default_factory=list)
    """Blocks that already waited for every wgmma group issued so far (no second wait)."""
    ldsm_refs: dict = field(default_factory=dict)
    """(memdesc type, block) -> [(per-thread offsets, offset register)] of earlier ldmatrix."""
    tensor_maps: dict = field(default_factory=dict)
    """tt.make_tensor_ptr -> (kernel param index, BoxPlan, TensorMapRecipe) of its TMA copies."""
    restart_flags: dict = field(default_factory=dict)
    """`_zero_restart`: dot -> its loop's `fresh` register (1: the sum restarts at this dot)."""
    restart_ifs: dict = field(default_factory=dict)
    """`_zero_restart`: epilogue scf.if -> (result index, [its `fresh` value for the next
    iteration, set when the if is lowered])."""
    a_from_shared: bool = False
    """wgmma reads A values through a descriptor (TMA kernels, or `a_smem_option`)."""
    producer_warps: int = 0
    """Warps after the `num_warps` compute warps that only issue TMA copies (the function's
    `ttg.producer-warps`, set by tritongpu-warp-specialize)."""
    mode: str = ""
    """"producer" / "consumer" while lowering one side of a warp-specialized kernel."""
    tma_thread: int = 0
    """The thread that issues TMA copies and announces their bytes."""
    cluster: int = 1
    """CTAs per cluster (`ttg.num-ctas`): 2 when a TMA loop multicasts a tile to a CTA pair."""
    cta_rank: SSAValue | None = None
    """This CTA's rank in its cluster (%cluster_ctarank), read once at the top when clustered."""
    a_smem_option: bool = False
    """wgmma reads A through a descriptor outside TMA kernels too (CompileOptions.wgmma_a_smem)."""

    # ---------------------------------------------------------------- setup
    def build(self) -> ptx.KernelOp:
        self.wgmma = _uses_wgmma(self.func)
        self.divs = Divisibility(self.func)
        self._plan_smem()
        params = []
        for i, ty in enumerate(self.func.function_type.inputs.data):
            params.append((f"arg{i}", param_kind(ty, self.func, i)))
        plan_tensor_maps(self, len(params))
        self.a_from_shared = self.a_smem_option or bool(self.tensor_maps)
        params += [(f"tmap{i}", "tmap") for i in range(len(self.tensor_maps))]
        split = producer_split(self.func)
        if split is not None:
            if not (self.tensor_maps and self.wgmma):
                raise LoweringError(f"tt.func @{self.func.sym_name.data}: marked for warp specialization "
                                    "but it has no TMA copies feeding a wgmma dot")
            self.producer_warps = split[2]
            self.tma_thread = 32 * self.num_warps
        self.kernel = ptx.KernelOp(self.func.sym_name.data, params, target=self.target,
                                   maxntid=(self.threads, 1, 1), shared_bytes=self.smem_bytes,
                                   cluster=(self.cluster, 1, 1) if self.cluster > 1 else None)
        block = self.kernel.body.block
        self.em = Emitter(block)
        for arg, karg in zip(self.func.body.block.args, self.kernel.args):
            if arg.type == i32 and karg.type != i32:
                karg = self.em.to32(karg)
            self.values[arg] = karg
        self.tid = self.em.sreg("tid.x")
        self.lane = self.em.remu(self.tid, 32)
        self.warp = self.em.divu(self.tid, 32)
        if self.cluster > 1:
            self.cta_rank = self.em.sreg("cluster_ctarank")
        self.smem = self.em.val(ptx.SharedBaseOp()) if self.smem_bytes else None
        if self.smem is not None and self.wgmma:
            # wgmma's swizzle atoms (8 rows x 128 B) must start on 1 KiB boundaries
            self.smem = self.em.band(self.em.add(self.smem, WGMMA_ALIGN - 1), self.em.c(-WGMMA_ALIGN))
        if split is None:
            self.lower_block(self.func.body.block)
        else:
            lower_specialized(self, self.func.body.block, split[0], split[1])
        if self.cluster > 1:
            # the other CTA multicasts into our shared memory and arrives on our barriers up to
            # its last K step: neither CTA leaves before both are done with the other
            self.em.op(ClusterBarrierOp())
        return self.kernel

    @property
    def threads(self) -> int:
        return 32 * (self.num_warps + self.producer_warps)

    def _plan_smem(self) -> None:
        align = WGMMA_ALIGN if self.wgmma else SMEM_ALIGN
        off = 0
        for op in self.func.walk():
            size = 0
            if isinstance(op, ttgd.LocalAllocOp):
                ty = op.result.type
                size = math.prod(ty.get_shape()) * esize(ty.element_type)
            elif isinstance(op, ttgd.ConvertLayoutOp | tt.ReduceOp | tt.ReshapeOp):
                ty = op.operands[0].type
                size = math.prod(ty.get_shape()) * esize(ty.element_type)
            elif isinstance(op, tt.DequantizeOp):
                size = dequantize_scratch_bytes(op)
            elif isinstance(op, tt.AtomicRMWOp) and atomic_needs_broadcast(op):
                size = 4
            if size:
                off = -(-off // align) * align
                self.smem_plan[op] = off
                off += size
        self.smem_bytes = -(-off // align) * align if off else 0
        if self.smem_bytes and self.wgmma:
            self.smem_bytes += WGMMA_ALIGN  # room to align the base at run time

    # ---------------------------------------------------------------- barriers
    def bar(self) -> None:
        if self.wgmma:
            # A barrier tells every warp that this one is done reading shared memory, but a wgmma
            # group in flight still reads it (B, and A from a descriptor) asynchronously: drain
            # first, or another warpgroup may overwrite a slot this one's group is reading
            # (wait_group only waits for the issuing warpgroup's own groups).
            self.wgmma_drain()
            # shared stores and cp.async writes are generic-proxy writes; wgmma reads through
            # the async proxy: every writing thread fences before the barrier that publishes them
            self.em.op(FenceProxyAsyncOp())
        # after a warp-specialized split only the compute warps meet here
        self.em.op(ptx.BarSyncOp(1, 32 * self.num_warps) if self.mode == "consumer" else ptx.BarSyncOp(0))
        self.writes_pending = False
        self.reads_since_bar = False

    def wgmma_drain(self, keep: int = 0) -> None:
        """`wgmma.wait_group keep` if a wgmma group may still be in flight: before shared memory
        it reads is overwritten and before its registers are reused or read by anything but a
        wgmma. `keep = 1` lets the group committed last go on (fragment reloads in an unrolled
        loop: that group reads the other copy's registers)."""
        done = any(block is self.em.block and k <= keep for block, k in self.wgmma_drained)
        if self.wgmma_pending and not done and self.mode != "producer":
            self.em.op(WgmmaWaitGroupOp(keep))
            self.wgmma_drained.append((self.em.block, keep))
            if self.em.block is self.kernel.body.block:
                self.wgmma_pending = False

    def before_shared_write(self) -> None:
        if self.reads_since_bar:
            self.bar()

    def after_shared_write(self) -> None:
        self.writes_pending = True

    def before_shared_read(self) -> None:
        if self.writes_pending:
            self.bar()
        self.reads_since_bar = True

    # ---------------------------------------------------------------- coordinates
    def coords(self, dl: DistLayout) -> list[tuple[SSAValue, ...]]:
        """Per register, the element coordinates (i32 SSA values) this thread holds."""
        key = (dl, id(self.em.block))
        hit = self._coord_cache.get(key)
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
        self._coord_cache[key] = out
        return out

    # ---------------------------------------------------------------- values
    def get(self, v: SSAValue) -> object:
        try:
            return self.values[v]
        except KeyError:
            raise LoweringError(f"value {v.name_hint or v} used before it was lowered") from None

    def flatten(self, x: object) -> list[SSAValue]:
        if x is None:
            return []
        if isinstance(x, SSAValue):
            return [x]
        if isinstance(x, Regs):
            return list(x.regs)
        if isinstance(x, BlockPtr):
            return x.fields()
        if isinstance(x, Smem):
            return [x.addr]
        if isinstance(x, Frag):
            return [r for k in sorted(x.frags) for r in x.frags[k]]
        raise LoweringError(f"cannot carry {type(x).__name__} through control flow")

    def unflatten(self, like: object, vals: list[SSAValue]) -> object:
        if like is None:
            return None
        if isinstance(like, SSAValue):
            return vals[0]
        if isinstance(like, Regs):
            return Regs(like.ty, list(vals))
        if isinstance(like, BlockPtr):
            return BlockPtr.from_fields(list(vals), like.ptr_type)
        if isinstance(like, Smem):
            return Smem(vals[0], like.ty)
        if isinstance(like, Frag):
            out, pos = {}, 0
            for k in sorted(like.frags):
                n = len(like.frags[k])
                out[k] = list(vals[pos:pos + n])
                pos += n
            return Frag(like.ty, out)
        raise LoweringError(f"cannot carry {type(like).__name__}")

    # ---------------------------------------------------------------- walking
    def lower_block(self, block: Block) -> None:
        for op in block.ops:
            self.lower_op(op)

    def lower_op(self, op: Operation) -> None:
        if self.mode and skipped(self, op):
            return
        if self.wgmma_pending and _reads_wgmma_result(op):
            self.wgmma_drain()  # e.g. a persistent GEMM's epilogue inside the loop
        try:
            self._dispatch(op)
        except (LayoutError, LoweringError) as e:
            msg = str(e)
            if not msg.startswith(op.name):
                msg = f"{op.name}{where(op)}: {msg}"
            located = LoweringError(msg)
            located.op = getattr(e, "op", None) or op  # the innermost op: its kernel line
            raise located from None

    def _dispatch(self, op: Operation) -> None:
        em = self.em
        if isinstance(op, tt.ReturnOp | scf.YieldOp):
            return
        if isinstance(op, tt.GetProgramIdOp | tt.GetNumProgramsOp):
            kind = "ctaid" if isinstance(op, tt.GetProgramIdOp) else "nctaid"
            self.values[op.result] = em.sreg(f"{kind}.{'xyz'[op.axis.value.data]}")
            return
        if isinstance(op, arith.ConstantOp):
            self._constant(op)
            return
        if isinstance(op, tt.MakeRangeOp):
            ty = op.result.type
            dl = distributed(ty.encoding, ty.get_shape())
            start = op.start.value.data
            self.values[op.result] = Regs(ty, [em.add(c[0], start) for c in self.coords(dl)])
            return
        if isinstance(op, tt.SplatOp):
            ty = op.result.type
            dl = distributed(ty.encoding, ty.get_shape())
            self.values[op.result] = Regs(ty, [self.get(op.src)] * dl.num_regs)
            return
        if isinstance(op, tt.ExpandDimsOp):
            src = self.get(op.src)
            assert isinstance(src, Regs)
            self._check_expand(op)
            self.values[op.result] = Regs(op.result.type, list(src.regs))
            return
        if isinstance(op, tt.BroadcastOp):
            self.values[op.result] = self._broadcast(self.get(op.src), op.result.type)
            return
        if isinstance(op, tt.MakeTensorPtrOp):
            self._make_tensor_ptr(op)
            return
        if isinstance(op, tt.AdvanceOp):
            bp = self.get(op.ptr)
            assert isinstance(bp, BlockPtr)
            offs = [em.add(o, em.to32(self.get(d))) for o, d in zip(bp.offsets, op.offsets)]
            self.values[op.result] = BlockPtr(bp.base, bp.shape, bp.strides, offs, op.result.type)
            return
        if isinstance(op, tt.AddPtrOp):
            lower_addptr(self, op)
            return
        if isinstance(op, tt.LoadOp):
            self._load(op)
            return
        if isinstance(op, tt.StoreOp):
            self._store(op)
            return
        if isinstance(op, tt.AtomicRMWOp):
            atomic_ptrs(self, op, em.add(self.smem, self.smem_plan[op]) if op in self.smem_plan else None)
            return
        if isinstance(op, tt.DotOp):
            a, b, c = self.get(op.a), self.get(op.b), self.get(op.c)
            meta = self.get(op.meta) if op.meta is not None else None
            if (not isinstance(a, Frag | SmemOperand) or not isinstance(b, Frag | SmemOperand)
                    or (meta is not None and not isinstance(meta, Frag))):
                raise LoweringError("operands must be in #ttg.dot_op layouts (run sparse-gpu-encoding)")
            if not isinstance(c, Regs):
                raise LoweringError("the accumulator must be a register tensor in #ttg.mma")
            fresh = self.restart_flags.get(op)
            scale_d = em.cmp("eq", fresh, 0) if fresh is not None else None
            self.values[op.result] = lower_dot(self, a, b, c, meta, op.result.type,
                                               defer_wait=_only_feeds_next_iteration(op), scale_d=scale_d)
            return
        if isinstance(op, ttgd.LocalAllocOp):
            sm = Smem(em.add(self.smem, self.smem_plan[op]), op.result.type)
            if op.src is not None:
                store_shared(self, sm, self._regs(op.src))
            self.values[op.result] = sm
            return
        if isinstance(op, ttgd.LocalLoadOp):
            sm = self.get(op.src)
            assert isinstance(sm, Smem)
            if dequantize_reads_in_place(op.result):
                self.values[op.result] = sm  # tt.dequantize reads the buffer itself
                return
            self.values[op.result] = self._read_smem(sm, op.result.type)
            return
        if isinstance(op, tt.DequantizeOp):
            scratch = em.add(self.smem, self.smem_plan[op]) if op in self.smem_plan else None
            self.values[op.result] = lower_dequantize(self, op, scratch)
            return
        if isinstance(op, ttgd.LocalStoreOp):
            sm = self.get(op.dst)
            assert isinstance(sm, Smem)
            store_shared(self, sm, self._regs(op.src))
            return
        if isinstance(op, ttgd.MemDescSubviewOp):
            self._subview(op)
            return
        if isinstance(op, ttgd.ConvertLayoutOp):
            self._convert(op)
            return
        if isinstance(op, tt.ReduceOp):
            self._reduce(op)
            return
        if isinstance(op, tt.ReshapeOp):
            self._reshape(op)
            return
        if isinstance(op, ttgd.AsyncCopyGlobalToLocalOp):
            if not op.is_block_pointer:
                raise LoweringError("only the block-pointer form is supported")
            bp, sm = self.get(op.src), self.get(op.dst)
            dims = list(op.boundaryCheck.get_values()) if op.boundaryCheck is not None else []
            pad = op.padding.value.data if op.padding is not None else None
            async_copy(self, bp, sm, dims, pad, war_barrier=ttgd.SLOT_SAFE not in op.attributes,
                       known=self.divs.ptr(op.src), guarded=ttgd.SLOT_GUARDED in op.attributes)
            self.values[op.token] = None
            return
        if isinstance(op, ttgd.AsyncCommitGroupOp):
            em.op(ptx.CpAsyncCommitGroupOp())
            self.values[op.result] = None
            return
        if isinstance(op, ttgd.AsyncWaitOp):
            em.op(ptx.CpAsyncWaitGroupOp(op.num_))
            self.bar()
            return
        if isinstance(op, ttgd.InitBarrierOp | ttgd.WaitBarrierOp | ttgd.ArriveBarrierOp | ttgd.DotWaitOp):
            lower_barrier_op(self, op)
            return
        if isinstance(op, ttgd.AsyncTmaCopyOp):
            lower_tma_copy(self, op)
            return
        if isinstance(op, scf.ForOp):
            self._for(op)
            return
        if isinstance(op, scf.IfOp):
            self._if(op)
            return
        if op.name.startswith("arith."):
            self._arith(op)
            return
        if op.name.startswith("math."):
            self._math(op)
            return
        raise LoweringError(f"{op.name}: not supported by the PTX lowering")

    # ---------------------------------------------------------------- op helpers
    def _regs(self, v: SSAValue) -> Regs:
        x = self.get(v)
        if not isinstance(x, Regs):
            raise LoweringError(f"expected a register tensor, got {type(x).__name__}")
        return x

    def _constant(self, op: arith.ConstantOp) -> None:
        ty = op.result.type
        if not isinstance(ty, TensorType):
            if isinstance(ty, IndexType):
                self.values[op.result] = self.em.c(op.value.value.data, i32)
                return
            new = self.em.val(arith.ConstantOp(op.value, ty))
            if isinstance(ty, IntegerType):
                self.em.consts[new] = op.value.value.data
            self.values[op.result] = new
            return
        val = op.value
        if not isinstance(val, DenseIntOrFPElementsAttr) or not val.is_splat():
            raise LoweringError("only splat tensor constants are supported")
        elt = ty.element_type
        # first element only: get_attrs() would build one attribute per element (16k for 128x128)
        scalar_attr = next(iter(val.iter_attrs()), None) if hasattr(val, "iter_attrs") else None
        if scalar_attr is None:
            v = list(val.get_values())[0]
            scalar = self.em.c(int(v), elt) if isinstance(elt, IntegerType) else self.em.cf(float(v), elt)
        else:
            scalar = self.em.val(arith.ConstantOp(scalar_attr, elt))
        enc = ty.encoding
        if isinstance(enc, ttgd.DotOperandEncodingAttr):
            raise LoweringError("constants in #ttg.dot_op layouts are not supported")
        dl = distributed(enc, ty.get_shape())
        self.values[op.result] = Regs(ty, [scalar] * dl.num_regs)

    def _arith(self, op: Operation) -> None:
        cls = _ARITH_CLASSES.get(op.name)
        if cls is None or op.name not in _SUPPORTED_ARITH:
            raise LoweringError(f"{op.name}: not supported by the PTX lowering")
        res_ty = op.results[0].type
        operands = [self.get(o) for o in op.operands]
        tensor = isinstance(res_ty, TensorType) or any(isinstance(o, Regs) for o in operands)
        if not tensor:
            self.values[op.results[0]] = self._scalar_arith(op, cls, list(operands), res_ty)
            return
        n = None
        for o in operands:
            if isinstance(o, Regs):
                n = len(o.regs)
        elt = res_ty.element_type if isinstance(res_ty, TensorType) else res_ty
        out = []
        for r in range(n):
            args = [o.regs[r] if isinstance(o, Regs) else o for o in operands]
            out.append(self._scalar_arith(op, cls, args, elt))
        self.values[op.results[0]] = Regs(res_ty, out)

    def _math(self, op: Operation) -> None:
        """Elementwise `math` ops, per register: what PTX has an instruction for directly;
        exp and log through ex2/lg2 and a constant factor."""
        if op.name not in _MATH_DIRECT and op.name not in ("math.exp", "math.log"):
            raise LoweringError(f"{op.name}: not supported by the PTX lowering")
        res_ty = op.results[0].type
        elt = res_ty.element_type if isinstance(res_ty, TensorType) else res_ty
        if op.name != "math.absi" and not isinstance(elt, Float32Type):
            raise LoweringError(f"{op.name} on {elt}: the PTX lowering computes math in f32 "
                                "(the frontend widens 16-bit floats; f64 is not supported)")
        operands = [self.get(o) for o in op.operands]
        count = max((len(o.regs) for o in operands if isinstance(o, Regs)), default=0)
        em = self.em

        def one(args: list[SSAValue]) -> SSAValue:
            if op.name == "math.exp":
                scaled = em.val(arith.MulfOp(args[0], em.val(arith.ConstantOp(FloatAttr(_LOG2_E, f32)))))
                return em.val(xmath.Exp2Op(scaled))
            if op.name == "math.log":
                lg2 = em.val(xmath.Log2Op(args[0]))
                return em.val(arith.MulfOp(lg2, em.val(arith.ConstantOp(FloatAttr(_LN_2, f32)))))
            return em.val(type(op).create(operands=args, result_types=[elt],
                                          properties=dict(op.properties)))

        if not isinstance(res_ty, TensorType) and not count:
            self.values[op.results[0]] = one(list(operands))
            return
        regs = [one([o.regs[r] if isinstance(o, Regs) else o for o in operands]) for r in range(count)]
        self.values[op.results[0]] = Regs(res_ty, regs)

    def _scalar_arith(self, op: Operation, cls, args: list[SSAValue], res_ty: Attribute) -> SSAValue:
        em = self.em
        name = op.name
        if isinstance(res_ty, IndexType):
            res_ty = i32
        if name == "arith.index_cast":
            a = args[0]
            return em.ext64(a) if res_ty == i64 else em.to32(a)
        if name in _CASTS:
            return em.val(cls(args[0], res_ty))
        if name == "arith.cmpi":
            return em.val(arith.CmpiOp(args[0], args[1], op.predicate.value.data))
        if name == "arith.cmpf":
            return em.val(arith.CmpfOp(args[0], args[1], op.predicate.value.data))
        if name == "arith.select":
            return em.val(arith.SelectOp(*args))
        if name == "arith.negf":
            return em.val(arith.NegfOp(args[0]))
        if name == "arith.addi":
            return em.add(args[0], args[1])
        if name == "arith.subi":
            return em.sub(args[0], args[1])
        if name == "arith.muli":
            return em.mul(args[0], args[1])
        if len(args) == 2:
            return em.val(cls(args[0], args[1]))
        raise LoweringError(f"{name}: not supported by the PTX lowering")

    def _check_expand(self, op: tt.ExpandDimsOp) -> None:
        s_enc = op.src.type.encoding
        r_enc = op.result.type.encoding
        if not (isinstance(s_enc, ttgd.SliceEncodingAttr) and s_enc.parent == r_enc and s_enc.dim == op.axis.value.data):
            raise LoweringError("the source layout must be #ttg.slice<{dim = axis, parent = result layout}>")

    def _broadcast(self, src: object, ty: TensorType) -> Regs:
        assert isinstance(src, Regs)
        s_shape = src.ty.get_shape()
        if src.ty.encoding != ty.encoding:
            raise LoweringError("source and result layouts differ")
        sdl = distributed(src.ty.encoding, s_shape)
        rdl = distributed(ty.encoding, ty.get_shape())
        bdims = [d for d in range(len(s_shape)) if s_shape[d] != ty.get_shape()[d]]
        index = {}
        for r, off in enumerate(sdl.regs):
            key = tuple(o for d, o in enumerate(off) if d not in bdims)
            index.setdefault(key, r)
        out = []
        for off in rdl.regs:
            key = tuple(o for d, o in enumerate(off) if d not in bdims)
            if key not in index:
                raise LoweringError("cannot match broadcast registers")
            out.append(src.regs[index[key]])
        return Regs(ty, out)

    def _make_tensor_ptr(self, op: tt.MakeTensorPtrOp) -> None:
        em = self.em
        base = self.get(op.base)
        shape = [em.ext64(self.get(s)) for s in op.shape]
        strides = [em.ext64(self.get(s)) for s in op.strides]
        offsets = [em.to32(self.get(o)) for o in op.offsets]
        self.values[op.result] = BlockPtr(base, shape, strides, offsets, op.result.type)

    def _load(self, op: tt.LoadOp) -> None:
        ptr = self.get(op.ptr)
        if isinstance(ptr, Regs):
            load_ptrs(self, op, ptr)
            return
        if not isinstance(ptr, BlockPtr):
            raise LoweringError("only block-pointer loads are supported (tensor-of-pointers loads are not)")
        dims = list(op.boundaryCheck.get_values()) if op.boundaryCheck is not None else []
        pad = op.padding.value.data if op.padding is not None else None
        ty = op.result.type
        if isinstance(ty.encoding, ttgd.DotOperandEncodingAttr):
            raise LoweringError("loads straight into #ttg.dot_op are not supported (stage through shared memory)")
        self.values[op.result] = load_block(self, ptr, ty, dims, pad, self.divs.ptr(op.ptr))

    def _store(self, op: tt.StoreOp) -> None:
        ptr = self.get(op.ptr)
        if isinstance(ptr, Regs):
            store_ptrs(self, op, ptr)
            return
        if isinstance(ptr, SSAValue):
            store_scalar(self, op, ptr)
            return
        if not isinstance(ptr, BlockPtr):
            raise LoweringError("only block-pointer, pointer-tensor and scalar stores are supported")
        if op.mask is not None:
            raise LoweringError("masked block-pointer stores are not supported")
        dims = list(op.boundaryCheck.get_values()) if op.boundaryCheck is not None else []
        store_block(self, ptr, self._regs(op.value), dims, self.divs.ptr(op.ptr))

    def _read_smem(self, sm: Smem, ty: TensorType) -> object:
        if isinstance(ty.encoding, ttgd.DotOperandEncodingAttr):
            return load_frag(self, sm, ty)
        return load_shared(self, sm, ty)

    def _subview(self, op: ttgd.MemDescSubviewOp) -> None:
        em = self.em
        sm = self.get(op.src)
        assert isinstance(sm, Smem)
        src_shape = sm.ty.get_shape()
        res_ty = op.result.type
        lead = len(src_shape) - len(res_ty.get_shape())
        off = em.c(0)
        for d in range(len(src_shape)):
            idx = em.to32(self.get(op.offsets[d]))
            if d >= lead:
                if em.known(idx) != 0:
                    raise LoweringError("only leading-dim (buffer slot) offsets may be non-zero")
                continue
            off = em.add(off, em.mul(idx, math.prod(src_shape[d + 1:])))
        addr = em.add(sm.addr, em.mul(off, esize(sm.ty.element_type)))
        self.values[op.result] = Smem(addr, res_ty)

    def _convert(self, op: ttgd.ConvertLayoutOp) -> None:
        src = self._regs(op.src)
        st = op.src.type
        shape = st.get_shape()
        order = tuple(range(len(shape) - 1, -1, -1))  # row-major
        enc = ttgd.SharedEncodingAttr(1, 1, 1, order)
        dst = op.result.type.encoding
        if (isinstance(dst, ttgd.DotOperandEncodingAttr) and dst.op_idx == 0 and len(shape) == 2
                and dst.meta in (-1, 0)):
            # an A fragment is read back by ldmatrix, 8 rows at a time: swizzle the rows apart
            enc = ttgd.SharedEncodingAttr(*mma_swizzle_params(shape[1], esize(st.element_type)), order)
        mem_ty = ttgd.MemDescType(shape, st.element_type, enc, True)
        sm = Smem(self.em.add(self.smem, self.smem_plan[op]), mem_ty)
        store_shared(self, sm, src)
        self.values[op.result] = self._read_smem(sm, op.result.type)

    def _reshape(self, op: tt.ReshapeOp) -> None:
        """`tt.reshape` keeps the row-major order of the elements: the source is stored row-major
        into a scratch buffer and read back as the result's shape in the result's layout."""
        src = self._regs(op.src)
        st, rt = op.src.type, op.result.type
        addr = self.em.add(self.smem, self.smem_plan[op])

        def row_major(ty: TensorType) -> ttgd.MemDescType:
            order = tuple(range(len(ty.get_shape()) - 1, -1, -1))
            return ttgd.MemDescType(ty.get_shape(), ty.element_type, ttgd.SharedEncodingAttr(1, 1, 1, order), True)

        store_shared(self, Smem(addr, row_major(st)), src)
        self.values[op.result] = load_shared(self, Smem(addr, row_major(rt)), rt)

    def _reduce(self, op: tt.ReduceOp) -> None:
        """`tt.reduce` through shared memory: the source is stored row-major, then each thread
        combines, for each of its result elements, the entries along the reduced axis (every
        thread of a scalar result computes the same value). Correct for any layout; it reads
        the reduced extent once per result register, so it suits epilogues and row-wise
        kernels (softmax), not reductions in a GEMM's main loop."""
        em = self.em
        src = self._regs(op.src)
        st = op.src.type
        shape = st.get_shape()
        axis = op.axis.value.data
        elt = st.element_type
        order = tuple(range(len(shape) - 1, -1, -1))
        mem_ty = ttgd.MemDescType(shape, elt, ttgd.SharedEncodingAttr(1, 1, 1, order), True)
        sm = Smem(em.add(self.smem, self.smem_plan[op]), mem_ty)
        store_shared(self, sm, src)
        self.before_shared_read()
        kind = op.kind.data
        floats = not isinstance(elt, IntegerType)
        combine = {("sum", True): arith.AddfOp, ("sum", False): arith.AddiOp,
                   ("max", True): arith.MaximumfOp, ("max", False): arith.MaxSIOp,
                   ("min", True): arith.MinimumfOp, ("min", False): arith.MinSIOp}.get((kind, floats))
        if combine is None:
            raise LoweringError(f"tt.reduce {kind}: not supported by the PTX lowering")

        def fold(coords: list[tuple[SSAValue, ...]]) -> SSAValue:
            acc = None
            for c in coords:
                wt, wn = word_type(elt, 1)
                word = em.op(ptx.LdSharedOp(smem_addr(self, sm, c), wt, wn))
                value = unpack_words(self, list(word.results), elt, 1)[0]
                acc = value if acc is None else em.val(combine(acc, value))
            assert acc is not None
            return acc

        res_ty = op.result.type
        if not isinstance(res_ty, TensorType):
            self.values[op.result] = fold([(em.c(i),) for i in range(shape[0])])
            return
        dl = distributed(res_ty.encoding, res_ty.get_shape())
        regs = []
        for c in self.coords(dl):
            regs.append(fold([(*c[:axis], em.c(i), *c[axis:]) for i in range(shape[axis])]))
        self.values[op.result] = Regs(res_ty, regs)

    # ---------------------------------------------------------------- control flow
    def _for(self, op: scf.ForOp) -> None:
        em = self.em
        lb, ub, step = (self._int32(self.get(v)) for v in (op.lb, op.ub, op.step))
        inits = [self.get(v) for v in op.iter_args]
        flat = [v for x in inits for v in self.flatten(x)]
        restart = _zero_restart(op) if self.wgmma and self.mode != "producer" else None
        if restart is not None:
            flat.append(em.c(0))  # `fresh`, carried after the loop's own values
        body = Block(arg_types=[lb.type, *[v.type for v in flat]])
        outer = em.block
        body_args = list(body.args)
        self.values[op.body.block.args[0]] = body_args[0]
        pos = 1
        for arg, init in zip(op.body.block.args[1:], inits):
            n = len(self.flatten(init))
            self.values[arg] = self.unflatten(init, body_args[pos:pos + n])
            pos += n
        if restart is not None:
            dot, epilogue, index = restart
            self.restart_flags[dot] = body_args[-1]
            self.restart_ifs[epilogue] = (index, [])
        em.block = body
        self.writes_pending = self.reads_since_bar = True
        chained = [d for c in _accumulation_chains(op) for d in c]
        if chained and self.wgmma:
            self.wgmma_pending = True  # from the second iteration on, the last group may be in flight
        # fragment registers: with two dots per body (unroll_by_two) each has its own, and the
        # group of the other may stay in flight while one reloads
        self.wgmma_frag_keep = 1 if len(chained) >= 2 else 0
        self.lower_block(op.body.block)
        y = op.body.block.last_op
        assert isinstance(y, scf.YieldOp)
        yielded = [v for a in y.arguments for v in self.flatten(self.get(a))]
        if restart is not None:
            yielded.extend(self.restart_ifs[restart[1]][1])
        if [v.type for v in yielded] != [v.type for v in flat]:
            raise LoweringError("loop-carried values change their register shape")
        # registers the body yields unchanged (block-pointer bases/shapes/strides) are not
        # carried: uses read the value from before the loop, so LICM can hoist what they feed
        keep = [i for i, (a, y) in enumerate(zip(body_args[1:], yielded)) if y is not a]
        for i in range(len(flat) - 1, -1, -1):
            if i not in keep:
                body_args[i + 1].replace_all_uses_with(flat[i])
                body.erase_arg(body_args[i + 1])
        body.add_op(scf.YieldOp(*[yielded[i] for i in keep]))
        em.block = outer
        new = scf.ForOp(lb, ub, step, [flat[i] for i in keep], body)
        outer.add_op(new)
        self.writes_pending = self.reads_since_bar = True
        self.wgmma_drain()  # the accumulators leave the loop: the last wgmma group must land
        results = list(flat)
        for pos_new, i in enumerate(keep):
            results[i] = new.results[pos_new]
        if restart is not None:
            results.pop()
        pos = 0
        for res, init in zip(op.results, inits):
            n = len(self.flatten(init))
            self.values[res] = self.unflatten(init, results[pos:pos + n])
            pos += n

    def _int32(self, v: object) -> SSAValue:
        assert isinstance(v, SSAValue)
        return self.em.to32(v) if v.type != i32 and v.type != i64 else v

    def _if(self, op: scf.IfOp) -> None:
        em = self.em
        cond = self.get(op.cond)
        outer = em.block
        state = (self.writes_pending, self.reads_since_bar)
        blocks, templates, yields, ends = [], None, [], []
        restart = self.restart_ifs.get(op)
        for region in (op.true_region, op.false_region):
            blk = Block()
            em.block = blk
            self.writes_pending, self.reads_since_bar = state
            if region.blocks:
                self.lower_block(region.block)
                y = region.block.last_op
                vals = [self.get(a) for a in y.arguments] if isinstance(y, scf.YieldOp) else []
                if restart is not None and region is op.true_region:
                    # the restarted sum: the next dot ignores the accumulator (wgmma scale-d
                    # = 0) instead of zeroing its registers here, which would make ptxas
                    # serialise every wgmma of the loop (C7515)
                    passed = op.false_region.block.last_op
                    assert isinstance(passed, scf.YieldOp)
                    vals[restart[0]] = self.get(passed.arguments[restart[0]])
            else:
                vals = []
            templates = templates or vals
            yields.append([v for x in vals for v in self.flatten(x)])
            blocks.append(blk)
            ends.append((self.writes_pending, self.reads_since_bar))
        for blk, ys in zip(blocks, yields):
            blk.add_op(scf.YieldOp(*ys))
        em.block = outer
        types = [v.type for v in yields[0]]
        new = scf.IfOp(cond, types, Region(blocks[0]), Region(blocks[1]))
        outer.add_op(new)
        # the condition is uniform: afterwards a barrier is pending if either branch left one
        self.writes_pending = ends[0][0] or ends[1][0]
        self.reads_since_bar = ends[0][1] or ends[1][1]
        if restart is not None:
            restart[1].append(em.select(cond, em.c(1), em.c(0)))
        results = list(new.results)
        pos = 0
        for res, tmpl in zip(op.results, templates or []):
            n = len(self.flatten(tmpl))
            self.values[res] = self.unflatten(tmpl, results[pos:pos + n])
            pos += n


def param_kind(ty: Attribute, func: tt.FuncOp, i: int) -> str:
    if isinstance(ty, tt.PointerType):
        return "ptr"
    if ty == i32:
        return "i32"
    if ty == i64:
        return "i64"
    if isinstance(ty, Float32Type):
        return "f32"
    if isinstance(ty, IntegerType) and ty.width.data == 1:
        return "i32"
    raise LoweringError(f"tt.func @{func.sym_name.data}: parameter {i} has unsupported type {ty}")


def module_int(module: ModuleOp, key: str, default: int) -> int:
    a = module.attributes.get(key)
    return a.value.data if isinstance(a, IntegerAttr) else default


__all__ = ["Lowerer", "LoweringError", "param_kind", "module_int"]
