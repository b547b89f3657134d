"""decompose-sparse-tensors: split every #tt.sparse<"..."> tensor into values + metadata.

Accepts: tt IR where sparse data enters through `tt.func` arguments of type
`!tt.ptr<T, #tt.sparse<"NV24">>` (T an element type the format holds) and flows only through
  - `tt.make_tensor_ptr` / `tt.advance` / `tt.load` (block pointers, `order = [1, 0]`),
  - tensors of pointers built with the Triton idiom
    `A + rows[:, None] * stride_am + cols[None, :]` (`tt.splat` / `tt.expand_dims` /
    `tt.broadcast` / `tt.addptr`), advanced along K by a scalar (`a_ptrs += BLOCK_K`), and
    loaded with a mask of the form `row_mask[:, None] & col_mask[None, :]` (or either alone),
  - `scf.for` iter_args, `scf.if` results and `scf.yield` (e.g. the K loop advancing a
    block pointer),
  - operand A of `tt.dot`.
Guarantees afterwards: no `#tt.sparse` type is left anywhere; each sparse argument became the
arguments of its format's arrays in place: a values pointer `!tt.ptr<T>` then a metadata pointer
(`!tt.ptr<i16>` for NV24), named `%A_values`, `%A_meta`, and for a quantized format
(`NV24.w4g128`, `formats.quant`) an i8 codes pointer in place of the values, then `%A_scales`
(and `%A_zeros`); each sparse dot is `tt.dot %values, %b, %meta, %c, sparseIndex = 0`, where a
quantized operand's `%values` is `tt.dequantize %codes, %scales[, %zeros] {bits}` of its tiles
(a BLOCK_K tile must cover whole quantization groups).

Why this shape (seed 001): later passes treat values and metadata as ordinary dense tensors
with their own layouts and swizzles, so the sparse format has to be explicit in the IR before any
GPU decision is made.

How indices are recomputed: the format says (`sparsecc.formats`, each array an `ArrayMap`: dense
row r, column c land at row r/row_div, column c/col_div; a row stride divides by
row_stride_div). For NV24 and a dense M×K matrix with row stride sM and column stride sK = 1
addressed by a BM×BK block at (om, ok):
  values   (M × K/2, row stride sM/2):     shape [M, K/2],        strides [sM/2, sK], offsets [om, ok/2],    tile BM × BK/2
  metadata (ceil(M/16) × K, row stride sM): shape [ceil(M/16), K], strides [sM, sK],   offsets [om/16, ok],   tile BM/16 × BK
`tt.advance [dm, dk]` moves each array as an offset: [dm, dk/2] and [dm/16, dk]. Offsets along M
must be multiples of 16 and along K multiples of 16 at run time (tiles start on a metadata
word); BM and BK must be multiples of 16, which is checked here. Arithmetic on constants is
folded into new constants; a division by 1 emits nothing.

Tensors of pointers: an R×C tensor of sparse pointers (C = 1 before the column term is added)
becomes values pointers R×(C/2) and metadata pointers (R/16)×C. The element offset is a sum of a
row term X (R×1, = row·sM) and a column term Y (1×C, = k). An array takes, per group of row_div
rows, min(X)/(row_div·row_stride_div) and, per group of col_div columns, min(Y)/col_div
(`tt.reshape` to groups + `tt.reduce min`): values X/2 and min(Y[2j], Y[2j+1])/2, metadata
min(X[16a..16a+15])/16 (a row of metadata words is one 16-row block, whose row stride is sM)
and Y itself (the word for row r of a 16-column chunk sits r words after the chunk's start, so
contiguous, 16-aligned columns map onto themselves). A scalar increment s moves along K: each
array by s/col_div (values s/2, metadata s). Masks split the same way (`tt.reduce max` over
each group).

A sparse value used anywhere else (stored, fed to an elementwise op, reduced, operand B of a
dot) cannot be decomposed: the pass stops with an error naming the op.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    TensorType,
    UnknownLoc,
)
from xdsl.ir import Attribute, Block, BlockArgument, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException

from sparsecc import formats
from sparsecc.analysis.divisibility import Divisibility
from sparsecc.analysis.group_starts import at_group_starts
from sparsecc.analysis.row_wraps import Wrap, find_wraps, rows_past_bound_unseen
from sparsecc.dialects import tt


class SparseDecompositionError(DiagnosticException):
    """A sparse tensor is used where it cannot be split into values and metadata."""

    def __init__(self, message: str, op: Operation | None = None):
        super().__init__(message)
        self.op = op


@dataclass(frozen=True)
class Split:
    """The dense arrays a sparse SSA value became, in the format's order (values, metadata,
    then a quantized format's scales and zero points)."""

    arrays: tuple[SSAValue, ...]

    @property
    def values(self) -> SSAValue:
        return self.arrays[0]

    @property
    def meta(self) -> SSAValue:
        return self.arrays[1]


def _op_desc(op: Operation) -> str:
    hint = ", ".join(f"%{r.name_hint}" for r in op.results if r.name_hint)
    return f"'{op.name}'" + (f" (defining {hint})" if hint else "")


def _fail(op: Operation, message: str) -> SparseDecompositionError:
    return SparseDecompositionError(f"{_op_desc(op)}: {message}", op)


def _format(ty: Attribute) -> formats.SparseFormat:
    """The format of a sparse type (its #tt.sparse encoding, verified when it was built)."""
    enc = tt.sparse_encoding_of(ty)
    assert enc is not None, f"internal error: {ty} is not sparse"
    return enc.definition


