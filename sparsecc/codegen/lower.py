"""The ttgir -> `ptx` dialect lowering behind convert-ttg-to-ptx (sparsecc/passes/convert_ttg_to_ptx.py).

One `tt.func` becomes one `ptx.kernel` (`lower_function`): the per-kernel decisions are made
first (`plan_kernel`: the shared-memory offsets allocate-shared-memory recorded, tensor maps, warp specialization, into a frozen
`KernelConfig`), then the body is walked op by op, each op lowered by its handler
(sparsecc/codegen/handlers/, one module per op family) against a small explicit
`LoweringState` (sparsecc/codegen/lower_state.py).

Values are lowered per thread (lower_base.py): a distributed tensor is the list of registers
its layout gives this thread (analysis/layouts.py), dot operands are mma fragments, block
pointers are their scalar fields, shared buffers are 32-bit shared addresses into one dynamic
`smem` array (its offsets planned by allocate-shared-memory). Memory helpers live in lower_mem.py and lower_ptrs.py,
ldmatrix/mma in lower_dot.py, dequantization in lower_quant.py, mbarriers and TMA in
lower_async.py.
"""

from __future__ import annotations

from xdsl.dialects.builtin import Float32Type, IntegerAttr, IntegerType, i32, i64
from xdsl.ir import Attribute, Operation

from sparsecc.analysis.dead_code import drop_dead_arith
from sparsecc.analysis.divisibility import Divisibility
from sparsecc.analysis.kloops import uses_wgmma
from sparsecc.analysis.shared_memory import WGMMA_ALIGN, group_private, order_barriers
from sparsecc.codegen import handlers  # noqa: F401 - importing the package fills the handler table
from sparsecc.codegen.lower_async import lower_specialized, plan_tensor_maps, producer_split
from sparsecc.codegen.lower_base import Emitter, LoweringError
from sparsecc.codegen.lower_state import Barriers, KernelConfig, LoweringState, Preamble
from sparsecc.dialects import ptx, tt
from sparsecc.dialects import ttg as ttgd
from sparsecc.dialects.ptx_mbarrier import ClusterBarrierOp
from sparsecc.switches import SWITCHES


def lower_function(func: tt.FuncOp, target: str, num_warps: int, cluster: int = 1,
                   a_smem_option: bool = False,
                   narrow_copies: bool = SWITCHES["narrow_copies"].default,
                   maxnreg: int | None = None) -> LoweringState:
    """Lower `func` to a `ptx.kernel` (the returned state's `kernel`; its `cfg` holds the launch
    facts: threads, shared bytes, tensor maps); `maxnreg` becomes the kernel's `.maxnreg`.

    Example: `lower_function(func, "sm_90a", num_warps=4).kernel` is the kernel of a ttgir
    `tt.func` after sparse-gpu-encoding."""
    cfg, params = plan_kernel(func, target, num_warps, cluster, a_smem_option, narrow_copies)
    kernel = ptx.KernelOp(func.sym_name.data, params, target=target, maxntid=(cfg.threads, 1, 1),
                          shared_bytes=cfg.smem_bytes, cluster=(cluster, 1, 1) if cluster > 1 else None,
                          maxnreg=maxnreg)
    em = Emitter(kernel.body.block)
    args = {}
    for arg, karg in zip(func.body.block.args, kernel.args):
        if arg.type == i32 and karg.type != i32:
            karg = em.to32(karg)
        elif isinstance(arg.type, IntegerType) and arg.type.width.data == 1 and karg.type != arg.type:
            karg = em.cmp("ne", karg, 0)  # a bool arrives as a 32-bit 0 or 1: the predicate
        args[arg] = karg
    L = LoweringState(cfg, kernel, em, _preamble(em, cfg), values=args,
                      barriers=Barriers(explicit=ttgd.EXPLICIT_BARRIERS in func.attributes))
    split = producer_split(func)
    if split is None:
        L.lower_block(func.body.block)
    else:
        lower_specialized(L, func.body.block, split[0], split[1])
    if L.caches.vector_ptrs:
        drop_dead_arith(kernel)  # the per-register addresses and masks that vectors made dead
    if cluster > 1:
        # the other CTA multicasts into our shared memory and arrives on our barriers up to
        # its last K step: neither CTA leaves before both are done with the other
        em.op(ClusterBarrierOp())
    return L


