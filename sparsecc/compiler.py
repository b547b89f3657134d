"""The compiler as a table: stage name -> the passes that make it.

    ttir             the frontend's IR; sparse operands carry #tt.sparse<"NV24">
    ttir-decomposed  decompose-sparse-tensors: values + metadata, no sparse type left
    ttgir            layouts (#ttg.blocked/#ttg.mma/#ttg.dot_op{meta}), shared swizzles, pipelining,
                     then the ttgir -> ttgir rewrites (wgmma unroll, sink local loads, warp specialize)
    ptx              convert-ttg-to-ptx: ttg -> ptx dialect (+ the sparsecc.launch attribute) -> PTX text
    cubin            ptxas

Each `make_<stage>` below is a flat list of named passes (sparsecc-opt syntax), so the whole
compiler fits on one screen and a pass is inserted by editing one list (the shape of Triton's
nvidia backend). A stage that ends in text rather than IR names its last step: `emit-ptx`
(the PTX printer) and `ptxas` are those steps, not passes.
"""

from __future__ import annotations

import gc
import io
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING

from xdsl.dialects.builtin import (
    AnyFloat,
    DenseIntOrFPElementsAttr,
    IndexType,
    IntegerType,
    ModuleOp,
)
from xdsl.ir import Attribute, TypeAttribute
from xdsl.passes import ModulePass, PassPipeline
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from sparsecc.defaults import MAX_MAXNREG, MIN_MAXNREG, NUM_CTAS, NUM_STAGES, NUM_WARPS
from sparsecc.dialects import make_context
from sparsecc.dialects.locations import inherit_locations
from sparsecc.dialects.ptx_targets import normalize_target
from sparsecc.passes import get_all_passes
from sparsecc.switches import SWITCHES, resolve

if TYPE_CHECKING:
    from sparsecc.codegen.ptxas import PendingCubin

STAGES = ("ttir", "ttir-decomposed", "ttgir", "ptx", "cubin")


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
    num_warps: int = NUM_WARPS
    num_stages: int = NUM_STAGES
    num_ctas: int = NUM_CTAS
    """2: programs 2j and 2j+1 may run as a cluster sharing their B tiles (see the pipeline's
    num-ctas); the kernel's own work split must make their K loops read the same B tiles."""
    maxnreg: int | None = None
    """The registers a thread may use (the kernel's `.maxnreg`; None: ptxas picks), as Triton's
    `maxnreg`: a cap under the kernel's need makes ptxas spill, one above it lets more CTAs
    share an SM."""
    tma: bool = SWITCHES["tma"].default
    """TMA copies + mbarriers for wgmma K loops (`tritongpu-pipeline{tma=true}`)."""
    warp_specialize: bool = SWITCHES["warp_specialize"].default
    """A producer warp issues a TMA kernel's copies."""
    producer_warpgroup: bool = SWITCHES["producer_warpgroup"].default
    """With warp_specialize, 8+ compute warps get a producer warpgroup and its registers (setmaxnreg)."""
    pingpong: bool = SWITCHES["pingpong"].default
    """With warp_specialize, two 4-warp compute warpgroups take a persistent kernel's trips in turn."""
    mbarriers: bool = SWITCHES["mbarriers"].default
    """Per-slot mbarriers for cp.async wgmma loops too (`tritongpu-pipeline{mbarriers=true}`)."""
    wgmma_unroll: bool = SWITCHES["wgmma_unroll"].default
    """Unroll wgmma K loops by two."""
    wgmma_in_flight: bool = SWITCHES["wgmma_in_flight"].default
    """Keep one wgmma group in flight across a CTA-barrier K loop's barrier."""
    wgmma_ring_in_flight: bool = SWITCHES["wgmma_ring_in_flight"].default
    """Keep one wgmma group in flight through the CTA barriers of an mbarrier-ring K loop."""
    wgmma_a_smem: bool = SWITCHES["wgmma_a_smem"].default
    """wgmma reads A through a descriptor outside TMA kernels too."""
    dequant_warps_m: bool = SWITCHES["dequant_warps_m"].default
    """A dequantized dot's warps all along M."""
    dense_wgmma: bool = SWITCHES["dense_wgmma"].default
    """Dense 16-bit dots of loaded tiles as sm_90a wgmma (off: mma.sync)."""
    quant_wgmma: bool = SWITCHES["quant_wgmma"].default
    """sm_90a: dots of dequantized A with B rows of whole 128-byte blocks as register-A wgmma."""
    register_scales: bool = SWITCHES["register_scales"].default
    """quant_wgmma scales in registers, loaded a K step ahead (off: staged in shared memory)."""
    narrow_copies: bool = SWITCHES["narrow_copies"].default
    """Async copies of 4- or 8-byte rows as cp.async.ca chunks (`convert-ttg-to-ptx{narrow-copies}`)."""
    scale_after_dot: bool = SWITCHES["scale_after_dot"].default
    """Quantized mma.sp dots apply the scales to each group's sums (`tritongpu-scale-after-dot`)."""
    coalesce_mma_stores: bool = SWITCHES["coalesce_mma_stores"].default
    """Transposed MMA-tile stores as 16-byte vectors through shared memory."""
    tma_stores: bool = SWITCHES["tma_stores"].default
    """With coalesce_mma_stores on sm_90+: those a tensor map describes as TMA stores."""
    tma_store_boxes: bool = SWITCHES["tma_store_boxes"].default
    """With tma_stores: the stored tile staged one TMA box at a time through a one-box buffer."""
    strength_reduce: bool = SWITCHES["strength_reduce"].default
    """Loops carry their copies' addresses (`ptx-strength-reduce`)."""
    tma_extents: bool = SWITCHES["tma_extents"].default
    """TMA plans for block pointers whose extent comes from their allocation at launch."""

    @classmethod
    def create(cls, target: str | None = None, num_warps: int = NUM_WARPS, num_stages: int = NUM_STAGES,
               num_ctas: int = NUM_CTAS, maxnreg: int | None = None, **switches: bool | None) -> CompileOptions:
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
        if maxnreg is not None and (maxnreg.__class__ is not int or not MIN_MAXNREG <= maxnreg <= MAX_MAXNREG):
            raise ValueError(f"maxnreg must be None or an int from {MIN_MAXNREG} to {MAX_MAXNREG} (registers a "
                             f"thread), got {maxnreg!r}")
        return cls(target=target, num_warps=num_warps, num_stages=num_stages, num_ctas=num_ctas, maxnreg=maxnreg,
                   **resolve(switches))

    def cache_key(self) -> str:
        return "|".join(f"{f.name}={getattr(self, f.name)}" for f in fields(self))


