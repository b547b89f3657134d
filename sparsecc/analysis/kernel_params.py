"""What the launcher must check of a decomposed kernel's pointer parameters.

Two analyses over the `ttir-decomposed` module (the one the interpreter runs), made at compile
time and kept with the kernel (the disk cache keeps no module): which pointers the kernel
addresses with compile-time strides only (so the tensor passed must be contiguous) and which are
block-pointer bases (accessed as 16-byte vectors from the base, so the tensor passed must be
16-byte aligned). The frontend records them on a CompiledKernel; the launcher reads them, and
works them out itself for a kernel built elsewhere.
"""

from __future__ import annotations

from typing import Any

from xdsl.ir import BlockArgument, Operation

from sparsecc.dialects import tt

__all__ = ["block_pointer_params", "contiguous_params"]


def _func_params(module: Any, func_name: str) -> list[Any]:
    func = next((op for op in module.walk()
                 if isinstance(op, tt.FuncOp) and op.sym_name.data == func_name), None)
    return [] if func is None else list(func.body.blocks.first.args)


def _pointer_users(value: Any) -> list[tuple[Any, Any]]:
    """(op, the operand that is the pointer) for each addressing use, through splat/broadcast."""
    out = []
    for use in value.uses:
        op = use.operation
        if isinstance(op, tt.SplatOp | tt.BroadcastOp | tt.ExpandDimsOp | tt.ReshapeOp):
            out.extend(_pointer_users(op.results[0]))
        else:
            out.append((op, value))
    return out


def block_pointer_params(module: Any, func_name: str) -> set[int]:
    """Indices of pointer parameters that some tt.make_tensor_ptr takes as its base."""
    return {i for i, p in enumerate(_func_params(module, func_name))
            if isinstance(p.type, tt.PointerType)
            and any(isinstance(op, tt.MakeTensorPtrOp) for op, _ in _pointer_users(p))}


def contiguous_params(module: Any, func_name: str) -> set[int]:
    """Indices of pointer parameters addressed with compile-time strides/offsets only.

    A pointer whose every tt.make_tensor_ptr has constant strides, and whose every tt.addptr
    offset is computed without reading a runtime parameter, only addresses the tensor
    correctly when it is contiguous. Pointers addressed through runtime strides are left alone
    (views with any strides are fine there). The launcher checks contiguity of these.
    """
    params = _func_params(module, func_name)

    def reads_runtime(value: Any, seen: set[int]) -> bool:
        if id(value) in seen:
            return False
        seen.add(id(value))
        if isinstance(value, BlockArgument):
            return True  # a kernel parameter, or a loop-carried value: treat as runtime
        op = value.owner
        if not isinstance(op, Operation):
            return True
        return any(reads_runtime(o, seen) for o in op.operands)

    result: set[int] = set()
    for i, p in enumerate(params):
        if not isinstance(p.type, tt.PointerType):
            continue
        users = _pointer_users(p)
        if not users:
            continue
        fixed = True
        for op, _ in users:
            if isinstance(op, tt.MakeTensorPtrOp):
                if any(reads_runtime(s, set()) for s in op.strides):
                    fixed = False
            elif isinstance(op, tt.AddPtrOp):
                if reads_runtime(op.offset, set()):
                    fixed = False
        if fixed:
            result.add(i)
    return result
