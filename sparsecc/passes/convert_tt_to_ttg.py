"""convert-tt-to-ttg: give every tensor of a decomposed tt module a GPU layout.

Input: tt IR after decompose-sparse-tensors (no #tt.sparse left). Output: ttgir (the forms
of sparsecc/dialects/ttg.py):
- module attributes "ttg.num-warps", "ttg.threads-per-warp", "ttg.target";
- every ranked tensor (also block-pointer tile types, scf.for carried values) gets a layout.
  Values that must share a layout (operands/results of elementwise ops, tt.addptr,
  tt.broadcast, tt.load/tt.store and their pointers, tt.advance chains, scf.for/scf.if
  carried values) are grouped with a union-find; each group gets one layout, so no
  convert is needed inside it;
- default layout: #ttg.blocked vectorised to 16 bytes along the contiguous dim, lanes
  filling that dim first, warps along the slowest, order [rank-1, ..., 0], or the order of
  the group's block pointers (order = [0, 1]: a column-major tile, e.g. B given as x.T);
- a group holding a tt.dot result gets #ttg.mma: the accumulator stays in registers in the
  mma layout across the K loop and the epilogue (truncf, tt.store through a block pointer
  whose tile type then carries #mma) needs no conversion; a dot whose A is a tt.dequantize
  puts its warps along M (`dequant-warps-m`, on by default: each warp dequantizes only the
  rows it multiplies); on sm_90a with `quant-wgmma` such a dot whose K-major 16-bit B rows
  span whole 128-byte column blocks becomes wgmma (#ttg.mma version 3) with register A;
  the block-pointer loads of its scales (and zero points) then take that accumulator layout
  (`register-scales`, on by default; `analysis.dequantize.scale_registers`): each thread loads
  the scales of its own fragment rows, and they never go through shared memory;
- the results of tt.join, tt.split and tt.cat (and of a reshape next to a join or a split) get
  the layout derived from their operand's that lets them rename registers (no shared memory:
  sparsecc/analysis/shuffles.py), unless a dot or a block pointer's order chose theirs;
- 1-D groups feeding tt.expand_dims get #ttg.slice of the expanded value's layout, tt.reduce
  results the slice of their source's layout;
- dot operands get a ttg.convert_layout to #ttg.dot_op (values opIdx 0 meta 0, metadata
  opIdx 0 meta 1, B opIdx 1; dense A opIdx 0); a convert is inserted wherever two layouts
  still meet (a second expand_dims of one range, a dot accumulator that is not a constant
  or loop-carried value).
tt.func signatures are unchanged (pointers and scalars have no layout).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    Float8E4M3FNType,
    Float8E5M2Type,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    TensorType,
    i32,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import DiagnosticException

from sparsecc.analysis.axis_info import AxisAnalysis
from sparsecc.analysis.dequantize import feeding_dot, fragment_dequantize, scale_registers
from sparsecc.analysis.divisibility import Divisibility
from sparsecc.analysis.shuffles import derived_layout
from sparsecc.defaults import NUM_WARPS
from sparsecc.dialects import ptx_targets, tt
from sparsecc.dialects.ttg import (
    SUPPORTED_WARPS,
    THREADS_PER_WARP,
    BlockedEncodingAttr,
    ConvertLayoutOp,
    DotOperandEncodingAttr,
    MmaEncodingAttr,
    SliceEncodingAttr,
)


def _bytes(elt: Attribute) -> int:
    width = getattr(elt, "bitwidth", None)
    if width is None and isinstance(elt, tt.PointerType):
        return 8
    return max(1, (width or 32) // 8)


def default_blocked(shape: tuple[int, ...], elem_bytes: int, num_warps: int,
                    order: tuple[int, ...] | None = None) -> BlockedEncodingAttr:
    """16-byte vectors along the contiguous dim (order[0]; default the last), lanes along the
    dims in `order`, warps along the slowest."""
    rank = len(shape)
    order = tuple(range(rank - 1, -1, -1)) if order is None else order
    fast = order[0]
    spt = [1] * rank
    spt[fast] = max(1, min(16 // elem_bytes, shape[fast]))
    tpw = [1] * rank
    left = THREADS_PER_WARP
    for d in order:
        room = max(1, shape[d] // spt[d]) if d == fast else max(1, shape[d])
        take = min(left, _pow2_floor(room)) if d != order[-1] else left
        tpw[d] = take
        left //= take
    wpc = [1] * rank
    wpc[order[-1]] = num_warps
    return BlockedEncodingAttr(spt, tpw, wpc, list(order))


def _pow2_floor(n: int) -> int:
    return 1 << (max(1, n).bit_length() - 1)


def mma_warps(num_warps: int, m: int, n: int) -> tuple[int, int]:
    """Warps over (M, N): 4 -> [2, 2], 8 -> [4, 2], 2 -> [2, 1], 1 -> [1, 1], clamped to the tile."""
    wm = 1 << ((num_warps.bit_length() - 1 + 1) // 2)
    wn = num_warps // wm
    while wm > 1 and 16 * wm > m and 8 * wn * 2 <= n:
        wm //= 2
        wn *= 2
    while wn > 1 and 8 * wn > n and 16 * wm * 2 <= m:
        wn //= 2
        wm *= 2
    return wm, wn


def has_wgmma(target: str | None) -> bool:
    """Whether `target` has Hopper's warpgroup MMA (`wgmma.mma_async.sp`): the arch-specific
    sm_90a, not plain sm_90."""
    return target == "sm_90a"


# --------------------------------------------------------------------------------------
# Union-find over values that must share one layout
# --------------------------------------------------------------------------------------


def _tile(ty: Attribute) -> TensorType | None:
    """The tensor whose layout a value's type carries: the tensor itself or a block pointer's tile."""
    if isinstance(ty, TensorType):
        return ty
    if isinstance(ty, tt.PointerType) and isinstance(ty.pointee, TensorType):
        return ty.pointee
    return None


def _with_layout(ty: Attribute, layout: Attribute) -> Attribute:
    if isinstance(ty, TensorType):
        return TensorType(ty.element_type, ty.get_shape(), layout)
    assert isinstance(ty, tt.PointerType) and isinstance(ty.pointee, TensorType)
    return tt.PointerType(_with_layout(ty.pointee, layout))


@dataclass
class _Group:
    values: list[SSAValue] = field(default_factory=list)
    dot_results: list[tt.DotOp] = field(default_factory=list)
    reduce_of: list[tt.ReduceOp] = field(default_factory=list)
    expand_of: list[tt.ExpandDimsOp] = field(default_factory=list)
    orders: list[tuple[int, ...]] = field(default_factory=list)
    """The `order` of each tt.make_tensor_ptr in the group (its memory's fastest dim first)."""
    contig_order: tuple[int, ...] | None = None
    """The order its tensors of pointers' contiguity asks for, when not row-major
    (`_contiguity_order`: a transposed view such as attention's K^T)."""
    layout: Attribute | None = None

    def memory_order(self) -> tuple[int, ...] | None:
        """The block pointers' common order when it is not the default row-major one, else the
        one the pointers' contiguity asks for."""
        if self.orders and len(set(self.orders)) == 1 and self.orders[0] != tuple(range(self.rank - 1, -1, -1)):
            return self.orders[0]
        if not self.orders:
            return self.contig_order
        return None

    @property
    def rank(self) -> int:
        t = _tile(self.values[0].type)
        assert t is not None
        return len(t.get_shape())

    def shape(self) -> tuple[int, ...]:
        shapes = [_tile(v.type).get_shape() for v in self.values]  # type: ignore[union-attr]
        return tuple(max(s[d] for s in shapes) for d in range(self.rank))

    def elem_bytes(self) -> int:
        """Vector width is chosen for the memory traffic: pointee / tile element sizes."""
        mem = []
        for v in self.values:
            ty = v.type
            if isinstance(ty, tt.PointerType):
                mem.append(_bytes(ty.pointee.element_type))  # type: ignore[union-attr]
            elif isinstance(ty, TensorType) and isinstance(ty.element_type, tt.PointerType):
                mem.append(_bytes(ty.element_type.pointee))
            elif isinstance(v.owner, tt.LoadOp | tt.DequantizeOp):  # a dequantized tile: stored once
                mem.append(_bytes(ty.element_type))  # type: ignore[union-attr]
        return min(mem) if mem else 4


class _Layouts:
    def __init__(self) -> None:
        self.parent: dict[SSAValue, SSAValue] = {}

    def add(self, v: SSAValue) -> None:
        if _tile(v.type) is not None and v not in self.parent:
            self.parent[v] = v

    def find(self, v: SSAValue) -> SSAValue:
        root = v
        while self.parent[root] is not root:
            root = self.parent[root]
        while self.parent[v] is not root:
            self.parent[v], v = root, self.parent[v]
        return root

    def union(self, vals: Iterable[SSAValue]) -> None:
        vals = [v for v in vals if v in self.parent]
        for v in vals[1:]:
            a, b = self.find(vals[0]), self.find(v)
            if a is not b:
                self.parent[b] = a


_SAME_LAYOUT_OPS = (tt.AddPtrOp, tt.SplatOp, tt.LoadOp, tt.StoreOp, tt.AtomicRMWOp, tt.AdvanceOp, tt.BroadcastOp,
                    tt.MakeTensorPtrOp, tt.ElementwiseInlineAsmOp, tt.MapElementwiseOp, tt.IntToPtrOp,
                    tt.PtrToIntOp, tt.PtrBitcastOp)


def _is_elementwise(op: Operation) -> bool:
    return op.dialect_name() in ("arith", "math") or isinstance(op, _SAME_LAYOUT_OPS)


class ConvertError(DiagnosticException):
    """A module convert-tt-to-ttg cannot give GPU layouts; `op` (when known) is the culprit,
    whose location the error reports."""

    def __init__(self, message: str, op: Operation | None = None):
        super().__init__(message)
        self.op = op


def _arch(target: str) -> int:
    """The number of an `sm_XY[a]` target (90 for sm_90a); ASCII digits only."""
    m = re.match(r"sm_([0-9]+)", target)
    return int(m[1]) if m else 0


# --------------------------------------------------------------------------------------
# The pass
# --------------------------------------------------------------------------------------


def _for_ties(o: scf.ForOp) -> list[list[SSAValue]]:
    body = o.body.block
    yield_op = body.last_op
    assert isinstance(yield_op, scf.YieldOp)
    return [[init, arg, res, y] for init, arg, res, y in zip(o.iter_args, body.args[1:], o.results, yield_op.operands)]


def _while_ties(o: scf.WhileOp) -> list[list[SSAValue]]:
    cond = o.before_region.block.last_op
    after_yield = o.after_region.block.last_op
    assert isinstance(cond, scf.ConditionOp) and isinstance(after_yield, scf.YieldOp)
    return [list(group) for group in zip(o.arguments, o.before_region.block.args, cond.args,
                                         o.after_region.block.args, after_yield.operands, o.results)]


def _if_ties(o: scf.IfOp) -> list[list[SSAValue]]:
    ties = []
    for region in (o.true_region, o.false_region):
        y = region.block.last_op if region.blocks else None
        if isinstance(y, scf.YieldOp):
            ties += [[res, val] for res, val in zip(o.results, y.operands)]
    return ties


def _dot_ties(o: tt.DotOp) -> list[list[SSAValue]]:
    c_def = o.c.owner
    return [[o.c, o.result]] if isinstance(c_def, arith.ConstantOp | tt.DotOp) or not isinstance(c_def, Operation) else []


_TIES: dict[type, Callable[[Any], list[list[SSAValue]]]] = {
    scf.ForOp: _for_ties,
    scf.WhileOp: _while_ties,
    scf.IfOp: _if_ties,
    # a reduction's operands share one layout (argmax: values, indices), and so do its results
    tt.ReduceOp: lambda o: [list(o.srcs), list(o.res)] if len(o.srcs) > 1 else [],
    tt.ScanOp: lambda o: [list(o.srcs) + list(o.res)],  # a scan keeps its operands' layout
    tt.GatherOp: lambda o: [[o.indices, o.result]],  # the source keeps its own layout
    tt.DotOp: _dot_ties,
    tt.JoinOp: lambda o: [list(o.operands)],
    tt.CatOp: lambda o: [list(o.operands)],
    tt.SplitOp: lambda o: [list(o.results)],
}
"""Per op type, the groups of values that must share one layout (`_collect`'s union-find):
loop-carried values with their inits, yields and results; an if's results with its yields;
a dot's accumulator with its result (when the accumulator is a constant, another dot's result
or a block argument); the operands of join and cat, the results of split."""


def _tied_values(o: Operation) -> list[list[SSAValue]]:
    rule = _TIES.get(type(o))
    return rule(o) if rule is not None else []


@dataclass(frozen=True)
class ConvertTTToTTGPass(ModulePass):
    """Assign #ttg layouts (blocked / slice / mma / dot_op) to a decomposed tt module."""

    name = "convert-tt-to-ttg"

    num_warps: int = NUM_WARPS
    target: str = "sm_90"
    dequant_warps_m: bool = True
    """All warps of a dot whose A is a `tt.dequantize` along M (no warp dequantizes another's
    rows); off: the usual warp grid."""
    dense_wgmma: bool = True
    """Dense 16-bit dots of loaded tiles become sm_90a wgmma (`_dense_wgmma_ok`); off: mma.sync."""
    quant_wgmma: bool = False
    """Sparse dots of a dequantized A whose K-major 16-bit B rows span whole 128-byte column
    blocks become sm_90a wgmma (`_quant_wgmma_ok`); off: they keep mma.sp."""
    register_scales: bool = True
    """The scales (and zero points) of a wgmma's fragment dequantization are loaded in the
    accumulator layout, into registers (`_register_scales`); off: staged in shared memory."""

    def __post_init__(self) -> None:
        """A bad `target` option is refused with the options (`sparsecc-opt`: "invalid options
        for pass"), before it could reach ttg.target: a supported GPU, in ASCII digits."""
        if ptx_targets.normalize_target(self.target) != self.target:  # "90": the passes compare full names
            raise ValueError(f"write the target in full: target={ptx_targets.normalize_target(self.target)}")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.num_warps not in SUPPORTED_WARPS:
            raise ConvertError(f"convert-tt-to-ttg: num-warps must be one of {SUPPORTED_WARPS}, got {self.num_warps}")
        problem = ptx_targets.check_target(self.target)
        if problem is not None:
            raise ConvertError(f"convert-tt-to-ttg: {problem}")
        for o in op.walk():
            for ty in [r.type for r in o.results] + [a.type for a in o.operands]:
                if tt.is_sparse(ty):
                    raise ConvertError(
                        f"convert-tt-to-ttg: {o.name} still has a #tt.sparse type; run decompose-sparse-tensors first",
                        o)
        dense_int8_dots_on_fp16(op)
        op.attributes["ttg.num-warps"] = IntegerAttr(self.num_warps, i32)
        op.attributes["ttg.threads-per-warp"] = IntegerAttr(THREADS_PER_WARP, i32)
        op.attributes["ttg.target"] = StringAttr(self.target)
        for func in op.walk():
            if isinstance(func, tt.FuncOp):
                self._convert_func(func)

    # -- grouping -------------------------------------------------------------------

    def _collect(self, func: tt.FuncOp) -> _Layouts:
        uf = _Layouts()
        for o in func.walk():
            for r in o.results:
                uf.add(r)
            for region in o.regions:
                for block in region.blocks:
                    for a in block.args:
                        uf.add(a)
        for o in func.walk():
            ties = [list(o.operands) + list(o.results)] if _is_elementwise(o) else _tied_values(o)
            for group in ties:
                uf.union(group)
        return uf

    def _groups(self, func: tt.FuncOp, uf: _Layouts) -> dict[SSAValue, _Group]:
        groups: dict[SSAValue, _Group] = {}
        for v in uf.parent:
            groups.setdefault(uf.find(v), _Group()).values.append(v)
        for o in func.walk():
            if isinstance(o, tt.DotOp):
                groups[uf.find(o.result)].dot_results.append(o)
            elif isinstance(o, tt.ReduceOp) and o.result in uf.parent:
                groups[uf.find(o.result)].reduce_of.append(o)
            elif isinstance(o, tt.ExpandDimsOp):
                groups[uf.find(o.src)].expand_of.append(o)
            elif isinstance(o, tt.MakeTensorPtrOp):
                groups[uf.find(o.result)].orders.append(tuple(o.order.get_values()))
        axes = AxisAnalysis(func, Divisibility(func))
        for g in groups.values():
            g.contig_order = _contiguity_order(g, axes)
        return groups

    def _choose(self, group: _Group, uf: _Layouts, groups: dict[SSAValue, _Group]) -> Attribute:
        shape = group.shape()
        if group.dot_results:
            if group.rank != 2:
                raise ConvertError("convert-tt-to-ttg: tt.dot results must be 2-D")
            m, n = shape
            kmajor_b = any(groups[uf.find(d.b)].memory_order() is not None
                           for d in group.dot_results if d.b in uf.parent)
            # 8-bit and tf32 B is staged K-major whatever its memory order: sparse-gpu-encoding
            # transposes an N-major tile on its way into shared memory
            kmajor_b = kmajor_b or any(_bytes(tt.element_type(d.a.type)) != 2 for d in group.dot_results)
            self._check_kmajor_types(group.dot_results)
            if self._use_wgmma(group.dot_results, m, n, kmajor_b):
                return MmaEncodingAttr((self.num_warps, 1), version_major=3, instr_shape=(64, n))
            if self.dequant_warps_m and any(isinstance(d.a.owner, tt.DequantizeOp) for d in group.dot_results):
                # each warp dequantizes the A rows it multiplies: warps side by side along N
                # would dequantize the same rows again, so they go along M as far as it allows
                wm = max(1, min(self.num_warps, m // 16))
                return MmaEncodingAttr((wm, self.num_warps // wm))
            if self._chained:
                # a chained dot (attention's S = Q K^T feeding P V): every warp along M, as
                # Triton does, so that the row softmax between the dots stays inside a warp
                # and each warp holds only its own rows of A (Q) and of the accumulators
                wm = max(1, min(self.num_warps, m // 16))
                return MmaEncodingAttr((wm, self.num_warps // wm))
            return MmaEncodingAttr(mma_warps(self.num_warps, m, n))
        for red in group.reduce_of:
            src_layout = groups[uf.find(red.src)].layout
            if src_layout is not None:
                return SliceEncodingAttr(red.axis.value.data, src_layout)
        for ex in group.expand_of:
            res_layout = groups[uf.find(ex.result)].layout
            if res_layout is not None:
                return SliceEncodingAttr(ex.axis.value.data, res_layout)
        return default_blocked(shape, group.elem_bytes(), self.num_warps, group.memory_order())

    def _check_kmajor_types(self, dots: list[tt.DotOp]) -> None:
        """8-bit and tf32 dots need a sparse operand and a target with their mma.sp (fp8:
        sm_89+). Their B is read K-major (the tensor cores and ldmatrix transpose 16-bit
        operands only), which the staging in shared memory takes care of."""
        for d in dots:
            elt = tt.element_type(d.a.type)
            if _bytes(elt) == 2:
                continue
            if isinstance(elt, Float8E4M3FNType | Float8E5M2Type) and _arch(self.target) < 89:
                raise ConvertError(f"an fp8 ({elt}) tl.dot needs sm_89 or newer (the target is {self.target})", d)
            if d.meta is None:
                raise ConvertError(f"a dense {elt} tl.dot has no GPU lowering; 8-bit dots need a 2:4 sparse operand", d)

    def _use_wgmma(self, dots: list[tt.DotOp], m: int, n: int, kmajor_b: bool) -> bool:
        """Whether these dots become sm_90a `wgmma.mma_async.sp` (#ttg.mma version 3).

        Sparse dots of 16- or 8-bit operands only (the dense dot keeps mma.sync), whole
        warpgroups stacked along M (each warp owns 16 rows of every m64 block: M % (16 *
        num_warps) == 0), one wgmma wide along N (N a multiple of 16, at most 256; B is staged
        MN-major with a 16/32/64-element column block), K in steps of 32 (8-bit: 64). A K-major
        B (`kmajor_b`: block pointer order [0, 1], e.g. the x^T of `y = x @ W.T`) is staged as
        N rows of K in wgmma's canonical K-major layout when a row is one 64/128-byte swizzle
        atom (16-bit K = 32 or 64, 8-bit K = 64 or 128), or when its rows are whole 128-byte
        column blocks: 8-bit and tf32 rows, 16-bit rows of a B at least 64 wide
        (`_wide_kmajor16_ok`) and a dequantized A's (`_quant_wgmma_ok`); other longer K-major
        rows stay on mma.sp, which reads them with plain ldmatrix. 8-bit B is always staged K-major (wgmma cannot
        transpose 8-bit operands; an N-major tile is transposed into shared memory), so
        `kmajor_b` holds for 8-bit dots.
        """
        if not has_wgmma(self.target) or self.num_warps % 4:
            return False
        if m % (16 * self.num_warps) or n % 16 or n > 256:
            return False
        if all(d.meta is None for d in dots):
            return self.dense_wgmma and _dense_wgmma_ok(dots, kmajor_b, self._register_a)
        for d in dots:
            esz = _bytes(tt.element_type(d.a.type))
            if d.meta is None or esz not in (1, 2, 4) or (esz != 2 and not kmajor_b):
                return False
            k = tt.shape_of(d.b.type)[0]
            if k % (64 // esz):
                return False
            # K-major B: N rows of one 64/128-byte atom; 8-bit and tf32 rows may also span several
            # 128-byte atoms (column blocks: more MMA per pipeline stage). 16-bit rows do so only
            # in a wide B (`_wide_kmajor16_ok`): decode's narrow K-major tiles stay on mma.sp
            if kmajor_b and k * esz not in (64, 128) and (esz == 2 or (k * esz) % 128) \
                    and not (self.quant_wgmma and _quant_wgmma_ok(d)) and not _wide_kmajor16_ok(d):
                return False
        return True

    # -- rewriting ------------------------------------------------------------------

    def _convert_func(self, func: tt.FuncOp) -> None:
        # both dots of a chain get the same warp grid: the convert of P to the second dot's
        # A operand then stays inside each warp
        object.__setattr__(self, "_chained", any(_feeds_a_dot(o) for o in func.walk() if isinstance(o, tt.DotOp)))
        uf = self._collect(func)
        object.__setattr__(self, "_register_a", _register_a_dots(func, uf))
        groups = self._groups(func, uf)
        self._choose_all(groups, uf)
        if self._register_a and len({g.layout.version_major for g in groups.values() if g.dot_results}) > 1:
            # a chain whose dots would mix wgmma and mma.sync (a K-major B whose rows are neither
            # one 64/128-byte atom nor 128-byte column blocks stays on mma.sync): all on
            # mma.sync, as before register A existed
            object.__setattr__(self, "_register_a", set())
            self._choose_all(groups, uf)
        if _derive_shape_layouts(func, uf, groups, self.num_warps):
            # a slice's parent may have changed
            self._choose_all(groups, uf, lambda g: isinstance(g.layout, SliceEncodingAttr))
        if self.register_scales:
            _register_scales(func, uf, groups)
        for group in groups.values():
            assert group.layout is not None
            for v in group.values:
                _set_type(v, _with_layout(v.type, group.layout))
        for o in list(func.walk()):
            self._convert_op(o)
        ft = func.function_type
        block_types = tuple(func.body.block.args[i].type for i in range(len(func.body.block.args)))
        if block_types != tuple(ft.inputs.data):
            from xdsl.dialects.builtin import FunctionType

            func.function_type = FunctionType.from_lists(block_types, ft.outputs.data)

    def _choose_all(self, groups: dict[SSAValue, _Group], uf: _Layouts,
                    which: Callable[[_Group], bool] | None = None) -> None:
        """Choose the layout of every group (or of those `which` picks), higher ranks first:
        slices are derived from the layout of the value they expand to."""
        for group in sorted(groups.values(), key=lambda g: -g.rank):
            if which is None or which(group):
                group.layout = self._choose(group, uf, groups)

    def _convert_op(self, o: Operation) -> None:
        """After every value has its layout: constants retyped, and the converts an op needs
        between its operands' or results' layouts and its own."""
        if isinstance(o, arith.ConstantOp) and isinstance(o.value, DenseIntOrFPElementsAttr):
            if o.value.type != o.result.type:
                o.value = DenseIntOrFPElementsAttr(o.result.type, o.value.data)
        elif isinstance(o, tt.ExpandDimsOp):
            res_layout = _layout(o.result.type)
            want = SliceEncodingAttr(o.axis.value.data, res_layout)
            _convert_operand(o, 0, want)
        elif isinstance(o, tt.ReduceOp) and isinstance(o.result.type, TensorType):
            want = SliceEncodingAttr(o.axis.value.data, _layout(o.src.type))
            for res in o.res:
                have = res.type
                if _layout(have) != want:
                    _set_type(res, _with_layout(have, want))
                    _convert_result(res, have)
        elif isinstance(o, tt.DotOp):
            self._convert_dot(o)
        # tt.reshape: src and result keep their own groups' layouts

    def _convert_dot(self, dot: tt.DotOp) -> None:
        mma = _layout(dot.result.type)
        assert isinstance(mma, MmaEncodingAttr)
        if _layout(dot.c.type) != mma:
            _convert_operand(dot, 2, mma)
        sparse = dot.meta is not None
        k_width = _k_width(dot)
        _convert_operand(dot, 0, DotOperandEncodingAttr(0, mma, k_width, 0 if sparse else -1))
        _convert_operand(dot, 1, DotOperandEncodingAttr(1, mma, k_width))
        if sparse:
            _convert_operand(dot, 3, DotOperandEncodingAttr(0, mma, k_width, 1))


def _next_to_join_or_split(op: tt.ReshapeOp) -> bool:
    """A reshape of a join result (`tl.interleave`) or feeding a split (de-interleaving)."""
    return isinstance(op.src.owner, tt.JoinOp) or any(isinstance(u.operation, tt.SplitOp) for u in op.result.uses)


def _derive_shape_layouts(func: tt.FuncOp, uf: _Layouts, groups: dict[SSAValue, _Group], num_warps: int) -> bool:
    """Give the results of tt.join, tt.split, tt.cat (and of the reshapes next to a join or a
    split) the layout derived from their operand's (`shuffles.derived_layout`), which makes
    them rename registers instead of going through shared memory. A result group keeps its
    own layout when a dot or a block pointer's order chose it, or another shape op already
    derived it. Returns whether any layout changed."""
    changed: set[int] = set()
    for o in func.walk():
        if not isinstance(o, tt.JoinOp | tt.SplitOp | tt.CatOp | tt.ReshapeOp):
            continue
        if isinstance(o, tt.ReshapeOp) and not _next_to_join_or_split(o):
            continue
        src, res = groups[uf.find(o.operands[0])], groups[uf.find(o.results[0])]
        if res is src or id(res) in changed or res.dot_results or res.memory_order() is not None:
            continue
        if not isinstance(res.layout, BlockedEncodingAttr):
            continue
        layout = derived_layout(o, src.layout, num_warps)
        if layout is not None and layout != res.layout:
            res.layout = layout
            changed.add(id(res))
    return bool(changed)


def _contiguity_order(group: _Group, axes: AxisAnalysis) -> tuple[int, ...] | None:
    """The layout order the group's tensors of pointers ask for when their contiguous dim is
    not the last one (Triton's coalescing: order by contiguity), e.g. `k_ptr + offs_n[None, :]
    * stride + offs_d[:, None]` (K^T, contiguous along dim 0): that dim first, so that each
    thread's registers run along memory and loads become 16-byte vectors. None keeps the
    default row-major order: no pointer tensor, or one whose last dim is at least as
    contiguous as any other, or pointers that disagree."""
    want: set[int] = set()
    for v in group.values:
        ty = v.type
        if not (isinstance(ty, TensorType) and isinstance(ty.element_type, tt.PointerType)):
            continue
        contig = axes.of(v).contiguity
        if len(contig) < 2 or max(contig) == 1:
            continue  # nothing known (loop-carried pointers): the group's other values decide
        last = len(contig) - 1
        fast = max(range(last, -1, -1), key=lambda d: contig[d])  # ties go to the later dim
        want.add(fast)
    if len(want) != 1:
        return None
    fast = want.pop()
    rank = group.rank
    if fast == rank - 1:
        return None
    return (fast, *(d for d in range(rank - 1, -1, -1) if d != fast))


def _feeds_a_dot(dot: tt.DotOp) -> bool:
    """Whether `dot`'s result reaches an operand A or B of another tt.dot through the ops of
    its block (elementwise math, reductions, broadcasts, casts): a chained dot."""
    seen: set[SSAValue] = set()
    work = [dot.result]
    while work:
        v = work.pop()
        if v in seen:
            continue
        seen.add(v)
        for use in v.uses:
            user = use.operation
            if isinstance(user, tt.DotOp):
                if user is not dot and use.index in (0, 1):
                    return True
                continue
            if isinstance(user, scf.YieldOp | tt.StoreOp):
                continue
            work.extend(user.results)
    return False


def _loaded(v: SSAValue) -> bool:
    """Whether `v` is a tile straight from a `tt.load` (what sparse-gpu-encoding stages in
    shared memory, where wgmma reads it)."""
    return isinstance(v.owner, tt.LoadOp)


def _register_a_dots(func: tt.FuncOp, uf: _Layouts) -> set[tt.DotOp]:
    """The dots whose A is computed elementwise from another dot's result (attention's P =
    exp2(Q K^T - m) feeding P @ V): A shares that dot's layout group, so it sits in the
    accumulator registers of the first dot and reaches the second as wgmma's register A by
    renaming them (codegen/mma_shortcut.py), as Triton's P @ V does."""
    dots = [o for o in func.walk() if isinstance(o, tt.DotOp)]
    return {d for d in dots if not _loaded(d.a) and d.a in uf.parent
            and any(e is not d and uf.find(d.a) == uf.find(e.result) for e in dots)}


def _dense_wgmma_ok(dots: list[tt.DotOp], kmajor_b: bool, register_a: set[tt.DotOp] = frozenset()) -> bool:
    """Whether dense dots (one accumulator group, its M x N already checked by `_use_wgmma`)
    become `wgmma.mma_async.m64nNk16`, as Triton's Hopper GEMMs do: 16-bit operands, K a
    multiple of 16, B a loaded tile (staged in shared memory, read through a descriptor,
    MN-major in a colBlock layout, K-major when a row of K is one 64/128-byte swizzle atom or
    several 128-byte column blocks), A a loaded tile (through a descriptor or ldmatrix) or one of `register_a` (the accumulator
    of a dot before it, in registers: attention's P @ V), and every dot of the function so:
    a dot of other computed operands keeps mma.sync, and so do the others of its function,
    whose layouts would otherwise meet."""
    func = dots[0].parent_op()
    while func is not None and not isinstance(func, tt.FuncOp):
        func = func.parent_op()
    every = [o for o in func.walk() if isinstance(o, tt.DotOp)] if func is not None else dots
    for d in every:
        if d.meta is not None or _bytes(tt.element_type(d.a.type)) != 2 or not _loaded(d.b):
            return False
        if not (_loaded(d.a) or d in register_a):
            return False
        k = tt.shape_of(d.b.type)[0]
        if k % 16:
            return False
    for d in dots:
        row = tt.shape_of(d.b.type)[0] * 2  # bytes of K in a K-major B row
        if kmajor_b and row not in (64, 128) and row % 128:
            # one 64/128-byte atom, or 128-byte column blocks (dot_staging.kmajor_col_blocks:
            # attention's K^T at head dim 128)
            return False
    return True


WIDE_KMAJOR16_MIN_N = 64
"""The narrowest B (tokens of `y = x @ W.T`) whose 16-bit K-major rows may span several 128-byte
column blocks on wgmma. Measured on the H100 (NOTES stop 31 run 2, cold L2): with BLOCK_K = 128
the fp16 linear kernel at 128-512 tokens went from 0.81-1.18x F.linear to 0.94-1.42x (4096x11008
at 512 tokens 0.81 -> 1.19x); decode's 8-32-token tiles measured faster on mma.sp."""


def _wide_kmajor16_ok(dot: tt.DotOp) -> bool:
    """Whether a sparse dot of loaded 16-bit values whose K-major B rows are whole 128-byte
    column blocks (dot_staging.kmajor_col_blocks) runs as wgmma: B at least
    `WIDE_KMAJOR16_MIN_N` wide (the dot's own N: a split-K kernel's layout group also holds
    its transposed epilogue tiles). A `tt.dequantize` A is `_quant_wgmma_ok`'s (register-A
    dequantization), not this."""
    return (tt.shape_of(dot.result.type)[1] >= WIDE_KMAJOR16_MIN_N and _bytes(tt.element_type(dot.a.type)) == 2
            and not isinstance(dot.a.owner, tt.DequantizeOp) and _b_rows_in_col_blocks16(dot))


def _quant_wgmma_ok(dot: tt.DotOp) -> bool:
    """Whether a sparse dot of 16-bit values with a K-major B longer than one 128-byte atom can
    still run as wgmma (`quant-wgmma`): its A is a `tt.dequantize` (a quantized weight, whose
    BLOCK_K covers whole groups: 128 columns or more for w4g128 and kin) and B's rows are whole 128-byte column
    blocks (dot_staging.kmajor_col_blocks; the tokens x^T of `sparse_linear`). The lowering then
    dequantizes each warp's register-A fragments (codegen/lower_quant.py) and B is read through
    a descriptor per k32 step, as for the 16-bit kernel's one-atom rows."""
    return isinstance(dot.a.owner, tt.DequantizeOp) and _b_rows_in_col_blocks16(dot)


def _b_rows_in_col_blocks16(dot: tt.DotOp) -> bool:
    """Whether a 16-bit dot's K-major B rows (K elements of 2 bytes) are whole 128-byte column
    blocks (dot_staging.kmajor_col_blocks)."""
    return (tt.shape_of(dot.b.type)[0] * 2) % 128 == 0


def _k_width(dot: tt.DotOp) -> int:
    """The k_width of a dot's operand encodings: A's elements in 32 bits (16-bit: 2, 8-bit: 4)."""
    return max(1, 4 // _bytes(tt.element_type(dot.a.type)))


def _register_scales(func: tt.FuncOp, uf: _Layouts, groups: dict[SSAValue, _Group]) -> None:
    """The scales and zero points of a `tt.dequantize` that builds a wgmma's A fragments
    (`analysis.dequantize.fragment_dequantize`) take the dot's accumulator layout where each
    thread then holds the scales of its own fragment rows (`scale_registers`): their group (the
    block pointer, its advances and loop-carried copies, the loaded tile) must hold no other
    tensor, so that nothing else changes layout with it."""
    for dq in [o for o in func.walk() if isinstance(o, tt.DequantizeOp)]:
        dot = feeding_dot(dq)
        if dot is None:
            continue
        mma = groups[uf.find(dot.result)].layout
        if not (isinstance(mma, MmaEncodingAttr) and mma.version_major == 3):
            continue
        if not fragment_dequantize(dq, DotOperandEncodingAttr(0, mma, _k_width(dot), 0)):
            continue
        chosen = []
        for v in (dq.scales, dq.zeros):
            if v is None:
                continue
            if not isinstance(v.owner, tt.LoadOp) or len(list(v.uses)) != 1 or v not in uf.parent:
                break
            group = groups[uf.find(v)]
            tensors = [u for u in group.values if isinstance(u.type, TensorType)]
            if tensors != [v] or scale_registers(mma, *tt.shape_of(v.type)) is None:
                break
            chosen.append(group)
        else:  # the scales and the zero points both, or neither
            for group in chosen:
                group.layout = mma


def _layout(ty: Attribute) -> Attribute:
    t = _tile(ty)
    assert t is not None
    return t.encoding


def _set_type(v: SSAValue, ty: Attribute) -> None:
    object.__setattr__(v, "_type", ty)


def _convert_result(v: SSAValue, ty: Attribute) -> None:
    """Let `v`'s users see it as `ty` through a convert placed right after its definition."""
    cvt = ConvertLayoutOp(v, ty)
    assert isinstance(v.owner, Operation)
    Rewriter.insert_op(cvt, InsertPoint.after(v.owner))
    v.replace_uses_with_if(cvt.result, lambda use: use.operation is not cvt)


def _convert_operand(op: Operation, idx: int, layout: Attribute) -> None:
    v = op.operands[idx]
    ty = v.type
    assert isinstance(ty, TensorType)
    if ty.encoding == layout:
        return
    cvt = ConvertLayoutOp(v, TensorType(ty.element_type, ty.get_shape(), layout))
    Rewriter.insert_op(cvt, InsertPoint.before(op))
    op.operands[idx] = cvt.result


__all__ = ["ConvertTTToTTGPass", "default_blocked", "has_wgmma", "mma_warps"]


DENSE_INT8_MAX_K = 1024
"""The longest K of a dense int8 dot that `dense_int8_dots_on_fp16` rewrites: each product is at
most 128 * 128 = 2^14, so K of them sum to at most 2^24, the last integer fp32 holds exactly."""


def dense_int8_dots_on_fp16(module: ModuleOp) -> None:
    """Rewrite each dense int8 `tt.dot` (no 2:4 operand; i32 accumulator) as an exact fp16 one:
    int8 values are exact in fp16, their products and sums exact in the fp32 accumulator while K
    is at most DENSE_INT8_MAX_K, so `c + fptosi(dot(sitofp(a), sitofp(b), 0.0))` is the integer
    result. sparsecc has no dense 8-bit mma lowering; Triton accepts these dots (torchao's int8
    matmul), and this keeps them correct (not as fast as int8 tensor cores). A longer K is left
    for `_check_kmajor_types` to refuse."""
    from xdsl.dialects.builtin import IntegerType, f16, f32

    from sparsecc.dialects import arith as arith_ext

    dots = [o for o in module.walk() if isinstance(o, tt.DotOp) and o.meta is None]
    for d in dots:
        a_ty, b_ty, c_ty = d.a.type, d.b.type, d.c.type
        elt = tt.element_type(a_ty)
        if not (isinstance(elt, IntegerType) and elt.width.data == 8 and tt.element_type(b_ty) == elt):
            continue
        if tt.element_type(c_ty) != i32 or tt.shape_of(b_ty)[0] > DENSE_INT8_MAX_K:
            continue
        shape_c = tt.shape_of(c_ty)
        new: list[Operation] = [
            a16 := arith_ext.SIToFPOp(d.a, TensorType(f16, tt.shape_of(a_ty))),
            b16 := arith_ext.SIToFPOp(d.b, TensorType(f16, tt.shape_of(b_ty))),
            zero := arith.ConstantOp(DenseIntOrFPElementsAttr.from_list(TensorType(f32, shape_c), [0.0])),
            dot := tt.DotOp(a16.results[0], b16.results[0], zero.results[0]),
            ints := arith_ext.FPToSIOp(dot.results[0], TensorType(i32, shape_c)),
            total := arith.AddiOp(d.c, ints.results[0]),
        ]
        for o in new:
            o.location = getattr(d, "location", None) or o.location
        Rewriter.insert_op(new, InsertPoint.before(d))
        d.results[0].replace_all_uses_with(total.results[0])
        d.detach()
        d.erase()
