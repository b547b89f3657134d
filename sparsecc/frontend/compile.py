"""`sparsecc.compile(kernel, signature=..., constexprs=...)`: frontend + the compiler's stages.

The frontend makes `ttir`; `sparsecc.compiler.compile_module` runs decompose-sparse-tensors
(`ttir-decomposed`, the module the interpreter runs) and, with a target, the GPU stages.

Target-ful compiles go through the disk cache (`sparsecc.runtime.cache`, `$SPARSECC_CACHE_DIR`,
`SPARSECC_CACHE=0` to turn it off): a hit returns the stage texts, the cubin and the launch
metadata without running the frontend or any pass (`module` is then None; a GPU launch does not
need it). Only entries with a cubin are stored and trusted, so a partial compile is never reused.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Attribute

from sparsecc import formats
from sparsecc.analysis.kernel_params import block_pointer_params, contiguous_params
from sparsecc.compiler import CompileOptions, compile_module, gc_paused
from sparsecc.defaults import NUM_CTAS, NUM_STAGES, NUM_WARPS
from sparsecc.dialects import tt
from sparsecc.frontend.ast_to_ttir import generate_ttir
from sparsecc.frontend.diagnose import check_gpu_limits, located_error, pass_errors
from sparsecc.frontend.kernel import KernelFunction
from sparsecc.frontend.misc_builtins import compiling_for
from sparsecc.frontend.tracebacks import hide_compiler_frames
from sparsecc.frontend.types import (
    parse_signature_type,
    signature_hint,
    signature_string,
    signless_name,
)
from sparsecc.passes.bool_memory import bool_memory_as_bytes
from sparsecc.runtime import cache


@dataclass
class CompiledKernel:
    """One specialization of a kernel, with every stage's text."""

    name: str
    signature: dict[str, str]
    constexprs: dict[str, Any]
    options: CompileOptions
    asm: dict[str, str | bytes] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    module: ModuleOp | None = None
    """The decomposed module (ttir-decomposed): what the interpreter runs."""
    flat_signature: list[str] = field(default_factory=list)
    """Parameter types after decomposition: a `*fp16:NV24` becomes `*fp16` (values), `*i16` (meta)."""
    flat_arg_names: list[str] = field(default_factory=list)
    """Names of those parameters: `A` becomes `A.values`, `A.meta`."""
    contiguous: list[int] | None = None
    """Indices of flat pointer parameters the kernel addresses as contiguous (None: unknown)."""
    aligned: list[int] | None = None
    """Indices of flat pointer parameters that are block-pointer bases: their accesses are
    16-byte vectors from the base, so the launcher requires 16-byte aligned tensors (None:
    unknown, every pointer)."""
    cache_hit: bool = False
    """True when this came from the disk cache (then `module` is None)."""

    @property
    def arg_names(self) -> list[str]:
        return list(self.signature)

    @property
    def num_warps(self) -> int:
        return self.options.num_warps

    @property
    def num_stages(self) -> int:
        return self.options.num_stages

    @property
    def target(self) -> str | None:
        return self.options.target


def to_ttir(kernel: KernelFunction, signature: dict[str, str], constexprs: dict[str, Any] | None = None,
            ) -> ModuleOp:
    """The frontend alone: check the signature and constexprs, return the ttir module."""
    arg_types, constexprs = check_args(kernel, signature, constexprs)
    return generate_ttir(kernel, arg_types, constexprs, _hints(signature))


NONE_SIGNATURE = "none"
"""The signature type of a runtime parameter passed None: as in Triton, the kernel is compiled
with the parameter bound to the constant None (`if BIAS is None:` folds) and the launch passes
nothing for it. `sparsecc.compile(k, signature={"BIAS": "none", ...})` asks for it explicitly."""


def _hints(signature: dict[str, str]) -> dict[str, str | None]:
    return {n: signature_hint(s) for n, s in signature.items() if s != NONE_SIGNATURE}


