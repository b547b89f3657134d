"""The torch side of a sparse format: checks, metadata words, values <-> dense tiles.

Driven by a `SparseFormat`'s data (group size, index bits, word width, row blocks, pad word;
`sparsecc.formats.nv24` documents NV24's layout bit by bit), for formats that keep 2 positions
per group. `sparsecc.compress` and `SparseTensor` build on it; the CPU interpreter decodes a
sparse dot's operand with `decode_meta_tile`.

Everything here is vectorized torch code (the only Python loops run over the groups of a word)
so it runs unchanged on CPU and CUDA tensors.
"""

from __future__ import annotations

import torch

from sparsecc.formats import INT, NV24, SparseFormat

__all__ = [
    "check_dense",
    "compress_arrays",
    "decode_meta",
    "decode_meta_tile",
    "encode_meta",
    "meta_array_dtype",
    "runtime_dtypes",
]


def runtime_dtypes(fmt: SparseFormat = NV24) -> tuple[torch.dtype, ...]:
    """The torch dtypes `compress` and `SparseTensor` take for `fmt`'s values."""
    return tuple(getattr(torch, e.torch_name) for e in fmt.runtime_element_types)


def _group_bits(fmt: SparseFormat) -> int:
    """Bits one group's kept indices take in a metadata word (4 for NV24 and NV12)."""
    return fmt.meta.group_bits


def _word_dtype(fmt: SparseFormat) -> torch.dtype:
    """The torch dtype of one metadata word (int16 for NV24 and NV12)."""
    return getattr(torch, fmt.meta.element.torch_name)


def meta_array_dtype(fmt: SparseFormat) -> torch.dtype:
    """The torch dtype of the stored metadata array (NV12 pairs its int16 words as int32)."""
    el = fmt.metadata.element
    return _word_dtype(fmt) if el is None else getattr(torch, el.torch_name)


def check_dense(dense: torch.Tensor, fmt: SparseFormat = NV24) -> None:
    """Shape/dtype validation of `compress`'s input, one clear message per problem."""
    if not isinstance(dense, torch.Tensor):
        raise TypeError(f"compress expects a torch.Tensor, got {type(dense).__name__}")
    if dense.dim() != 2:
        raise ValueError(
            f"compress expects a 2-D (M x K) tensor, got {dense.dim()}-D shape {tuple(dense.shape)}")
    dtypes = runtime_dtypes(fmt)
    if dense.dtype not in dtypes:
        supported = ", ".join(str(d) for d in dtypes)
        raise TypeError(f"compress: unsupported dtype {dense.dtype} ({fmt.name} supports {supported})")
    m, k = dense.shape
    if m == 0 or k == 0:
        raise ValueError(f"compress: empty tensor of shape {tuple(dense.shape)} (M and K must be >= 1)")
    cols = fmt.tile_multiple[1]
    if k % cols != 0:
        raise ValueError(
            f"compress: K = {k} is not a multiple of {cols} (one {fmt.meta.element.torch_name} "
            f"metadata word covers {cols} columns); pad K first")


def _check_groups(groups: torch.Tensor, nonzero: torch.Tensor, fmt: SparseFormat) -> None:
    """Raise naming the first (row-major) group with more nonzeros than the format keeps.

    One host sync on the happy path (`any`); the error path pays for a second one.
    """
    size, kept = fmt.group.size, fmt.group.kept
    count = nonzero.sum(-1)
    bad = count > kept
    if not bool(bad.any()):
        return
    first = int(torch.argmax(bad.flatten().to(torch.uint8)))
    row, g = divmod(first, groups.shape[1])
    n = int(count[row, g])
    nans = int(torch.isnan(groups[row, g]).sum())
    nan_note = f", {nans} of them NaN (NaN counts as nonzero)" if nans else ""
    raise ValueError(
        f"not {kept}:{size} sparse: row {row}, columns {size * g}..{size * g + size - 1} have {n} "
        f"nonzeros{nan_note} (at most {kept} allowed); use sparsecc.prune_{kept}to{size} first")


