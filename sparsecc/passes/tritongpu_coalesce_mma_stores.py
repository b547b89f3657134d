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
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from sparsecc.analysis.dtypes import esize
from sparsecc.analysis.shared_memory import WGMMA_ALIGN, plan_shared
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


def _fits(store: tt.StoreOp, ty: TensorType, limit: int | None) -> bool:
    """Whether the convert's scratch keeps the function within `limit` bytes of shared memory
    per block (None: no limit) and costs no resident CTA per SM: scratch buffers are not reused
    across ops (allocate-shared-memory), so a large tile after a deep pipeline may have no
    room, and a small kernel that ran two CTAs per SM could drop to one. An SM holds `limit`
    plus one CTA's reserve; registers bound the CTAs too, estimated from the fp32 accumulator
    the tile comes from (`BASE_REGISTERS` more per thread): a 256x128 tile on 8 warps runs one
    CTA per SM whatever its shared memory. Such a store stays as it was."""
    if limit is None:
        return True
    func = store.parent_op()
    while func is not None and not isinstance(func, tt.FuncOp):
        func = func.parent_op()
    if func is None:
        return True
    _, total = plan_shared(func)
    elements = math.prod(ty.get_shape())
    scratch = elements * esize(ty.element_type)
    after = -(-total // WGMMA_ALIGN) * WGMMA_ALIGN + scratch + (0 if total else WGMMA_ALIGN)
    threads = 32 * ty.encoding.num_warps
    regs = -(-(elements // threads + BASE_REGISTERS) // 8) * 8
    reg_bound = max(1, REGISTERS_PER_SM // (regs * threads))
    per_sm = limit + CTA_RESERVED
    return after <= limit and _resident_ctas(after, per_sm, reg_bound) >= _resident_ctas(total, per_sm, reg_bound)


def coalesce_mma_stores(root: Operation, smem_limit: int | None = None) -> int:
    """Rewrite every qualifying store under `root` (see the module docstring) whose scratch
    fits in `smem_limit` bytes of shared memory per block; the count."""
    done = 0
    for op in list(root.walk()):
        if not isinstance(op, tt.StoreOp):
            continue
        target = transposed_store_target(op)
        if target is None or not _fits(op, target[1], smem_limit):
            continue
        make, ty = target
        layout = coalesced_layout(ty, (0, 1), ty.encoding.num_warps)
        new_ty = TensorType(ty.element_type, ty.get_shape(), layout)
        cvt = ttgd.ConvertLayoutOp(op.value, new_ty)
        Rewriter.insert_op(cvt, InsertPoint.before(op))
        op.operands[1] = cvt.result
        # the block pointer's type carries the tile's layout: retype it (its only use is `op`)
        object.__setattr__(make.result, "_type", tt.PointerType(new_ty))
        done += 1
    return done


@dataclass(frozen=True)
class CoalesceMmaStoresPass(ModulePass):
    """Store MMA tiles whose memory is contiguous along the rows through a blocked layout of
    16-byte vectors (see the module docstring).

    Accepts: ttgir. Guarantees: each unmasked 2-D block-pointer store of a 16/32-bit `#ttg.mma`
    tile into memory with `order = [0, 1]` (its pointer used by that store alone) stores a
    `ttg.convert_layout` of the value to `coalesced_layout`, where the function's shared
    memory leaves room for the convert's scratch on `target` (default: the module's
    `ttg.target`); everything else is unchanged.
    """

    name = "tritongpu-coalesce-mma-stores"
    target: str = ""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        target = self.target or ttgd.module_target(op)
        limit = ptx_targets.MAX_SHARED_BYTES.get(ptx_targets.normalize_target(target)) if target else None
        coalesce_mma_stores(op, limit)
