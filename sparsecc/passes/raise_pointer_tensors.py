"""raise-pointer-tensors: a K loop's tensor-of-pointers loads become block-pointer loads.

Accepts: tt IR (before decompose-sparse-tensors). Guarantees afterwards: every `tt.load` in an
`scf.for` whose pointer is a loop-carried tensor of pointers of the Triton tutorial's shape —

    ptrs = base + rows[:, None] * stride_r + cols[None, :] * stride_c   (one stride the constant 1)
    rows = start_r + tl.arange(0, R)   (or `(...) % M`, or `tl.where(rows < M, rows, 0)`)
    cols = start_c + tl.arange(0, C)
    loaded with masks `index < bound` on rows and/or columns and `other = 0` (a dense tile
    whose one use is a `tt.dot` operand may leave a dim unmasked: attention's K and V, whose
    head dim is never masked; that dim gets no boundary check),
    advanced by a loop-invariant step each iteration (`ptrs += BLOCK_K * stride_k`)

— is a `tt.load` of a `tt.make_tensor_ptr` (shape = the bounds, strides, offsets = the starts,
order = the contiguous dim first) advanced by `tt.advance`, with `boundary_check` on the bounded
dims and zero padding; an unmasked dim is not checked and gets the extent `UNBOUNDED`.
Everything else is left as it was.

Why: block pointers are what the GPU pipeline turns into TMA boxes or 16-byte cp.async rings
feeding wgmma/mma.sp; a tensor of pointers is otherwise loaded element by element into registers.
A user's tutorial-style GEMM thus compiles to the same code as its block-pointer twin, and for a
sparse operand decompose-sparse-tensors then sees the block-pointer form.

How each fact is proven: offsets, masks and the step are read as linear forms over the tile
index `j` of `tl.arange`, the loop's induction variable and loop-invariant scalars (`Linear`).
A mask `lhs < rhs` on a dim holds exactly where the block pointer's coordinate
`start + j + D(iv)` (D: the distance advanced so far) is below `start + j + D(iv) - (lhs - rhs)`;
that is the dim's bound when it depends on neither `j` nor the induction variable (for the
tutorial's `offs_k[None, :] < K - k * BLOCK_K` it is `K`). A dim wrapped with `% M` (or clamped
to row 0 with `tl.where`, as tutorial 09 does) instead of masked reads rows `>= M` as zeros
rather than as rows `0..` (row 0): the pass only does that when the
dot's result is stored under a mask `< M` on that dim alone (as in the tutorial), so nothing that
differs is ever written.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import (
    IntegerAttr,
    ModuleOp,
    TensorType,
    i32,
    i64,
)
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.transforms.dead_code_elimination import dce

from sparsecc.analysis.linear_index import (
    ONE,
    J,
    Linear,
    add_linear,
    clamp_wrap,
    const_of,
    is_zero,
    linear,
    scalar_atom,
    strip_casts,
)
from sparsecc.analysis.tma import UNBOUNDED_DIM
from sparsecc.dialects import tt
from sparsecc.dialects.tt import PADDING_OPTIONS

UNBOUNDED = UNBOUNDED_DIM
"""The shape a raised block pointer gets along a dim its load neither masks nor wraps: the
load does not bounds-check that dim (its addresses are in bounds, as the unmasked pointer load
promised). It exceeds the largest tensor-map dim (`sparsecc.analysis.tma.MAX_DIM`), so no TMA
copy is planned for such a pointer: a box would be zero-filled past a made-up extent."""


@dataclass
class _Axis:
    """One tile axis of a pointer tensor: index = start + j (maybe `% wrap`), times `stride`."""

    start: Linear
    stride: SSAValue | int
    wrap: SSAValue | None



def _axis_of(term: SSAValue) -> _Axis | None:
    """A row (R×1) or column (1×C) term `index * stride` (or `stride * index`, or `index`)."""
    term = strip_casts(term) if not isinstance(term.owner, arith.MuliOp) else term
    stride: SSAValue | int = 1
    index = term
    if isinstance(term.owner, arith.MuliOp):
        for idx, s in ((term.owner.lhs, term.owner.rhs), (term.owner.rhs, term.owner.lhs)):
            ls = linear(s)
            if ls is not None and J not in ls:
                c = const_of(ls)
                if c is not None:
                    stride = c
                elif len(ls) == 1 and next(iter(ls.values())) == 1:
                    stride = next(iter(ls))  # type: ignore[assignment]
                else:
                    continue
                index = idx
                break
        else:
            return None
    index = strip_casts(index)
    wrap = None
    if isinstance(index.owner, arith.RemSIOp):
        wrap = scalar_atom(index.owner.rhs)
        if wrap is None:
            return None
        index = strip_casts(index.owner.lhs)
    elif (clamped := clamp_wrap(index)) is not None:
        wrap, index = clamped
        index = strip_casts(index)
    form = linear(index)
    if form is None or form.get(J) != 1:
        return None
    start = dict(form)
    del start[J]
    return _Axis(start, stride, wrap)


def _terms(v: SSAValue, combine: type[Operation]) -> list[SSAValue]:
    src = v
    while isinstance(src.owner, tt.BroadcastOp):
        src = src.owner.src
    if isinstance(src.owner, combine) and len(tt.shape_of(src.type)) == 2 and 1 not in tt.shape_of(src.type):
        return [t for o in src.owner.operands for t in _terms(o, combine)]
    return [v]


def _axis_kind(term: SSAValue, shape: tuple[int, ...]) -> int | None:
    """0 for a row term (R×1), 1 for a column term (1×C), None otherwise."""
    src = term
    while isinstance(src.owner, tt.BroadcastOp):
        src = src.owner.src
    s = tt.shape_of(src.type)
    if len(s) != 2:
        return None
    if s[1] == 1 and s[0] == shape[0] and shape[0] != 1:
        return 0
    if s[0] == 1 and s[1] == shape[1] and shape[1] != 1:
        return 1
    return None


@dataclass
class _PointerTile:
    base: SSAValue
    axes: list[_Axis]


def _pointer_tile(p: SSAValue, shape: tuple[int, ...]) -> _PointerTile | None:
    """`base + row_term + col_term` (through any chain of tt.addptr), or None."""
    terms: list[SSAValue] = []
    v = p
    while True:
        while isinstance(v.owner, tt.BroadcastOp):
            v = v.owner.src
        if isinstance(v.owner, tt.AddPtrOp):
            terms += _terms(v.owner.offset, arith.AddiOp)
            v = v.owner.ptr
            continue
        break
    if not isinstance(v.owner, tt.SplatOp) or isinstance(v.owner.src.type, TensorType):
        return None
    found: list[_Axis | None] = [None, None]
    for t in terms:
        kind = _axis_kind(t, shape)
        if kind is None or found[kind] is not None:
            return None
        src = t
        while isinstance(src.owner, tt.BroadcastOp):
            src = src.owner.src
        axis = _axis_of(src)
        if axis is None:
            return None
        found[kind] = axis
    if found[0] is None or found[1] is None:
        return None
    return _PointerTile(v.owner.src, [found[0], found[1]])


def _defined_outside(v: SSAValue, loop: Operation) -> bool:
    op = v.owner if isinstance(v.owner, Operation) else v.owner.parent_op()
    while op is not None:
        if op is loop:
            return False
        op = op.parent_op()
    return True


class _Materializer:
    """Emits linear forms and constants as i32 scalars before `anchor`."""

    def __init__(self, anchor: Operation):
        self.anchor = anchor

    def insert(self, op: Operation) -> SSAValue | None:
        block = self.anchor.parent_block()
        assert block is not None
        block.insert_op_before(op, self.anchor)
        op.location = self.anchor.location
        return op.results[0] if op.results else None

    def const(self, value: int, ty=i32) -> SSAValue:
        return self.insert(arith.ConstantOp(IntegerAttr(value, ty)))

    def linear(self, form: Linear) -> SSAValue:
        out: SSAValue | None = None
        for key, coef in form.items():
            if key == ONE:
                continue
            assert isinstance(key, SSAValue)
            term = key if coef == 1 else self.insert(arith.MuliOp(key, self.const(coef)))
            out = term if out is None else self.insert(arith.AddiOp(out, term))
        c = form.get(ONE, 0)
        if out is None:
            return self.const(c)
        return out if not c else self.insert(arith.AddiOp(out, self.const(c)))

    def i64(self, v: SSAValue | int) -> SSAValue:
        if isinstance(v, int):
            return self.const(v, i64)
        return v if v.type == i64 else self.insert(arith.ExtSIOp(v, i64))


def _mask_bounds(mask: SSAValue | None, shape: tuple[int, ...], tile: _PointerTile,
                 moved: list[Linear]) -> list[Linear | None] | None:
    """The bound each dim's mask conditions amount to (None: unmasked dim), or None when a
    condition is not `index < bound` on one dim with a loop-invariant bound."""
    bounds: list[Linear | None] = [None, None]
    if mask is None:
        return bounds
    for term in _terms(mask, arith.AndIOp):
        kind = _axis_kind(term, shape)
        src = term
        while isinstance(src.owner, tt.BroadcastOp):
            src = src.owner.src
        if kind is None or not isinstance(src.owner, arith.CmpiOp) or src.owner.predicate.value.data != 2:
            return None  # predicate 2: slt
        lhs, rhs = linear(src.owner.lhs), linear(src.owner.rhs)
        if lhs is None or rhs is None:
            return None
        coordinate = add_linear(add_linear(tile.axes[kind].start, {J: 1}), moved[kind])
        bound = add_linear(coordinate, add_linear(lhs, rhs, -1), -1)
        if J in bound or any(k in moved[kind] for k in bound if k not in (ONE, J)):
            return None
        if bounds[kind] is not None and bounds[kind] != bound:
            return None
        bounds[kind] = bound
    return bounds


def _stores_mask_dim(value: SSAValue, dim: int, bound: SSAValue, seen: set[SSAValue] | None = None) -> bool:
    """Every use of `value` (through elementwise ops) is a store whose mask requires
    `index < bound` along `dim`."""
    seen = set() if seen is None else seen
    if value in seen:
        return True
    seen.add(value)
    for use in value.uses:
        op = use.operation
        if isinstance(op, tt.StoreOp):
            if use.index != 1 or op.mask is None:
                return False
            shape = tt.shape_of(op.value.type)
            ok = False
            for term in _terms(op.mask, arith.AndIOp):
                src = term
                while isinstance(src.owner, tt.BroadcastOp):
                    src = src.owner.src
                if _axis_kind(term, shape) == dim and isinstance(src.owner, arith.CmpiOp) \
                        and src.owner.predicate.value.data == 2 and linear(src.owner.rhs) == {bound: 1}:
                    ok = True
            if not ok:
                return False
        elif op.dialect_name() == "arith":
            if len(op.results) != 1 or not _stores_mask_dim(op.results[0], dim, bound, seen):
                return False
        else:
            return False
    return True


def _dot_result_dim(load: tt.LoadOp, loop: scf.ForOp, wrapped_dim: int) -> tuple[SSAValue, int] | None:
    """(the loop result holding the dot the load feeds, the dim of it the wrapped dim becomes)."""
    users = [u.operation for u in load.result.uses]
    if len(users) != 1 or not isinstance(users[0], tt.DotOp):
        return None
    dot = users[0]
    if dot.a is load.result and wrapped_dim == 0:
        out_dim = 0
    elif dot.b is load.result and wrapped_dim == 1:
        out_dim = 1
    else:
        return None
    yields = loop.body.block.last_op
    assert isinstance(yields, scf.YieldOp)
    for i, v in enumerate(yields.operands):
        if v is dot.results[0]:
            return loop.results[i], out_dim
    return None


def _feeds_dot(load: tt.LoadOp) -> bool:
    """Whether the load's tile is only an operand of tt.dot (a GEMM K loop's A or B)."""
    users = [u.operation for u in load.result.uses]
    return len(users) == 1 and isinstance(users[0], tt.DotOp) and load.result in (users[0].a, users[0].b)


@dataclass
class _Plan:
    index: int                 # iter_arg position of the pointer
    load: tt.LoadOp
    tile: _PointerTile
    shape: tuple[int, ...]
    bounds: list[Linear | SSAValue | None]
    step: tuple[int, int]
    order: tuple[int, int]
    checked: list[int]         # the dims the load bounds-checks (masked or wrapped ones)


def _plan(loop: scf.ForOp, index: int) -> _Plan | None:
    arg = loop.body.block.args[index + 1]
    init = loop.iter_args[index]
    ty = arg.type
    if not isinstance(ty, TensorType) or not isinstance(ty.element_type, tt.PointerType) or len(ty.get_shape()) != 2:
        return None
    shape = ty.get_shape()
    if loop.results[index].uses:
        return None
    yields = loop.body.block.last_op
    assert isinstance(yields, scf.YieldOp)
    nxt = yields.operands[index]
    if not isinstance(nxt.owner, tt.AddPtrOp) or nxt.owner.ptr is not arg:
        return None
    loads = [u.operation for u in arg.uses if isinstance(u.operation, tt.LoadOp)]
    if len(loads) != 1 or len(list(arg.uses)) != 2 or len(list(nxt.uses)) != 1:
        return None
    load = loads[0]
    if load.other is not None and not is_zero(load.other):
        return None
    tile = _pointer_tile(init, shape)
    if tile is None:
        return None
    strides = [a.stride for a in tile.axes]
    if strides[1] == 1:
        order = (1, 0)
    elif strides[0] == 1:
        order = (0, 1)
    else:
        return None
    # the step, in elements of one dim
    step = linear(nxt.owner.offset)
    lb, loop_step = linear(loop.lb), linear(loop.step)
    if step is None or J in step or lb != {} or loop_step is None or const_of(loop_step) is None:
        return None
    per_iter = [0, 0]
    c = const_of(step)
    if c is not None:
        per_iter[order[0]] = c  # a number of elements along the contiguous dim
    else:
        other = 1 - order[0]
        s = strides[other]
        if not isinstance(s, SSAValue) or set(step) != {s}:
            return None
        per_iter[other] = step[s]
    iv_step = const_of(loop_step)
    assert iv_step is not None
    if any(p % iv_step for p in per_iter):
        return None
    iv = loop.body.block.args[0]
    moved = [{iv: p // iv_step} if p else {} for p in per_iter]
    bounds_lin = _mask_bounds(load.mask, shape, tile, moved)
    if bounds_lin is None:
        return None
    bounds: list[Linear | SSAValue | None] = list(bounds_lin)
    checked = [d for d, b in enumerate(bounds) if b is not None]
    for dim, axis in enumerate(tile.axes):
        if bounds[dim] is not None:
            if any(isinstance(k, SSAValue) and not _defined_outside(k, loop) for k in bounds[dim]):
                return None
            if axis.wrap is not None and bounds[dim] != {axis.wrap: 1}:
                return None
            continue
        if axis.wrap is None:
            # neither masked nor wrapped: every address is in bounds (as the pointer load
            # promised), so the dim needs no check; UNBOUNDED stands for its unknown extent.
            # Only for a dot's operand tile, which the pipeline then copies asynchronously
            if not _feeds_dot(load):
                return None
            bounds[dim] = {ONE: UNBOUNDED}
            continue
        if per_iter[dim]:
            return None
        found = _dot_result_dim(load, loop, dim)
        if found is None or not _stores_mask_dim(found[0], found[1], axis.wrap):
            return None
        bounds[dim] = axis.wrap
        checked.append(dim)
    if any(isinstance(k, SSAValue) and not _defined_outside(k, loop)
           for axis in tile.axes for k in axis.start):
        return None
    return _Plan(index, load, tile, shape, bounds, (per_iter[0], per_iter[1]), order, sorted(checked))


def _rewrite(loop: scf.ForOp, plans: list[_Plan]) -> None:
    m = _Materializer(loop)
    by_index = {p.index: p for p in plans}
    new_inits: list[SSAValue] = []
    for i, init in enumerate(loop.iter_args):
        plan = by_index.get(i)
        if plan is None:
            new_inits.append(init)
            continue
        elem = tt.element_type(init.type)
        assert isinstance(elem, tt.PointerType)
        enc = init.type.encoding if tt.is_sparse(init.type) else None
        tile_ty = TensorType(elem.pointee, list(plan.shape), enc) if enc is not None else TensorType(elem.pointee, list(plan.shape))
        shape = [m.const(UNBOUNDED, i64) if b == {ONE: UNBOUNDED}
                 else m.i64(b if isinstance(b, SSAValue) else m.linear(b)) for b in plan.bounds]
        strides = [m.i64(a.stride) for a in plan.tile.axes]
        offsets = [m.linear(a.start) for a in plan.tile.axes]
        bp = tt.MakeTensorPtrOp(plan.tile.base, shape, strides, offsets, plan.order, tt.PointerType(tile_ty))
        new_inits.append(m.insert(bp))
    body = loop.body.block
    new_body = Block(arg_types=[body.args[0].type, *[v.type for v in new_inits]])
    for old, new in zip(body.args, new_body.args, strict=True):
        new.name_hint = old.name_hint
        old.replace_all_uses_with(new)
    for op in list(body.ops):
        op.detach()
        new_body.add_op(op)
    new_loop = scf.ForOp(loop.lb, loop.ub, loop.step, new_inits, new_body)
    new_loop.location = loop.location
    new_loop.attributes.update(loop.attributes)  # tl.range's hints (tt.num_stages, ...)
    block = loop.parent_block()
    assert block is not None
    block.insert_op_before(new_loop, loop)
    for old, new in zip(loop.results, new_loop.results, strict=True):
        new.name_hint = old.name_hint
        old.replace_all_uses_with(new)
    loop.detach()
    loop.erase(safe_erase=False)
    yields = new_body.last_op
    assert isinstance(yields, scf.YieldOp)
    for plan in plans:
        arg = new_body.args[plan.index + 1]
        nxt = yields.operands[plan.index]
        mm = _Materializer(yields)
        adv = tt.AdvanceOp(arg, [mm.const(plan.step[0]), mm.const(plan.step[1])])
        adv.result.name_hint = nxt.name_hint
        new_next = mm.insert(adv)
        yields.operands = [new_next if j == plan.index else v for j, v in enumerate(yields.operands)]
        add = nxt.owner
        assert isinstance(add, Operation)
        add.detach()
        add.erase(safe_erase=False)
        load = plan.load
        ml = _Materializer(load)
        new_load = tt.LoadOp(arg, boundary_check=plan.checked, padding=PADDING_OPTIONS["zero"])
        new_load.result.name_hint = load.result.name_hint
        ml.insert(new_load)
        load.result.replace_all_uses_with(new_load.result)
        load.detach()
        load.erase(safe_erase=False)


def _from_dot(v: SSAValue, depth: int = 16) -> bool:
    """Whether `v` is computed elementwise (arith/math ops) from a `tt.dot` result or a loop
    result that a dot yields: a dot's epilogue tile (attention's `acc / l_i`)."""
    owner = v.owner
    if depth == 0 or not isinstance(owner, Operation):
        return False
    if isinstance(owner, tt.DotOp):
        return True
    if isinstance(owner, scf.ForOp):
        yields = owner.body.block.last_op
        return isinstance(yields, scf.YieldOp) and _from_dot(yields.operands[v.index], depth - 1)
    if owner.dialect_name() in ("arith", "math") and owner.operands:
        return _from_dot(owner.operands[0], depth - 1)
    return False


def raise_store(store: tt.StoreOp) -> bool:
    """A store through `base + rows * s + cols` masked by `rows < M` and `cols < N` becomes a
    block-pointer store with boundary checks (what the epilogue's 16-byte stores need); so does
    a store of a dot's epilogue tile with a dim (or both) unmasked, which gets no boundary check
    on it (attention's output, masked on its rows at most)."""
    ty = store.ptr.type
    if not isinstance(ty, TensorType) or len(ty.get_shape()) != 2 or tt.is_sparse(ty):
        return False
    shape = ty.get_shape()
    tile = _pointer_tile(store.ptr, shape)
    if tile is None or any(a.wrap is not None for a in tile.axes):
        return False
    strides = [a.stride for a in tile.axes]
    order = (1, 0) if strides[1] == 1 else (0, 1) if strides[0] == 1 else None
    bounds = _mask_bounds(store.mask, shape, tile, [{}, {}])
    if order is None or bounds is None:
        return False
    if any(b is None for b in bounds) and not _from_dot(store.value):
        return False
    m = _Materializer(store)
    elem = ty.element_type
    assert isinstance(elem, tt.PointerType)
    bp = m.insert(tt.MakeTensorPtrOp(
        tile.base, [m.const(UNBOUNDED_DIM, i64) if b is None else m.i64(m.linear(b)) for b in bounds],
        [m.i64(a.stride) for a in tile.axes], [m.linear(a.start) for a in tile.axes], order,
        tt.PointerType(TensorType(elem.pointee, list(shape)))))
    new = tt.StoreOp(bp, store.value, boundary_check=[d for d, b in enumerate(bounds) if b is not None])
    m.insert(new)
    store.detach()
    store.erase(safe_erase=False)
    return True


def raise_loop(loop: scf.ForOp) -> int:
    """Raise what can be raised in one loop; the number of pointer tensors raised."""
    plans = [p for i in range(len(loop.iter_args)) if (p := _plan(loop, i)) is not None]
    if plans:
        _rewrite(loop, plans)
    return len(plans)


@dataclass(frozen=True)
class RaisePointerTensorsPass(ModulePass):
    """Tensor-of-pointers K-loop loads -> block-pointer loads (see the module docstring)."""

    name = "raise-pointer-tensors"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        raised = sum(raise_loop(loop) for loop in [o for o in op.walk() if isinstance(o, scf.ForOp)])
        raised += sum(raise_store(s) for s in [o for o in op.walk() if isinstance(o, tt.StoreOp)])
        if raised:
            dce(op)  # the pointer arithmetic and masks the block pointers replaced
