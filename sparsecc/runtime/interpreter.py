"""CPU interpreter for decomposed tt IR: `run(module, func_name, grid, args)`.

Why: it is the reference semantics of a kernel without a GPU. CPU tests run kernels through it
after `decompose-sparse-tensors`, so they prove the pass keeps a kernel's meaning, and users
without a GPU (or with `SPARSECC_INTERPRET=1`) still get results.

How: a direct walker. Each function is resolved once into per-block step lists (handler,
operands, results); the grid then runs the entry block once per program id with a fresh value
environment. Tiles are whole torch tensors (see `interp_values`); op semantics live in
`interp_ops`. Kernel mistakes (out-of-bounds access, wrong argument dtypes) raise
`InterpreterError` naming the kernel, the op and the parameter involved.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import torch
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.printer import Printer

from sparsecc.dialects import tt
from sparsecc.runtime import (
    interp_debug,  # noqa: F401 - registers the debugging ops' rules
    interp_map,  # noqa: F401 - registers tt.map_elementwise's rule
    interp_ptrcast,  # registers the pointer casts' rules
    interp_scan,  # noqa: F401 - registers the scan and gather rules
)
from sparsecc.runtime.grid import check_grid
from sparsecc.runtime.interp_ops import HANDLERS, TERMINATORS, Handler
from sparsecc.runtime.interp_values import (
    InterpreterError,
    ScalarPtr,
    flat_buffer,
    int_width,
    torch_dtype,
)

__all__ = ["InterpreterError", "run", "Program"]

Step = tuple[Handler, Operation, tuple[SSAValue, ...], tuple[SSAValue, ...]]


def _op_text(op: Operation) -> str:
    """One line describing `op` for error messages (regions left out)."""
    if op.regions:
        names = ", ".join(_value_name(r) for r in op.results)
        return f"{names + ' = ' if names else ''}{op.name}"
    from io import StringIO

    out = StringIO()
    try:
        Printer(stream=out).print_op(op)
        return " ".join(out.getvalue().split())
    except Exception:  # a malformed op must still get an error message
        return op.name


def _value_name(v: SSAValue) -> str:
    return f"%{v.name_hint}" if v.name_hint else "%<unnamed>"


class Program:
    """A `tt.func` resolved for execution: handlers and operands per block, once."""

    def __init__(self, func: tt.FuncOp):
        self.func = func
        self.name = func.sym_name.data
        self.steps: dict[Block, list[Step]] = {}
        self.terminators: dict[Block, tuple[SSAValue, ...]] = {}
        self.cache: dict[Operation, Any] = {}
        self._resolve(func.body.block)
        self.program_id: tuple[int, int, int] = (0, 0, 0)
        self.grid: tuple[int, int, int] = (1, 1, 1)
        self.env: dict[SSAValue, Any] = {}

    def _resolve(self, block: Block) -> None:
        steps: list[Step] = []
        term: tuple[SSAValue, ...] = ()
        for op in block.ops:
            if op.name in TERMINATORS:
                term = tuple(op.operands)
                continue
            handler = HANDLERS.get(op.name)
            if handler is None:
                raise InterpreterError(
                    f"{self.name}: the interpreter does not support op '{op.name}' "
                    f"({_op_text(op)})")
            steps.append((handler, op, tuple(op.operands), tuple(op.results)))
            for region in op.regions:
                for inner in region.blocks:
                    self._resolve(inner)
        self.steps[block] = steps
        self.terminators[block] = term

    # ---- execution --------------------------------------------------------------------

    def exec_block(self, block: Block, args: Sequence[Any]) -> list[Any]:
        """Bind `args` to the block's arguments, run it, return its terminator's operands."""
        env = self.env
        for a, v in zip(block.args, args, strict=True):
            env[a] = v
        for handler, op, ins, outs in self.steps[block]:
            try:
                res = handler(self, op, [env[v] for v in ins])
            except (InterpreterError, RuntimeError, ValueError, TypeError, ZeroDivisionError) as e:
                if getattr(e, "located", False):  # already names an inner op
                    raise
                err = InterpreterError(f"{self.name} (program id {self.program_id}): {_op_text(op)}: {e}")
                err.located = True  # type: ignore[attr-defined]
                raise err from None
            for r, v in zip(outs, res, strict=True):
                env[r] = v
        return [env[v] for v in self.terminators[block]]

    def run(self, grid: tuple[int, int, int], args: Sequence[Any]) -> None:
        entry = self.func.body.block
        bound = self._bind(args)
        self.grid = grid
        for pid in itertools.product(range(grid[0]), range(grid[1]), range(grid[2])):
            self.program_id = pid
            self.env = {}
            self.exec_block(entry, bound)
        self.env = {}

    def _bind(self, args: Sequence[Any]) -> list[Any]:
        """Kernel arguments as runtime values, checked against the parameter types."""
        params = self.func.body.block.args
        if len(args) != len(params):
            names = ", ".join(_param_name(p, i) for i, p in enumerate(params))
            raise InterpreterError(f"{self.name} takes {len(params)} arguments ({names}), got {len(args)}")
        return [_bind_arg(self.name, p, i, a) for i, (p, a) in enumerate(zip(params, args, strict=True))]


def _param_name(p: SSAValue, i: int) -> str:
    return p.name_hint or f"#{i}"


def _bind_arg(kernel: str, param: SSAValue, i: int, arg: Any) -> Any:
    ty = param.type
    where = f"{kernel}: parameter '{_param_name(param, i)}'"
    if isinstance(ty, tt.PointerType):
        if not isinstance(arg, torch.Tensor):
            raise InterpreterError(f"{where} is a pointer ({ty}) and needs a torch.Tensor, "
                                   f"got {type(arg).__name__}")
        if tt.is_sparse(ty) or ty.is_block:
            raise InterpreterError(f"{where} has type {ty}: run decompose-sparse-tensors first "
                                   "(the interpreter takes plain scalar pointers)")
        want = torch_dtype(ty.pointee)
        if arg.dtype in _UNSIGNED and _UNSIGNED[arg.dtype] == want:
            arg = arg.view(want)  # the signless IR reads uint<N> bits as int<N>; its ops know the sign
        if arg.dtype != want:
            raise InterpreterError(f"{where} points to {ty.pointee} ({want}) but the tensor "
                                   f"passed has dtype {arg.dtype}")
        return ScalarPtr(flat_buffer(arg, _param_name(param, i)), 0)
    if isinstance(arg, torch.Tensor):
        raise InterpreterError(f"{where} is a scalar of type {ty}, got a tensor")
    if not isinstance(arg, bool | int | float):
        raise InterpreterError(f"{where} of type {ty} needs a number, got {type(arg).__name__}")
    dtype = torch_dtype(ty)
    if dtype.is_floating_point:
        return torch.tensor(float(arg), dtype=dtype)
    if dtype == torch.bool:
        return torch.tensor(bool(arg))
    if isinstance(arg, float):
        raise InterpreterError(f"{where} is an integer ({ty}), got float {arg}")
    return torch.tensor(wrap_int(int(arg), int_width(ty)), dtype=dtype)


_UNSIGNED = {getattr(torch, f"uint{w}"): getattr(torch, f"int{w}") for w in (8, 16, 32, 64)
             if hasattr(torch, f"uint{w}")}
"""torch's unsigned dtypes -> the signed one of the same width that holds their bits."""


