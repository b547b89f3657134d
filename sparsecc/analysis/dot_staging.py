"""The shared-memory layout each dot operand is staged in: what sparse-gpu-encoding gives a
loaded operand, and what the lowering gives an operand computed in registers (one rule for
both, so that the two agree)."""

from __future__ import annotations

from xdsl.dialects.builtin import TensorType

from sparsecc.analysis.swizzle import MODES, element_mode, mma_swizzle_params
from sparsecc.dialects.ttg import (
    BlockedEncodingAttr,
    DotOperandEncodingAttr,
    MmaEncodingAttr,
    SharedEncodingAttr,
)

META_GROUP_WORDS = 64
"""NV24 words that one 8x8 ldmatrix matrix of metadata covers (2 K-steps of 32 x 16 rows)."""


def elem_bytes(elt) -> int:
    """Bytes per element (at least 1)."""
    return max(1, elt.bitwidth // 8)


def mma_swizzle(row_len: int, elem_bytes: int, order: tuple[int, ...] = (1, 0)) -> SharedEncodingAttr:
    """Triton's MMAv2 swizzle for a tile whose contiguous rows have `row_len` elements."""
    return SharedEncodingAttr(*mma_swizzle_params(row_len, elem_bytes), order)


def wgmma_swizzle(row_len: int, elem_bytes: int) -> SharedEncodingAttr:
    """The wgmma canonical MN-major layout of a K x N operand tile (rows of `row_len` elements).

    The N columns are cut into blocks as wide as the widest swizzle a row fills (128, 64 or
    32 bytes), each block a K x block sub-tile with the XOR swizzle of that width: the layout
    the shared-memory matrix descriptor of `wgmma.mma_async` names with LBO = block pitch and
    SBO = 8 rows (ptx_wgmma's docstring).
    """
    for width in MODES:
        cols = width // elem_bytes
        if row_len % cols == 0:
            return SharedEncodingAttr(*element_mode(width, elem_bytes), (1, 0), col_block=cols)
    raise ValueError(f"a wgmma operand row of {row_len} elements fills no 32/64/128-byte swizzle")


def kmajor_col_blocks(esz: int, order: tuple[int, int]) -> SharedEncodingAttr:
    """wgmma's canonical K-major layout for rows of K longer than 128 bytes: the K extent cut
    into 128-byte column blocks, each a (rows x 128 bytes) tile under the 128-byte swizzle, one
    block after the other. A descriptor then names a k step by the start address of its block
    plus the step's byte offset inside it (lower_dot's `_kmajor_step_offset`). `order` (1, 0)
    for an A (M rows of K), (0, 1) for a B stored as N rows of K.

        >>> kmajor_col_blocks(2, (1, 0)).col_block   # 16-bit: 64 elements a block
        64
    """
    return SharedEncodingAttr(*element_mode(128, esz), order, col_block=128 // esz)


def shared_encoding_for(dot_op: DotOperandEncodingAttr, ty: TensorType) -> SharedEncodingAttr:
    """The shared layout a dot operand of this class and type is staged in."""
    shape = ty.get_shape()
    if len(shape) != 2:
        raise ValueError(f"dot operands are 2-D, got shape {list(shape)}")
    parent = dot_op.parent
    src = ty.encoding
    kmajor = isinstance(src, BlockedEncodingAttr) and tuple(src.order) == (0, 1)
    if dot_op.op_idx == 1 and elem_bytes(ty.element_type) != 2:
        kmajor = True  # 8-bit / tf32 B is read K-major: an N-major tile is transposed on its way in
    if dot_op.op_idx == 1 and isinstance(parent, MmaEncodingAttr) and parent.version_major == 3:
        if kmajor:  # N rows of K: the canonical K-major layout (a row is one swizzle atom)
            esz = elem_bytes(ty.element_type)
            if shape[0] * esz > 128 and (shape[0] * esz) % 128 == 0:
                # longer rows: 128-byte column blocks of N rows each, one atom per block (8-bit
                # and tf32 B; 16-bit B of a dense dot: attention's K^T at head dim 128)
                return kmajor_col_blocks(esz, (0, 1))
            return mma_swizzle(shape[0], esz, order=(0, 1))
        return wgmma_swizzle(shape[1], elem_bytes(ty.element_type))
    if (dot_op.op_idx == 0 and dot_op.meta == -1 and isinstance(parent, MmaEncodingAttr)
            and parent.version_major == 3):
        esz = elem_bytes(ty.element_type)
        if shape[1] * esz > 128 and (shape[1] * esz) % 128 == 0:
            # a dense A read through a descriptor (lower_dot.load_frag) with rows longer than one
            # 128-byte atom (attention's Q at head dim 128): M x 128-byte column blocks
            return kmajor_col_blocks(esz, (1, 0))
    if dot_op.is_sparse_meta:
        if shape[1] % META_GROUP_WORDS == 0:
            return SharedEncodingAttr(1, 1, 1, (1, 0), meta_pack=1)
        return SharedEncodingAttr(1, 1, 1, (1, 0))
    if dot_op.op_idx == 1 and kmajor:
        # K-major B (column-major in memory): keep it so, N rows of K, for 16-byte copies;
        # ldmatrix without .trans then yields mma's B fragments
        return mma_swizzle(shape[0], elem_bytes(ty.element_type), order=(0, 1))
    return mma_swizzle(shape[1], elem_bytes(ty.element_type))


__all__ = ["META_GROUP_WORDS", "elem_bytes", "kmajor_col_blocks", "mma_swizzle", "shared_encoding_for", "wgmma_swizzle"]
