"""`sparsecc.compile(kernel, signature=..., constexprs=...)`: frontend + the compiler's stages.

The frontend makes `ttir`; `sparsecc.compiler.compile_module` runs decompose-sparse-tensors
(`ttir-decomposed`, the module the interpreter runs) and, with a target, the GPU stages.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Attribute

from sparsecc.compiler import CompileOptions, compile_module
from sparsecc.dialects import tt
from sparsecc.frontend.codegen import generate_ttir
from sparsecc.frontend.jit import JITFunction
from sparsecc.frontend.types import parse_signature_type, signature_string


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


def to_ttir(kernel: JITFunction, signature: dict[str, str], constexprs: dict[str, Any] | None = None,
            ) -> ModuleOp:
    """The frontend alone: check the signature and constexprs, return the ttir module."""
    if not isinstance(kernel, JITFunction):
        raise TypeError(f"expected a @sparsecc.jit function, got {type(kernel).__name__}")
    constexprs = dict(constexprs or {})
    arg_types: dict[str, Attribute] = {}
    where = kernel.tree
    params = f"{kernel.__name__}({kernel.params_text()})"
    for name in signature:
        if name in kernel.constexpr_names:
            raise kernel.error(where, f"'{name}' is a tl.constexpr parameter of {params}: pass it in "
                                      "constexprs, not in the signature")
        if name not in kernel.arg_names:
            raise kernel.error(where, f"signature names '{name}', which is not a parameter of {params}")
    for name in kernel.runtime_names:
        if name not in signature:
            raise kernel.error(where, f"signature is missing parameter '{name}' of {params}")
        try:
            arg_types[name] = parse_signature_type(signature[name])
        except ValueError as e:
            raise kernel.error(where, f"parameter '{name}': {e}") from None
    for name in constexprs:
        if name not in kernel.constexpr_names:
            what = "a runtime parameter" if name in kernel.arg_names else "not a parameter"
            raise kernel.error(where, f"constexpr '{name}' is {what} of {params} "
                                      f"(its tl.constexpr parameters: {', '.join(kernel.constexpr_names) or 'none'})")
    for name in kernel.constexpr_names:
        if name not in constexprs:
            default = kernel.signature.parameters[name].default
            if default is kernel.signature.parameters[name].empty:
                raise kernel.error(where, f"missing constexpr '{name}' of {params}")
            constexprs[name] = default
    return generate_ttir(kernel, arg_types, constexprs)


def compile_kernel(kernel: JITFunction, signature: dict[str, str],
                   constexprs: dict[str, Any] | None = None, target: str | None = None,
                   num_warps: int = 4, num_stages: int = 3) -> CompiledKernel:
    """Compile one specialization of `kernel` through every stage `target` asks for."""
    constexprs = dict(constexprs or {})
    ttir = to_ttir(kernel, signature, constexprs)
    for name in kernel.constexpr_names:
        constexprs.setdefault(name, kernel.signature.parameters[name].default)
    options = CompileOptions(target=target, num_warps=num_warps, num_stages=num_stages)
    stages = compile_module(ttir, options)
    ck = CompiledKernel(
        name=kernel.__name__,
        signature={n: signature[n] for n in kernel.runtime_names},
        constexprs=constexprs,
        options=options,
        asm=stages.asm,
        metadata={"name": kernel.__name__, "num_warps": num_warps, "num_stages": num_stages,
                  "target": target, **stages.metadata},
        module=stages.module,
    )
    ck.flat_signature, ck.flat_arg_names = _flat_params(ck)
    return ck


def _flat_params(ck: CompiledKernel) -> tuple[list[str], list[str]]:
    """Parameter kinds and names of the decomposed kernel, checked against the signature."""
    names: list[str] = []
    for n, s in ck.signature.items():
        names.extend([f"{n}.values", f"{n}.meta"] if s.endswith(":NV24") else [n])
    kinds: list[str] = []
    if ck.module is not None:
        for op in ck.module.walk():
            if isinstance(op, tt.FuncOp) and op.sym_name.data == ck.name:
                kinds = [signature_string(t) for t in op.function_type.inputs.data]
    if len(kinds) != len(names):  # the pass and the contract disagree: trust the contract
        kinds = []
        for s in ck.signature.values():
            kinds.extend([s.split(":")[0], "*i16"] if s.endswith(":NV24") else [s])
    return kinds, names


def compile(kernel: JITFunction, signature: dict[str, str], constexprs: dict[str, Any] | None = None,
            target: str | None = None, num_warps: int = 4, num_stages: int = 3) -> CompiledKernel:  # noqa: A001
    """`sparsecc.compile`: see `compile_kernel`."""
    return compile_kernel(kernel, signature, constexprs, target, num_warps, num_stages)
