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
            if esz != 2 and shape[0] * esz > 128 and (shape[0] * esz) % 128 == 0:
                # longer rows: 128-byte column blocks of N rows each, one atom per block
                return SharedEncodingAttr(*element_mode(128, esz), (0, 1), col_block=128 // esz)
            return mma_swizzle(shape[0], esz, order=(0, 1))
        return wgmma_swizzle(shape[1], elem_bytes(ty.element_type))
    if dot_op.is_sparse_meta:
        if shape[1] % META_GROUP_WORDS == 0:
            return SharedEncodingAttr(1, 1, 1, (1, 0), meta_pack=1)
        return SharedEncodingAttr(1, 1, 1, (1, 0))
    if dot_op.op_idx == 1 and kmajor:
        # K-major B (column-major in memory): keep it so, N rows of K, for 16-byte copies;
        # ldmatrix without .trans then yields mma's B fragments
        return mma_swizzle(shape[0], elem_bytes(ty.element_type), order=(0, 1))
    return mma_swizzle(shape[1], elem_bytes(ty.element_type))


__all__ = ["META_GROUP_WORDS", "elem_bytes", "mma_swizzle", "shared_encoding_for", "wgmma_swizzle"]
