"""`tritongpu-coalesce-mma-stores`: a transposed store of an MMA tile goes through shared memory.

An MMA accumulator tile (`#ttg.mma`) puts a warp's lanes on the tile's rows 8 at a time and
gives each thread pairs of adjacent *columns*. When the memory the tile is stored to is
contiguous along the rows instead (a block pointer of `order = [0, 1]`: the product was
computed transposed, as bench/moe.py's MoE GEMM does, W (features x K) times x^T (K x
tokens) stored into y (tokens x features)), no two elements of a thread are adjacent in
memory and every element is one `st.global.b16`: for a 128x128 fp16 tile, 128 stores per
thread, each writing 2 bytes of a 32-byte sector.

Triton's answer, which this pass reproduces: convert the value to a blocked layout with
16-byte vectors along the memory's contiguous dim (`default_blocked` with that order) before
the store. The conversion is a round trip through a shared scratch buffer (handlers/layouts.py),
stored column-major and swizzled so that both the MMA-layout writes and the 16-byte reads are
free of bank conflicts (`codegen.mma_stmatrix.transposed_scratch_encoding`; on sm_90 the
writes are `stmatrix.trans`, four 8x8 blocks an instruction); the store then moves whole 16-byte
vectors, one bounds check each (the boundary check is on the other dim, constant along a
vector).

    sparsecc-opt kernel.mlir -p tritongpu-coalesce-mma-stores

Stores that already lie along the MMA's columns (a GEMM's usual row-major C) are left alone:
their epilogue gets 16-byte stores from a quad transpose in registers (codegen/mma_store.py).

With `tma-stores=true` (sm_90+), a 16-bit tile goes out by the tensor memory accelerator
instead, where three things hold: the kernel uses wgmma (the TMA swizzles by address bits, so
the tile must start on a 1 KiB boundary, which only a wgmma kernel's shared memory
guarantees); a tensor map describes its block pointer (`sparsecc.analysis.tma.tma_copy_plan`,
as for the TMA loads); and the memory's contiguous extent is a known multiple of 16 bytes (a
TMA store clips that dim to whole 16-byte chunks only). The value is written into a shared
tile laid out as TMA's swizzled boxes (`tma_store_encoding`, by `stmatrix.trans`), and one
thread stores the boxes while the others go on (`ttg.async_tma_store`); the TMA clips the
rows and columns out of bounds. The compute warps neither read the tile back nor hold
registers for its stores, so a persistent kernel's next tile starts sooner (fp8 11008x4096 at
512 tokens: 33.1 us against 34.1, NOTES stop 35); a data-parallel kernel gains nothing (its
CTA waits for the store before it exits), so the launches ask for it per kernel. Before the
tile is written again, and before the function returns, a `ttg.async_tma_store_wait` waits
until the TMA has read it.

    sparsecc-opt kernel.mlir -p 'tritongpu-coalesce-mma-stores{tma-stores=true}'

With `box-staging=true` as well, a TMA-stored tile of one wgmma warpgroup (whose warps each
hold rows of every box) is staged one box at a time (`ttg.box_staged = R`): its buffer holds
one box of `col_block` elements of dim 0 by R of dim 1, and the store writes a box, stores it,
waits until the TMA has read it, then writes the next. R is the most rows (all, then halves
down to `ttg.STAGED_ROWS_MIN`) with which the function fits its shared memory; ping-pong's
tritongpu-warp-specialize halves it further where two groups' buffers must fit.

    sparsecc-opt kernel.mlir -p 'tritongpu-coalesce-mma-stores{tma-stores=true box-staging=true}'
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, TensorType, i32
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from sparsecc.analysis.divisibility import Divisibility
from sparsecc.analysis.dtypes import esize
from sparsecc.analysis.kloops import uses_wgmma
from sparsecc.analysis.shared_memory import WGMMA_ALIGN, box_bytes, plan_shared, staged_row_counts
from sparsecc.analysis.swizzle import MODES, element_mode
from sparsecc.analysis.tma import tma_copy_plan
from sparsecc.dialects import ptx_targets, tt
from sparsecc.dialects import ttg as ttgd

VECTOR_BYTES = 16


def coalesced_layout(ty: TensorType, order: tuple[int, ...], num_warps: int) -> ttgd.BlockedEncodingAttr:
    """The blocked layout a store of `ty` into memory of `order` is written from: 16-byte
    vectors along order[0], lanes along it next.

        >>> from xdsl.dialects.builtin import f16
        >>> coalesced_layout(TensorType(f16, [128, 64]), (0, 1), 4).size_per_thread
        (8, 1)
    """
    from sparsecc.passes.convert_tt_to_ttg import default_blocked

    return default_blocked(tuple(ty.get_shape()), esize(ty.element_type), num_warps, order)


def transposed_store_target(store: tt.StoreOp) -> tuple[tt.MakeTensorPtrOp, TensorType] | None:
    """The block pointer and value type of a store this pass rewrites, or None: an unmasked
    2-D block-pointer store of a 16- or 32-bit `#ttg.mma` tile whose pointer (made by a
    `tt.make_tensor_ptr` used by this store only) is contiguous along dim 0, with at least a
    16-byte vector of rows."""
    ty = store.value.type
    if store.mask is not None or not isinstance(ty, TensorType) or len(ty.get_shape()) != 2:
        return None
    if not isinstance(ty.encoding, ttgd.MmaEncodingAttr) or esize(ty.element_type) not in (2, 4):
        return None
    make = store.ptr.owner
    if not isinstance(make, tt.MakeTensorPtrOp) or len(list(make.result.uses)) != 1:
        return None
    if tuple(make.order.get_values()) != (0, 1):
        return None
    if ty.get_shape()[0] * esize(ty.element_type) < VECTOR_BYTES:
        return None
    return make, ty


CTA_RESERVED = 1024
"""Shared memory the hardware reserves per CTA (sm_80 and later), besides what the kernel asks."""
REGISTERS_PER_SM = 65536
BASE_REGISTERS = 32
"""Registers per thread a kernel needs besides its accumulator (addresses, indices, loop
state): with the accumulator, a lower bound on what ptxas allocates."""


def _resident_ctas(smem: int, per_sm: int, reg_bound: int) -> int:
    """CTAs an SM can hold: by shared memory (each with its reserve) and by registers."""
    return min(per_sm // (smem + CTA_RESERVED), reg_bound)


def _fits(store: tt.StoreOp, ty: TensorType, limit: int | None, scratch: int | None = None) -> bool:
    """Whether the convert's scratch keeps the function within `limit` bytes of shared memory
    per block (None: no limit) and costs no resident CTA per SM: scratch buffers are not reused
    across ops (allocate-shared-memory), so a large tile after a deep pipeline may have no
    room, and a small kernel that ran two CTAs per SM could drop to one. An SM holds `limit`
    plus one CTA's reserve; registers bound the CTAs too, estimated from the fp32 accumulator
    the tile comes from (`BASE_REGISTERS` more per thread): a 256x128 tile on 8 warps runs one
    CTA per SM whatever its shared memory. Such a store stays as it was. `scratch`: bytes other
    than the whole tile's (a box-staged tile's one box)."""
    if limit is None:
        return True
    func = _enclosing_func(store)
    if func is None:
        return True
    _, total = plan_shared(func)
    elements = math.prod(ty.get_shape())
    if scratch is None:
        scratch = elements * esize(ty.element_type)
    after = -(-total // WGMMA_ALIGN) * WGMMA_ALIGN + scratch + (0 if total else WGMMA_ALIGN)
    threads = 32 * ty.encoding.num_warps
    regs = -(-(elements // threads + BASE_REGISTERS) // 8) * 8
    reg_bound = max(1, REGISTERS_PER_SM // (regs * threads))
    per_sm = limit + CTA_RESERVED
    return after <= limit and _resident_ctas(after, per_sm, reg_bound) >= _resident_ctas(total, per_sm, reg_bound)


def tma_store_encoding(ty: TensorType) -> ttgd.SharedEncodingAttr:
    """The shared layout of a TMA-stored tile that is contiguous along dim 0 (order [0, 1]):
    dim 0 cut into blocks as wide as the widest hardware swizzle it fills (128, 64 or 32 bytes),
    each block one TMA box of the tile's dim-1 rows.

        >>> from xdsl.dialects.builtin import f16
        >>> enc = tma_store_encoding(TensorType(f16, [128, 128]))
        >>> enc.vec, enc.max_phase, enc.order, enc.col_block
        (8, 8, (0, 1), 64)
    """
    elt = esize(ty.element_type)
    rows = ty.get_shape()[0]
    for width in MODES:
        if (rows * elt) % width == 0:
            return ttgd.SharedEncodingAttr(*element_mode(width, elt), (0, 1), col_block=width // elt)
    return ttgd.SharedEncodingAttr(1, 1, 1, (0, 1))


def box_staging_applies(tile: ttgd.MemDescType, value: TensorType) -> bool:
    """Whether a TMA-stored `tile` of `value` can go box by box (`ttg.box_staged`): it has two or
    more boxes along dim 0, and the value's MMA warps along dim 0 (16 rows each) fit in one box,
    so that every warp writes part of every box.

        >>> from xdsl.dialects.builtin import bf16
        >>> tile = ttgd.MemDescType([128, 128], bf16, tma_store_encoding(TensorType(bf16, [128, 128])))
        >>> mma = lambda w: TensorType(bf16, [128, 128], ttgd.MmaEncodingAttr([w, 1], 3, [64, 128]))
        >>> box_staging_applies(tile, mma(4)), box_staging_applies(tile, mma(8))
        (True, False)
    """
    enc, mma = tile.encoding, value.encoding
    if not isinstance(enc, ttgd.SharedEncodingAttr) or not enc.col_block or not isinstance(mma, ttgd.MmaEncodingAttr):
        return False
    return tile.get_shape()[0] > enc.col_block and 16 * mma.warps_per_cta[0] <= enc.col_block


def _staged_rows(store: tt.StoreOp, tile: ttgd.MemDescType, limit: int | None) -> int | None:
    """The most rows a staged box of `tile` may hold with the function still fitting `limit`
    (`_fits` with one box as the scratch), or None where no count fits."""
    ty = store.value.type
    for rows in staged_row_counts(tile):
        if _fits(store, ty, limit, box_bytes(tile, rows)):
            return rows
    return None


def _tma_store_tile(make: tt.MakeTensorPtrOp, ty: TensorType, func: tt.FuncOp,
                    divs: Divisibility) -> ttgd.MemDescType | None:
    """The shared tile type a TMA store of `ty` through `make`'s block pointer goes through, or
    None when no tensor map describes the block pointer (the plan the lowering will make), the tile is not 16-bit, or
    the memory's contiguous extent is not a provable multiple of 16 bytes: a TMA store clips
    that dim only to whole 16-byte chunks (on the H100 a row of 1 or 65 fp16 elements got the
    rest of its last chunk written, NOTES stop 35)."""
    if esize(ty.element_type) != 2 or (divs.of(make.shape[0]) * esize(ty.element_type)) % 16:
        return None
    tile = ttgd.MemDescType(ty.get_shape(), ty.element_type, tma_store_encoding(ty))
    return tile if tma_copy_plan(make.result, tile, func, divs) is not None else None


def _enclosing_func(op: Operation) -> tt.FuncOp | None:
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, tt.FuncOp):
        parent = parent.parent_op()
    return parent


def _store_by_tma(store: tt.StoreOp, make: tt.MakeTensorPtrOp, tile: ttgd.MemDescType, rows: int | None) -> None:
    """`store` as: wait for the tile's earlier TMA stores, write the value into a shared tile,
    TMA-store it; with `rows`, the tile is staged one box of that many rows of dim 1 at a time
    (`ttg.box_staged`)."""
    alloc = ttgd.LocalAllocOp(tile, store.value)
    if rows is not None:
        alloc.attributes[ttgd.BOX_STAGED] = IntegerAttr(rows, i32)
    for new in (ttgd.AsyncTmaStoreWaitOp(0), alloc, ttgd.AsyncTmaStoreOp(make.result, alloc.result)):
        Rewriter.insert_op(new, InsertPoint.before(store))
    Rewriter.erase_op(store)


def _wait_before_returns(func: tt.FuncOp) -> None:
    """A `ttg.async_tma_store_wait` before each return of `func`: the CTA's shared memory stays
    until its last TMA store has read it."""
    for op in list(func.walk()):
        if isinstance(op, tt.ReturnOp):
            Rewriter.insert_op(ttgd.AsyncTmaStoreWaitOp(0), InsertPoint.before(op))


def coalesce_mma_stores(root: Operation, smem_limit: int | None = None, tma_stores: bool = False,
                        box_staging: bool = False) -> int:
    """Rewrite every qualifying store under `root` (see the module docstring) whose scratch
    fits in `smem_limit` bytes of shared memory per block; with `tma_stores`, those a tensor
    map describes as TMA stores. The count."""
    done = 0
    analyses: dict[tt.FuncOp, Divisibility] = {}
    for op in list(root.walk()):
        if not isinstance(op, tt.StoreOp):
            continue
        target = transposed_store_target(op)
        if target is None:
            continue
        make, ty = target
        func = _enclosing_func(op)
        fits = _fits(op, ty, smem_limit)
        if tma_stores and func is not None and uses_wgmma(func):
            if func not in analyses:
                analyses[func] = Divisibility(func)
            tile = _tma_store_tile(make, ty, func, analyses[func])
            # a tile staged box by box (where every warp holds rows of every box: a wgmma tile
            # of one warpgroup, whose warps' 16-row slices repeat every 64 rows, one box; at 8
            # warps each box would be one warpgroup's alone and the other would wait) needs one
            # box of shared memory
            rows = _staged_rows(op, tile, smem_limit) if tile is not None and box_staging and \
                box_staging_applies(tile, ty) else None
            if tile is not None and (rows is not None or fits):
                _store_by_tma(op, make, tile, rows)
                done += 1
                continue
        if not fits:
            continue
        layout = coalesced_layout(ty, (0, 1), ty.encoding.num_warps)
        new_ty = TensorType(ty.element_type, ty.get_shape(), layout)
        cvt = ttgd.ConvertLayoutOp(op.value, new_ty)
        Rewriter.insert_op(cvt, InsertPoint.before(op))
        op.operands[1] = cvt.result
        # the block pointer's type carries the tile's layout: retype it (its only use is `op`)
        object.__setattr__(make.result, "_type", tt.PointerType(new_ty))
        done += 1
    for func in analyses:
        if any(isinstance(o, ttgd.AsyncTmaStoreOp) for o in func.walk()):
            _wait_before_returns(func)
    return done


@dataclass(frozen=True)
class CoalesceMmaStoresPass(ModulePass):
    """Store MMA tiles whose memory is contiguous along the rows through a blocked layout of
    16-byte vectors (see the module docstring).

    Accepts: ttgir. Guarantees: each unmasked 2-D block-pointer store of a 16/32-bit `#ttg.mma`
    tile into memory with `order = [0, 1]` (its pointer used by that store alone) stores a
    `ttg.convert_layout` of the value to `coalesced_layout`, where the function's shared
    memory leaves room for the convert's scratch on `target` (default: the module's
    `ttg.target`); with `tma_stores` on sm_90+, a 16-bit one of a wgmma function whose block
    pointer a tensor map describes (row stride and contiguous extent known multiples of 16
    bytes) is instead a `ttg.local_alloc` of the value (`tma_store_encoding`) and a
    `ttg.async_tma_store` of it, after a `ttg.async_tma_store_wait`, and the function waits
    once more before each return; everything else is unchanged.
    """

    name = "tritongpu-coalesce-mma-stores"
    target: str = ""
    tma_stores: bool = False
    box_staging: bool = False
    """With `tma-stores`: stage a one-warpgroup wgmma tile one box at a time (`ttg.box_staged`),
    each box `col_block` elements of dim 0 by as many of dim 1 as fit the shared memory
    (`staged_row_counts`: all of them, then halves down to 16)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        target = self.target or ttgd.module_target(op)
        limit = ptx_targets.MAX_SHARED_BYTES.get(ptx_targets.normalize_target(target)) if target else None
        tma = self.tma_stores and target is not None and ptx_targets.satisfies(target, "sm_90")
        coalesce_mma_stores(op, limit, tma, self.box_staging)
