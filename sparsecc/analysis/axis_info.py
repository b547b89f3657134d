"""Contiguity, divisibility and constancy of tensors: which pointer-tensor accesses may be vectors.

The tensor half of Triton's AxisInfo, for the ttgir a tensor-of-pointers kernel is made of
(`offs = pid * BLOCK + tl.arange(0, BLOCK)`, `mask = offs < n`, `tl.load(X + offs, mask)`).
Per dim d of a tensor value it keeps three powers of two:

    contiguity[d]    the dim splits into aligned groups of this many elements (group starts at
                     indices that are multiples of it) whose values step by 1 along d
    divisibility[d]  every group's first value is a multiple of this (pointers: in bytes)
    constancy[d]     the dim splits into aligned groups of this many equal values

A `tt.load`/`tt.store` whose pointer has contiguity c and divisibility D bytes along the fast
dim of its layout, and whose mask (and `other`) has constancy k there, may move
min(c, D / elem_bytes, k, the thread's run of consecutive registers, 16 bytes) elements per
instruction (`vector_width`). Scalars come from `Divisibility` (integers) and from pointer
arguments specialized as `"*fp32:16"` (`tt.divisibility = 16`: 16-byte-aligned addresses).

Transfer rules (a, b the operands, g the result's group along d):

    make_range(s, e)      contiguity e - s, divisibility of s, constancy 1
    splat(x), constants   contiguity 1, divisibility of x, constancy = the dim's size
    a + b, addptr         contiguity max(min(ca, kb), min(ka, cb)), divisibility min, constancy min
    a - b                 contiguity min(ca, kb)
    a * b, a << k         contiguity 1, divisibility products (of operands' per-element divisors)
    a < b (and >=, ...)   constancy also min(ca, kb, da, db) when b is constant over a's group
                          (and mirrored), for the predicates whose boundary stays on a multiple
    expand_dims, broadcast, convert_layout, int casts: the dims move, the facts stay
    anything else         1, 1, 1

A group split by the result (its contiguity below an operand's) starts at an offset that is a
multiple of the new group, so the operand's divisibility counts only up to that (`_eff_div`).
Loop-carried tensors of an scf.for get the meet (per-dim minimum) of their initial value and
what the body yields, iterated to a fixpoint; other unknown tensors are 1, 1, 1 (nothing claimed).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, IntegerAttr, IntegerType, TensorType
from xdsl.ir import Operation, SSAValue

from sparsecc.analysis.divisibility import CAP, Divisibility
from sparsecc.analysis.dtypes import pointee_bytes
from sparsecc.dialects import tt
from sparsecc.dialects import ttg as ttgd


def _pow2(v: int) -> int:
    return CAP if v == 0 else min(CAP, v & -v)


@dataclass(frozen=True)
class AxisInfo:
    """Per-dim contiguity, divisibility and constancy of one tensor value (see the module
    docstring). Example: `tl.arange(0, 1024)` is `AxisInfo((1024,), (4096,), (1,))`."""

    contiguity: tuple[int, ...]
    divisibility: tuple[int, ...]
    constancy: tuple[int, ...]

    @staticmethod
    def unknown(rank: int) -> AxisInfo:
        return AxisInfo((1,) * rank, (1,) * rank, (1,) * rank)


def _eff_div(info: AxisInfo, d: int, group: int) -> int:
    """The divisibility of `info`'s values at the starts of the result's groups of `group`."""
    div = info.divisibility[d]
    return div if info.contiguity[d] <= group else min(div, group)


_LHS_RUN_PREDICATES = ("slt", "ult", "sge", "uge")
"""`a OP b` with a contiguous and b constant: the boundary is b itself (a multiple of the group)."""
_RHS_RUN_PREDICATES = ("sgt", "ugt", "sle", "ule")
"""`a OP b` with b contiguous and a constant (the mirror images)."""


class AxisAnalysis:
    """AxisInfo of every tensor value of one tt.func that the rules above cover.

        axes = AxisAnalysis(func, Divisibility(func))
        axes.vector_width(load_op.ptr, load_op.mask, None, fast=0, run=4, elem_bytes=4)
    """

    def __init__(self, func: tt.FuncOp, divs: Divisibility):
        self.divs = divs
        self.info: dict[SSAValue, AxisInfo] = {}
        self.ptr_div: dict[SSAValue, int] = {}
        """Scalar pointers -> bytes their address is known to be a multiple of."""
        self.loops: list[scf.ForOp] = []
        block = func.body.blocks.first
        attrs = func.arg_attrs.data if func.arg_attrs is not None else ()
        if block is not None:
            for arg, d in zip(block.args, attrs):
                div = d.data.get("tt.divisibility")
                if isinstance(div, IntegerAttr) and isinstance(arg.type, tt.PointerType):
                    self.ptr_div[arg] = _pow2(div.value.data)
        # loop-carried tensors (`ptrs += BLOCK * stride` in an scf.for) are the meet of their
        # initial value and what the body yields, to a fixpoint: each round can only lower a
        # fact, so it ends; if it does not settle, they stay unknown
        self.carried: dict[SSAValue, AxisInfo] = {}
        for _ in range(8):
            for op in func.walk():
                self._visit(op)
            if not self._meet_carried():
                break
        else:
            self.carried.clear()
            self.info.clear()
            for op in func.walk():
                self._visit(op)

    def _meet_carried(self) -> bool:
        """Lower every loop-carried tensor's facts to the meet of its init and its yield;
        whether any changed."""
        changed = False
        for loop in self.loops:
            body = loop.body.block
            yielded = body.last_op
            assert yielded is not None
            for arg, y in zip(body.args[1:], yielded.operands):
                if arg not in self.carried:
                    continue
                met = _meet(self.carried[arg], self.of(y))
                if met != self.carried[arg]:
                    self.carried[arg] = met
                    self.info[arg] = met
                    changed = True
        return changed

    # ------------------------------------------------------------------ queries
    def of(self, v: SSAValue) -> AxisInfo:
        got = self.info.get(v)
        if got is not None:
            return got
        return AxisInfo.unknown(len(v.type.get_shape()) if isinstance(v.type, TensorType) else 0)

    def scalar_div(self, v: SSAValue) -> int:
        if isinstance(v.type, tt.PointerType):
            return self.ptr_div.get(v, 1)
        return self.divs.of(v)

    def vector_width(self, ptr: SSAValue, mask: SSAValue | None, other: SSAValue | None, fast: int, run: int,
                     elem_bytes: int) -> int:
        """Elements per access (a power of two <= `run`, the thread's run of consecutive
        registers along `fast`) that the pointer's contiguity and alignment and the mask's and
        `other`'s constancy allow."""
        p = self.of(ptr)
        width = min(run, p.contiguity[fast], max(1, p.divisibility[fast] // elem_bytes))
        for v in (mask, other):
            if v is not None and isinstance(v.type, TensorType):
                width = min(width, self.of(v).constancy[fast])
        return max(1, width)

    # ------------------------------------------------------------------ transfer
    def _visit(self, op: Operation) -> None:
        if isinstance(op, scf.ForOp):
            if op not in self.loops:
                self.loops.append(op)
            for arg, init in zip(op.body.block.args[1:], op.iter_args):
                if not isinstance(arg.type, TensorType):
                    continue
                start = self.of(init)
                self.carried[arg] = _meet(self.carried[arg], start) if arg in self.carried else start
                self.info[arg] = self.carried[arg]
            return
        if not op.results or not isinstance(op.results[0].type, TensorType):
            if isinstance(op, tt.AddPtrOp):  # scalar pointer arithmetic
                off = self.divs.of(op.offset) * pointee_bytes(op.result.type.pointee)
                self.ptr_div[op.result] = min(self.ptr_div.get(op.ptr, 1), min(CAP, off))
            return
        res = op.results[0]
        shape = res.type.get_shape()
        rank = len(shape)
        info = self._rule(op, shape)
        if info is not None and len(info.contiguity) == rank:
            self.info[res] = info

    def _rule(self, op: Operation, shape: tuple[int, ...]) -> AxisInfo | None:
        rank = len(shape)
        if isinstance(op, tt.MakeRangeOp):
            start, end = op.start.value.data, op.end.value.data
            return AxisInfo((end - start,), (_pow2(start),), (1,))
        if isinstance(op, tt.SplatOp):
            return AxisInfo((1,) * rank, (self.scalar_div(op.src),) * rank, tuple(shape))
        if isinstance(op, arith.ConstantOp) and isinstance(op.value, DenseIntOrFPElementsAttr):
            if not _is_splat(op.value):
                return None
            v = _splat_int(op.result)
            return AxisInfo((1,) * rank, (_pow2(v) if v is not None else 1,) * rank, tuple(shape))
        if isinstance(op, ttgd.ConvertLayoutOp | arith.ExtSIOp | arith.ExtUIOp | arith.TruncIOp):
            return self.info.get(op.operands[0])
        if isinstance(op, tt.ExpandDimsOp):
            src = self.of(op.src)
            ax = op.axis.value.data
            # along the new dim every element starts its own group: the divisor all of the
            # source's values share (1 along a contiguous dim: [2^n, 2^n + 1, ...])
            div = min((_eff_div(src, d, 1) for d in range(len(src.divisibility))), default=CAP)
            ins = lambda t, x: t[:ax] + (x,) + t[ax:]  # noqa: E731
            return AxisInfo(ins(src.contiguity, 1), ins(src.divisibility, div), ins(src.constancy, 1))
        if isinstance(op, tt.BroadcastOp):
            src = self.of(op.src)
            before = op.src.type.get_shape()
            const = tuple(n if b == 1 and n > 1 else k for b, n, k in zip(before, shape, src.constancy))
            return AxisInfo(src.contiguity, src.divisibility, const)
        if isinstance(op, arith.AddiOp | arith.SubiOp | tt.AddPtrOp):
            return self._add(op, rank)
        if isinstance(op, arith.MuliOp | arith.ShLIOp):
            return self._mul(op, rank)
        if isinstance(op, arith.CmpiOp):
            return self._cmp(op, rank)
        if isinstance(op, arith.AndIOp | arith.OrIOp | arith.XOrIOp | arith.SelectOp | arith.RemSIOp
                      | arith.RemUIOp | arith.DivSIOp | arith.DivUIOp):
            ins = [self.of(v) for v in op.operands if isinstance(v.type, TensorType)]
            const = tuple(min(i.constancy[d] for i in ins) for d in range(rank)) if ins else (1,) * rank
            return AxisInfo((1,) * rank, (1,) * rank, const)
        return None

    def _add(self, op: Operation, rank: int) -> AxisInfo:
        a, b = self.of(op.operands[0]), self.of(op.operands[1])
        scale = pointee_bytes(op.result.type.element_type.pointee) if isinstance(op, tt.AddPtrOp) else 1
        contig, div, const = [], [], []
        for d in range(rank):
            if isinstance(op, arith.SubiOp):
                c = min(a.contiguity[d], b.constancy[d])
            else:
                c = max(min(a.contiguity[d], b.constancy[d]), min(a.constancy[d], b.contiguity[d]))
            contig.append(c)
            div.append(min(_eff_div(a, d, c), min(CAP, _eff_div(b, d, c) * scale)))
            const.append(min(a.constancy[d], b.constancy[d]))
        return AxisInfo(tuple(contig), tuple(div), tuple(const))

    def _mul(self, op: Operation, rank: int) -> AxisInfo:
        a, b = self.of(op.operands[0]), self.of(op.operands[1])
        if isinstance(op, arith.ShLIOp):
            k = _splat_int(op.operands[1])
            fb = (1 << k) if k is not None and 0 <= k < 31 else 1
            return AxisInfo((1,) * rank, tuple(min(CAP, _eff_div(a, d, 1) * fb) for d in range(rank)),
                            tuple(min(a.constancy[d], b.constancy[d]) for d in range(rank)))
        for x, y in ((op.operands[0], b), (op.operands[1], a)):
            if _splat_int(x) == 1:
                return y
        return AxisInfo((1,) * rank, tuple(min(CAP, _eff_div(a, d, 1) * _eff_div(b, d, 1)) for d in range(rank)),
                        tuple(min(a.constancy[d], b.constancy[d]) for d in range(rank)))

    def _cmp(self, op: arith.CmpiOp, rank: int) -> AxisInfo:
        a, b = self.of(op.lhs), self.of(op.rhs)
        pred = arith.CMPI_COMPARISON_OPERATIONS[op.predicate.value.data]
        const = []
        for d in range(rank):
            k = min(a.constancy[d], b.constancy[d])
            if pred in _LHS_RUN_PREDICATES:
                k = max(k, min(a.contiguity[d], b.constancy[d], a.divisibility[d], b.divisibility[d]))
            elif pred in _RHS_RUN_PREDICATES:
                k = max(k, min(b.contiguity[d], a.constancy[d], b.divisibility[d], a.divisibility[d]))
            const.append(k)
        return AxisInfo((1,) * rank, (1,) * rank, tuple(const))


def _meet(a: AxisInfo, b: AxisInfo) -> AxisInfo:
    """What holds of a value that is either `a` or `b` (a loop-carried tensor): per dim, the
    smaller power of two of each fact."""
    if len(a.contiguity) != len(b.contiguity):
        return AxisInfo.unknown(len(a.contiguity))
    return AxisInfo(tuple(map(min, a.contiguity, b.contiguity)), tuple(map(min, a.divisibility, b.divisibility)),
                    tuple(map(min, a.constancy, b.constancy)))


def _splat_int(v: SSAValue) -> int | None:
    """The value of an integer splat constant (dense or `tt.splat` of a constant), else None."""
    owner = v.owner
    if isinstance(owner, tt.SplatOp):
        owner = owner.src.owner
        if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
            return owner.value.value.data
        return None
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, DenseIntOrFPElementsAttr):
        attr = owner.value
        if isinstance(attr.get_element_type(), IntegerType) and _is_splat(attr):
            return int(next(iter(attr.iter_values())))
    return None


def _is_splat(attr: DenseIntOrFPElementsAttr) -> bool:
    """Whether every element is the same, by comparing bytes (a tile-sized splat holds
    thousands of elements; unpacking them all would cost more than the analysis)."""
    raw, n = attr.data.data, len(attr)
    if n == 0:
        return False
    size = len(raw) // n
    return raw == raw[:size] * n


__all__ = ["AxisAnalysis", "AxisInfo"]