def _select_indices(nonzero: torch.Tensor, kept: int = 2) -> tuple[torch.Tensor, torch.Tensor]:
    """Kept positions (idx0 < idx1) per group: the nonzeros, topped up with the lowest free slots
    (`kept` = 1: idx0 = idx1 = the one kept position)."""
    size = nonzero.shape[-1]
    zero = ~nonzero
    need = (kept - nonzero.sum(-1, keepdim=True)).clamp_min(0)
    zero_rank = torch.cumsum(zero.to(torch.int8), dim=-1) - 1  # rank among the group's zeros
    selected = nonzero | (zero & (zero_rank < need))
    pos = torch.arange(size, device=nonzero.device)
    idx0 = torch.where(selected, pos, size).amin(-1)
    idx1 = torch.where(selected, pos, -1).amax(-1)
    return idx0, idx1


def _hw_indices(kept0: torch.Tensor, kept1: torch.Tensor, fmt: SparseFormat) -> tuple[torch.Tensor, torch.Tensor]:
    """The two 2:4 indices a group's word holds: its kept positions, or for a 1:2 format
    (`halves`) the two 16-bit halves (2i, 2i + 1) of its kept element i."""
    if fmt.meta.halves:
        return 2 * kept0, 2 * kept0 + 1
    return kept0, kept1


