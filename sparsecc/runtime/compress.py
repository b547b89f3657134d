"""2:4 pruning, compression to the NV24 format, and metadata encode/decode.

The NV24 format (the contract the compiler, the interpreter and the GPU kernels share):

* Dense ``A`` is ``M x K`` (float16 or bfloat16). Along K each row is cut into groups of 4
  consecutive columns; a group holds at most 2 nonzeros (NaN counts as nonzero).
* ``values`` is ``M x K/2`` (same dtype, contiguous): group ``g`` of row ``m`` with kept positions
  ``idx0 < idx1`` stores ``A[m, 4g+idx0]`` at ``values[m, 2g]`` and ``A[m, 4g+idx1]`` at
  ``values[m, 2g+1]``.
* ``meta`` is int16, ``ceil(M/16) x K`` (contiguous). The 16-bit word of row ``m`` and 16-column
  chunk ``c`` lives at ``meta[m // 16, 16*c + m % 16]``. In it, group ``j`` of the chunk (columns
  ``16c+4j .. 16c+4j+3``) occupies bits ``4j..4j+3``: ``idx0`` in bits ``4j..4j+1``, ``idx1`` in
  bits ``4j+2..4j+3`` (PTX ``mma.sp::ordered_metadata``: the smaller index in the low bits). Words
  are stored as int16 two's complement (``0b1000111001001101`` is stored as -29107).
* A group with fewer than 2 nonzeros keeps its nonzero position(s) and is filled up with the lowest
  unused positions; an all-zero group is ``(0, 1)`` with values ``0, 0``.
* K must be a multiple of 16. M may be anything >= 1: rows past M up to the next multiple of 16
  exist only in ``meta`` and hold ``0x4444`` (``(0, 1)`` in every group, int16 17476), so a kernel
  can always load whole 16-row metadata blocks.

Everything here is vectorized torch code (the only Python loops run over the 4 nibbles of a word)
so it runs unchanged on CPU and CUDA tensors.
"""

from __future__ import annotations

import math

import torch

from sparsecc.runtime.sparse_tensor import (
    GROUP,
    META_CHUNK,
    META_PAD_WORD,
    SUPPORTED_DTYPES,
    SparseTensor,
)

__all__ = [
    "compress",
    "decode_meta",
    "decode_meta_tile",
    "decompress",
    "encode_meta",
    "prune_2to4",
]

_NIBBLES = META_CHUNK // GROUP  # groups per 16-bit metadata word