def check_args(kernel: KernelFunction, signature: dict[str, str], constexprs: dict[str, Any] | None = None,
               ) -> tuple[dict[str, Attribute], dict[str, Any]]:
    """Check a signature and constexprs against `kernel`'s parameters (CompilationError naming the
    problem); return the parameter IR types and the constexprs with defaults filled in."""
    if not isinstance(kernel, KernelFunction):
        raise TypeError(f"expected a @sparsecc.jit function, got {type(kernel).__name__}")
    if not isinstance(signature, Mapping):
        raise TypeError(f"signature must map parameter names to type strings such as 'i32' or "
                        f"'*fp16:NV24', got {type(signature).__name__}")
    if constexprs is not None and not isinstance(constexprs, Mapping):
        raise TypeError(f"constexprs must map parameter names to values, got {type(constexprs).__name__}")
    constexprs = dict(constexprs or {})
    arg_types: dict[str, Attribute] = {}
    where = kernel.tree
    params = f"{kernel.__name__}({kernel.params_text()})"
    for name, value in signature.items():
        if not isinstance(value, str):
            raise kernel.error(where, f"parameter '{name}': a signature type is a string such as 'i32' or "
                                      f"'*fp16', got {type(value).__name__} {value!r}")
    for name in signature:
        if name in kernel.constexpr_names:
            raise kernel.error(where, f"'{name}' is a tl.constexpr parameter of {params}: pass it in "
                                      "constexprs, not in the signature")
        if name not in kernel.arg_names:
            raise kernel.error(where, f"signature names '{name}', which is not a parameter of {params}")
    none_params = {}
    for name in kernel.runtime_names:
        if name not in signature:
            raise kernel.error(where, f"signature is missing parameter '{name}' of {params}")
        if signature[name].strip() == NONE_SIGNATURE:
            none_params[name] = None  # no IR argument: the body sees the constant None
            continue
        try:
            arg_types[name] = parse_signature_type(signature[name])
        except ValueError as e:
            raise kernel.error(where, f"parameter '{name}': {e}") from None
    for name in constexprs:
        if name not in kernel.constexpr_names:
            what = "a runtime parameter" if name in kernel.arg_names else "not a parameter"
            raise kernel.error(where, f"constexpr '{name}' is {what} of {params} "
                                      f"(its tl.constexpr parameters: {', '.join(kernel.constexpr_names) or 'none'})")
    for name, value in constexprs.items():
        if not _constexpr_ok(value):
            raise kernel.error(where, f"constexpr '{name}' of {params} is {type(value).__name__} {_short(value)}: a "
                                      "tl.constexpr takes a Python number, string, bool or None, a tl dtype, a "
                                      "@sparsecc.jit function or a tuple of these (a tensor is a runtime "
                                      "argument: drop the tl.constexpr annotation)")
    for name in kernel.constexpr_names:
        if name not in constexprs:
            default = kernel.signature.parameters[name].default
            if default is kernel.signature.parameters[name].empty:
                raise kernel.error(where, f"missing constexpr '{name}' of {params}")
            constexprs[name] = default
    return arg_types, {**constexprs, **none_params}


def _constexpr_ok(value: Any) -> bool:
    """A value the frontend can fold at compile time (what a tl.constexpr may hold)."""
    import sparsecc.language as tl

    if isinstance(value, tl.constexpr):
        value = value.value
    if value is None or isinstance(value, bool | int | float | str | tl.dtype):
        return True
    if isinstance(value, tuple | list):
        return all(_constexpr_ok(v) for v in value)
    return getattr(value, "__sparsecc_jit__", False) is True


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def compile_kernel(kernel: KernelFunction, signature: dict[str, str],
                   constexprs: dict[str, Any] | None = None, target: str | None = None,
                   num_warps: int = NUM_WARPS, num_stages: int = NUM_STAGES, num_ctas: int = NUM_CTAS,
                   **switches: bool | None) -> CompiledKernel:
    """Compile one specialization of `kernel` through every stage `target` asks for;
    `switches` are the code-changing CompileOptions fields (`tma=False`, ...)."""
    with gc_paused():  # (see compile_with_options)
        options = CompileOptions.create(target=target, num_warps=num_warps, num_stages=num_stages,
                                        num_ctas=num_ctas, **switches)
        return compile_with_options(kernel, signature, constexprs, options)


