"""`convert-ttg-to-ptx`: a ttgir module becomes a module of one `ptx.kernel` plus its launch
contract (the `sparsecc.launch` attribute, `sparsecc.codegen.launch`).

The conversion itself is `sparsecc.codegen.lower.lower_function`: each op is lowered by its
handler in the op table (sparsecc/codegen/handlers/). It reads the decisions earlier passes
recorded in the IR (tritongpu-warp-specialize's `ttg.producer*` marks, the pipeline's
`ttg.slot_*` marks, allocate-shared-memory's `ttg.shared_offset` / `ttg.shared`) and decides
none of them itself. A module without `ttg.shared` (allocate-shared-memory did not run) is
allocated first, as that pass would, so older ttgir still converts.

    sparsecc-opt pipelined.mlir -p "convert-ttg-to-ptx{target=sm_90a}"
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from xdsl.context import Context
from xdsl.dialects.builtin import Float8E4M3FNType, Float8E5M2Type, ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass

from sparsecc.analysis.dtypes import esize
from sparsecc.codegen.launch import LAUNCH, launch_attr
from sparsecc.codegen.lower import LoweringError, lower_function
from sparsecc.defaults import MAX_MAXNREG, MIN_MAXNREG
from sparsecc.dialects import ptx, ptx_targets, tt
from sparsecc.dialects import ttg as ttgd
from sparsecc.passes.allocate_shared_memory import (
    allocate_shared_memory,
    has_shared_plan,
    shared_size,
)
from sparsecc.switches import SWITCHES


def _needs(op: Operation) -> tuple[str, str] | None:
    """(what `op` does, the oldest target that can) for ttgir the lowering turns into
    instructions sm_80 lacks: wgmma (sm_90a), TMA and mbarrier waits (sm_90), fp8 mma (sm_89)."""
    if isinstance(op, tt.DotOp):
        enc = getattr(op.result.type, "encoding", None)
        if isinstance(enc, ttgd.MmaEncodingAttr) and enc.version_major == 3:
            return "a wgmma dot (#ttg.mma version 3)", "sm_90a"
        if isinstance(tt.element_type(op.a.type), Float8E4M3FNType | Float8E5M2Type):
            return "an fp8 dot", "sm_89"
    if isinstance(op, ttgd.DotWaitOp):
        return "ttg.dot_wait (wgmma.wait_group)", "sm_90a"
    if isinstance(op, ttgd.AsyncTmaCopyOp):
        return "a TMA copy", "sm_90"
    if isinstance(op, ttgd.InitBarrierOp | ttgd.WaitBarrierOp | ttgd.ArriveBarrierOp):
        return f"{op.name} (an mbarrier with transaction counts and try_wait)", "sm_90"
    return None


def check_target_features(module: ModuleOp, func: tt.FuncOp, target: str, cluster: int) -> None:
    """A located LoweringError when `target` is unknown or lacks an instruction the function
    needs (before lowering, so the error names the ttgir op rather than a PTX line)."""
    problem = ptx_targets.check_target(target)
    if problem is not None:
        raise LoweringError(f"convert-ttg-to-ptx: {problem}", module)
    if cluster > 1 and not ptx_targets.satisfies(target, "sm_90"):
        raise LoweringError(f"a CTA cluster (\"ttg.num-ctas\" = {cluster}) needs sm_90 or newer, but the target "
                            f"is {target}", module)
    for op in func.walk():
        need = _needs(op)
        if need is not None and not ptx_targets.satisfies(target, need[1]):
            raise LoweringError(f"{need[0]} needs {need[1]}, but the target is {target}", op)


def check_shared_budget(func: tt.FuncOp, target: str, nbytes: int) -> None:
    """A LoweringError, at the largest buffer, when the `nbytes` of shared memory the lowering
    planned exceed what one block of `target` may use (the launch would fail)."""
    problem = ptx_targets.check_shared(target, nbytes)
    if problem is None:
        return
    allocs = [(math.prod(op.result.type.get_shape()) * esize(op.result.type.element_type), op)
              for op in func.walk() if isinstance(op, ttgd.LocalAllocOp)]
    largest = max(allocs, key=lambda a: a[0], default=None)
    shape = "x".join(map(str, largest[1].result.type.get_shape())) if largest else ""
    hint = (f"; the largest buffer is this {shape} ttg.local_alloc of {largest[0]} "
            "bytes (fewer pipeline stages or smaller tiles need less)" if largest else "")
    raise LoweringError(f"tt.func @{func.sym_name.data}: {problem}{hint}",
                        largest[1] if largest else func)


def ensure_shared_plan(module: ModuleOp, func: tt.FuncOp) -> None:
    """Run allocate-shared-memory on a module that has no plan yet (a ttgir file from before the
    pass, or a pipeline without it); in a module that has one, every op that needs shared memory
    must carry its offset (else a pass added it after the allocation)."""
    if not has_shared_plan(module):
        allocate_shared_memory(module)
        return
    for op in func.walk():
        if shared_size(op) and ttgd.SHARED_OFFSET not in op.attributes:
            raise LoweringError(f"{op.name} needs shared memory but has no \"{ttgd.SHARED_OFFSET}\": run "
                                "allocate-shared-memory after the passes that add ops", op)


def convert_module(module: ModuleOp, target: str, a_from_shared: bool = False,
                   narrow_copies: bool = SWITCHES["narrow_copies"].default, maxnreg: int = 0) -> ptx.KernelOp:
    """Replace the module's one `tt.func` by its `ptx.kernel`, its `ttg.*` attributes by
    `sparsecc.launch`; returns the kernel. `maxnreg` > 0 caps its registers a thread."""
    funcs = [op for op in module.ops if isinstance(op, tt.FuncOp)]
    if len(funcs) != 1:
        raise LoweringError(f"expected exactly one tt.func in the module, found {len(funcs)}",
                            funcs[1] if len(funcs) > 1 else module)
    func = funcs[0]
    num_warps = ttgd.module_num_warps(module)
    cluster = ttgd.module_num_ctas(module)
    check_target_features(module, func, target, cluster)
    ensure_shared_plan(module, func)
    try:
        lowered = lower_function(func, target, num_warps, cluster=cluster, a_smem_option=a_from_shared,
                                 narrow_copies=narrow_copies, maxnreg=maxnreg or None)
    except LoweringError as e:
        if e.op is None:  # (e.g. a parameter type the kernel cannot take): the function's place
            e.op = func
        raise
    kernel, cfg = lowered.kernel, lowered.cfg
    check_shared_budget(func, target, cfg.smem_bytes)
    params = [(f"arg{i}", k) for i, k in enumerate(kernel.kinds)]
    for i, arg in enumerate(func.body.block.args):
        if arg.name_hint:
            params[i] = (arg.name_hint, params[i][1])
    meta: dict[str, Any] = {
        "name": kernel.kernel_name,
        "num_warps": num_warps,
        "threads": cfg.threads,
        "shared": cfg.smem_bytes,
        "params": params,
        "target": target,
    }
    if cfg.cluster > 1:  # the launch grid must be a whole number of clusters
        meta["cluster"] = cfg.cluster
    if cfg.tensor_maps:  # the host builds these per launch (sparsecc.runtime.tensor_map)
        meta["tensor_maps"] = [recipe.as_json() for _, _, recipe in cfg.tensor_maps.values()]
    for op in list(module.ops):
        op.detach()
    module.body.block.add_op(kernel)
    for key in [k for k in module.attributes if k.startswith("ttg.")]:
        del module.attributes[key]
    module.attributes[LAUNCH] = launch_attr(meta)
    return kernel


@dataclass(frozen=True)
class ConvertTTGToPTXPass(ModulePass):
    """Lower ttgir to the `ptx` dialect (see the module docstring).

    Accepts: a ttgir module with exactly one `tt.func` (after sparse-gpu-encoding and, for
    pipelined loops, tritongpu-pipeline; tritongpu-sink-local-loads and
    tritongpu-warp-specialize are optional). Anything the lowering cannot express is a
    LoweringError naming the op, and so is a target that lacks an instruction the function needs
    (wgmma, TMA, mbarrier waits, clusters, fp8 mma) or buffers that exceed its shared memory
    per block. Shared offsets and the total come from allocate-shared-memory (run implicitly
    when the module has no `ttg.shared`). Guarantees: the module holds one `ptx.kernel` for `target`
    (default: the module's `ttg.target`) and a `sparsecc.launch` attribute, no `ttg.*` ones.
    `a-from-shared`: wgmma reads A through a descriptor also outside TMA kernels.
    `narrow-copies` (the `narrow_copies` switch's default): a tile whose rows hold only 4 or 8 contiguous bytes (a
    quantized weight's scales) is copied by cp.async.ca chunks of that size instead of
    synchronously. `maxnreg` (0: none): the kernel's `.maxnreg`, the registers a thread may use
    (ptxas spills past it), so that more CTAs fit an SM.
    """

    name = "convert-ttg-to-ptx"

    target: str = ""
    a_from_shared: bool = False
    narrow_copies: bool = SWITCHES["narrow_copies"].default
    maxnreg: int = 0

    def __post_init__(self) -> None:
        """A bad `target` or `maxnreg` option is refused with the options (`apply` checks the module's)."""
        if self.target:
                ptx_targets.normalize_target(self.target)
        if self.maxnreg and not MIN_MAXNREG <= self.maxnreg <= MAX_MAXNREG:
            raise ValueError(f"convert-ttg-to-ptx: maxnreg must be 0 (none) or {MIN_MAXNREG} to "
                             f"{MAX_MAXNREG}, got {self.maxnreg}")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        target = self.target or ttgd.module_target(op)
        if not target:
            raise LoweringError("convert-ttg-to-ptx needs a target: a target option or a module with a "
                                "\"ttg.target\" attribute (run convert-tt-to-ttg first)", op)
        convert_module(op, target, self.a_from_shared, self.narrow_copies, self.maxnreg)


__all__ = ["ConvertTTGToPTXPass", "convert_module"]
