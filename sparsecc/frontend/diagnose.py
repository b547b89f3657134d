"""Errors of the stages after the frontend, reported at the kernel line that caused them.

A pass or the lowering rejects an op; the op carries the `loc(...)` of the kernel expression it
came from (see `sparsecc.dialects.locations`), so the user sees the same `file:line:col` error
with the source line as for a frontend error. An error about no particular op points at the
kernel's `def` line.

    try:
        stages = compile_module(ttir, options)
    except pass_errors() as e:
        raise located_error(kernel, e) from e
"""

from __future__ import annotations

import linecache

from xdsl.dialects.builtin import ModuleOp, TensorType, i1
from xdsl.ir import Operation
from xdsl.utils.exceptions import DiagnosticException

from sparsecc.dialects import tt
from sparsecc.dialects.locations import source_position
from sparsecc.dialects.tt import PointerType
from sparsecc.frontend.errors import CompilationError
from sparsecc.frontend.kernel import KernelFunction


def pass_errors() -> tuple[type[BaseException], ...]:
    """The exception classes passes and the lowering raise for a kernel they reject."""
    from sparsecc.analysis.layouts import LayoutError
    from sparsecc.codegen.lower_base import LoweringError
    from sparsecc.codegen.ptx_printer import PtxEmitError

    return (DiagnosticException, LoweringError, LayoutError, PtxEmitError)


def located_error(kernel: KernelFunction, exc: BaseException) -> CompilationError:
    """`exc` as a CompilationError at the kernel line of its op (else at the `def` line)."""
    pos = source_position(getattr(exc, "op", None))
    message = str(exc).strip() or type(exc).__name__
    if pos is None:
        line, col = kernel.position(kernel.tree)
        return CompilationError(f"in kernel '{kernel.__name__}': {message}", kernel.file, line, col,
                                linecache.getline(kernel.file, line) or None)
    file, line, col = pos
    return CompilationError(message, file, line, col, linecache.getline(file, line) or None)


GPU_MAX_PER_THREAD = 512
"""Most elements of one tensor each GPU thread may hold (65536 per tensor at num_warps=4): a
256x256 tile at 4 warps compiles in seconds; 512x512 takes ptxas minutes, 1024x1024 past its
timeout. The frontend's own limit (Triton's 1048576 elements) holds on both paths."""


def _bool_memory(op: Operation) -> bool:
    """Whether `op` loads or stores through a pointer to i1 (a torch.bool tensor's bytes)."""
    if not isinstance(op, tt.LoadOp | tt.StoreOp):
        return False
    ty = op.ptr.type
    ptr = ty.element_type if isinstance(ty, TensorType) else ty
    return isinstance(ptr, PointerType) and ptr.pointee == i1


def check_gpu_limits(kernel: KernelFunction, module: ModuleOp, num_warps: int, target: str) -> None:
    """What the GPU path cannot compile, refused up front at the kernel line that asks for it
    (before any pass or ptxas spends minutes on it); the interpreter runs these kernels."""
    limit = GPU_MAX_PER_THREAD * 32 * num_warps
    for op in module.walk():
        if _bool_memory(op):
            _refuse(kernel, op, f"loads and stores of bool tensors (*i1) are not supported on the GPU ({target}) "
                                "yet: pass the tensor as .to(torch.int8) (the interpreter runs them)")
        for r in op.results:
            ty = r.type
            elt = ty.element_type if isinstance(ty, TensorType) else ty
            if isinstance(elt, PointerType) and isinstance(elt.pointee, TensorType):
                elt = elt.pointee.element_type
            problem = None
            # fp64: loads, stores, arithmetic, compares, conversions, exact math (sqrt, abs,
            # floor, ceil, fma), reductions and atomic adds lower; the rest is a LoweringError
            if isinstance(ty, TensorType):
                numel = 1
                for d in ty.get_shape():
                    numel *= d
                if numel > limit:
                    problem = (f"a tensor of shape {list(ty.get_shape())} has {numel} elements, "
                               f"{numel // (32 * num_warps)} per thread at num_warps={num_warps}; the GPU "
                               f"path ({target}) takes at most {GPU_MAX_PER_THREAD} per thread ({limit} "
                               "elements at this num_warps): use smaller blocks or more warps")
            if problem is not None:
                _refuse(kernel, op, problem)


def _refuse(kernel: KernelFunction, op: Operation, problem: str) -> None:
    """Raise `problem` as a CompilationError at `op`'s kernel line (the kernel's, if it has none)."""
    pos = source_position(op)
    if pos is None:
        line, col = kernel.position(kernel.tree)
        pos = (kernel.file, line, col)
    raise CompilationError(problem, pos[0], pos[1], pos[2], linecache.getline(pos[0], pos[1]) or None)
