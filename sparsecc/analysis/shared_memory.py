"""How much shared memory each ttgir op needs, and where it goes: the model behind
allocate-shared-memory (sparsecc/passes/allocate_shared_memory.py), shared with the lowering,
which reads the result from the IR and sizes its scratch the same way.

A `ttg.local_alloc` needs its buffer; `ttg.convert_layout` a scratch the size of its source (a
round trip through shared memory; none when it renames registers, analysis/mma_rename.py), as do the shape ops (`tt.reshape`, `tt.trans`, `tt.join`,
`tt.split`, `tt.cat`) unless they only rename registers; `tt.reduce` the small cross-warp
exchange of its register plan (`reduce_scratch_bytes`: none when one warp holds each result); `tt.dequantize` room
for its operands that arrive in registers; a scalar `tt.atomic_rmw` whose old value is used a
word to broadcast thread 0's result. `shared_effects` says which of them read and write it,
for tritongpu-insert-barriers.
"""

from __future__ import annotations

import math

from xdsl.dialects import scf
from xdsl.dialects.builtin import IntegerAttr, TensorType, i1
from xdsl.ir import Operation, SSAValue

from sparsecc.analysis.dequantize import scales_in_registers
from sparsecc.analysis.dtypes import esize
from sparsecc.analysis.kloops import uses_wgmma
from sparsecc.analysis.mma_rename import renames_registers
from sparsecc.analysis.reduce_plan import exchange_bytes, fast_reduce_plan, value_words
from sparsecc.analysis.scan_plan import fast_scan_plan, scan_exchange_bytes
from sparsecc.analysis.shuffles import SHUFFLE_OPS, is_free, shuffle_of
from sparsecc.dialects import tt
from sparsecc.dialects import ttg as ttgd

SMEM_ALIGN = 128
"""Alignment of each shared buffer (bytes): 16-byte vector accesses need at least 16."""
WGMMA_ALIGN = 1024
"""Alignment of each shared buffer of a wgmma kernel, and of its `smem` base: wgmma's swizzle
atoms (8 rows x 128 B) start on 1 KiB boundaries."""


def atomic_needs_broadcast(op: tt.AtomicRMWOp) -> bool:
    """A scalar atomic whose old value is used: thread 0's result must reach every thread."""
    return not isinstance(op.ptr.type, TensorType) and bool(op.result.uses)


def dequantize_reads_in_place(v: SSAValue) -> bool:
    """Whether `v` is a `ttg.local_load` that only feeds `tt.dequantize`s: its lowering keeps the
    buffer, which the dequantization reads directly (no registers, no scratch)."""
    owner = v.owner
    return (isinstance(owner, ttgd.LocalLoadOp) and bool(v.uses)
            and all(isinstance(u.operation, tt.DequantizeOp) for u in v.uses))