@dataclass
class StageResult:
    """asm[stage] is the text (bytes for cubin) each stage produced."""

    asm: dict[str, str | bytes] = field(default_factory=dict)
    module: ModuleOp | None = None
    metadata: dict[str, object] = field(default_factory=dict)
    pending_cubin: PendingCubin | None = None
    """A ptxas still running (the cubin stage's step); `finish` collects it."""

    def finish(self) -> StageResult:
        """Wait for a running ptxas and record its cubin and resource report."""
        if self.pending_cubin is not None:
            pending, self.pending_cubin = self.pending_cubin, None
            cubin = pending.result()
            self.asm["cubin"] = cubin.data
            self.metadata["ptxas"] = cubin.resources
            ptx_text = self.asm.get("ptx")
            if isinstance(ptx_text, str) and "setmaxnreg" in ptx_text:
                from sparsecc.codegen.lower_async import check_register_pool

                check_register_pool(ptx_text, cubin.resources, int(self.metadata["threads"]))
        return self


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
    if opts.tma and opts.tma_extents:
        pipeline += " tma-extents=true"
        if opts.warp_specialize:  # one ring across a grouped GEMM's token tiles, for its producer warp
            pipeline += " continue-rings=true"
    if opts.wgmma_in_flight:
        pipeline += " wgmma-in-flight=true"
    if opts.wgmma_ring_in_flight:
        pipeline += " ring-in-flight=true"
    layouts = f"num-warps={opts.num_warps} target={opts.target}"
    if not opts.dequant_warps_m:
        layouts += " dequant-warps-m=false"
    if not opts.dense_wgmma:
        layouts += " dense-wgmma=false"
    if opts.quant_wgmma:
        layouts += " quant-wgmma=true"
        if not opts.register_scales:
            layouts += " register-scales=false"
    return [
        f"convert-tt-to-ttg{{{layouts}}}",
        "sparse-gpu-encoding",
        f"tritongpu-pipeline{{{pipeline}}}",
        "canonicalize",
        "cse",
        *ttgir_rewrites(opts),
    ]


def ttgir_rewrites(opts: CompileOptions) -> list[str]:
    """The ttgir -> ttgir rewrites that end the ttgir stage (so its text shows them): what a
    hand-built or partially lowered ttgir module runs before `make_ptx`.

        >>> ttgir_rewrites(CompileOptions(target="sm_90a", warp_specialize=False, scale_after_dot=False))
        ['tritongpu-coalesce-mma-stores{target=sm_90a}', 'tritongpu-sink-local-loads']
    """
    return [
        *(["tritongpu-scale-after-dot"] if opts.scale_after_dot else []),
        *([_coalesce_mma_stores(opts)] if opts.coalesce_mma_stores else []),
        *(["tritongpu-wgmma-unroll"] if opts.wgmma_unroll else []),
        "tritongpu-sink-local-loads",
        *([_warp_specialize(opts)] if opts.warp_specialize else []),
    ]


