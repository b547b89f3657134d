"""Memory ops of the lowering: block-pointer loads/stores, shared stores/loads, async copies.

Global accesses through a block pointer are emitted twice under one uniform run-time test:
a vector path (whole `run`-element vectors, one predicate each) when the fast dim has stride 1,
the other strides, the fast offset and (if checked) the fast extent are multiples of the
vector, and a scalar path (one predicated access per element) otherwise. The launcher
guarantees 16-byte aligned base pointers.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    FloatAttr,
    IntegerType,
    TensorType,
    UnitAttr,
    i1,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, Region, SSAValue

from sparsecc.analysis.divisibility import PtrDiv
from sparsecc.analysis.dtypes import esize
from sparsecc.analysis.layouts import (
    DistLayout,
    contiguous_run,
    distributed,
    stored_coords,
)
from sparsecc.codegen.lower_base import (
    BlockPtr,
    Emitter,
    LoweringError,
    Regs,
    Smem,
)
from sparsecc.codegen.mma_store import CHUNK, store_transposed, transpose_plan
from sparsecc.dialects import ptx
from sparsecc.dialects.ptx import COLD_ELSE
from sparsecc.dialects.ttg import BlockedEncodingAttr, MemDescType, SharedEncodingAttr

if TYPE_CHECKING:
    from sparsecc.codegen.lower_base import LoweringContext


def is_b16(ty: Attribute) -> bool:
    return isinstance(ty, Float16Type | BFloat16Type) or ty == IntegerType(16)


def is_b8(ty: Attribute) -> bool:
    """An 8-bit element (int8, fp8): it lives in the low byte of a b16 register."""
    return ty != IntegerType(1) and esize(ty) == 1


# Four bytes (each in the low half of a b16 register) <-> one b32 word: pairs of b16 into two
# words, whose bytes 0 and 2 `prmt` gathers (selector 0x6420), and back.
_PACK4 = ("{\n.reg .b32 %pk<2>;\nmov.b32 %pk0, {$1, $2};\nmov.b32 %pk1, {$3, $4};\n"
          "prmt.b32 $0, %pk0, %pk1, 0x6420;\n}")
_UNPACK4 = ("{\n.reg .b16 %pk<2>;\nmov.b32 {%pk0, %pk1}, $4;\nand.b16 $0, %pk0, 255;\n"
            "shr.u16 $1, %pk0, 8;\nand.b16 $2, %pk1, 255;\nshr.u16 $3, %pk1, 8;\n}")


def fast_dim(ty: TensorType) -> int:
    enc = ty.encoding
    if isinstance(enc, BlockedEncodingAttr):
        return enc.order[0]
    return len(ty.get_shape()) - 1


def pad_value(L: LoweringContext, elt: Attribute, padding: int | None) -> SSAValue:
    if isinstance(elt, IntegerType):
        return L.em.c(0, elt) if elt.width.data > 1 else L.em.c(0, elt)
    v = float("nan") if padding == 2 else 0.0
    return L.em.val(arith.ConstantOp(FloatAttr(v, elt)))


# ---------------------------------------------------------------------------------------
# Packing b16 pairs into b32 words (vector accesses move b32 words)


def pack_words(L: LoweringContext, vals: list[SSAValue]) -> list[SSAValue]:
    if is_b8(vals[0].type) and len(vals) >= 4:
        return [L.em.val(ptx.AsmOp(_PACK4, vals[i:i + 4], [i32], pure=True)) for i in range(0, len(vals), 4)]
    if not is_b16(vals[0].type):
        return vals
    if len(vals) == 1:
        return vals
    # (ptx.PackOp(lo, hi) via `create`: it has no properties)
    return [L.em.val(ptx.PackOp.create(operands=vals[i:i + 2], result_types=(i32,))) for i in range(0, len(vals), 2)]


def unpack_words(L: LoweringContext, words: list[SSAValue], elt: Attribute, n: int) -> list[SSAValue]:
    if is_b8(elt) and n >= 4:
        return [r for w in words for r in L.em.op(ptx.AsmOp(_UNPACK4, [w], [elt] * 4, pure=True)).results]
    if not is_b16(elt) or n == 1:
        return words
    out: list[SSAValue] = []
    for w in words:
        op = L.em.op(ptx.UnpackOp(w, elt))
        out += [op.results[0], op.results[1]]
    return out


def word_type(elt: Attribute, n: int) -> tuple[Attribute, int]:
    """(type, count) of the words that move n elements of `elt`."""
    if is_b16(elt) and n > 1:
        return i32, n // 2
    if is_b8(elt) and n >= 4:
        return i32, n // 4
    return elt, n


# ---------------------------------------------------------------------------------------
# Block pointers


def global_coords(L: LoweringContext, bp: BlockPtr, coord: tuple[SSAValue, ...]) -> list[SSAValue]:
    return [L.em.add(bp.offsets[d], coord[d]) for d in range(len(coord))]


def global_addr(L: LoweringContext, bp: BlockPtr, g: list[SSAValue], elt: Attribute) -> SSAValue:
    em = L.em
    off = em.c(0, i64)
    for d, gd in enumerate(g):
        off = em.add(off, em.mul(em.ext64(gd), bp.strides[d]))
    return em.add(bp.base, em.mul(off, esize(elt)))


def register_addrs(L: LoweringContext, bp: BlockPtr, dl: DistLayout, coords: list[tuple[SSAValue, ...]],
                   elt: Attribute) -> Callable[[int, list[SSAValue]], SSAValue]:
    """`addr_of(r, g)`: the global address of register r of `dl`, whose global coordinates are
    `g` (`global_coords`), as `global_addr` gives it. Where no dim of the layout wraps, a
    register's coordinates are the thread's base plus constants (`dl.regs`), so the thread's base
    address is computed once and each register adds, per dim, a constant multiple of the stride
    shared by every register with that offset (a few 64-bit adds an element instead of a 64-bit
    multiply an element and dim); elsewhere each address comes from `g` where it is asked for."""
    if any(dl.wrap):
        return lambda r, g: global_addr(L, bp, g, elt)
    em = L.em
    nbytes = esize(elt)
    first = dl.regs[0]
    base = global_addr(L, bp, [em.add(bp.offsets[d], em.sub(coords[0][d], first[d])) for d in range(len(first))], elt)
    steps: dict[tuple[int, int], SSAValue] = {}

    def step(d: int, k: int) -> SSAValue:
        if (d, k) not in steps:
            steps[(d, k)] = em.mul(bp.strides[d], k * nbytes)
        return steps[(d, k)]

    addrs = []
    for offs in dl.regs:
        addr = base
        for d, k in enumerate(offs):
            if k:
                addr = em.add(addr, step(d, k))
        addrs.append(addr)
    return lambda r, g: addrs[r]


def in_bounds(L: LoweringContext, bp: BlockPtr, g: list[SSAValue], dims: list[int]) -> SSAValue | None:
    em = L.em
    pred: SSAValue | None = None
    for d in dims:
        p = em.cmp("ult", em.ext64(g[d]), bp.shape[d])
        pred = p if pred is None else em.band(pred, p)
    return pred


def vector_ok(L: LoweringContext, bp: BlockPtr, fast: int, run: int, dims: list[int]) -> SSAValue:
    """Uniform test: may `run`-element vectors along `fast` be accessed as one aligned vector?"""
    em = L.em
    conds = [em.cmp("eq", bp.strides[fast], em.c(1, i64))]
    for d in range(len(bp.strides)):
        if d != fast:
            conds.append(em.cmp("eq", em.remu(bp.strides[d], run), em.c(0, i64)))
    conds.append(em.cmp("eq", em.remu(bp.offsets[fast], run), em.c(0)))
    if fast in dims:
        conds.append(em.cmp("eq", em.remu(bp.shape[fast], run), em.c(0, i64)))
    c = conds[0]
    for x in conds[1:]:
        c = em.band(c, x)
    return c


def first_replica(L: LoweringContext, dl: DistLayout, r: int) -> SSAValue | None:
    """Whether this thread holds the first copy of register r's element, in a layout where
    several threads hold it (threads that cover more than the tile: `wrap`; lane or warp bits
    no term reads: a slice layout); None when each element has one thread. Only that thread copies the chunk into shared memory: two
    cp.async writing the same bytes without synchronisation between them are a data race
    (racecheck: WAW "invalid memcpy_async synchronization"), even with equal data."""
    em = L.em
    if dl.regs[r] in dl.regs[:r]:  # an earlier register of this thread holds it (a slice of a dim
        return em.c(0, i1)         # this thread spans): only the first one counts
    cond = None
    for d, wraps in enumerate(dl.wrap):
        if not wraps:
            continue
        unwrapped = em.term_sum(dl.base[d], L.ids.lane, L.ids.warp)
        c = em.cmp("ult", unwrapped, em.c(dl.shape[d] - dl.regs[r][d]))
        cond = c if cond is None else em.band(cond, c)
    # lane/warp bits no term reads (a slice layout drops its dim's terms): the threads that
    # differ only there hold the same elements; the copy with those bits zero comes first
    for ident, free in ((L.ids.lane, free_bits(dl, "lane", 32)), (L.ids.warp, free_bits(dl, "warp", L.cfg.num_warps))):
        if free:
            c = em.cmp("eq", em.band(ident, em.c(free)), em.c(0))
            cond = c if cond is None else em.band(cond, c)
    return cond


def free_bits(dl: DistLayout, src: str, count: int) -> int:
    """The bits of the lane (or warp) id, below `count`, that no term of `dl` reads."""
    covered = 0
    for terms in dl.base:
        for t in terms:
            if t.src == src and t.mod > 1 and t.mul:
                covered |= (t.mod - 1) * t.div
    return (count - 1) & ~covered


def _two_paths(L: LoweringContext, cond: SSAValue, fast_fn, slow_fn, result_types: list[Attribute]) -> list[SSAValue]:
    """scf.if(cond) { fast_fn() } else { slow_fn() } with the values both return."""
    outer = L.em.block
    blocks = []
    for fn in (fast_fn, slow_fn):
        blk = Block()
        L.em.block = blk
        vals = fn()
        blk.add_op(scf.YieldOp(*vals))
        blocks.append(blk)
    L.em.block = outer
    if_op = scf.IfOp(cond, result_types, Region(blocks[0]), Region(blocks[1]))
    if_op.attributes[COLD_ELSE] = UnitAttr()  # keep LICM out of the scalar fallback
    outer.add_op(if_op)
    return list(if_op.results)


def load_block(L: LoweringContext, bp: BlockPtr, ty: TensorType, dims: list[int], padding: int | None,
               known: PtrDiv | None = None) -> Regs:
    """tt.load through a block pointer into the registers of `ty`'s layout (`known`: what the
    divisibility analysis proved about the pointer; an aligned one gets the vector path only)."""
    elt = ty.element_type
    dl = distributed(ty.encoding, ty.get_shape())
    coords = L.coords(dl)
    fast = fast_dim(ty)
    run = contiguous_run(dl, fast, max(1, 16 // esize(elt)))

    def scalar() -> list[SSAValue]:
        out = []
        zero = pad_value(L, elt, padding) if dims else None
        addr_of = register_addrs(L, bp, dl, coords, elt)
        for r in range(dl.num_regs):
            g = global_coords(L, bp, coords[r])
            addr = addr_of(r, g)
            pred = in_bounds(L, bp, g, dims)
            op = ptx.LdGlobalOp(addr, elt, 1, mask=pred, other=[zero] if pred is not None else [])
            out.append(L.em.val(op))
        return out

    if run == 1:
        return Regs(ty, scalar())

    def vector() -> list[SSAValue]:
        out = []
        wt, wn = word_type(elt, run)
        zero_w = L.em.c(0, wt) if isinstance(wt, IntegerType) else pad_value(L, wt, padding)
        addr_of = register_addrs(L, bp, dl, coords, elt)
        for r0 in range(0, dl.num_regs, run):
            g = global_coords(L, bp, coords[r0])
            addr = addr_of(r0, g)
            pred = in_bounds(L, bp, g, dims)
            op = L.em.op(ptx.LdGlobalOp(addr, wt, wn, mask=pred, other=[zero_w] * wn if pred is not None else []))
            vals = unpack_words(L, list(op.results), elt, run)
            if padding == 2 and pred is not None:
                nan = pad_value(L, elt, padding)
                vals = [L.em.select(pred, v, nan) for v in vals]
            out += vals
        return out

    if known is not None and known.vectors_aligned(fast, run, dims):
        return Regs(ty, vector())
    cond = vector_ok(L, bp, fast, run, dims)
    regs = _two_paths(L, cond, vector, scalar, [elt] * dl.num_regs)
    return Regs(ty, regs)


def store_block(L: LoweringContext, bp: BlockPtr, val: Regs, dims: list[int], known: PtrDiv | None = None) -> None:
    """tt.store of a register tensor through a block pointer (`known`: as in load_block)."""
    ty = val.ty
    elt = ty.element_type
    dl = distributed(ty.encoding, ty.get_shape())
    coords = L.coords(dl)
    fast = fast_dim(ty)
    run = contiguous_run(dl, fast, max(1, 16 // esize(elt)))

    def store_at(g: list[SSAValue], words: list[SSAValue], addr: SSAValue | None = None) -> None:
        """One bounds-checked global store of `words` starting at global element `g` (at `addr`
        where the caller has it)."""
        addr = global_addr(L, bp, g, elt) if addr is None else addr
        L.em.op(ptx.StGlobalOp(addr, words, mask=in_bounds(L, bp, g, dims)))

    def scalar() -> list[SSAValue]:
        addr_of = register_addrs(L, bp, dl, coords, elt)
        for r in range(dl.num_regs):
            g = global_coords(L, bp, coords[r])
            store_at(g, [val.regs[r]], addr_of(r, g))
        return []

    def vector() -> list[SSAValue]:
        addr_of = register_addrs(L, bp, dl, coords, elt)
        for r0 in range(0, dl.num_regs, run):
            g = global_coords(L, bp, coords[r0])
            store_at(g, pack_words(L, val.regs[r0:r0 + run]), addr_of(r0, g))
        return []

    def pieces() -> list[SSAValue]:
        """The layout's own runs: vectors of `run` where aligned, else one element at a time."""
        if run == 1:
            return scalar()
        if known is not None and known.vectors_aligned(fast, run, dims):
            return vector()
        _two_paths(L, vector_ok(L, bp, fast, run, dims), vector, scalar, [])
        return []

    plan = transpose_plan(dl, esize(elt), fast)  # an MMA tile: 16-byte stores after a quad transpose
    if plan is None:
        pieces()
        return

    def transposed() -> list[SSAValue]:
        store_transposed(L, plan, val.regs, coords, lambda pair: pack_words(L, pair),
                         lambda coord, words: store_at(global_coords(L, bp, coord), words))
        return []

    if known is not None and known.vectors_aligned(fast, CHUNK, dims):
        transposed()
        return
    _two_paths(L, vector_ok(L, bp, fast, CHUNK, dims), transposed, pieces, [])