def prune_2to4(dense: torch.Tensor) -> torch.Tensor:
    """A copy of `dense` with only the 2 largest-|x| entries of every group of 4 (last dim) kept.

    Ties go to the lower index, and NaN ranks as the largest magnitude, so the result is always
    2:4 sparse and `compress` accepts it. Works for any float dtype and any leading dims.
    """
    if not isinstance(dense, torch.Tensor):
        raise TypeError(f"prune_2to4 expects a torch.Tensor, got {type(dense).__name__}")
    if not dense.is_floating_point():
        raise TypeError(f"prune_2to4 expects a floating-point tensor, got dtype {dense.dtype}")
    if dense.dim() == 0 or dense.shape[-1] % GROUP != 0:
        raise ValueError(
            f"prune_2to4: the last dimension must be a multiple of {GROUP}, got shape "
            f"{tuple(dense.shape)}")
    x = dense.detach()
    # Rank in float32 (exact for every 16-bit and 8-bit float) so comparisons work on any dtype.
    key = x.abs() if x.element_size() >= 4 else x.float().abs()
    key = torch.where(torch.isnan(key), torch.full_like(key, math.inf), key)
    groups = key.reshape(*x.shape[:-1], x.shape[-1] // GROUP, GROUP)
    ki, kj = groups.unsqueeze(-1), groups.unsqueeze(-2)  # [..., i, j]
    pos = torch.arange(GROUP, device=x.device)
    lower = pos.unsqueeze(0) < pos.unsqueeze(1)  # [i, j]: j < i
    beaten_by = (kj > ki) | ((kj == ki) & lower)
    keep = (beaten_by.sum(-1) < 2).reshape(x.shape)
    return torch.where(keep, x, torch.zeros((), dtype=x.dtype, device=x.device))


def _check_dense(dense: torch.Tensor) -> None:
    """Shape/dtype validation of `compress`'s input, one clear message per problem."""
    if not isinstance(dense, torch.Tensor):
        raise TypeError(f"compress expects a torch.Tensor, got {type(dense).__name__}")
    if dense.dim() != 2:
        raise ValueError(
            f"compress expects a 2-D (M x K) tensor, got {dense.dim()}-D shape {tuple(dense.shape)}")
    if dense.dtype not in SUPPORTED_DTYPES:
        supported = ", ".join(str(d) for d in SUPPORTED_DTYPES)
        raise TypeError(f"compress: unsupported dtype {dense.dtype} (NV24 supports {supported})")
    m, k = dense.shape
    if m == 0 or k == 0:
        raise ValueError(f"compress: empty tensor of shape {tuple(dense.shape)} (M and K must be >= 1)")
    if k % META_CHUNK != 0:
        raise ValueError(
            f"compress: K = {k} is not a multiple of {META_CHUNK} (one int16 metadata word covers "
            f"{META_CHUNK} columns); pad K first")


def _check_2to4(groups: torch.Tensor, nonzero: torch.Tensor) -> None:
    """Raise naming the first (row-major) group with more than 2 nonzeros.

    One host sync on the happy path (`any`); the error path pays for a second one.
    """
    count = nonzero.sum(-1)
    bad = count > 2
    if not bool(bad.any()):
        return
    first = int(torch.argmax(bad.flatten().to(torch.uint8)))
    row, g = divmod(first, groups.shape[1])
    n = int(count[row, g])
    nans = int(torch.isnan(groups[row, g]).sum())
    nan_note = f", {nans} of them NaN (NaN counts as nonzero)" if nans else ""
    raise ValueError(
        f"not 2:4 sparse: row {row}, columns {GROUP * g}..{GROUP * g + GROUP - 1} have {n} nonzeros"
        f"{nan_note} (at most 2 allowed); use sparsecc.prune_2to4 first")


def _select_indices(nonzero: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Kept positions (idx0 < idx1) per group: the nonzeros, topped up with the lowest free slots."""
    zero = ~nonzero
    need = (2 - nonzero.sum(-1, keepdim=True)).clamp_min(0)
    zero_rank = torch.cumsum(zero.to(torch.int8), dim=-1) - 1  # rank among the group's zeros
    selected = nonzero | (zero & (zero_rank < need))
    pos = torch.arange(GROUP, device=nonzero.device)
    idx0 = torch.where(selected, pos, GROUP).amin(-1)
    idx1 = torch.where(selected, pos, -1).amax(-1)
    return idx0, idx1


def encode_meta(idx0: torch.Tensor, idx1: torch.Tensor) -> torch.Tensor:
    """Pack per-group kept indices (each M x K/4, values 0..3) into the NV24 `meta` array.

    Returns int16 of shape (ceil(M/16), K), padding rows set to 0x4444. Indices are taken as given
    (the caller guarantees idx0 < idx1; hardware requires it for ordered metadata).
    """
    if idx0.shape != idx1.shape or idx0.dim() != 2:
        raise ValueError(
            f"encode_meta: idx0 and idx1 must be 2-D of equal shape, got {tuple(idx0.shape)} and "
            f"{tuple(idx1.shape)}")
    m, n_groups = idx0.shape
    if n_groups % _NIBBLES != 0:
        raise ValueError(f"encode_meta: groups per row ({n_groups}) must be a multiple of {_NIBBLES}")
    device = idx0.device
    nib = (idx0.to(torch.int32) & 3) | ((idx1.to(torch.int32) & 3) << 2)
    shifts = torch.arange(0, 4 * _NIBBLES, 4, dtype=torch.int32, device=device)
    words = (nib.reshape(m, n_groups // _NIBBLES, _NIBBLES) << shifts).sum(-1, dtype=torch.int32)
    mb = -(-m // META_CHUNK)
    padded = torch.full((mb * META_CHUNK, words.shape[1]), META_PAD_WORD, dtype=torch.int32,
                        device=device)
    padded[:m] = words
    signed = torch.where(padded >= 0x8000, padded - 0x10000, padded).to(torch.int16)
    chunks = n_groups // _NIBBLES
    # word (row r, chunk c) -> meta[r // 16, 16*c + r % 16]
    return (signed.reshape(mb, META_CHUNK, chunks).transpose(1, 2)
            .reshape(mb, chunks * META_CHUNK).contiguous())


def decode_meta(meta: torch.Tensor, rows: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Unpack a `meta` array (or tile) of shape (MB, K) into per-group indices (rows x K/4 each).

    `rows` defaults to 16*MB; pass M to drop the padding rows. Returned tensors are int64.
    """
    if meta.dim() != 2 or meta.dtype.is_floating_point or meta.dtype == torch.bool:
        raise ValueError(f"decode_meta: meta must be a 2-D integer tensor, got {meta.dtype} "
                         f"shape {tuple(meta.shape)}")
    mb, k = meta.shape
    if k % META_CHUNK != 0:
        raise ValueError(f"decode_meta: meta width {k} is not a multiple of {META_CHUNK}")
    rows = mb * META_CHUNK if rows is None else rows
    if not 0 <= rows <= mb * META_CHUNK:
        raise ValueError(f"decode_meta: {rows} rows do not fit {mb} metadata row blocks")
    words = (meta.to(torch.int32) & 0xFFFF).reshape(mb, k // META_CHUNK, META_CHUNK)
    words = words.transpose(1, 2).reshape(mb * META_CHUNK, k // META_CHUNK)[:rows]
    shifts = torch.arange(0, 4 * _NIBBLES, 4, dtype=torch.int32, device=meta.device)
    nib = (words.unsqueeze(-1) >> shifts) & 0xF  # (rows, K/16, 4)
    nib = nib.reshape(rows, k // GROUP).to(torch.int64)
    return nib & 3, (nib >> 2) & 3


def decode_meta_tile(values_tile: torch.Tensor, meta_tile: torch.Tensor) -> torch.Tensor:
    """The dense (BM, BK) tile that a values tile (BM, BK/2) and its meta tile (ceil(BM/16), BK) encode.

    The tiles are sub-blocks of the global arrays at a row offset that is a multiple of 16 and a
    dense column offset that is a multiple of 16 (so meta words are whole). This is what the
    interpreter and `SparseTensor.to_dense` use. Values are placed bit-exactly (no arithmetic); if
    a malformed word has idx0 == idx1, the second value wins.
    """
    if values_tile.dim() != 2 or meta_tile.dim() != 2:
        raise ValueError(
            f"decode_meta_tile: expected 2-D tiles, got values {tuple(values_tile.shape)} and meta "
            f"{tuple(meta_tile.shape)}")
    bm, half = values_tile.shape
    bk = 2 * half
    expected = (-(-bm // META_CHUNK), bk)
    if tuple(meta_tile.shape) != expected or bk % META_CHUNK != 0:
        raise ValueError(
            f"decode_meta_tile: values tile {tuple(values_tile.shape)} needs a meta tile of shape "
            f"{expected} with BK a multiple of {META_CHUNK}, got {tuple(meta_tile.shape)}")
    if meta_tile.device != values_tile.device:
        raise ValueError(f"decode_meta_tile: values on {values_tile.device}, meta on {meta_tile.device}")
    idx0, idx1 = decode_meta(meta_tile, bm)
    v = values_tile.reshape(bm, bk // GROUP, 2)
    v0, v1 = v[..., :1], v[..., 1:]
    pos = torch.arange(GROUP, device=values_tile.device)
    zero = torch.zeros((), dtype=values_tile.dtype, device=values_tile.device)
    dense = torch.where(pos == idx1.unsqueeze(-1), v1,
                        torch.where(pos == idx0.unsqueeze(-1), v0, zero))
    return dense.reshape(bm, bk)


def compress(dense: torch.Tensor) -> SparseTensor:
    """Compress a 2:4-sparse M x K fp16/bf16 matrix to NV24 (see the module docstring).

    K must be a multiple of 16; any M >= 1 works (meta is padded to a multiple of 16 rows with
    0x4444 words). Raises if the data is not 2:4 sparse, naming the first bad group. Outputs live
    on the input's device.
    """
    _check_dense(dense)
    x = dense.detach()
    m, k = x.shape
    groups = x.reshape(m, k // GROUP, GROUP)
    nonzero = groups != 0  # NaN != 0, so NaN counts as nonzero
    _check_2to4(groups, nonzero)
    idx0, idx1 = _select_indices(nonzero)
    values = torch.gather(groups, -1, torch.stack((idx0, idx1), dim=-1)).reshape(m, k // 2)
    return SparseTensor(values.contiguous(), encode_meta(idx0, idx1), (m, k))


def decompress(sparse: SparseTensor) -> torch.Tensor:
    """The dense M x K matrix of a SparseTensor (same as `sparse.to_dense()`)."""
    return decode_meta_tile(sparse.values, sparse.meta)