def wrap_int(v: int, width: int) -> int:
    """`v` reduced to a signed `width`-bit integer (two's complement)."""
    v &= (1 << width) - 1
    return v - (1 << width) if v >= 1 << (width - 1) else v


def _program(module: ModuleOp, func_name: str) -> Program:
    """Resolve `func_name` afresh on every call (about 0.1 ms for sparse_mm's kernel).

    No cache across calls on purpose: a module rewritten in place between two runs (a pass, a
    test editing a constant) must not run its old ops; constants are still made once per run.
    """
    func = next((op for op in module.walk() if isinstance(op, tt.FuncOp)
                 and op.sym_name.data == func_name), None)
    if func is None:
        names = [op.sym_name.data for op in module.walk() if isinstance(op, tt.FuncOp)]
        raise InterpreterError(f"no tt.func named '{func_name}' in the module (it has: {', '.join(names) or 'none'})")
    return Program(func)


def run(module: ModuleOp, func_name: str, grid: tuple[int, int, int],
        args: Sequence[torch.Tensor | int | float | bool]) -> None:
    """Execute `func_name` of the (decomposed) `module` once per program id of `grid`.

    Pointer parameters take torch tensors (written in place), scalar parameters numbers.
    Tensors on a GPU (SPARSECC_INTERPRET=1 with CUDA tensors) are run on CPU copies that are
    written back afterwards, so the interpreter is a drop-in replacement on any device.
    Torch runs single-threaded meanwhile: tiles are small, and intra-op threads cost far more
    than they save on them (a 32x32 matmul took 5.7 ms with 2 busy threads, 15 us with one).
    """
    grid = check_grid(grid, func_name)  # the GPU's limits and int-only extents, as kernel[grid] checks them
    prog = _program(module, func_name)
    copies = [_host_copy(a) if isinstance(a, torch.Tensor) and a.device.type != "cpu" else None for a in args]
    host_args = [a if c is None else c[1] for a, c in zip(args, copies)]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with torch.no_grad():
            prog.run(grid, host_args)
    finally:
        torch.set_num_threads(threads)
    for c in copies:
        if c is not None:
            c[0].copy_(c[2])
    interp_ptrcast.write_back(prog)  # GPU storages reached through tt.int_to_ptr


def _host_copy(t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(device memory, CPU tensor the kernel runs on, CPU memory to write back) for a tensor
    on a GPU. A strided view keeps its strides and storage offset on the CPU, over a copy of
    its whole storage: the kernel addresses it through the strides it is given, and may reach
    any element of that storage (`interp_values.Buffer`)."""
    if t.is_contiguous():
        host = t.cpu()
        return t, host, host
    n = t.untyped_storage().nbytes() // t.element_size()
    dev = torch.empty(0, dtype=t.dtype, device=t.device).set_(t.untyped_storage(), 0, (n,), (1,))
    base = dev.cpu()
    return dev, base.as_strided(t.shape, t.stride(), t.storage_offset()), base