# ---------------------------------------------------------------------------------------
# Shared memory


def smem_offset(L: LoweringContext, enc: SharedEncodingAttr, row: SSAValue, col: SSAValue, row_len: int,
                rows: int = 0) -> SSAValue:
    """Element offset of (row, col) under the swizzle (col's low log2(vec) bits pass through):
    `SharedEncodingAttr.swizzled_offset` evaluated on IR values, emitting its arith ops."""
    return enc.swizzled_offset(_Emitted(L.em, row), _Emitted(L.em, col), row_len, rows).value


class _Emitted:
    """An i32 IR value whose `+ * // % ^` (with another one or an int) emit the lowering's
    folding arith ops (`em.add`, `em.mul`, `em.divu`, `em.remu`, `em.xor`; operands unsigned):
    what `sparsecc.analysis.swizzle` computes on, to build a swizzled offset in the IR."""

    __slots__ = ("em", "value")

    def __init__(self, em: Emitter, value: SSAValue):
        self.em = em
        self.value = value

    @staticmethod
    def _of(x: _Emitted | int) -> SSAValue | int:
        return x.value if isinstance(x, _Emitted) else x

    def __add__(self, other: _Emitted | int) -> _Emitted:
        return _Emitted(self.em, self.em.add(self.value, self._of(other)))

    def __mul__(self, other: _Emitted | int) -> _Emitted:
        return _Emitted(self.em, self.em.mul(self.value, self._of(other)))

    def __xor__(self, other: _Emitted | int) -> _Emitted:
        return _Emitted(self.em, self.em.xor(self.value, self._of(other)))

    def __floordiv__(self, d: int) -> _Emitted:
        return _Emitted(self.em, self.em.divu(self.value, d))

    def __mod__(self, d: int) -> _Emitted:
        return _Emitted(self.em, self.em.remu(self.value, d))