def compile_with_options(kernel: KernelFunction, signature: dict[str, str],
                         constexprs: dict[str, Any] | None, options: CompileOptions) -> CompiledKernel:
    """`compile_kernel` with the options already resolved (what `kernel[grid]` launches use).
    The garbage collector is paused throughout (`compiler.gc_paused`): the cache key parses the
    kernel's source, the first compile imports the back half, and a compile builds the IR, and
    without .pyc files the collector's passes over torch's heap cost ~100 ms of a cold compile."""
    with gc_paused():
        return _compile_with_options(kernel, signature, constexprs, options)


def _compile_with_options(kernel: KernelFunction, signature: dict[str, str],
                          constexprs: dict[str, Any] | None, options: CompileOptions) -> CompiledKernel:
    arg_types, constexprs = check_args(kernel, signature, constexprs)
    target = options.target
    runtime_sig = {n: signature[n] for n in kernel.runtime_names}
    if target is None or not cache.enabled():
        return _compile(kernel, runtime_sig, arg_types, constexprs, options)
    key = cache.key_for(_source_of(kernel), runtime_sig, constexprs, options)
    entry = cache.get(key)
    if entry is not None:
        ck = _from_entry(kernel, runtime_sig, constexprs, options, entry)
        if ck is not None:
            return ck
        cache.discard(key)  # well-formed but not this kernel's: compile it afresh
    ck = _compile(kernel, runtime_sig, arg_types, constexprs, options)
    if isinstance(ck.asm.get("cubin"), bytes | bytearray):  # only whole compiles are reused
        cache.put(key, cache.CacheEntry(asm=ck.asm, metadata={
            **ck.metadata, _PRIVATE: {"flat_signature": ck.flat_signature,
                                      "flat_arg_names": ck.flat_arg_names,
                                      "contiguous": ck.contiguous, "aligned": ck.aligned}}))
    return ck


_PRIVATE = cache.KERNEL_INFO
"""Metadata key under which a cache entry keeps what a CompiledKernel derives from its module
(the cache checks its form on every load)."""


def _compile(kernel: KernelFunction, signature: dict[str, str], arg_types: dict[str, Attribute],
             constexprs: dict[str, Any], options: CompileOptions) -> CompiledKernel:
    with compiling_for(options.target):  # what tl.target_info answers
        ttir = generate_ttir(kernel, arg_types, constexprs, _hints(signature))
    if options.target is not None:
        bool_memory_as_bytes(ttir)  # torch.bool tensors as bytes (PTX has no 1-bit access)
        check_gpu_limits(kernel, ttir, options.num_warps, options.target)
    try:
        stages = compile_module(ttir, options)
    except pass_errors() as e:
        raise located_error(kernel, e) from e
    ck = CompiledKernel(
        name=kernel.__name__,
        signature=signature,
        constexprs=constexprs,
        options=options,
        asm=stages.asm,
        metadata={"name": kernel.__name__, "num_warps": options.num_warps,
                  "num_stages": options.num_stages, "target": options.target, **stages.metadata},
        module=stages.module,
    )
    ck.flat_signature, ck.flat_arg_names = _flat_params(ck)
    if ck.module is not None:
        ck.contiguous = sorted(contiguous_params(ck.module, ck.name))
        ck.aligned = sorted(block_pointer_params(ck.module, ck.name))
    return ck


def _from_entry(kernel: KernelFunction, signature: dict[str, str], constexprs: dict[str, Any],
                options: CompileOptions, entry: cache.CacheEntry) -> CompiledKernel | None:
    """A CompiledKernel from a disk-cache entry, or None when the entry lacks what a launch needs
    or its parameters are not those of `signature` (the cache checked the fields' types)."""
    meta = dict(entry.metadata)
    private = meta.pop(_PRIVATE, None)
    if not isinstance(entry.asm.get("cubin"), bytes) or not isinstance(private, dict):
        return None
    flat = [p for n, s in signature.items() for p in formats.flat_params(n, s)]
    indices = [*(private.get("contiguous") or []), *(private.get("aligned") or [])]
    if (private.get("flat_arg_names") != [n for n, _ in flat]
            or not _same_kinds(private.get("flat_signature") or [], [k for _, k in flat])
            or any(i >= len(flat) for i in indices)):
        return None
    if isinstance(meta.get("params"), list):
        meta["params"] = [tuple(p) if isinstance(p, list) else p for p in meta["params"]]
    if isinstance(meta.get("ptxas"), dict):
        from sparsecc.codegen.ptxas import KernelResources

        try:
            meta["ptxas"] = {k: KernelResources(**v) for k, v in meta["ptxas"].items()}
        except TypeError:
            return None
    contiguous = private.get("contiguous")
    aligned = private.get("aligned")
    return CompiledKernel(
        name=kernel.__name__, signature=signature, constexprs=constexprs, options=options,
        asm=entry.asm, metadata=meta, module=None,
        flat_signature=list(private.get("flat_signature") or []),
        flat_arg_names=list(private.get("flat_arg_names") or []),
        contiguous=list(contiguous) if contiguous is not None else None,
        aligned=list(aligned) if aligned is not None else None, cache_hit=True,
    )