def _coalesce_mma_stores(opts: CompileOptions) -> str:
    """tritongpu-coalesce-mma-stores for the target, with TMA stores where the switch asks."""
    tma = " tma-stores=true" if opts.tma_stores else ""
    boxes = " box-staging=true" if opts.tma_stores and opts.tma_store_boxes else ""
    return f"tritongpu-coalesce-mma-stores{{target={opts.target}{tma}{boxes}}}"


def _warp_specialize(opts: CompileOptions) -> str:
    """tritongpu-warp-specialize with a producer warpgroup where the switch asks for one and no
    `maxnreg` caps the registers setmaxnreg would hand out."""
    flags = [*(["warpgroup=true"] if opts.producer_warpgroup else []), *(["pingpong=true"] if opts.pingpong else [])]
    if flags and not opts.maxnreg:
        return f"tritongpu-warp-specialize{{{' '.join(flags)}}}"
    return "tritongpu-warp-specialize"


def make_ptx(opts: CompileOptions) -> list[str]:
    """ttgir (as make_ttgir left it) -> ptx dialect -> PTX text: the barriers and the shared
    memory are decided (and recorded in the IR) right before the conversion reads them."""
    return [
        "tritongpu-insert-barriers",
        "allocate-shared-memory",
        f"convert-ttg-to-ptx{{target={opts.target} a-from-shared={str(opts.wgmma_a_smem).lower()}"
        f"{'' if opts.narrow_copies else ' narrow-copies=false'}"
        f"{f' maxnreg={opts.maxnreg}' if opts.maxnreg else ''}}}",
        "ptx-hoist-loop-invariants",
        *(["ptx-strength-reduce"] if opts.strength_reduce else []),
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
    """Start ptxas; `StageResult.finish` waits for the cubin (the compile prints its deferred
    IR texts while ptxas runs)."""
    from sparsecc.codegen.ptxas import start_assemble

    ptx_text = result.asm["ptx"]
    assert isinstance(ptx_text, str) and opts.target is not None
    result.pending_cubin = start_assemble(ptx_text, opts.target)


_FINAL_STEPS: dict[str, Callable[[ModuleOp, CompileOptions, StageResult], None]] = {
    EMIT_PTX: _emit_ptx,
    PTXAS: _ptxas,
}


def decompose_passes() -> list[str]:
    """The passes of the ttir-decomposed stage (they need no options)."""
    return make_ttir(CompileOptions())


ttgir_passes = make_ttgir


def run_passes(module: ModuleOp, passes: list[str]) -> ModuleOp:
    """Run a textual pass list (sparsecc-opt syntax) over `module` in place.

    The passes do not verify their output: a compile verifies each IR stage once
    (`run_stage`), since verifying the module after every pass cost more than most passes;
    `SPARSECC_DEBUG=1` verifies after each pass, to name the one that broke the IR."""
    if not passes:
        return module
    available = get_all_passes()
    check = _verify_after_each_pass if debug_enabled() else None
    pipeline = PassPipeline.parse_spec(available, ",".join(passes), check)
    pipeline.apply(make_context(), module)
    return module


def _verify_after_each_pass(done: ModulePass | None, module: ModuleOp, _next: ModulePass | None) -> None:
    if done is None:
        return
    try:
        module.verify()
    except VerifyException as e:
        raise VerifyException(f"internal error: the IR does not verify after {done.name}: {e}") from e


def print_ir(module: ModuleOp) -> str:
    """The module as sparsecc-opt prints it (the text of an IR stage)."""
    out = io.StringIO()
    _StagePrinter(stream=out).print_op(module)
    return out.getvalue() + "\n"


@dataclass(eq=False)
class _StagePrinter(Printer):
    """xDSL's printer, printing each distinct type once and reusing its text: a ttgir module
    repeats a few long tensor types (layout encodings included) on most of its ops, and
    printing them again was most of the time of printing a stage."""

    _type_text: dict[Attribute, str] = field(default_factory=dict, init=False)

    def print_attribute(self, attribute: Attribute) -> None:
        if isinstance(attribute, DenseIntOrFPElementsAttr) and self._print_splat(attribute):
            return
        try:
            text = self._type_text.get(attribute) if isinstance(attribute, TypeAttribute) else ""
        except TypeError:  # an unhashable parameter: print it each time
            text = ""
        if text == "":
            return super().print_attribute(attribute)
        if text is None:
            stream, column = self.stream, self._current_column
            self.stream = io.StringIO()
            try:
                super().print_attribute(attribute)
                text = self.stream.getvalue()
            finally:
                self.stream, self._current_column = stream, column
            if "\n" in text:  # indentation-aware: print it in place, never reuse it
                return super().print_attribute(attribute)
            self._type_text[attribute] = text
        self.print_string(text)

    def _print_splat(self, attribute: DenseIntOrFPElementsAttr) -> bool:
        """Print a splat dense attribute as xDSL does (`dense<v> : type`), but tell a splat by
        comparing bytes: xDSL unpacks every element (twice) to find out, and the accumulator
        constant `dense<0.0> : tensor<256x128xf32>` holds 32768 of them. False (nothing
        printed) for anything else, and for a NaN splat, which xDSL does not take for one."""
        elt = attribute.get_element_type()
        raw = attribute.data.data
        n = len(attribute)
        if n == 0 or not isinstance(elt, IntegerType | IndexType | AnyFloat):
            return False
        size = len(raw) // n
        if raw != raw[:size] * n:
            return False
        value = elt.unpack(raw[:size], 1)[0]
        if value != value:  # NaN: xDSL's splat test (tuple.count) fails on it
            return False
        self.print_string("dense<")
        attribute._print_one_elem(value, self)  # noqa: SLF001 (xDSL's own element printer)
        self.print_string("> : ")
        self.print_attribute(attribute.get_type())
        return True


def debug_enabled() -> bool:
    """`SPARSECC_DEBUG=1`: verify every IR stage, also the large ptx module."""
    return os.environ.get("SPARSECC_DEBUG", "0").strip().lower() not in ("", "0", "false", "off", "no")


check_target = normalize_target
"""Normalise and validate a target name (`sparsecc.dialects.ptx_targets.normalize_target`)."""


def run_stage(module: ModuleOp, stage: str, steps: list[str], opts: CompileOptions, result: StageResult,
              *, print_text: bool = True) -> None:
    """Run one stage's steps over `module` in place and record what it produced in `result`:
    the printed IR (verified; `print_text=False` verifies only, for a caller that prints a
    copy later), or what its final step (`emit-ptx`, `ptxas`) made. A `ptxas` step leaves
    the assembler running: `result.finish()` collects the cubin."""
    final = _FINAL_STEPS.get(steps[-1]) if steps else None
    run_passes(module, steps[:-1] if final is not None else steps)
    inherit_locations(module)
    if final is not None:
        final(module, opts, result)
        return
    module.verify()
    if print_text:
        result.asm[stage] = print_ir(module)


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector for the block (a compile), and collect nothing
    until it ends. A compile allocates some 100k IR objects, little of it garbage before it
    ends, and the first one imports the back half; the collector's passes over them and over
    everything the process already holds (torch included) cost ~120 ms of a cold compile
    without .pyc files (byte-compiling allocates a lot), ~5 ms with them, and ~100 ms of a
    second compile in the same process. Nested use and a collector that the caller turned
    off are left as they are: only the block that turned it off turns it back on.

        with gc_paused():
            result = compile_module(ttir, opts)
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def compile_module(ttir: ModuleOp, opts: CompileOptions) -> StageResult:
    """Lower a frontend module through every stage of `STAGE_TABLE` that `opts` asks for
    (`target=None`: up to ttir-decomposed), with the garbage collector paused (`gc_paused`)."""
    with gc_paused():
        return _compile_module(ttir, opts)


def _compile_module(ttir: ModuleOp, opts: CompileOptions) -> StageResult:
    """The stages in order. The texts of ttir and ttir-decomposed are printed last, from
    modules no later pass touches (`ttir` itself and the decomposed clone), so that a
    compile to the cubin prints them while ptxas runs."""
    result = StageResult()
    module = ttir.clone()
    try:
        for stage, make in STAGE_TABLE:
            if stage == "ttgir":
                if opts.target is None:
                    break
                opts = replace(opts, target=check_target(opts.target))
            decomposed = stage == "ttir-decomposed"
            run_stage(module, stage, make(opts), opts, result, print_text=not decomposed)
            if decomposed:
                result.module = module.clone()
        assert result.module is not None
        texts = {"ttir": print_ir(ttir), "ttir-decomposed": print_ir(result.module)}
        result.asm = {**texts, **result.asm}
        return result.finish()
    finally:
        if result.pending_cubin is not None:  # an error before finish: stop ptxas
            result.pending_cubin.cancel()


def lower_to_ptx(ttgir: ModuleOp, opts: CompileOptions) -> tuple[ModuleOp, str, dict[str, object]]:
    """The ptx stage alone, on a copy of a ttgir module: (ptx module, PTX text, launch metadata).
    The module is the ttgir stage's output (`make_ttgir(opts)` already ran its unroll, sink and
    warp-specialize rewrites); this runs `make_ptx(opts)` from convert-ttg-to-ptx on.

        pmod, text, meta = lower_to_ptx(module, CompileOptions(target="sm_90a", wgmma_a_smem=True))
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