def plan_kernel(func: tt.FuncOp, target: str, num_warps: int, cluster: int,
                a_smem_option: bool, narrow_copies: bool) -> tuple[KernelConfig, list[tuple[str, str]]]:
    """The per-kernel decisions, made before the first op is lowered, and the kernel's
    parameters (the function's, then one tensor map per TMA'd block pointer)."""
    wgmma = uses_wgmma(func)
    divs = Divisibility(func)
    offsets, smem_bytes = shared_plan(func)
    params = [(f"arg{i}", param_kind(ty, func, i)) for i, ty in enumerate(func.function_type.inputs.data)]
    tensor_maps = plan_tensor_maps(func, divs, len(params))
    params += [(f"tmap{i}", "tmap") for i in range(len(tensor_maps))]
    tma_loads = any(isinstance(op, ttgd.AsyncTmaCopyOp) for op in func.walk())
    producer_warps = tma_thread = 0
    split = producer_split(func)
    if split is not None:
        if not (tma_loads and wgmma):
            raise LoweringError(f"tt.func @{func.sym_name.data}: marked for warp specialization "
                                "but it has no TMA copies feeding a wgmma dot")
        producer_warps, tma_thread = split[2], 32 * num_warps * ttgd.consumer_groups(func)
    cfg = KernelConfig(func, target, num_warps, cluster, wgmma, a_smem_option or tma_loads,
                       producer_warps, tma_thread, divs, offsets, smem_bytes, tensor_maps, narrow_copies,
                       ttgd.consumer_groups(func), group_private(func, offsets), order_barriers(func, offsets) or 0)
    return cfg, params


def _preamble(em: Emitter, cfg: KernelConfig) -> Preamble:
    """Thread, lane and warp index, cluster rank and the shared base, read at the top."""
    tid = em.sreg("tid.x")
    lane = em.remu(tid, 32)
    warp = em.divu(tid, 32)
    cta_rank = em.sreg("cluster_ctarank") if cfg.cluster > 1 else None
    smem = em.val(ptx.SharedBaseOp()) if cfg.smem_bytes else None
    if smem is not None and cfg.wgmma:
        # wgmma's swizzle atoms (8 rows x 128 B) must start on 1 KiB boundaries
        smem = em.band(em.add(smem, WGMMA_ALIGN - 1), em.c(-WGMMA_ALIGN))
    return Preamble(tid, lane, warp, cta_rank, smem)


def shared_plan(func: tt.FuncOp) -> tuple[dict[Operation, int], int]:
    """The offsets of `func`'s shared buffers and scratch and the total bytes, as
    allocate-shared-memory recorded them (`ttg.shared_offset` on the ops, `ttg.shared` on the
    module)."""
    module = func.parent_op()
    total = module.attributes.get(ttgd.SHARED_TOTAL) if module is not None else None
    if not isinstance(total, IntegerAttr):
        raise LoweringError(f"tt.func @{func.sym_name.data}: no shared-memory plan (the module has no "
                            f"\"{ttgd.SHARED_TOTAL}\" attribute): run allocate-shared-memory first")
    offsets = {}
    for op in func.walk():
        off = op.attributes.get(ttgd.SHARED_OFFSET)
        if isinstance(off, IntegerAttr):
            offsets[op] = off.value.data
    return offsets, total.value.data


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


__all__ = ["LoweringError", "lower_function", "param_kind", "plan_kernel", "shared_plan"]