def _same_kinds(stored: list[str], contract: list[str]) -> bool:
    """Whether a cache entry's flat parameter kinds are those of the signature (hints aside:
    the module's `i32` for a signature's `i32:16`)."""
    if len(stored) != len(contract):
        return False
    try:
        return all(a == b or signature_string(parse_signature_type(a)) == signature_string(parse_signature_type(b))
                   for a, b in zip(stored, contract))
    except (ValueError, KeyError):
        return False


def _source_of(kernel: KernelFunction) -> str:
    """The cache's view of the kernel source (with its jit callees), computed once per kernel."""
    src = kernel.__dict__.get("_cache_source")
    if src is None:
        src = kernel.__dict__["_cache_source"] = cache.kernel_source(kernel)
    # debugging on compiles tl.device_assert in: another kernel for the cache
    return src + "\n# sparsecc: debug" if getattr(kernel, "debug", False) else src


def _flat_params(ck: CompiledKernel) -> tuple[list[str], list[str]]:
    """Parameter kinds and names of the decomposed kernel (a sparse `A` becomes the arrays its
    format names, `A.values` and `A.meta`), checked against the decomposed module."""
    flat = [p for n, s in ck.signature.items() if s != NONE_SIGNATURE for p in formats.flat_params(n, s)]
    names = [n for n, _ in flat]
    kinds: list[str] = []
    if ck.module is not None:
        for op in ck.module.walk():
            if isinstance(op, tt.FuncOp) and op.sym_name.data == ck.name:
                kinds = [signature_string(t) for t in op.function_type.inputs.data]
    if len(kinds) != len(names):  # the pass and the contract disagree: trust the contract
        kinds = [k for _, k in flat]
    # the IR is signless: the contract's "*u8" / "u32" is the module's "*i8" / "i32"
    kinds = [c if signless_name(c) == k else k for k, (_, c) in zip(kinds, flat)]
    # a pointer's ':16' (compiled for 16-byte-aligned data) stays on: the launcher checks it
    kinds = [c if c.startswith("*") and c.endswith(":16") and parse_signature_type(c) == parse_signature_type(k)
             else k for k, (_, c) in zip(kinds, flat)]
    return kinds, names


def compile(kernel: KernelFunction, signature: dict[str, str], constexprs: dict[str, Any] | None = None,
            target: str | None = None, num_warps: int = NUM_WARPS, num_stages: int = NUM_STAGES,  # noqa: A001
            num_ctas: int = NUM_CTAS, **switches: bool | None) -> CompiledKernel:
    """Compile one specialization of `kernel`: every stage up to `target`'s cubin (none: up to
    ttir-decomposed, what the CPU interpreter runs). `switches` are the code-changing options
    of `sparsecc.switches` (`tma`, `warp_specialize`, `mbarriers`, `wgmma_unroll`,
    `wgmma_a_smem`); unset ones take their SPARSECC_* environment override or default; and
    `maxnreg=N` caps the registers a thread (the kernel's `.maxnreg`, as Triton's option).

        ck = sparsecc.compile(kernel, signature={"D": "*fp16", "A": "*fp16:NV24", "B": "*fp16"},
                              constexprs={"BLOCK_M": 128}, target="sm_90a", num_warps=8, tma=False)
        print(ck.asm["ptx"])
    """
    try:
        return compile_kernel(kernel, signature, constexprs, target, num_warps, num_stages, num_ctas, **switches)
    except Exception as e:  # a kernel's error shows its diagnostic, not the compiler's frames
        hide_compiler_frames(e)
        raise
