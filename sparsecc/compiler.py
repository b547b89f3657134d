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
from dataclasses import dataclass, field, fields, replace

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import PassPipeline
from xdsl.printer import Printer

from sparsecc.dialects import make_context
from sparsecc.passes import get_all_passes
from sparsecc.switches import SWITCHES, resolve

STAGES = ("ttir", "ttir-decomposed", "ttgir", "ptx", "cubin")
MIN_SPARSE_ARCH = 80
SUPPORTED_TARGETS = ("sm_80", "sm_86", "sm_89", "sm_90", "sm_90a")


@dataclass(frozen=True)
class CompileOptions:
    """Everything that changes the code a compile produces (all of it is part of the cache
    key); `target=None` stops after ttir-decomposed.

    `CompileOptions(...)` takes the built-in defaults as they are; `CompileOptions.create(...)`,
    which `sparsecc.compile` and `kernel[grid](...)` use, also applies the switches' environment
    overrides (`sparsecc.switches`) to the switches the caller leaves unset:

        >>> CompileOptions.create(target="sm_90a", num_warps=8, tma=False).tma
        False
    """

    target: str | None = None
    num_warps: int = 4
    num_stages: int = 3
    num_ctas: int = 1
    """2: programs 2j and 2j+1 may run as a cluster sharing their B tiles (see the pipeline's
    num-ctas); the kernel's own work split must make their K loops read the same B tiles."""
    tma: bool = SWITCHES["tma"].default
    """TMA copies + mbarriers for wgmma K loops (`tritongpu-pipeline{tma=true}`)."""
    warp_specialize: bool = SWITCHES["warp_specialize"].default
    """A producer warp issues a TMA kernel's copies."""
    mbarriers: bool = SWITCHES["mbarriers"].default
    """Per-slot mbarriers for cp.async wgmma loops too (`tritongpu-pipeline{mbarriers=true}`)."""
    wgmma_unroll: bool = SWITCHES["wgmma_unroll"].default
    """Unroll wgmma K loops by two."""
    wgmma_a_smem: bool = SWITCHES["wgmma_a_smem"].default
    """wgmma reads A through a descriptor outside TMA kernels too."""

    @classmethod
    def create(cls, target: str | None = None, num_warps: int = 4, num_stages: int = 3,
               num_ctas: int = 1, **switches: bool | None) -> CompileOptions:
        """Checked options: switches left unset (or None) take their environment override or
        default; a bad value or an unknown option name is a ValueError/TypeError naming it."""
        for name, value in (("num_warps", num_warps), ("num_stages", num_stages)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if num_ctas not in (1, 2):
            raise ValueError(f"num_ctas must be 1 or 2 (a CTA pair), got {num_ctas!r}")
        return cls(target=target, num_warps=num_warps, num_stages=num_stages, num_ctas=num_ctas,
                   **resolve(switches))

    def cache_key(self) -> str:
        return "|".join(f"{f.name}={getattr(self, f.name)}" for f in fields(self))


@dataclass
class StageResult:
    """asm[stage] is the text (bytes for cubin) each stage produced."""

    asm: dict[str, str | bytes] = field(default_factory=dict)
    module: ModuleOp | None = None
    metadata: dict[str, object] = field(default_factory=dict)


def decompose_passes() -> list[str]:
    return ["decompose-sparse-tensors"]


def ttgir_passes(opts: CompileOptions) -> list[str]:
    pipeline = f"num-stages={opts.num_stages}"
    if opts.num_ctas != 1:
        pipeline += f" num-ctas={opts.num_ctas}"
    if opts.mbarriers:
        pipeline += " mbarriers=true"
    if opts.tma:
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
    opts = replace(opts, target=target)
    run_passes(module, ttgir_passes(opts))
    module.verify()
    result.asm["ttgir"] = print_ir(module)
    from sparsecc.codegen.lower import lower_to_ptx_module
    from sparsecc.codegen.ptx_printer import emit_ptx

    # The tt/ttg stages above are verified; the ~12k ops the lowering builds are checked only
    # in debug mode (verifying them costs more than building and printing them).
    ptx_module, launch_meta = lower_to_ptx_module(
        module, target, warp_specialize=opts.warp_specialize, unroll=opts.wgmma_unroll,
        a_from_shared=opts.wgmma_a_smem)
    ptx_text = emit_ptx(ptx_module, verify=debug_enabled())
    result.asm["ptx"] = ptx_text
    result.metadata.update(launch_meta)
    from sparsecc.codegen.ptxas import assemble

    cubin = assemble(ptx_text, target)
    result.asm["cubin"] = cubin.data
    result.metadata["ptxas"] = cubin.resources
    return result