def encode_meta(idx0: torch.Tensor, idx1: torch.Tensor, fmt: SparseFormat = NV24) -> torch.Tensor:
    """Pack per-group kept indices (each M x K/4, values 0..3) into the format's `meta` array.

    Returns int16 of shape (ceil(M/16), K), padding rows set to 0x4444 (NV24's numbers; NV12's
    words pair up into int32, see `sparsecc.formats.nv12`). Indices are 2:4 positions, taken as
    given (the caller guarantees idx0 < idx1; hardware requires it for ordered metadata).
    """
    if idx0.shape != idx1.shape or idx0.dim() != 2:
        raise ValueError(
            f"encode_meta: idx0 and idx1 must be 2-D of equal shape, got {tuple(idx0.shape)} and "
            f"{tuple(idx1.shape)}")
    layout = fmt.meta
    per_word, bits, rows_per_block = layout.groups_per_word(fmt.group), layout.index_bits, layout.block_rows
    word = 1 << layout.element.bits
    m, n_groups = idx0.shape
    if n_groups % per_word != 0:
        raise ValueError(f"encode_meta: groups per row ({n_groups}) must be a multiple of {per_word}")
    device = idx0.device
    mask = (1 << bits) - 1
    nib = (idx0.to(torch.int32) & mask) | ((idx1.to(torch.int32) & mask) << bits)
    shifts = torch.arange(0, _group_bits(fmt) * per_word, _group_bits(fmt), dtype=torch.int32, device=device)
    words = (nib.reshape(m, n_groups // per_word, per_word) << shifts).sum(-1, dtype=torch.int32)
    mb = -(-m // rows_per_block)
    padded = torch.full((mb * rows_per_block, words.shape[1]), layout.pad_word, dtype=torch.int32,
                        device=device)
    padded[:m] = words
    signed = torch.where(padded >= word // 2, padded - word, padded).to(getattr(torch, layout.element.torch_name))
    chunks = n_groups // per_word
    # word (row r, chunk c) -> meta[r // 16, 16*c + r % 16]
    words16 = (signed.reshape(mb, rows_per_block, chunks).transpose(1, 2)
               .reshape(mb, chunks * rows_per_block).contiguous())
    return words16.view(meta_array_dtype(fmt))


def decode_meta(meta: torch.Tensor, rows: int | None = None,
                fmt: SparseFormat = NV24) -> tuple[torch.Tensor, torch.Tensor]:
    """Unpack a `meta` array (or tile) of shape (MB, K) into per-group indices (rows x K/4 each).

    `rows` defaults to 16*MB; pass M to drop the padding rows. Returned tensors are int64.
    """
    if meta.dim() != 2 or meta.dtype.is_floating_point or meta.dtype == torch.bool:
        raise ValueError(f"decode_meta: meta must be a 2-D integer tensor, got {meta.dtype} "
                         f"shape {tuple(meta.shape)}")
    layout = fmt.meta
    per_word, rows_per_block = layout.groups_per_word(fmt.group), layout.block_rows
    if meta.dtype != _word_dtype(fmt) and meta.element_size() > _word_dtype(fmt).itemsize:
        meta = meta.contiguous().view(_word_dtype(fmt))  # NV12: int32 pairs of int16 words
    mb, width = meta.shape
    if width % rows_per_block != 0:
        raise ValueError(f"decode_meta: meta width {width} is not a multiple of {rows_per_block}")
    chunks = width // rows_per_block
    rows = mb * rows_per_block if rows is None else rows
    if not 0 <= rows <= mb * rows_per_block:
        raise ValueError(f"decode_meta: {rows} rows do not fit {mb} metadata row blocks")
    words = (meta.to(torch.int32) & ((1 << layout.element.bits) - 1)).reshape(mb, chunks, rows_per_block)
    words = words.transpose(1, 2).reshape(mb * rows_per_block, chunks)[:rows]
    gbits = _group_bits(fmt)
    shifts = torch.arange(0, gbits * per_word, gbits, dtype=torch.int32, device=meta.device)
    nib = (words.unsqueeze(-1) >> shifts) & ((1 << gbits) - 1)  # (rows, chunks, groups per word)
    nib = nib.reshape(rows, chunks * per_word).to(torch.int64)
    mask = (1 << layout.index_bits) - 1
    return nib & mask, (nib >> layout.index_bits) & mask


def decode_meta_tile(values_tile: torch.Tensor, meta_tile: torch.Tensor,
                     fmt: SparseFormat = NV24) -> torch.Tensor:
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
    size, kept, cols = fmt.group.size, fmt.group.kept, fmt.meta.word_cols
    bm, stored = values_tile.shape
    bk = stored * size // kept
    expected = fmt.metadata.shape(INT, bm, bk)
    if tuple(meta_tile.shape) != expected or bk % cols != 0:
        raise ValueError(
            f"decode_meta_tile: values tile {tuple(values_tile.shape)} needs a meta tile of shape "
            f"{expected} with BK a multiple of {cols}, got {tuple(meta_tile.shape)}")
    if meta_tile.device != values_tile.device:
        raise ValueError(f"decode_meta_tile: values on {values_tile.device}, meta on {meta_tile.device}")
    idx0, idx1 = decode_meta(meta_tile, bm, fmt)
    v = values_tile.reshape(bm, bk // size, kept)
    pos = torch.arange(size, device=values_tile.device)
    zero = torch.zeros((), dtype=values_tile.dtype, device=values_tile.device)
    if fmt.meta.halves:  # 1:2: the kept element spans halves (idx0, idx1) = (2i, 2i + 1)
        return torch.where(pos == (idx0 // 2).unsqueeze(-1), v, zero).reshape(bm, bk)
    v0, v1 = v[..., :1], v[..., 1:]
    dense = torch.where(pos == idx1.unsqueeze(-1), v1,
                        torch.where(pos == idx0.unsqueeze(-1), v0, zero))
    return dense.reshape(bm, bk)


def compress_arrays(dense: torch.Tensor, fmt: SparseFormat = NV24) -> tuple[torch.Tensor, torch.Tensor]:
    """The (values, meta) arrays of a sparse M x K matrix; errors as `sparsecc.compress`."""
    check_dense(dense, fmt)
    x = dense.detach()
    m, k = x.shape
    size = fmt.group.size
    groups = x.reshape(m, k // size, size)
    nonzero = groups != 0  # NaN != 0, so NaN counts as nonzero
    _check_groups(groups, nonzero, fmt)
    kept = fmt.group.kept
    idx0, idx1 = _select_indices(nonzero, kept)
    # gather moves bits, so 8-bit floats go through their uint8 view (CPU torch has no fp8 gather)
    bits = groups.view(torch.uint8) if groups.dtype.is_floating_point and groups.element_size() == 1 else groups
    index = torch.stack((idx0, idx1), dim=-1)[..., :kept]
    values = torch.gather(bits, -1, index).view(groups.dtype)
    values = values.reshape(fmt.values.shape(INT, m, k))
    return values.contiguous(), encode_meta(*_hw_indices(idx0, idx1, fmt), fmt)

