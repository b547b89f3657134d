"""The compiler as a table: stage name -> the passes that make it.

    ttir             the frontend's IR; sparse operands carry #tt.sparse<"NV24">
    ttir-decomposed  decompose-sparse-tensors: values + metadata, no sparse type left
    ttgir            layouts (#ttg.blocked/#ttg.mma/#ttg.dot_op{meta}), shared swizzles, pipelining
    ptx              ttg -> ptx dialect -> PTX text
    cubin            ptxas

Each `make_<stage>` below is a flat list of named passes, so the whole compiler fits on one
screen and a pass is inserted by editing one list (the shape of Triton's nvidia backend).
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass, field

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import PassPipeline
from xdsl.printer import Printer

from sparsecc.dialects import make_context
from sparsecc.passes import get_all_passes
from sparsecc.switches import enabled

STAGES = ("ttir", "ttir-decomposed", "ttgir", "ptx", "cubin")
MIN_SPARSE_ARCH = 80
SUPPORTED_TARGETS = ("sm_80", "sm_86", "sm_89", "sm_90", "sm_90a")


@dataclass(frozen=True)
class CompileOptions:
    """What the back half needs to know; `target=None` stops after ttir-decomposed."""

    target: str | None = None
    num_warps: int = 4
    num_stages: int = 3
    num_ctas: int = 1
    """2: programs 2j and 2j+1 may run as a cluster sharing their B tiles (see the pipeline's
    num-ctas); the kernel's own work split must make their K loops read the same B tiles."""

    def cache_key(self) -> str:
        ctas = f"|c{self.num_ctas}" if self.num_ctas != 1 else ""
        return f"{self.target}|w{self.num_warps}|s{self.num_stages}{ctas}"


@dataclass
class StageResult:
    """asm[stage] is the text (bytes for cubin) each stage produced."""

    asm: dict[str, str | bytes] = field(default_factory=dict)
    module: ModuleOp | None = None
    metadata: dict[str, object] = field(default_factory=dict)


def decompose_passes() -> list[str]:
    return ["decompose-sparse-tensors"]


MBARRIER_PIPELINE = enabled("SPARSECC_MBARRIERS")
"""Pipeline wgmma K loops with per-slot full/empty mbarriers instead of CTA barriers
(tritongpu-pipeline{mbarriers=true}; SPARSECC_MBARRIERS=1)."""
TMA_PIPELINE = enabled("SPARSECC_TMA")
"""Copy the tiles of wgmma K loops with the tensor memory accelerator, synchronised through
mbarriers, where every stream of the loop allows it (tritongpu-pipeline{tma=true}); on by
default, SPARSECC_TMA=0 turns it off (bench/results/NOTES.md, stop 8: +13-27% at large shapes)."""


def ttgir_passes(opts: CompileOptions) -> list[str]:
    pipeline = f"num-stages={opts.num_stages}"
    if opts.num_ctas != 1:
        pipeline += f" num-ctas={opts.num_ctas}"
    if MBARRIER_PIPELINE:
        pipeline += " mbarriers=true"
    if TMA_PIPELINE:
        pipeline += " tma=true"
    return [
        f"convert-tt-to-ttg{{num-warps={opts.num_warps} target={opts.target}}}",
        "sparse-gpu-encoding",
        f"tritongpu-pipeline{{{pipeline}}}",
        "canonicalize",
        "cse",
    ]


def run_passes(module: ModuleOp, passes: list[str]) -> ModuleOp:
    """Run a textual pass list (sparsecc-opt syntax) over `module` in place."""
    if not passes:
        return module
    available = get_all_passes()
    pipeline = PassPipeline.parse_spec(available, ",".join(passes))
    pipeline.apply(make_context(), module)
    return module


def print_ir(module: ModuleOp) -> str:
    out = io.StringIO()
    Printer(stream=out).print_op(module)
    return out.getvalue() + "\n"


def debug_enabled() -> bool:
    """`SPARSECC_DEBUG=1`: verify every IR stage, also the large ptx module."""
    return os.environ.get("SPARSECC_DEBUG", "0").strip().lower() not in ("", "0", "false", "off", "no")


def check_target(target: str) -> str:
    """Normalise and validate a target name; mma.sp needs sm_80 or newer."""
    t = target if target.startswith("sm_") else f"sm_{target}"
    digits = "".join(ch for ch in t[3:] if ch.isdigit())
    if not digits:
        raise ValueError(f"unknown target '{target}': expected e.g. sm_80 or sm_90")
    if int(digits) < MIN_SPARSE_ARCH:
        raise ValueError(
            f"target {t} has no sparse tensor cores: mma.sp needs sm_80 or newer "
            f"(supported: {', '.join(SUPPORTED_TARGETS)})"
        )
    if t not in SUPPORTED_TARGETS:
        raise ValueError(f"unsupported target {t} (supported: {', '.join(SUPPORTED_TARGETS)})")
    return t


def compile_module(ttir: ModuleOp, opts: CompileOptions) -> StageResult:
    """Lower a frontend module through every stage `opts` asks for."""
    result = StageResult()
    result.asm["ttir"] = print_ir(ttir)
    module = ttir.clone()
    run_passes(module, decompose_passes())
    module.verify()
    result.asm["ttir-decomposed"] = print_ir(module)
    result.module = module.clone()
    if opts.target is None:
        return result
    target = check_target(opts.target)
    opts = CompileOptions(target=target, num_warps=opts.num_warps, num_stages=opts.num_stages,
                          num_ctas=opts.num_ctas)
    run_passes(module, ttgir_passes(opts))
    module.verify()
    result.asm["ttgir"] = print_ir(module)
    from sparsecc.codegen.lower import lower_to_ptx_module
    from sparsecc.codegen.ptx_printer import emit_ptx

    # The tt/ttg stages above are verified; the ~12k ops the lowering builds are checked only
    # in debug mode (verifying them costs more than building and printing them).
    ptx_module, launch_meta = lower_to_ptx_module(module, target)
    ptx_text = emit_ptx(ptx_module, verify=debug_enabled())
    result.asm["ptx"] = ptx_text
    result.metadata.update(launch_meta)
    from sparsecc.codegen.ptxas import assemble

    cubin = assemble(ptx_text, target)
    result.asm["cubin"] = cubin.data
    result.metadata["ptxas"] = cubin.resources
    return result
