"""The compiler as a table: stage name -> the passes that make it.

    ttir             the frontend's IR; sparse operands carry #tt.sparse<"NV24">
    ttir-decomposed  decompose-sparse-tensors: values + metadata, no sparse type left
    ttgir            layouts (#ttg.blocked/#ttg.mma/#ttg.dot_op{meta}), shared swizzles, pipelining
    ptx              ttg -> ptx dialect (+ the sparsecc.launch attribute) -> PTX text
    cubin            ptxas

Each `make_<stage>` below is a flat list of named passes (sparsecc-opt syntax), so the whole
compiler fits on one screen and a pass is inserted by editing one list (the shape of Triton's
nvidia backend). A stage that ends in text rather than IR names its last step: `emit-ptx`
(the PTX printer) and `ptxas` are those steps, not passes.
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import PassPipeline
from xdsl.printer import Printer

from sparsecc.dialects import make_context
from sparsecc.dialects.locations import inherit_locations
from sparsecc.dialects.ptx_targets import SUPPORTED_TARGETS
from sparsecc.passes import get_all_passes
from sparsecc.switches import SWITCHES, resolve

STAGES = ("ttir", "ttir-decomposed", "ttgir", "ptx", "cubin")
MIN_SPARSE_ARCH = 80


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
    dequant_warps_m: bool = SWITCHES["dequant_warps_m"].default
    """A dequantized dot's warps all along M."""

    @classmethod
    def create(cls, target: str | None = None, num_warps: int = 4, num_stages: int = 3,
               num_ctas: int = 1, **switches: bool | None) -> CompileOptions:
        """Checked options: switches left unset (or None) take their environment override or
        default; a bad value or an unknown option name is a ValueError/TypeError naming it."""
        if target is not None and not isinstance(target, str):
            raise TypeError(f"target must be a string such as 'sm_90a' (or None for the interpreter), "
                            f"got {type(target).__name__} {target!r}")
        for name, value in (("num_warps", num_warps), ("num_stages", num_stages)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        from sparsecc.dialects.ttg import MAX_STAGES  # (the GPU dialects load on first use)

        if num_stages > MAX_STAGES:
            raise ValueError(f"num_stages must be at most {MAX_STAGES} (each stage is one more shared-memory "
                             f"copy of every pipelined tile), got {num_stages!r}")
        if num_ctas.__class__ is not int or num_ctas not in (1, 2):  # not True, not 2.0
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


def make_ttir(opts: CompileOptions) -> list[str]:
    """ttir -> ttir-decomposed."""
    return ["raise-pointer-tensors", "sparse-operand-to-lhs", "fold-transposes", "decompose-sparse-tensors"]


def make_ttgir(opts: CompileOptions) -> list[str]:
    """ttir-decomposed -> ttgir."""
    pipeline = f"num-stages={opts.num_stages}"
    if opts.num_ctas != 1:
        pipeline += f" num-ctas={opts.num_ctas}"
    if opts.mbarriers:
        pipeline += " mbarriers=true"
    if opts.tma:
        pipeline += " tma=true"
    layouts = f"num-warps={opts.num_warps} target={opts.target}"
    if not opts.dequant_warps_m:
        layouts += " dequant-warps-m=false"
    return [
        f"convert-tt-to-ttg{{{layouts}}}",
        "sparse-gpu-encoding",
        f"tritongpu-pipeline{{{pipeline}}}",
        "canonicalize",
        "cse",
    ]


def make_ptx(opts: CompileOptions) -> list[str]:
    """ttgir -> ptx dialect -> PTX text."""
    return [
        *(["tritongpu-wgmma-unroll"] if opts.wgmma_unroll else []),
        "tritongpu-sink-local-loads",
        *(["tritongpu-warp-specialize"] if opts.warp_specialize else []),
        "tritongpu-insert-barriers",
        "allocate-shared-memory",
        f"convert-ttg-to-ptx{{target={opts.target} a-from-shared={str(opts.wgmma_a_smem).lower()}}}",
        "ptx-hoist-loop-invariants",
        EMIT_PTX,
    ]


def make_cubin(opts: CompileOptions) -> list[str]:
    """PTX text -> cubin."""
    return [PTXAS]


EMIT_PTX = "emit-ptx"
"""The last step of the ptx stage: print the ptx module as PTX text (`ptx_printer.emit_ptx`)."""
PTXAS = "ptxas"
"""The step of the cubin stage: assemble the PTX text (`codegen.ptxas.assemble`)."""

STAGE_TABLE: tuple[tuple[str, Callable[[CompileOptions], list[str]]], ...] = (
    ("ttir-decomposed", make_ttir),
    ("ttgir", make_ttgir),
    ("ptx", make_ptx),
    ("cubin", make_cubin),
)
"""Every stage after ttir, in order, with the function that lists its passes."""


def _emit_ptx(module: ModuleOp, opts: CompileOptions, result: StageResult) -> None:
    from sparsecc.codegen.launch import launch_metadata
    from sparsecc.codegen.ptx_printer import emit_ptx

    # The tt/ttg stages are verified; the ~12k ops the lowering builds are checked only in
    # debug mode (verifying them costs more than building and printing them).
    result.asm["ptx"] = emit_ptx(module, verify=debug_enabled())
    result.metadata.update(launch_metadata(module))


def _ptxas(module: ModuleOp, opts: CompileOptions, result: StageResult) -> None:
    from sparsecc.codegen.ptxas import assemble

    ptx_text = result.asm["ptx"]
    assert isinstance(ptx_text, str) and opts.target is not None
    cubin = assemble(ptx_text, opts.target)
    result.asm["cubin"] = cubin.data
    result.metadata["ptxas"] = cubin.resources


_FINAL_STEPS: dict[str, Callable[[ModuleOp, CompileOptions, StageResult], None]] = {
    EMIT_PTX: _emit_ptx,
    PTXAS: _ptxas,
}


def decompose_passes() -> list[str]:
    """The passes of the ttir-decomposed stage (they need no options)."""
    return make_ttir(CompileOptions())


ttgir_passes = make_ttgir


def run_passes(module: ModuleOp, passes: list[str]) -> ModuleOp:
    """Run a textual pass list (sparsecc-opt syntax) over `module` in place."""
    if not passes:
        return module
    available = get_all_passes()
    pipeline = PassPipeline.parse_spec(available, ",".join(passes))
    pipeline.apply(make_context(), module)
    return module


def print_ir(module: ModuleOp) -> str:
    """The module as sparsecc-opt prints it (the text of an IR stage)."""
    out = io.StringIO()
    Printer(stream=out).print_op(module)
    return out.getvalue() + "\n"


def debug_enabled() -> bool:
    """`SPARSECC_DEBUG=1`: verify every IR stage, also the large ptx module."""
    return os.environ.get("SPARSECC_DEBUG", "0").strip().lower() not in ("", "0", "false", "off", "no")


def check_target(target: str) -> str:
    """Normalise and validate a target name; mma.sp needs sm_80 or newer."""
    if not isinstance(target, str):
        raise TypeError(f"target must be a string such as 'sm_90a' (or None for the interpreter), "
                        f"got {type(target).__name__} {target!r}")
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


def run_stage(module: ModuleOp, stage: str, steps: list[str], opts: CompileOptions, result: StageResult) -> None:
    """Run one stage's steps over `module` in place and record what it produced in `result`:
    the printed IR (verified), or what its final step (`emit-ptx`, `ptxas`) made."""
    final = _FINAL_STEPS.get(steps[-1]) if steps else None
    run_passes(module, steps[:-1] if final is not None else steps)
    inherit_locations(module)
    if final is not None:
        final(module, opts, result)
        return
    module.verify()
    result.asm[stage] = print_ir(module)


def compile_module(ttir: ModuleOp, opts: CompileOptions) -> StageResult:
    """Lower a frontend module through every stage of `STAGE_TABLE` that `opts` asks for
    (`target=None`: up to ttir-decomposed)."""
    result = StageResult()
    result.asm["ttir"] = print_ir(ttir)
    module = ttir.clone()
    for stage, make in STAGE_TABLE:
        if stage == "ttgir":
            if opts.target is None:
                break
            opts = replace(opts, target=check_target(opts.target))
        run_stage(module, stage, make(opts), opts, result)
        if stage == "ttir-decomposed":
            result.module = module.clone()
    return result


def lower_to_ptx(ttgir: ModuleOp, opts: CompileOptions) -> tuple[ModuleOp, str, dict[str, object]]:
    """The ptx stage alone, on a copy of a ttgir module: (ptx module, PTX text, launch metadata).

        pmod, text, meta = lower_to_ptx(module, CompileOptions(target="sm_90a", wgmma_unroll=True))
    """
    if opts.target is None:
        raise ValueError("lower_to_ptx needs a target")
    opts = replace(opts, target=check_target(opts.target))
    module = ttgir.clone()
    result = StageResult()
    run_stage(module, "ptx", make_ptx(opts), opts, result)
    text = result.asm["ptx"]
    assert isinstance(text, str)
    return module, text, result.metadata