def smem_addr(L: LoweringContext, sm: Smem, idx: tuple[SSAValue, ...]) -> SSAValue:
    """Shared address of element idx (rank-1 and rank-2 views; rank 3+ row-major unswizzled)."""
    shape = sm.ty.get_shape()
    enc = sm.ty.encoding
    assert isinstance(enc, SharedEncodingAttr)
    em = L.em
    if len(shape) == 1:
        off = idx[0]
    elif len(shape) == 2:
        off = smem_offset(L, enc, *stored_coords(enc, idx[0], idx[1], shape))
    elif enc.max_phase == 1 and tuple(enc.order) == tuple(range(len(shape) - 1, -1, -1)):
        off = em.c(0)  # an unswizzled row-major scratch of rank 3+ (a reduce's, a convert's)
        for d in range(len(shape)):
            off = em.add(em.mul(off, shape[d]), idx[d])
    else:
        raise LoweringError(f"shared-memory access of rank {len(shape)} (use ttg.memdesc_subview first)")
    return em.add(sm.addr, em.mul(off, esize(sm.ty.element_type)))


def shared_run(sm_ty: MemDescType, dl: DistLayout, fast: int, elt: Attribute) -> int:
    enc = sm_ty.encoding
    assert isinstance(enc, SharedEncodingAttr)
    limit = max(1, 16 // esize(elt))
    contiguous = enc.order[0] if len(dl.shape) == 2 else len(dl.shape) - 1
    if fast != contiguous:
        return 1
    if enc.max_phase > 1 and not enc.meta_pack:
        limit = min(limit, enc.vec)
    if enc.col_block:
        limit = min(limit, enc.col_block)
    return contiguous_run(dl, fast, limit)


def store_shared(L: LoweringContext, sm: Smem, val: Regs) -> None:
    """Registers -> shared buffer with its swizzle (vectorized along the contiguous dim).
    A wgmma group in flight may read shared memory: drained first, except the one a ring loop
    keeps (`groups.shared_keep`, `analysis.kloops.ring_in_flight`: no wgmma reads a scratch)."""
    L.wgmma_drain(keep=L.groups.shared_keep)
    ty = val.ty
    elt = ty.element_type
    dl = distributed(ty.encoding, ty.get_shape())
    coords = L.coords(dl)
    run = shared_run(sm.ty, dl, fast_dim(ty), elt)
    L.before_shared_write()
    for r0 in range(0, dl.num_regs, run):
        addr = smem_addr(L, sm, coords[r0])
        L.em.op(ptx.StSharedOp(addr, pack_words(L, val.regs[r0:r0 + run])))
    L.after_shared_write()


def load_shared(L: LoweringContext, sm: Smem, ty: TensorType) -> Regs:
    """Shared buffer -> registers of a blocked/mma/slice layout."""
    elt = ty.element_type
    dl = distributed(ty.encoding, ty.get_shape())
    coords = L.coords(dl)
    run = shared_run(sm.ty, dl, fast_dim(ty), elt)
    L.before_shared_read()
    out: list[SSAValue] = []
    for r0 in range(0, dl.num_regs, run):
        wt, wn = word_type(elt, run)
        op = L.em.op(ptx.LdSharedOp(smem_addr(L, sm, coords[r0]), wt, wn))
        out += unpack_words(L, list(op.results), elt, run)
    return Regs(ty, out)


# ---------------------------------------------------------------------------------------
# Async copies (global -> shared)


def async_copy(L: LoweringContext, bp: BlockPtr, sm: Smem, dims: list[int], padding: int | None,
               war_barrier: bool = True, known: PtrDiv | None = None, guarded: bool = False) -> None:
    """cp.async.cg 16-byte chunks (zero-filled out of bounds) when aligned, else a synchronous
    ld.global + st.shared copy. Threads take chunks as the pointer's tile layout says. With
    `narrow_copies` (KernelConfig), a tile whose contiguous runs are 4 or 8 bytes (a quantized
    weight's scales: a few fp16 a row) is copied by cp.async.ca chunks of that size.
    `war_barrier=False`: the pipeline proved no read since the last barrier hits this slot.
    `guarded`: an mbarrier wait proved every reader of the slot, wgmma groups included, done."""
    tile = bp.ptr_type.pointee  # type: ignore[attr-defined]
    assert isinstance(tile, TensorType)
    elt = tile.element_type
    if padding == 2:
        raise LoweringError("ttg.async_copy_global_to_local: NaN padding is not supported")
    enc = tile.encoding
    if not isinstance(enc, BlockedEncodingAttr):
        raise LoweringError("ttg.async_copy_global_to_local: the block pointer's tile needs a #ttg.blocked layout")
    dl = distributed(enc, tile.get_shape())
    coords = L.coords(dl)
    fast = fast_dim(tile)
    run = shared_run(sm.ty, dl, fast, elt)
    vec = 16 // esize(elt)
    if run < vec and L.cfg.narrow_copies:
        vec = next((n // esize(elt) for n in (8, 4) if n // esize(elt) and run % (n // esize(elt)) == 0), vec)
    if not guarded:
        # copies come before the dot: the group in flight is the last iteration's, maybe
        # reading this very slot
        L.wgmma_drain()
        if war_barrier:
            L.before_shared_write()

    def fast_path() -> list[SSAValue]:
        if not any(dl.wrap):
            _async_copy_strided(L, bp, sm, dl, dims, vec)
            return []
        for r0 in range(0, dl.num_regs, vec):
            g = global_coords(L, bp, coords[r0])
            src = global_addr(L, bp, g, elt)
            dst = smem_addr(L, sm, coords[r0])
            mask = in_bounds(L, bp, g, dims)
            owner = first_replica(L, dl, r0)

            def copy(dst=dst, src=src, mask=mask) -> list[SSAValue]:
                _cp_async(L, dst, src, mask, vec * esize(elt))
                return []

            if owner is None:
                copy()
            else:
                _two_paths(L, owner, copy, lambda: [], [])
        return []

    def slow_path() -> list[SSAValue]:
        loaded = load_block_scalar(L, bp, tile, dl, coords, dims)
        for r0 in range(0, dl.num_regs, run):
            L.em.op(ptx.StSharedOp(smem_addr(L, sm, coords[r0]), pack_words(L, loaded[r0:r0 + run])))
        return []

    if run >= vec and known is not None and known.vectors_aligned(fast, vec, dims):
        fast_path()
    elif run >= vec:
        _two_paths(L, vector_ok(L, bp, fast, vec, dims), fast_path, slow_path, [])
    else:
        slow_path()


@functools.lru_cache(maxsize=256)
def _shared_deltas(dl: DistLayout, enc: SharedEncodingAttr, shape: tuple[int, ...], vec: int) -> tuple[int | None, ...]:
    """For registers r0 = 0, vec, 2*vec, ...: the shared offset of r0's element minus that of
    register 0's, when it is the same for every thread (else None). Cached: a pipelined loop
    copies the same tile into the same ring from the prologue and the body."""
    def soff(c: tuple[int, ...]) -> int:
        return enc.swizzled_offset(*stored_coords(enc, c[0], c[1], shape)) if len(c) == 2 else c[0]

    threads = [(warp, lane) for warp in range(max(1, _num_warps(dl))) for lane in range(32)]
    base = [soff(dl.coord(warp, lane, 0)) for warp, lane in threads]
    out: list[int | None] = []
    for r0 in range(0, dl.num_regs, vec):
        delta: int | None = None
        for (warp, lane), b in zip(threads, base):
            d = soff(dl.coord(warp, lane, r0)) - b
            if delta is None:
                delta = d
            elif d != delta:
                delta = None
                break
        out.append(delta)
    return tuple(out)


def _num_warps(dl: DistLayout) -> int:
    n = 1
    for terms in dl.base:
        for t in terms:
            if t.src == "warp":
                n = max(n, t.div * t.mod)
    return n


def _async_copy_strided(L: LoweringContext, bp: BlockPtr, sm: Smem, dl: DistLayout, dims: list[int], vec: int) -> None:
    """The cp.async fast path with few per-iteration instructions and registers.

    A chunk's element is thread base + a compile-time register offset (no wrap), so its
    address is (block pointer origin: uniform) + (thread base term: loop invariant, hoisted)
    + (register offset x strides: uniform); its bounds test is one unsigned compare of the
    chunk's coordinate (offset + thread base + register offset) with the extent. Shared
    destinations reuse the first chunk's swizzled offset plus a constant when the swizzle
    allows (checked for every thread at compile time).
    """
    em = L.em
    tile = bp.ptr_type.pointee  # type: ignore[attr-defined]
    elt = tile.element_type
    esz = esize(elt)
    rank = len(dl.shape)
    bases = [em.term_sum(terms, L.ids.lane, L.ids.warp) for terms in dl.base]
    toff = em.c(0, i64)
    origin = em.c(0, i64)
    for d in range(rank):
        toff = em.add(toff, em.mul(em.ext64(bases[d]), bp.strides[d]))
        origin = em.add(origin, em.mul(em.ext64(bp.offsets[d]), bp.strides[d]))
    tptr = em.add(em.add(bp.base, em.mul(origin, esz)), em.mul(toff, esz))
    # in bounds along d <=> 0 <= offset + base + roff < shape <=> (u32)(offset + base + roff) <u
    # min(shape, 2**31 - 1): one add and one unsigned compare per chunk, also for offsets < 0
    # (coordinates stay below 2**31)
    limits, gbase = {}, {}
    for d in dims:
        limits[d] = em.to32(em.val(arith.MinSIOp(bp.shape[d], em.c(2**31 - 1, i64))))
        gbase[d] = em.add(bp.offsets[d], bases[d])
    enc = sm.ty.encoding
    assert isinstance(enc, SharedEncodingAttr)
    shape = sm.ty.get_shape()

    deltas = _shared_deltas(dl, enc, tuple(shape), vec) if len(shape) <= 2 else None
    dst0 = smem_addr(L, sm, L.coords(dl)[0])
    for r0 in range(0, dl.num_regs, vec):
        roff = dl.regs[r0]
        delta = em.c(0, i64)
        for d in range(rank):
            if roff[d]:
                delta = em.add(delta, em.mul(bp.strides[d], roff[d] * esz))
        src = em.add(tptr, delta)
        pred = None
        for d in dims:
            p = em.cmp("ult", em.add(gbase[d], roff[d]), limits[d])
            pred = p if pred is None else em.band(pred, p)
        sd = deltas[r0 // vec] if deltas is not None else None
        dst = em.add(dst0, sd * esz) if sd is not None else smem_addr(L, sm, L.coords(dl)[r0])
        _cp_async(L, dst, src, pred, vec * esz)


def _cp_async(L: LoweringContext, dst: SSAValue, src: SSAValue, mask: SSAValue | None, size: int) -> None:
    """One cp.async of `size` bytes: `.cg` (L2 only) for 16, `.ca` for the 4 and 8 it does not take."""
    L.em.op(ptx.CpAsyncOp(dst, src, mask=mask, size=size, cache="cg" if size == 16 else "ca"))


def load_block_scalar(L: LoweringContext, bp: BlockPtr, tile: TensorType, dl: DistLayout, coords, dims) -> list[SSAValue]:
    elt = tile.element_type
    zero = pad_value(L, elt, 1)
    out = []
    for r in range(dl.num_regs):
        g = global_coords(L, bp, coords[r])
        pred = in_bounds(L, bp, g, dims)
        out.append(L.em.val(ptx.LdGlobalOp(global_addr(L, bp, g, elt), elt, 1, mask=pred,
                                           other=[zero] if pred is not None else [])))
    return out


__all__ = [
    "load_block",
    "store_block",
    "store_shared",
    "load_shared",
    "async_copy",
    "smem_addr",
    "smem_offset",
    "esize",
    "is_b16",
]