def dequantize_padded_bytes(v: SSAValue) -> int:
    """A `tt.dequantize` operand tile's bytes in its scratch buffer, rounded up to 16."""
    ty = v.type
    assert isinstance(ty, TensorType)
    n = ty.get_shape()[0] * ty.get_shape()[1] * esize(ty.element_type)
    return -(-n // 16) * 16


def reduce_scratch_bytes(op: tt.ReduceOp) -> int:
    """A `tt.reduce`'s scratch: the cross-warp exchange of the register plan (one word per
    warp along the axis per result element and 32-bit word of its operands; none when one warp
    holds each whole result), or the whole source for the shared-memory path."""
    plan = fast_reduce_plan(op.src.type, op.axis.value.data, [r.type for r in op.res])
    if plan is None:
        ty = op.src.type
        return math.prod(ty.get_shape()) * esize(ty.element_type)
    words = sum(value_words(tt.element_type(v.type)) or 0 for v in op.srcs)
    return exchange_bytes(plan, tt.shape_of(op.result.type), words)


def scan_gather_scratch_bytes(op: tt.ScanOp | tt.GatherOp) -> int:
    """A `tt.scan`'s exchange of totals (`scan_plan`), or a `tt.gather`'s copy of its source
    (i1 stored as bytes)."""
    if isinstance(op, tt.GatherOp):
        ty = op.src.type
        return math.prod(ty.get_shape()) * max(1, esize(ty.element_type))
    plan = fast_scan_plan(op.src.type, op.axis.value.data)
    if plan is None:
        return 0
    words = sum(value_words(tt.element_type(v.type)) or 0 for v in op.srcs)
    return scan_exchange_bytes(plan, tt.shape_of(op.src.type), op.axis.value.data, words)


def shuffle_bytes(op: Operation) -> int:
    """The scratch of a shape op (tt.trans, tt.reshape, tt.join, tt.split, tt.cat) in ttgir: none
    when its lowering renames registers (`is_free`), else its shuffle's buffer (i1 as i16)."""
    if is_free(op):
        return 0
    shuffle = shuffle_of(op)
    assert shuffle is not None
    elt = op.operands[0].type.element_type
    return shuffle.size * max(2 if elt == i1 else 0, esize(elt))


def box_bytes(ty: ttgd.MemDescType, rows: int) -> int:
    """Bytes of one staged box of a column-blocked shared tile (`colBlock`): the block's elements
    of dim 0 by `rows` elements of dim 1; the buffer of a `ttg.box_staged` tile.

    Example: a 128x128 bf16 tile of 64-element blocks staged 64 rows a box: 8192."""
    return ty.encoding.col_block * rows * math.prod(ty.get_shape()[2:]) * esize(ty.element_type)


def staged_row_counts(tile: ttgd.MemDescType) -> list[int]:
    """The rows of dim 1 a staged box of `tile` may hold, most first: all of them, then halves
    down to `ttg.STAGED_ROWS_MIN` (fewer, larger boxes wait on the TMA fewer times).

    Example: a 128x128 tile: [128, 64, 32, 16]."""
    rows = tile.get_shape()[1]
    counts = []
    while rows >= ttgd.STAGED_ROWS_MIN and rows % ttgd.STAGED_ROWS_MIN == 0:
        counts.append(rows)
        rows //= 2
    return counts


def staged_rows(op: Operation) -> int | None:
    """The rows of dim 1 a `ttg.box_staged` allocation's box holds, or None for any other op."""
    attr = op.attributes.get(ttgd.BOX_STAGED) if isinstance(op, ttgd.LocalAllocOp) else None
    return attr.value.data if isinstance(attr, IntegerAttr) else None


def shared_size(op: Operation) -> int:
    """Bytes of shared memory `op` needs (its buffer, or scratch for a round trip), or 0.

    Example: a `ttg.local_alloc` of a 64x32 f16 memdesc needs 4096."""
    if isinstance(op, ttgd.LocalAllocOp):
        ty = op.result.type
        rows = staged_rows(op)
        if rows is not None:
            return box_bytes(ty, rows)
        return math.prod(ty.get_shape()) * esize(ty.element_type)
    if isinstance(op, tt.ReduceOp):
        return reduce_scratch_bytes(op)
    if isinstance(op, tt.ScanOp | tt.GatherOp):
        return scan_gather_scratch_bytes(op)
    if isinstance(op, SHUFFLE_OPS):
        return shuffle_bytes(op)
    if isinstance(op, ttgd.ConvertLayoutOp):
        ty = op.operands[0].type  # an i1 tensor round-trips as i16 (the lowering's stored type)
        if renames_registers(ty, op.result.type):
            return 0  # attention's P (the accumulator's registers become the next dot's A), alpha
        return math.prod(ty.get_shape()) * (2 if ty.element_type == i1 else esize(ty.element_type))
    if isinstance(op, tt.DequantizeOp):
        return sum(dequantize_padded_bytes(v) for v in op.operands
                   if not dequantize_reads_in_place(v) and not scales_in_registers(op, v))
    if isinstance(op, tt.AtomicRMWOp) and atomic_needs_broadcast(op):
        return 4
    return 0


READ, WRITE, WAR_WRITE, ROUND_TRIP, SYNC, LANDED = "read", "write", "war-write", "round-trip", "sync", "landed"
"""The shared-memory effects of an op's lowering, in order (`shared_effects`): a READ needs the
CTA's earlier writes done (RAW); a WRITE needs its earlier reads done (WAR); a WAR_WRITE is an
async copy whose data is only read after a `ttg.async_wait` (which barriers), so it only needs
the WAR order; a ROUND_TRIP writes a scratch and reads it back with its own barrier in between;
SYNC is a CTA barrier that is part of the op; LANDED: an mbarrier wait proved the writes done."""


def _wgmma(ty: object) -> bool:
    enc = getattr(ty, "encoding", None)
    if isinstance(enc, ttgd.DotOperandEncodingAttr):
        enc = enc.parent
    return isinstance(enc, ttgd.MmaEncodingAttr) and enc.version_major == 3


def shared_effects(op: Operation) -> tuple[str, ...]:
    """What `op`'s lowering does to shared memory, in order (see READ ... LANDED); () for
    nothing. Regions are not included (a loop or an if is analysed block by block).

    Example: `ttg.convert_layout` is (ROUND_TRIP,); `ttg.local_store` is (WRITE,)."""
    if isinstance(op, ttgd.LocalAllocOp):
        return (WRITE,) if op.src is not None else ()
    if isinstance(op, ttgd.LocalStoreOp):
        return (WRITE,)
    if isinstance(op, ttgd.LocalLoadOp):
        if dequantize_reads_in_place(op.result):
            return ()  # tt.dequantize reads the buffer itself
        enc = op.result.type.encoding
        if isinstance(enc, ttgd.DotOperandEncodingAttr) and enc.op_idx == 1 and _wgmma(op.result.type):
            return ()  # wgmma reads B through a descriptor: the dot is the read
        return (READ,)
    if isinstance(op, tt.DotOp):
        return (READ,) if _wgmma(op.result.type) else ()
    if isinstance(op, tt.ReduceOp):
        return (ROUND_TRIP,) if reduce_scratch_bytes(op) else ()
    if isinstance(op, tt.ScanOp | tt.GatherOp):
        return (ROUND_TRIP,) if scan_gather_scratch_bytes(op) else ()
    if isinstance(op, SHUFFLE_OPS):
        return (ROUND_TRIP,) if shuffle_bytes(op) else ()
    if isinstance(op, ttgd.ConvertLayoutOp):
        return () if renames_registers(op.src.type, op.result.type) else (ROUND_TRIP,)
    if isinstance(op, tt.DequantizeOp):
        return (ROUND_TRIP,) if shared_size(op) else (READ,)
    if isinstance(op, tt.AtomicRMWOp):
        scalar = not isinstance(op.ptr.type, TensorType)
        sync = (SYNC,) if scalar and op.memory_order in ("release", "acq_rel") else ()
        return sync + ((ROUND_TRIP,) if atomic_needs_broadcast(op) else ())
    if isinstance(op, ttgd.AsyncCopyGlobalToLocalOp):
        unsafe = ttgd.SLOT_SAFE not in op.attributes and ttgd.SLOT_GUARDED not in op.attributes
        return (WAR_WRITE,) if unsafe else ()
    if isinstance(op, ttgd.AsyncWaitOp | ttgd.InitBarrierOp | ttgd.BarrierOp | ttgd.AsyncTmaStoreWaitOp):
        return (SYNC,)
    if isinstance(op, ttgd.AsyncTmaStoreOp):
        return (SYNC, READ)  # its barrier follows every thread's writes; TMA then reads the tile
    if isinstance(op, ttgd.WaitBarrierOp):
        return (LANDED,)
    return ()


def plan_shared(func: tt.FuncOp) -> tuple[dict[Operation, int], int]:
    """Offsets of every shared buffer and scratch under `func` (in program order, aligned) and
    the total bytes (with room to align the base at run time in a wgmma kernel).

    Example: two 4 KiB local_allocs of a non-wgmma kernel get offsets 0 and 4096, total 8192."""
    wgmma = uses_wgmma(func)
    align = WGMMA_ALIGN if wgmma else SMEM_ALIGN
    offsets: dict[Operation, int] = {}
    off = 0
    for op in func.walk():
        size = shared_size(op)
        if size:
            off = -(-off // align) * align
            offsets[op] = off
            off += size
    order = order_barriers(func, offsets)
    if order is not None:  # a second copy of the compute groups' own buffers
        private = group_private(func, offsets)
        off = max(off, private[0] + 2 * private[1] if private else order)
    total = -(-off // align) * align if off else 0
    if total and wgmma:
        total += WGMMA_ALIGN  # room to align the base at run time
    if order is not None and order >= off:  # the two mbarriers after everything
        total += ORDER_BARRIER_BYTES
    return offsets, total


def group_private(func: tt.FuncOp, offsets: dict[Operation, int]) -> tuple[int, int] | None:
    """(start, stride) of the buffers each compute group of a ping-pong kernel (two groups,
    `ttg.consumer-groups`) has to itself in `offsets` (`plan_shared`'s, one group's): those
    placed from the outer ring loop on (its epilogue's staging tile and scratch; the rings and
    their barriers come before the loop and are shared). Group g's copy of a buffer at offset o
    is at o + g * stride. None for a function of one group or with no such buffer.

    Example: a ring of 160 KiB before the loop and a 32 KiB store tile in it: (163840, 32768)."""
    if ttgd.consumer_groups(func) != 2:
        return None
    loop = next((op for op in func.body.block.ops if isinstance(op, scf.WhileOp)), None)
    if loop is None:
        return None
    after = False
    start = None
    for op in func.walk():
        after = after or op is loop
        if after and op in offsets:
            start = offsets[op]
            break
    if start is None:
        return None
    align = WGMMA_ALIGN if uses_wgmma(func) else SMEM_ALIGN
    return start, -(-(_end(offsets) - start) // align) * align


ORDER_BARRIER_BYTES = 16
"""The two mbarriers by which a ping-pong kernel's compute groups hand the K loop over."""


def order_barriers(func: tt.FuncOp, offsets: dict[Operation, int]) -> int | None:
    """The offset of a ping-pong kernel's two ordering mbarriers (`ORDER_BARRIER_BYTES`): in the
    alignment gap before the groups' own buffers (`group_private`) where it has room, else
    after both groups' copies; None for a function of one group.

    Example: shared buffers ending at 214048 and group buffers from 215040: 214048."""
    if ttgd.consumer_groups(func) != 2:
        return None
    private = group_private(func, offsets)
    if private is None:
        return -(-_end(offsets) // 8) * 8
    shared_end = _end({op: off for op, off in offsets.items() if off < private[0]})
    gap = -(-shared_end // 8) * 8
    return gap if gap + ORDER_BARRIER_BYTES <= private[0] else private[0] + 2 * private[1]


def _end(offsets: dict[Operation, int]) -> int:
    """Where the last buffer of a plan ends."""
    return max((off + shared_size(op) for op, off in offsets.items()), default=0)


__all__ = ["LANDED", "READ", "ROUND_TRIP", "SMEM_ALIGN", "SYNC", "WAR_WRITE", "WGMMA_ALIGN", "WRITE",
           "atomic_needs_broadcast", "box_bytes", "staged_row_counts", "staged_rows", "reduce_scratch_bytes", "shared_effects", "dequantize_padded_bytes",
           "dequantize_reads_in_place", "group_private", "order_barriers", "plan_shared", "shared_size",
           "ORDER_BARRIER_BYTES"]
