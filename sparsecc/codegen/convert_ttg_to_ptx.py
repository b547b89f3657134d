"""`convert-ttg-to-ptx`: a ttgir module becomes a module of one `ptx.kernel` plus its launch
contract (the `sparsecc.launch` attribute, `sparsecc.codegen.launch`).

The conversion itself is `sparsecc.codegen.lower.Lowerer`; it reads the decisions earlier
passes recorded in the IR (tritongpu-warp-specialize's `ttg.producer*` marks, the pipeline's
`ttg.slot_*` marks) and decides none of them itself.

    sparsecc-opt pipelined.mlir -p "convert-ttg-to-ptx{target=sm_90a}"
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.passes import ModulePass

from sparsecc.codegen.launch import LAUNCH, launch_attr
from sparsecc.codegen.lower import Lowerer, LoweringError, module_int
from sparsecc.dialects import ptx, tt


def convert_module(module: ModuleOp, target: str, a_from_shared: bool = False) -> ptx.KernelOp:
    """Replace the module's one `tt.func` by its `ptx.kernel`, its `ttg.*` attributes by
    `sparsecc.launch`; returns the kernel."""
    funcs = [op for op in module.ops if isinstance(op, tt.FuncOp)]
    if len(funcs) != 1:
        raise LoweringError(f"expected exactly one tt.func in the module, found {len(funcs)}",
                            funcs[1] if len(funcs) > 1 else module)
    func = funcs[0]
    num_warps = module_int(module, "ttg.num-warps", 4)
    lw = Lowerer(func, target, num_warps, cluster=module_int(module, "ttg.num-ctas", 1), a_smem_option=a_from_shared)
    try:
        kernel = lw.build()
    except LoweringError as e:
        if e.op is None:  # (e.g. a parameter type the kernel cannot take): the function's place
            e.op = func
        raise
    params = [(f"arg{i}", k) for i, k in enumerate(kernel.kinds)]
    for i, arg in enumerate(func.body.block.args):
        if arg.name_hint:
            params[i] = (arg.name_hint, params[i][1])
    meta: dict[str, Any] = {
        "name": kernel.kernel_name,
        "num_warps": num_warps,
        "threads": lw.threads,
        "shared": lw.smem_bytes,
        "params": params,
        "target": target,
    }
    if lw.cluster > 1:  # the launch grid must be a whole number of clusters
        meta["cluster"] = lw.cluster
    if lw.tensor_maps:  # the host builds these per launch (sparsecc.runtime.tensor_map)
        meta["tensor_maps"] = [recipe.as_json() for _, _, recipe in lw.tensor_maps.values()]
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
    LoweringError naming the op. Guarantees: the module holds one `ptx.kernel` for `target`
    (default: the module's `ttg.target`) and a `sparsecc.launch` attribute, no `ttg.*` ones.
    `a-from-shared`: wgmma reads A through a descriptor also outside TMA kernels.
    """

    name = "convert-ttg-to-ptx"

    target: str = ""
    a_from_shared: bool = False

    def __post_init__(self) -> None:
        """A bad `target` option is refused with the options (see `apply` for the module's)."""
        if self.target:
            from sparsecc.compiler import check_target  # (the compiler imports the passes)

            check_target(self.target)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        target = self.target
        if not target:
            attr = op.attributes.get("ttg.target")
            if not isinstance(attr, StringAttr):
                raise LoweringError("convert-ttg-to-ptx needs a target: a target option or a module with a "
                                    "\"ttg.target\" attribute (run convert-tt-to-ttg first)", op)
            target = attr.data
        from sparsecc.compiler import check_target  # (the compiler imports the passes)

        try:
            check_target(target)
        except ValueError as e:  # the module's ttg.target (an option was checked when given)
            raise LoweringError(f"convert-ttg-to-ptx: {e}", op) from None
        convert_module(op, target, self.a_from_shared)


__all__ = ["ConvertTTGToPTXPass", "convert_module"]
