"""Divisibility of integers and block-pointer fields: which vector accesses are aligned for sure.

Every global load, store and cp.async through a block pointer is lowered twice, a vector path
and a per-element fallback, under a run-time test that the fast dim is contiguous and the
other strides, the fast offset and the checked fast extent are multiples of the vector (see
lower_mem). When this analysis proves the test at compile time, the lowering emits only the
vector path: less PTX (the fallbacks are most of it), a shorter ptxas run, fewer registers.

The facts come from the signature: an integer argument specialized as "i32:16" carries
`tt.divisibility = 16` (sparsecc.frontend.jit.specialize), one specialized as "i32:1" is the
constant 1 already. From there, as Triton's AxisInfo does for its divisibility part, every i32 /
i64 value gets the largest power of two (capped at CAP) known to divide it:

    constant c           the largest power of two dividing c (0: CAP)
    a + b, a - b, min, max, select, a % b     min(div a, div b)
    a * b                div a * div b
    a / c, a >> k        div a / c when c divides div a, else 1
    a << k               div a * 2**k
    casts (ext, trunc)   div a
    scf.for iv           min(div lb, div step);  iter_args: min over the init and every yield
    scf.if results       min over the yields of both branches
    anything else        1

Block pointers get one (shape, strides, offsets) triple of per-dim divisibilities, from
tt.make_tensor_ptr, tt.advance (offsets: min(old, delta)) and the same merging through loops
and branches. Loops are solved by iterating to a fixpoint from the optimistic start (CAP).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IntegerAttr, IntegerType
from xdsl.ir import Operation, SSAValue

from sparsecc.dialects import tt

CAP = 1 << 12
"""Largest divisibility tracked (a multiple of 4096 is as good as any for 16-byte vectors)."""


def _pow2(v: int) -> int:
    return CAP if v == 0 else min(CAP, v & -v)


@dataclass(frozen=True)
class PtrDiv:
    """Per-dim divisibility of a block pointer's shape, strides and offsets, and which strides
    are the constant 1."""

    shape: tuple[int, ...]
    strides: tuple[int, ...]
    offsets: tuple[int, ...]
    unit: tuple[bool, ...]

    def meet(self, other: PtrDiv) -> PtrDiv:
        def m(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
            return tuple(min(x, y) for x, y in zip(a, b))

        return PtrDiv(m(self.shape, other.shape), m(self.strides, other.strides), m(self.offsets, other.offsets),
                      tuple(x and y for x, y in zip(self.unit, other.unit)))

    def vectors_aligned(self, fast: int, run: int, checked: list[int]) -> bool:
        """Whether every `run`-element vector along `fast` is contiguous and aligned (the
        lowering's run-time `vector_ok` test, decided at compile time)."""
        if not self.unit[fast] or self.offsets[fast] % run:
            return False
        if any(s % run for d, s in enumerate(self.strides) if d != fast):
            return False
        return fast not in checked or self.shape[fast] % run == 0


class Divisibility:
    """The analysis over one tt.func (after convert-tt-to-ttg and pipelining)."""

    def __init__(self, func: tt.FuncOp, max_rounds: int = 8):
        self.ints: dict[SSAValue, int] = {}
        self.ptrs: dict[SSAValue, PtrDiv] = {}
        block = func.body.blocks.first
        attrs = func.arg_attrs.data if func.arg_attrs is not None else ()
        if block is not None:
            for arg, d in zip(block.args, attrs):
                div = d.data.get("tt.divisibility")
                if isinstance(div, IntegerAttr) and isinstance(arg.type, IntegerType):
                    self.ints[arg] = _pow2(div.value.data)
        self.converged = False
        for _ in range(max_rounds):
            before = (dict(self.ints), dict(self.ptrs))
            for op in func.walk():
                self._visit(op)
            if (self.ints, self.ptrs) == before:
                self.converged = True
                break
        if not self.converged:  # no fixpoint: claim nothing rather than something unsound
            self.ints.clear()
            self.ptrs.clear()

    # ------------------------------------------------------------------ queries
    def of(self, v: SSAValue) -> int:
        """Known power-of-two divisor of integer `v` (1 when nothing is known)."""
        return self.ints.get(v, 1)

    def ptr(self, v: SSAValue) -> PtrDiv | None:
        return self.ptrs.get(v)

    # ------------------------------------------------------------------ transfer
    def _set(self, v: SSAValue, d: int) -> None:
        if isinstance(v.type, IntegerType) and v.type.width.data > 1:
            self.ints[v] = d

    def _merge(self, dst: SSAValue, srcs: list[SSAValue], first: bool) -> None:
        """dst = meet of srcs (loop/branch joins); `first`: ignore dst's current value."""
        if isinstance(dst.type, IntegerType):
            known = [self.ints[s] for s in srcs if s in self.ints]
            if len(known) == len(srcs) and known:
                self._set(dst, min(known) if first else min(min(known), self.ints.get(dst, CAP)))
            else:
                self.ints.pop(dst, None)
            return
        ptrs = [self.ptrs.get(s) for s in srcs]
        if ptrs and all(p is not None for p in ptrs):
            out = ptrs[0]
            for p in ptrs[1:]:
                out = out.meet(p)  # type: ignore[arg-type]
            self.ptrs[dst] = out  # type: ignore[assignment]
        else:
            self.ptrs.pop(dst, None)

    def _visit(self, op: Operation) -> None:
        d = self.of
        if isinstance(op, arith.ConstantOp):
            if isinstance(op.value, IntegerAttr):
                self._set(op.result, _pow2(op.value.value.data))
        elif isinstance(op, arith.AddiOp | arith.SubiOp | arith.MinSIOp | arith.MaxSIOp | arith.MinUIOp
                        | arith.MaxUIOp | arith.RemSIOp | arith.RemUIOp):
            self._set(op.results[0], min(d(op.operands[0]), d(op.operands[1])))
        elif isinstance(op, arith.MuliOp):
            self._set(op.results[0], min(CAP, d(op.operands[0]) * d(op.operands[1])))
        elif isinstance(op, arith.DivSIOp | arith.DivUIOp | arith.ShRSIOp | arith.ShRUIOp):
            c = int_constant(op.operands[1])
            if c is not None and isinstance(op, arith.ShRSIOp | arith.ShRUIOp):
                c = 1 << c if 0 <= c < 31 else None
            a = d(op.operands[0])
            self._set(op.results[0], a // c if c and c > 0 and a % c == 0 else 1)
        elif isinstance(op, arith.ShLIOp):
            c = int_constant(op.operands[1])
            self._set(op.results[0], min(CAP, d(op.operands[0]) << c) if c is not None and 0 <= c < 31 else 1)
        elif isinstance(op, arith.ExtSIOp | arith.ExtUIOp | arith.TruncIOp | arith.IndexCastOp):
            self._set(op.results[0], d(op.operands[0]))
        elif isinstance(op, arith.SelectOp):
            self._set(op.results[0], min(d(op.operands[1]), d(op.operands[2])))
        elif isinstance(op, tt.MakeTensorPtrOp):
            self.ptrs[op.result] = PtrDiv(tuple(d(v) for v in op.shape), tuple(d(v) for v in op.strides),
                                          tuple(d(v) for v in op.offsets),
                                          tuple(int_constant(v) == 1 for v in op.strides))
        elif isinstance(op, tt.AdvanceOp):
            src = self.ptrs.get(op.ptr)
            if src is not None:
                offs = tuple(min(o, d(v)) for o, v in zip(src.offsets, op.offsets))
                self.ptrs[op.result] = PtrDiv(src.shape, src.strides, offs, src.unit)
        elif isinstance(op, scf.ForOp):
            body = op.body.block
            self._set(body.args[0], min(d(op.lb), d(op.step)))
            y = body.last_op
            yields = list(y.operands) if isinstance(y, scf.YieldOp) else []
            for i, (arg, init) in enumerate(zip(body.args[1:], op.iter_args)):
                srcs = [init] + ([yields[i]] if i < len(yields) and _seen(self, yields[i]) else [])
                self._merge(arg, srcs, first=True)
                self._merge(op.results[i], [arg], first=True)
        elif isinstance(op, scf.IfOp):
            for i, res in enumerate(op.results):
                srcs = []
                for region in (op.true_region, op.false_region):
                    if region.blocks and isinstance(y := region.block.last_op, scf.YieldOp):
                        srcs.append(y.operands[i])
                self._merge(res, srcs, first=True)


def _seen(a: Divisibility, v: SSAValue) -> bool:
    """Whether the analysis has a fact for `v` yet (a yield computed later in the first round
    must not pin a loop-carried value to 'unknown' before it is visited)."""
    return v in a.ints or v in a.ptrs or not isinstance(v.type, IntegerType | tt.PointerType)


def int_constant(v: SSAValue) -> int | None:
    """The value of an integer constant, looking through integer casts (None if `v` is none).

    Example: an `arith.constant 4 : i32`, or its `arith.extsi` to i64, gives 4."""
    owner = v.owner
    while isinstance(owner, arith.ExtSIOp | arith.ExtUIOp | arith.IndexCastOp):
        owner = owner.operands[0].owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data
    return None


__all__ = ["CAP", "Divisibility", "PtrDiv", "int_constant"]