def _encoding_text(ty: Attribute) -> str:
    enc = tt.sparse_encoding_of(ty)
    return f'#tt.sparse<"{enc.format.data}">' if enc is not None else "#tt.sparse"


def _name_arrays(fmt: formats.SparseFormat, name: str | None, arrays: tuple[SSAValue, ...]) -> None:
    """`%A` -> `%A_values`, `%A_meta`, ... (the format's array suffixes)."""
    if name:
        for array, v in zip(fmt.arrays, arrays, strict=True):
            v.name_hint = f"{name}_{array.suffix}"


# ----------------------------------------------------------------------------------------
# Types
# ----------------------------------------------------------------------------------------


def _tile_types(tile: TensorType, op: Operation) -> tuple[TensorType, ...]:
    """The array tiles (values, metadata, ...) of a sparse BM×BK tile."""
    fmt = _format(tile)
    shape = tile.get_shape()
    if len(shape) != 2:
        raise _fail(op, f"only 2-D sparse tiles can be decomposed, got shape {list(shape)}")
    bm, bk = shape
    why = fmt.check_tile(bm, bk)
    if why is not None:
        raise _fail(op, why)
    return tuple(TensorType(fmt.array_element(a, tile.element_type), a.tile(bm, bk)) for a in fmt.arrays)


def _split_ptr_type(ty: Attribute, op: Operation) -> tuple[Attribute, ...]:
    if isinstance(ty, tt.PointerType) and isinstance(ty.pointee, TensorType):
        return tuple(tt.PointerType(t) for t in _tile_types(ty.pointee, op))
    if isinstance(ty, tt.PointerType):
        fmt = _format(ty)
        return tuple(tt.PointerType(fmt.array_element(a, ty.pointee)) for a in fmt.arrays)
    raise _fail(op, "only pointers and block pointers to sparse data can be decomposed")


# ----------------------------------------------------------------------------------------
# Index arithmetic that folds constants
# ----------------------------------------------------------------------------------------


def _fold(insert: Callable[[Operation], SSAValue], op: type[arith.SignlessIntegerBinaryOperation],
          values: list[SSAValue]) -> SSAValue:
    """`values[0] op values[1] op ...`, left to right, each op made by `insert`."""
    out = values[0]
    for v in values[1:]:
        out = insert(op(out, v))
    return out


class _Builder:
    """Inserts index arithmetic before an anchor op, folding constants."""

    def __init__(self, anchor: Operation):
        self.anchor = anchor

    def _insert(self, op: Operation) -> SSAValue:
        block = self.anchor.parent_block()
        assert block is not None
        block.insert_op_before(op, self.anchor)
        return op.results[0]

    @staticmethod
    def constant_of(v: SSAValue) -> int | None:
        owner = v.owner
        if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
            return owner.value.value.data
        return None

    def const(self, value: int, ty: Attribute) -> SSAValue:
        assert isinstance(ty, IntegerType)
        return self._insert(arith.ConstantOp(IntegerAttr(value, ty)))

    def const_like(self, value: int, like: SSAValue) -> SSAValue:
        """The constant `value` of `like`'s type (`formats.Arith`)."""
        return self.const(value, like.type)

    def div(self, v: SSAValue, d: int) -> SSAValue:
        c = self.constant_of(v)
        if c is not None:
            return self.const(c // d, v.type)
        return self._insert(arith.DivSIOp(v, self.const(d, v.type)))

    def ceil_div(self, v: SSAValue, d: int) -> SSAValue:
        c = self.constant_of(v)
        if c is not None:
            return self.const(-(-c // d), v.type)
        bumped = self._insert(arith.AddiOp(v, self.const(d - 1, v.type)))
        return self._insert(arith.DivSIOp(bumped, self.const(d, v.type)))

    def scale(self, v: SSAValue, d: int) -> SSAValue:
        """`v // d`, and `v` itself (no op) when d is 1."""
        return v if d == 1 else self.div(v, d)

    def sum(self, terms: list[SSAValue]) -> SSAValue | None:
        """The sum of same-typed scalars or tensors, left to right (None for none)."""
        return _fold(self._insert, arith.AddiOp, terms) if terms else None


# ----------------------------------------------------------------------------------------
# Offsets and masks of pointer tensors
# ----------------------------------------------------------------------------------------


def _strip_broadcast(v: SSAValue) -> SSAValue:
    while isinstance(v.owner, tt.BroadcastOp):
        v = v.owner.src
    return v


def _classify_term(offset: SSAValue, shape: tuple[int, ...]) -> tuple[str, SSAValue]:
    """Is a term of an offset a scalar step, a row term (R×1) or a column term (1×C)?"""
    src = _strip_broadcast(offset)
    if isinstance(src.owner, tt.SplatOp) and not isinstance(src.owner.src.type, TensorType):
        return "scalar", src.owner.src
    sshape = tt.shape_of(src.type)
    if len(sshape) == 2 and sshape[1] == 1 and sshape[0] == shape[0]:
        return "row", src
    if len(sshape) == 2 and sshape[0] == 1 and sshape[1] == shape[1]:
        return "col", src
    return "other", src


def _terms(v: SSAValue, shape: tuple[int, ...], combine: type[Operation]) -> list[SSAValue]:
    """The operands of a tree of `combine` ops (arith.addi for offsets, arith.andi for masks)
    whose result has the full R×C shape: `rows[:, None] * s + (cols[None, :] + k)` gives its
    three terms, each classified on its own."""
    src = _strip_broadcast(v)
    if isinstance(src.owner, combine) and tt.shape_of(src.type) == tuple(shape) and len(shape) == 2:
        return [t for operand in src.owner.operands for t in _terms(operand, shape, combine)]
    return [v]


@dataclass
class _Offset:
    """An offset of sparse pointers as a sum: scalar steps along K, row terms, column terms."""

    scalars: list[SSAValue]
    rows: list[SSAValue]
    cols: list[SSAValue]


def _split_offset(offset: SSAValue, shape: tuple[int, ...], b: _TensorBuilder, op: Operation) -> _Offset:
    parts = _Offset([], [], [])
    for term in _terms(offset, shape, arith.AddiOp):
        term = _hoist_extension(term, b)
        step = _splat_constant(term)
        if step is not None:  # `a_ptrs += BLOCK_K` arrives as a dense splat constant
            parts.scalars.append(b.scalar.const(int(step), tt.element_type(term.type)))
            continue
        kind, value = _classify_term(term, shape)
        if kind == "other":
            raise _fail(op, "cannot decompose this offset of sparse pointers: each term must be a "
                            "row term (rows[:, None] * stride), a column term (cols[None, :]) or a "
                            "scalar step along K; a term that varies along both (a gather) has no "
                            "values/metadata address")
        if kind == "col":
            stride = _runtime_factor(value)
            if stride is not None:
                name = f"'{stride.name_hint}'" if stride.name_hint else "a runtime value"
                raise _fail(op, f"the columns of sparse pointers (K, the compressed dimension) are "
                                f"scaled by {name}: K must be contiguous (stride 1). Launched "
                                "through kernel[grid], a stride equal to 1 compiles as the constant "
                                "1; with sparsecc.compile, declare it 'i32:1'")
        {"scalar": parts.scalars, "row": parts.rows, "col": parts.cols}[kind].append(value)
    return parts


def _constant_through_extension(v: SSAValue) -> int | None:
    """The integer constant `v` is, looking through sign/zero extensions (a block pointer's i64
    stride is `extsi` of the i32 argument, which a stride of 1 specializes to the constant 1)."""
    while isinstance(v.owner, arith.ExtSIOp | arith.ExtUIOp):
        v = v.owner.operands[0]
    return _Builder.constant_of(v)


def _hoist_extension(term: SSAValue, b: _TensorBuilder) -> SSAValue:
    """A term widened after its broadcast, `extsi(broadcast(rows[:, None]))` (an i32 index added
    to an i64 one, as `tl.program_id(0).to(tl.int64)` offsets make), as the same term widened
    before it: `extsi(rows[:, None])`, or `splat(extsi(s))` for a scalar, which classify as a
    row, a column or a scalar step like the unwidened term."""
    owner = term.owner
    if not isinstance(owner, arith.ExtSIOp | arith.ExtUIOp):
        return term
    src = _strip_broadcast(owner.operands[0])
    elt = tt.element_type(term.type)
    if isinstance(src.owner, tt.SplatOp) and not isinstance(src.owner.src.type, TensorType):
        wide = b._insert(type(owner)(src.owner.src, elt))
        return b.splat(wide, tt.shape_of(term.type), elt)
    if src is owner.operands[0]:
        return term  # nothing to see through
    return b._insert(type(owner)(src, TensorType(elt, tt.shape_of(src.type))))


def _runtime_factor(term: SSAValue) -> SSAValue | None:
    """A scalar that is not a compile-time constant and multiplies the index in `term` (a
    column term such as `cols[None, :] * stride_ak`), if there is one."""
    seen: set[SSAValue] = set()
    stack = [term]
    while stack:
        v = stack.pop()
        if v in seen:
            continue
        seen.add(v)
        owner = v.owner
        if isinstance(owner, arith.MuliOp):
            for side in owner.operands:
                src = _strip_broadcast(side)
                if isinstance(src.owner, tt.SplatOp) and _Builder.constant_of(src.owner.src) is None:
                    return src.owner.src
            stack.extend(owner.operands)
        elif isinstance(owner, arith.AddiOp | arith.SubiOp | tt.ExpandDimsOp | tt.BroadcastOp):
            stack.extend(owner.operands)
    return None


def _split_mask(mask: SSAValue, shape: tuple[int, ...]) -> tuple[list[SSAValue], list[SSAValue]] | None:
    """Row (R×1) and column (1×C) conditions of `rows[:, None] & cols[None, :]` (any number of
    each); None when a condition varies along both axes."""
    rows: list[SSAValue] = []
    cols: list[SSAValue] = []
    for t in _terms(mask, shape, arith.AndIOp):
        kind, src = _classify_term(t, shape)
        if kind == "row":
            rows.append(src)
        elif kind == "col":
            cols.append(src)
        else:
            return None
    return rows, cols


def _splat_constant(v: SSAValue) -> float | int | None:
    from xdsl.dialects.builtin import DenseIntOrFPElementsAttr

    owner = v.owner
    if isinstance(owner, _CASTS):  # `other=0.0` of an int8 load arrives as fptosi(0.0)
        inner = _splat_constant(owner.operands[0])
        if inner is None:
            return None
        return int(inner) if isinstance(tt.element_type(v.type), IntegerType) else float(inner)
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, DenseIntOrFPElementsAttr):
        vals = owner.value.get_values()
        if vals and all(x == vals[0] for x in vals):
            return vals[0]
    return None


_CASTS = (arith.FPToSIOp, arith.FPToUIOp, arith.SIToFPOp, arith.UIToFPOp, arith.ExtFOp, arith.TruncFOp,
          arith.ExtSIOp, arith.ExtUIOp, arith.TruncIOp)
"""Casts of a constant splat that the frontend leaves unfolded."""


class _TensorBuilder:
    """Tensor-level index arithmetic inserted before an anchor op."""

    def __init__(self, anchor: Operation):
        self.anchor = anchor
        self.scalar = _Builder(anchor)

    def _insert(self, op: Operation) -> SSAValue:
        return self.scalar._insert(op)

    def constant_tensor(self, value: float | int, ty: TensorType) -> SSAValue:
        from xdsl.dialects.builtin import DenseIntOrFPElementsAttr

        return self._insert(arith.ConstantOp(DenseIntOrFPElementsAttr.from_list(ty, [value])))

    def splat(self, scalar: SSAValue, shape: tuple[int, ...], ty: Attribute) -> SSAValue:
        return self._insert(tt.SplatOp(scalar, TensorType(ty, shape)))

    def div(self, v: SSAValue, d: int) -> SSAValue:
        ty = v.type
        assert isinstance(ty, TensorType)
        return self._insert(arith.DivSIOp(v, self.splat(self.scalar.const(d, ty.element_type), ty.get_shape(), ty.element_type)))

    def scale(self, v: SSAValue, d: int) -> SSAValue:
        """`v // d` elementwise, and `v` itself (no op) when d is 1."""
        return v if d == 1 else self.div(v, d)

    def broadcast(self, v: SSAValue, shape: tuple[int, ...]) -> SSAValue:
        if tt.shape_of(v.type) == tuple(shape):
            return v
        ty = v.type
        assert isinstance(ty, TensorType)
        return self._insert(tt.BroadcastOp(v, TensorType(ty.element_type, shape)))

    def group_reduce(self, v: SSAValue, axis: int, group: int, kind: str) -> SSAValue:
        """Reduce groups of `group` consecutive entries of a R×1 (axis 0) or 1×C (axis 1) tensor
        (`v` itself for groups of 1)."""
        ty = v.type
        assert isinstance(ty, TensorType)
        n = ty.get_shape()[axis]
        if n == 1 or group == 1:
            return v
        grouped = self._insert(tt.ReshapeOp(v, TensorType(ty.element_type, [n // group, group])))
        reduced = self._insert(tt.ReduceOp(grouped, kind, 1))
        return self._insert(tt.ExpandDimsOp(reduced, 1 - axis))

    def all_of(self, masks: list[SSAValue]) -> SSAValue:
        return _fold(self._insert, arith.AndIOp, masks)

    sum = _Builder.sum  # arith.addi takes same-shaped tensors as it takes scalars

    def group_starts(self, v: SSAValue, axis: int, group: int, fallback: str) -> SSAValue:
        """`v` at the first entry of each group along `axis` when `v` is a function of one
        `tl.arange` (plain elementwise IR); else the `fallback` reduction over each group (for
        increasing offsets and masks of the form `idx < bound` the two agree)."""
        starts = at_group_starts(self.anchor, v, axis, group)
        if starts is not None:
            return starts
        return self.group_reduce(v, axis=axis, group=group, kind=fallback)

    def wrapped_row_starts(self, rows: SSAValue, group: int, rounded: frozenset[Operation]) -> SSAValue | None:
        """A row term at each group's first row with the `% M` wraps in `rounded` rounded down
        to a group (`at_group_starts`); None when the term is no function of one `tl.arange`
        (a reduction over the group could land in the middle of one)."""
        return at_group_starts(self.anchor, rows, 0, group, rounded)


# ----------------------------------------------------------------------------------------
# The rewrite
# ----------------------------------------------------------------------------------------


class _Decomposer:
    """Walks one function in program order, splitting sparse values as it meets them."""

    def __init__(self) -> None:
        self.split: dict[SSAValue, Split] = {}
        self.dead: list[Operation] = []
        self.divisibility: tuple[tt.FuncOp, Divisibility] | None = None

    # -- function arguments -------------------------------------------------------------
    def run_func(self, func: tt.FuncOp) -> None:
        if not func.body.blocks:
            return
        block = func.body.blocks.first
        assert block is not None
        old_attrs = dict(zip(block.args, func.arg_attrs.data)) if func.arg_attrs is not None else None
        self.divisibility = (func, Divisibility(func))  # before the arguments move
        for arg in list(block.args):
            if not tt.is_sparse(arg.type):
                continue
            arrays = tuple(block.insert_arg(t, arg.index + 1 + i)
                           for i, t in enumerate(_split_ptr_type(arg.type, func)))
            _name_arrays(_format(arg.type), arg.name_hint, arrays)
            self.split[arg] = Split(arrays)
        self.run_block(block)
        self.erase_dead()
        for arg in [a for a in block.args if a in self.split]:
            block.erase_arg(arg)
        func.function_type = type(func.function_type).from_lists(
            list(block.arg_types), list(func.function_type.outputs.data)
        )
        if old_attrs is not None:  # the array args take the sparse arg's place
            func.arg_attrs = ArrayAttr([old_attrs.get(a, DictionaryAttr({})) for a in block.args])

    def erase_dead(self) -> None:
        for op in reversed(self.dead):
            _erase(op)
        self.dead.clear()

    # -- ops ----------------------------------------------------------------------------
    def run_block(self, block: Block) -> None:
        for op in list(block.ops):
            if isinstance(op, scf.ForOp):
                self.rewrite_for(op)
                continue
            if isinstance(op, scf.WhileOp):
                self.rewrite_while(op)
                continue
            if isinstance(op, scf.YieldOp | scf.ConditionOp):
                self.rewrite_yield(op)
                continue
            if isinstance(op, scf.IfOp) and any(tt.is_sparse(r.type) for r in op.results):
                self.rewrite_if(op)
                continue
            for region in op.regions:
                for inner in region.blocks:
                    self.run_block(inner)
            if not any(o in self.split for o in op.operands):
                if any(tt.is_sparse(r.type) for r in op.results):
                    raise _fail(op, "produces a sparse value from no sparse input; cannot decompose it")
                continue
            self.rewrite(op)

    def rewrite(self, op: Operation) -> None:
        if isinstance(op, tt.MakeTensorPtrOp):
            self.rewrite_make_tensor_ptr(op)
        elif isinstance(op, tt.AdvanceOp):
            self.rewrite_advance(op)
        elif isinstance(op, tt.LoadOp):
            self.rewrite_load(op)
        elif isinstance(op, tt.DotOp):
            self.rewrite_dot(op)
        elif isinstance(op, tt.StoreOp):
            enc = _encoding_text(op.value.type if tt.is_sparse(op.value.type) else op.ptr.type)
            raise _fail(op, f"cannot store a sparse ({enc}) tensor; only tt.dot operand A consumes one")
        elif isinstance(op, tt.SplatOp):
            self.rewrite_splat(op)
        elif isinstance(op, tt.BroadcastOp):
            self.rewrite_broadcast(op)
        elif isinstance(op, tt.AddPtrOp):
            self.rewrite_addptr(op)
        else:
            sparse = next(v for v in op.operands if v in self.split)
            raise _fail(
                op,
                f"cannot use a sparse ({_encoding_text(sparse.type)}) tensor here; only tl.make_block_ptr, "
                "tl.advance, tl.load and tt.dot operand A accept one",
            )
        self.dead.append(op)

    def rewrite_make_tensor_ptr(self, op: tt.MakeTensorPtrOp) -> None:
        stride_k = _constant_through_extension(op.strides[1])
        if op.order.get_values() != (1, 0) and stride_k != 1:
            raise _fail(op, "a sparse block pointer needs order = [1, 0] (K, the sparse dim, contiguous)")
        # `order` is a layout hint (Triton computes the same values whatever it says): with K's
        # stride the constant 1 the tile is K-contiguous, whatever order the kernel declared
        # (torchao's int8 matmul says [1, 0] for a B that is W.T)
        if stride_k is not None and stride_k != 1:
            raise _fail(op, f"a sparse block pointer needs unit stride along K, got {stride_k}")
        types = _split_ptr_type(op.result.type, op)
        fmt = _format(op.result.type)
        b = _Builder(op)
        base = self.split[op.base]
        m, k = op.shape
        sm, sk = op.strides
        om, ok = op.offsets
        order = [1, 0]
        parts = []
        for array, ptr, ty in zip(fmt.arrays, base.arrays, types, strict=True):
            shape = list(array.shape(b, m, k))
            strides = list(array.strides(b, sm, sk))
            offsets = list(array.offsets(b, om, ok))
            parts.append(tt.MakeTensorPtrOp(ptr, shape, strides, offsets, order, ty))
        self._emit(op, parts)

    def rewrite_advance(self, op: tt.AdvanceOp) -> None:
        fmt = _format(op.result.type)
        b = _Builder(op)
        ptr = self.split[op.ptr]
        dm, dk = op.offsets
        self._emit(op, [tt.AdvanceOp(p, list(a.offsets(b, dm, dk)))
                        for a, p in zip(fmt.arrays, ptr.arrays, strict=True)])

    def rewrite_load(self, op: tt.LoadOp) -> None:
        if isinstance(op.ptr.type, TensorType):
            self.rewrite_pointer_tensor_load(op)
            return
        if not tt.is_sparse(op.result.type):  # a scalar: one element has no values/metadata split
            raise _fail(op, f"cannot load one element through a sparse ({_encoding_text(op.ptr.type)}) "
                            "pointer; load a tile (tl.make_block_ptr, or a tensor of pointers) and "
                            "use it as operand A of tt.dot")
        ptr = self.split[op.ptr]
        bc = list(op.boundaryCheck.get_values()) if op.boundaryCheck is not None else []
        pad = op.padding.value.data if op.padding is not None else None
        self._emit(op, [tt.LoadOp(p, boundary_check=bc, padding=pad) for p in ptr.arrays])

    # -- tensors of pointers -------------------------------------------------------------
    def _halves(self, fmt: formats.SparseFormat, shape: tuple[int, ...],
                op: Operation) -> list[list[int]]:
        """Shapes of the arrays (values, metadata, ...) of an R×C sparse pointer tensor."""
        if len(shape) != 2:
            raise _fail(op, f"only 2-D tensors of sparse pointers can be decomposed, got shape {list(shape)}")
        r, c = shape
        rm, rk = fmt.tile_multiple
        if (r != 1 and r % rm) or (c != 1 and c % rk):
            raise _fail(op, f"a tensor of sparse pointers needs {fmt.tile_rule()}, got {r}x{c}")
        if fmt.quant is not None:
            if any(a.per_row for a in fmt.arrays):
                raise _fail(op, f"a tensor of {fmt.name} pointers cannot address per-row scales (their "
                                "row offset is the row itself, not row * stride): use block pointers "
                                f"(tl.make_block_ptr), or a group size such as NV24.w{fmt.quant.bits}g128")
            why = fmt.quant.check_tile(c) if c != 1 else None
            if why is not None:
                raise _fail(op, why)
        return [list(a.tile(r, c)) for a in fmt.arrays]

    def _ptr_tensor_types(self, ty: Attribute, op: Operation) -> tuple[TensorType, ...]:
        assert isinstance(ty, TensorType)
        elem = ty.element_type
        assert isinstance(elem, tt.PointerType)
        fmt = _format(ty)
        shapes = self._halves(fmt, ty.get_shape(), op)
        return tuple(TensorType(tt.PointerType(fmt.array_element(a, elem.pointee)), shape)
                     for a, shape in zip(fmt.arrays, shapes, strict=True))

    def rewrite_splat(self, op: tt.SplatOp) -> None:
        base = self.split[op.src]
        types = self._ptr_tensor_types(op.result.type, op)
        self._emit(op, [tt.SplatOp(p, t) for p, t in zip(base.arrays, types, strict=True)])

    def rewrite_broadcast(self, op: tt.BroadcastOp) -> None:
        src = self.split[op.src]
        types = self._ptr_tensor_types(op.result.type, op)
        self._emit(op, [tt.BroadcastOp(p, t) for p, t in zip(src.arrays, types, strict=True)])

    def rewrite_addptr(self, op: tt.AddPtrOp) -> None:
        ptr = self.split[op.ptr]
        fmt = _format(op.result.type)
        shape = tt.shape_of(op.result.type)
        if not shape:
            raise _fail(op, _SCALAR_OFFSET)
        b = _TensorBuilder(op)
        parts = _split_offset(op.offset, shape, b, op)
        scalar = b.scalar.sum(parts.scalars)
        rows = b.sum(parts.rows)
        cols = b.sum(parts.cols)
        offsets = []
        for array, half in zip(fmt.arrays, ptr.arrays, strict=True):
            hshape = tt.shape_of(half.type)
            terms: list[SSAValue] = []
            if scalar is not None:  # a K step: each array moves by its share of the columns
                terms.append(b.splat(b.scalar.scale(scalar, array.col_div), hshape, scalar.type))
            rounded: frozenset[Operation] = frozenset()
            if rows is not None and array.row_div > 1:
                rounded = self._check_row_wraps(rows, array.row_div, op)
            if rows is not None:  # row * sM at each group's first row, in the array's row stride
                grouped = b.wrapped_row_starts(rows, array.row_div, rounded) if rounded else \
                    b.group_starts(rows, axis=0, group=array.row_div, fallback="min")
                if grouped is None:
                    raise _fail(op, "the rows of these sparse pointers are wrapped with %, and their "
                                    "row term is not a plain function of tl.arange, so the wrapped "
                                    "metadata rows cannot be placed: mask the rows of the load "
                                    "instead of wrapping them")
                terms.append(b.broadcast(b.scale(grouped, array.row_offset_div), hshape))
            if cols is not None:  # a dense column at each group's first column
                grouped = b.group_starts(cols, axis=1, group=array.col_div, fallback="min")
                terms.append(b.broadcast(b.scale(grouped, array.col_div), hshape))
            total = b.sum(terms)
            assert total is not None
            offsets.append(total)
        self._emit(op, [tt.AddPtrOp(p, o) for p, o in zip(ptr.arrays, offsets, strict=True)])

    def _check_row_wraps(self, rows: SSAValue, group: int, op: tt.AddPtrOp) -> frozenset[Operation]:
        """The `% M` wraps of the rows whose metadata group starts must be rounded down to a
        group (see sparsecc.analysis.row_wraps), after checking every wrap is exact or unseen.

        16 rows share a row of metadata words and tile row r reads the word at position r % 16.
        `rows % M` moves whole groups only when M is a multiple of 16; otherwise (and always for
        `tl.where(rows < M, rows, 0)`, which sends every row past M to row 0) a row past M
        reads another row's metadata, so its result is wrong: harmless only when the dot's
        result is stored under `rows < M`, as in Triton's tutorials. The metadata of such a
        group is then read from an in-bounds group (rounded down), never from the middle of one."""
        rounded: set[Operation] = set()
        for wrap in find_wraps(rows):
            const = _Builder.constant_of(wrap.bound)
            known = const if const is not None else self._divisibility(op).of(wrap.bound)
            if wrap.is_rem and known % group == 0:
                continue  # whole groups wrap onto whole groups: every row exact
            if rows_past_bound_unseen(op.result, wrap.bound, wrap.index):
                if wrap.is_rem:
                    rounded.add(wrap.op)
                continue
            raise _fail(op, _wrap_message(wrap, group))
        return frozenset(rounded)

    def _divisibility(self, op: Operation) -> Divisibility:
        func = op
        while not isinstance(func, tt.FuncOp):
            func = func.parent_op()
            assert func is not None
        if self.divisibility is None or self.divisibility[0] is not func:
            self.divisibility = (func, Divisibility(func))
        return self.divisibility[1]

    def rewrite_pointer_tensor_load(self, op: tt.LoadOp) -> None:
        ptr = self.split[op.ptr]
        fmt = _format(op.ptr.type)
        halves = ptr.arrays
        shapes = [tt.shape_of(h.type) for h in halves]
        masks: list[SSAValue | None] = [None] * len(halves)
        b = _TensorBuilder(op)
        if op.mask is not None:
            split = _split_mask(op.mask, tt.shape_of(op.ptr.type))
            if split is None:
                raise _fail(op, "the mask of a sparse load must be rows[:, None] & cols[None, :] "
                                "(any number of row and column conditions); a condition that varies "
                                "along both axes cannot be split into values and metadata masks")
            parts: list[list[SSAValue]] = [[] for _ in halves]
            for terms, axis in ((split[0], 0), (split[1], 1)):
                if not terms:
                    continue
                term = b.all_of(terms)
                for i, array in enumerate(fmt.arrays):  # an array element is live if its group is
                    group = array.row_div if axis == 0 else min(array.col_div, shapes[0][1] * fmt.values.col_div)
                    grouped = b.group_starts(term, axis=axis, group=group, fallback="max")
                    parts[i].append(b.broadcast(grouped, shapes[i]))
            masks = [b.all_of(p) for p in parts]
        others: list[SSAValue | None] = [None] * len(halves)
        if op.other is not None:
            fill = _splat_constant(op.other)
            if fill is None:
                raise _fail(op, "the 'other' of a sparse load must be a constant splat")
            dense = tt.element_type(op.result.type)
            others = [b.constant_tensor(fill if a.masked_fill is None else a.masked_fill,
                                        TensorType(fmt.array_element(a, dense), shape))
                      for a, shape in zip(fmt.arrays, shapes, strict=True)]
        self._emit(op, [tt.LoadOp(h, m, o) for h, m, o in zip(halves, masks, others, strict=True)])

    def rewrite_dot(self, op: tt.DotOp) -> None:
        if op.b in self.split or op.c in self.split or op.a not in self.split:
            raise _fail(op, "only operand A of tt.dot may be sparse here (sparse-operand-to-lhs, "
                            "which runs before this pass when compiling, moves a sparse B to the left)")
        fmt = _format(op.a.type)
        dot_format = formats.of_dot_metadata(fmt.array_element(fmt.metadata, tt.element_type(op.a.type)))
        if dot_format.meta != fmt.meta:  # a quantized format shares its base's metadata
            raise _fail(op, f"tt.dot cannot take {fmt.name} operands")
        a = self.split[op.a]
        values = a.values
        if fmt.quant is not None:  # the dot takes the kept values themselves
            zeros = a.arrays[3] if fmt.quant.zero_point else None
            rows, cols = tt.shape_of(a.values.type)
            dq = tt.DequantizeOp(a.values, a.arrays[2], zeros, fmt.quant.bits,
                                 TensorType(tt.element_type(op.a.type), [rows, cols * fmt.quant.codes_per_byte]))
            self._insert_before(op, dq)
            values = dq.result
            if a.values.name_hint:
                values.name_hint = a.values.name_hint.removesuffix("_values") + "_dequant"
        new = tt.DotOp(values, op.b, op.c, a.meta, sparse_index=0, result_type=op.result.type)
        new.attributes |= op.attributes
        self._insert_before(op, new)
        new.result.name_hint = op.result.name_hint
        op.result.replace_all_uses_with(new.result)

    def _emit(self, op: Operation, parts: list[Operation]) -> None:
        """Insert the ops that stand for `op`'s sparse result, one per array of its format."""
        for part in parts:
            self._insert_before(op, part)
        result = op.results[0]
        arrays = tuple(p.results[0] for p in parts)
        _name_arrays(_format(result.type), result.name_hint, arrays)
        self.split[result] = Split(arrays)

    @staticmethod
    def _insert_before(anchor: Operation, new: Operation) -> None:
        """Insert `new`, which stands in for `anchor` (and is located where it is: the anchor
        is erased later, so its neighbours would lend `new` the wrong line)."""
        block = anchor.parent_block()
        assert block is not None
        block.insert_op_before(new, anchor)
        if isinstance(new.location, UnknownLoc):
            new.location = anchor.location

    # -- structured control flow ----------------------------------------------------------
    def rewrite_for(self, op: scf.ForOp) -> None:
        old_body = op.body.block
        carried = list(op.iter_args)
        if not any(v in self.split for v in carried):
            self.run_block(old_body)
            if any(tt.is_sparse(r.type) for r in op.results):
                raise _fail(op, "a loop result is sparse but its initial value is not")
            return
        # A fresh body whose block arguments list each sparse carried value's arrays.
        new_inits = self._flat(carried)
        body = self._split_block_args(old_body, [False] + [v in self.split for v in carried],
                                      [old_body.args[0].type] + [v.type for v in new_inits])
        self.run_block(body)
        new_for = scf.ForOp(op.lb, op.ub, op.step, new_inits, body)
        new_for.attributes.update(op.attributes)  # tl.range's hints (tt.num_stages, ...)
        self._insert_before(op, new_for)
        self._adopt_results(op, new_for, [init in self.split for init in carried])

    def rewrite_while(self, op: scf.WhileOp) -> None:
        """An scf.while carrying sparse values (a K loop written as `while k < K`): each becomes
        its format's arrays in the inits, both regions' arguments, the condition's forwarded
        values, the body's yield and the results."""
        before_old, after_old = op.before_region.block, op.after_region.block
        if not any(v in self.split for v in op.arguments):
            self.run_block(before_old)
            self.run_block(after_old)
            if any(tt.is_sparse(r.type) for r in op.results):
                raise _fail(op, "a loop result is sparse but its initial value is not")
            return
        new_inits = self._flat(op.arguments)
        before = self._split_block_args(before_old, [init in self.split for init in op.arguments],
                                        [v.type for v in new_inits])
        self.run_block(before)
        cond = before.last_op
        assert isinstance(cond, scf.ConditionOp)
        sparse = [tt.is_sparse(r.type) for r in op.results]
        passed = list(cond.args.types)
        if any(tt.is_sparse(t) for t in passed):
            raise _fail(op, "the loop passes on a sparse value it does not carry")
        after = self._split_block_args(after_old, sparse, passed)
        self.run_block(after)
        new_while = scf.WhileOp(new_inits, passed, Region(before), Region(after))
        new_while.attributes.update(op.attributes)
        self._insert_before(op, new_while)
        self._adopt_results(op, new_while, sparse)

    def _split_block_args(self, old: Block, sparse: list[bool], types: list[Attribute]) -> Block:
        """A new block of argument `types` standing in for `old` (its ops moved over): each
        sparse argument of `old` (`sparse[i]`) takes as many of them as its format has arrays."""
        new = Block(arg_types=types)
        self._map_split(list(old.args), list(new.args), sparse)
        for inner in list(old.ops):
            inner.detach()
            new.add_op(inner)
        return new

    def rewrite_if(self, op: scf.IfOp) -> None:
        """An scf.if yielding sparse values: each such result becomes a (values, meta) pair."""
        if not op.false_region.blocks:
            raise _fail(op, "an scf.if with sparse results needs an else branch")
        for region in op.regions:
            for inner in region.blocks:
                self.run_block(inner)
        then_yield = op.true_region.block.last_op
        assert isinstance(then_yield, scf.YieldOp)
        true_region, false_region = Region(), Region()
        op.true_region.move_blocks(true_region)
        op.false_region.move_blocks(false_region)
        new_if = scf.IfOp(op.cond, [v.type for v in then_yield.operands], true_region, false_region)
        self._insert_before(op, new_if)
        self._adopt_results(op, new_if, [tt.is_sparse(r.type) for r in op.results])

    def _adopt_results(self, old: Operation, new: Operation, sparse: list[bool]) -> None:
        """Map `old`'s results onto `new`'s, where each sparse result became its format's arrays."""
        self._map_split(list(old.results), list(new.results), sparse)
        self.dead.append(old)

    def _map_split(self, olds: list[SSAValue], news: list[SSAValue], sparse: list[bool]) -> None:
        """Stand `news` in for `olds` in order: a sparse old value (`sparse[i]`) takes as many new
        ones as its format has arrays (recorded as its split), any other one new value (its uses
        move over)."""
        values = iter(news)
        for old, is_sparse in zip(olds, sparse):
            if is_sparse:
                fmt = _format(old.type)
                arrays = tuple(next(values) for _ in fmt.arrays)
                _name_arrays(fmt, old.name_hint, arrays)
                self.split[old] = Split(arrays)
            else:
                v = next(values)
                v.name_hint = old.name_hint
                old.replace_all_uses_with(v)

    def rewrite_yield(self, op: scf.YieldOp | scf.ConditionOp) -> None:
        """A yield (or a while's condition) passing on sparse values: each becomes its arrays."""
        passed = list(op.args) if isinstance(op, scf.ConditionOp) else list(op.operands)
        if not any(v in self.split for v in passed):
            return
        operands = self._flat(passed)
        new = scf.ConditionOp(op.condition, *operands) if isinstance(op, scf.ConditionOp) else scf.YieldOp(*operands)
        self._insert_before(op, new)
        _erase(op)

    def _flat(self, values: Sequence[SSAValue]) -> list[SSAValue]:
        """`values` with each split one replaced by its format's arrays."""
        out: list[SSAValue] = []
        for v in values:
            out += self.split[v].arrays if v in self.split else [v]
        return out


_SCALAR_OFFSET = (
    "a scalar offset on a sparse pointer (a per-head base such as `K + off_z * stride_kz + "
    "off_h * stride_kh`) is not supported yet: its values and metadata move by different amounts "
    "(metadata only by whole 16-row groups), which this offset cannot be proven to be. Pass each "
    "head's 2:4 tensor as a 2-D (rows x K) argument of its own, or fold the head into the rows: "
    "`K + (off_hz * N_CTX + offs_n)[:, None] * stride_kn + offs_d[None, :]`, with N_CTX a "
    "multiple of 16")
"""Why `sparse + scalar` is refused (issue 29, fused attention with a 2:4 K)."""


def _wrap_message(wrap: Wrap, group: int) -> str:
    """Why a wrap of sparse rows is refused, and the ways out the user has."""
    bound = wrap.bound
    name = f"'{bound.name_hint}'" if bound.name_hint else "the bound"
    form = f"% {name}" if wrap.is_rem else f"tl.where(rows < {name}, rows, 0)"
    bound_text = bound.name_hint or "M"
    ways = [f"store the result only under a mask of the same index, unwrapped, below {name} (as "
            f"Triton's tutorials do: `mask=offs_cm[:, None] < {bound_text}` for a 2:4 A, "
            f"`mask=offs_cn[None, :] < {bound_text}` for a 2:4 B)",
            "or mask the rows of the load instead of wrapping them"]
    if wrap.is_rem and isinstance(bound, BlockArgument):
        ways.append(f"or launch with {name} a multiple of {group} (kernel[grid] specializes it; "
                    "with sparsecc.compile declare it 'i32:16')")
    return (f"rows of sparse pointers wrapped with {form}: {group} rows share a row of metadata, "
            f"so a row past {name} reads another row's metadata and its result is wrong, and "
            f"here it may be stored; " + ", ".join(ways))


def _erase(op: Operation) -> None:
    if op.parent is not None:
        op.detach()
    op.erase(safe_erase=False)


def _assert_no_sparse(module: ModuleOp) -> None:
    for op in module.walk():
        for v in (*op.results, *(a for r in op.regions for b in r.blocks for a in b.args)):
            if tt.is_sparse(v.type):
                raise _fail(op, "a #tt.sparse type is left after decompose-sparse-tensors")


@dataclass(frozen=True)
class DecomposeSparseTensorsPass(ModulePass):
    """Split each #tt.sparse tensor into the arrays its format defines (values and metadata)."""

    name = "decompose-sparse-tensors"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for func in [f for f in op.walk() if isinstance(f, tt.FuncOp)]:
            _Decomposer().run_func(func)
        _assert_no_sparse(op)
