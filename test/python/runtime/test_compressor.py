"""The 2:4 compressor and SparseTensor: NV24 layout bit by bit, round trips, errors."""

from __future__ import annotations

import math
import pickle

import pytest
import torch

from sparsecc.runtime.compress import (
    compress,
    decode_meta,
    decode_meta_tile,
    decompress,
    encode_meta,
    prune_2to4,
)
from sparsecc.runtime.sparse_tensor import SparseTensor

DTYPES = [torch.float16, torch.bfloat16]
PAD = 17476  # 0x4444

# The seed example: groups [0,7,0,3] -> (1,3), [1,5,0,0] -> (0,1), [0,0,2,4] -> (2,3),
# [9,0,9,0] -> (0,2); nibbles 0b1101, 0b0100, 0b1110, 0b1000 -> word 0b1000_1110_0100_1101.
SEED_ROW = [0, 7, 0, 3, 1, 5, 0, 0, 0, 0, 2, 4, 9, 0, 9, 0]
SEED_WORD = -29107
SEED_VALUES = [7, 3, 1, 5, 2, 4, 9, 9]


def random_24(m: int, k: int, dtype: torch.dtype, seed: int = 0) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    return prune_2to4(torch.randn(m, k, generator=gen).to(dtype))


def reference_compress(dense: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The format spelled out with Python loops, independent of the vectorized code."""
    m, k = dense.shape
    mb = (m + 15) // 16
    values = torch.zeros(m, k // 2, dtype=dense.dtype)
    words = [[0x4444] * (k // 16) for _ in range(mb * 16)]
    for r in range(m):
        for c in range(k // 16):
            word = 0
            for j in range(4):
                g = 4 * c + j
                grp = [float(dense[r, 4 * g + i]) for i in range(4)]
                kept = [i for i in range(4) if grp[i] != 0 or math.isnan(grp[i])]
                assert len(kept) <= 2
                for i in range(4):
                    if len(kept) == 2:
                        break
                    if i not in kept:
                        kept.append(i)
                i0, i1 = sorted(kept)
                values[r, 2 * g] = dense[r, 4 * g + i0]
                values[r, 2 * g + 1] = dense[r, 4 * g + i1]
                word |= (i0 | (i1 << 2)) << (4 * j)
            words[r][c] = word
    meta = torch.zeros(mb, k, dtype=torch.int16)
    for r in range(mb * 16):
        for c in range(k // 16):
            w = words[r][c]
            meta[r // 16, 16 * c + r % 16] = w - 0x10000 if w >= 0x8000 else w
    return values, meta


# ----------------------------------------------------------------------------- layout, bit level


@pytest.mark.parametrize("dtype", DTYPES)
def test_seed_example_word_and_values(dtype: torch.dtype) -> None:
    s = compress(torch.tensor([SEED_ROW], dtype=dtype))
    assert s.meta.dtype == torch.int16 and s.meta.shape == (1, 16)
    assert int(s.meta[0, 0]) == SEED_WORD == 0b1000111001001101 - 0x10000
    assert s.meta[0, 1:].tolist() == [PAD] * 15
    assert s.values.tolist() == [SEED_VALUES]
    assert s.values.dtype == dtype


def test_single_group_nibble() -> None:
    # [0,7,0,3] -> indices (1,3) -> nibble 0b1101 in bits 0..3; other groups all-zero -> 0b0100.
    row = [0, 7, 0, 3] + [0] * 12
    s = compress(torch.tensor([row], dtype=torch.float16))
    assert int(s.meta[0, 0]) & 0xFFFF == 0b0100_0100_0100_1101
    assert s.values[0].tolist() == [7, 3, 0, 0, 0, 0, 0, 0]


def test_word_position_row_and_chunk() -> None:
    # Row 18, chunk 2 must land at meta[1, 32 + 2]; put the seed row there, zeros elsewhere.
    dense = torch.zeros(20, 64, dtype=torch.float16)
    dense[18, 32:48] = torch.tensor(SEED_ROW, dtype=torch.float16)
    s = compress(dense)
    assert s.meta.shape == (2, 64)
    assert int(s.meta[1, 34]) == SEED_WORD
    others = torch.ones_like(s.meta, dtype=torch.bool)
    others[1, 34] = False
    assert (s.meta[others] == PAD).all()  # all-zero groups encode (0,1), like padding


@pytest.mark.parametrize(("group", "idx", "vals"), [
    ([0, 0, 0, 0], (0, 1), [0, 0]),
    ([0, 0, 0, 5], (0, 3), [0, 5]),
    ([0, 0, 6, 0], (0, 2), [0, 6]),
    ([3, 0, 0, 0], (0, 1), [3, 0]),
    ([0, 2, 0, 0], (0, 1), [0, 2]),
    ([0, 0, 1, 4], (2, 3), [1, 4]),
    ([1, 0, 0, 2], (0, 3), [1, 2]),
])
def test_groups_with_few_nonzeros(group: list[int], idx: tuple[int, int], vals: list[int]) -> None:
    # Put the group in position j=2 of the word; the rest is all-zero (0,1).
    row = [0] * 8 + group + [0] * 4
    s = compress(torch.tensor([row], dtype=torch.bfloat16))
    nib = idx[0] | (idx[1] << 2)
    assert int(s.meta[0, 0]) & 0xFFFF == 0x4044 | (nib << 8)
    assert s.values[0, 4:6].tolist() == vals
    assert s.to_dense()[0].tolist() == row


@pytest.mark.parametrize("m", [1, 5, 17, 40])
def test_padding_rows(m: int) -> None:
    s = compress(random_24(m, 32, torch.float16, seed=m))
    mb = (m + 15) // 16
    assert s.meta.shape == (mb, 32)
    pad = [int(s.meta[r // 16, 16 * c + r % 16]) for r in range(m, mb * 16) for c in range(2)]
    assert pad == [PAD] * (2 * (mb * 16 - m))
    real = [int(s.meta[r // 16, 16 * c + r % 16]) for r in range(m) for c in range(2)]
    assert any(w != PAD for w in real)  # random data, so the real rows are not padding-like


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(3, 16), (17, 32), (33, 48)])
def test_matches_python_reference(dtype: torch.dtype, shape: tuple[int, int]) -> None:
    dense = random_24(*shape, dtype, seed=shape[0])
    # Thin some groups further so 0- and 1-nonzero groups are exercised too.
    gen = torch.Generator().manual_seed(7)
    dense = dense * (torch.rand(shape, generator=gen) > 0.3).to(dtype)
    ref_values, ref_meta = reference_compress(dense)
    s = compress(dense)
    assert torch.equal(s.values, ref_values)
    assert torch.equal(s.meta, ref_meta)


# ----------------------------------------------------------------------------- round trips


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("m", [1, 17, 40, 128])
@pytest.mark.parametrize("k", [16, 48, 256])
def test_round_trip(dtype: torch.dtype, m: int, k: int) -> None:
    dense = random_24(m, k, dtype, seed=m * 1000 + k)
    assert dense.count_nonzero() > 0
    s = compress(dense)
    assert s.values.shape == (m, k // 2) and s.values.is_contiguous()
    assert s.meta.shape == ((m + 15) // 16, k) and s.meta.is_contiguous()
    out = s.to_dense()
    assert out.dtype == dtype and out.shape == (m, k)
    assert torch.equal(out.view(torch.int16), dense.view(torch.int16))  # bitwise
    assert torch.equal(decompress(s), out)


def test_round_trip_keeps_special_values() -> None:
    row = [math.nan, 0, 0, math.inf, 0, -math.inf, 0, 0, 1e-7, 0, 0, -65504] + [0] * 4
    dense = torch.tensor([row], dtype=torch.float16)
    out = compress(dense).to_dense()
    assert torch.equal(out.view(torch.int16), dense.view(torch.int16))


def test_decode_meta_tile_subtile() -> None:
    dense = random_24(48, 96, torch.float16, seed=3)
    s = compress(dense)
    r0, c0, bm, bk = 16, 32, 32, 48
    tile = decode_meta_tile(s.values[r0:r0 + bm, c0 // 2:(c0 + bk) // 2],
                            s.meta[r0 // 16:(r0 + bm) // 16, c0:c0 + bk])
    assert torch.equal(tile, dense[r0:r0 + bm, c0:c0 + bk])


def test_decode_meta_tile_ragged_rows() -> None:
    # A tile of 8 rows still takes one whole 16-row meta block.
    dense = random_24(24, 32, torch.bfloat16, seed=4)
    s = compress(dense)
    tile = decode_meta_tile(s.values[16:24, 16:], s.meta[1:2, 32:64])
    assert torch.equal(tile, dense[16:24, 32:64])


def test_encode_decode_meta_inverse() -> None:
    gen = torch.Generator().manual_seed(5)
    i0 = torch.randint(0, 3, (21, 8), generator=gen)
    i1 = i0 + 1 + torch.randint(0, 3, (21, 8), generator=gen).remainder(3 - i0)
    assert bool((i1 <= 3).all())
    meta = encode_meta(i0, i1)
    assert meta.shape == (2, 32)
    d0, d1 = decode_meta(meta, 21)
    assert torch.equal(d0, i0) and torch.equal(d1, i1)
    p0, p1 = decode_meta(meta)
    assert (p0[21:] == 0).all() and (p1[21:] == 1).all()


# ----------------------------------------------------------------------------- prune_2to4


def test_prune_keeps_two_largest_ties_to_lower_index() -> None:
    x = torch.tensor([[1.0, -3.0, 2.0, 0.5, 2.0, 2.0, 2.0, 2.0, 0.0, -1.0, 1.0, 0.0]])
    assert prune_2to4(x).tolist() == [[0.0, -3.0, 2.0, 0.0, 2.0, 2.0, 0.0, 0.0, 0.0, -1.0, 1.0, 0.0]]
    assert x[0, 0] == 1.0  # a copy, the input is untouched


def test_prune_leading_dims_and_nan() -> None:
    gen = torch.Generator().manual_seed(6)
    x = torch.randn(2, 3, 8, generator=gen, dtype=torch.float64)
    x[1, 2, 1] = math.nan
    p = prune_2to4(x)
    assert p.shape == x.shape and p.dtype == x.dtype
    nz = (p != 0).reshape(-1, 4).sum(-1)
    assert (nz <= 2).all()
    assert math.isnan(p[1, 2, 1])
    compress(p.reshape(6, 8).repeat(1, 2).half())  # the result is always accepted


def test_prune_rejects_bad_last_dim() -> None:
    with pytest.raises(ValueError, match="multiple of 4"):
        prune_2to4(torch.zeros(2, 6))


# ----------------------------------------------------------------------------- SparseTensor API


def test_sparse_tensor_api() -> None:
    dense = random_24(17, 48, torch.float16, seed=8)
    s = compress(dense)
    assert isinstance(s, SparseTensor)
    assert s.shape == torch.Size([17, 48]) and isinstance(s.shape, torch.Size)
    assert s.size() == torch.Size([17, 48]) and s.size(1) == 48 and s.size(-2) == 17
    assert s.stride() == (48, 1) and s.stride(0) == 48
    assert s.dtype == torch.float16 and s.device == torch.device("cpu")
    assert s.encoding == "NV24" and s.ndim == 2 and s.dim() == 2 and s.numel() == 17 * 48
    assert not hasattr(s, "data_ptr")  # jit tells tensors from SparseTensors by this
    assert "SparseTensor(shape=(17, 48)" in repr(s) and "NV24" in repr(s)
    assert s.cpu() is s and s.to("cpu") is s
    b = s.to(torch.bfloat16)
    assert b.dtype == torch.bfloat16 and torch.equal(b.meta, s.meta)
    assert torch.equal(pickle.loads(pickle.dumps(s)).to_dense(), dense)
    again = SparseTensor(s.values, s.meta, (17, 48))
    assert torch.equal(again.to_dense(), dense)
    assert torch.equal(SparseTensor.from_dense(dense).meta, s.meta)


def test_sparse_tensor_constructor_validation() -> None:
    s = compress(random_24(16, 32, torch.float16))
    with pytest.raises(ValueError, match="values of a 16x32 matrix must have shape"):
        SparseTensor(s.values[:, :8], s.meta, (16, 32))
    with pytest.raises(ValueError, match=r"meta of a 17x32 matrix must have shape \(2, 32\)"):
        SparseTensor(torch.zeros(17, 16, dtype=torch.float16), s.meta, (17, 32))
    with pytest.raises(TypeError, match="meta must be torch.int16"):
        SparseTensor(s.values, s.meta.int(), (16, 32))
    with pytest.raises(TypeError, match="meta must be torch.int16, got torch.float16"):
        SparseTensor(s.values, s.meta.half(), (16, 32))  # an fp16 meta is never cast
    with pytest.raises(TypeError, match="unsupported values dtype torch.float32"):
        SparseTensor(s.values.float(), s.meta, (16, 32))
    with pytest.raises(ValueError, match="unsupported encoding 'CSR'"):
        SparseTensor(s.values, s.meta, (16, 32), encoding="CSR")
    with pytest.raises(ValueError, match="multiple of 16"):
        SparseTensor(torch.zeros(16, 4, dtype=torch.float16), s.meta[:, :8], (16, 8))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_round_trip() -> None:
    dense = random_24(40, 256, torch.bfloat16, seed=9)
    s_cpu = compress(dense)
    s = compress(dense.cuda())
    assert s.device.type == "cuda" and s.meta.device.type == "cuda"
    assert torch.equal(s.values.cpu(), s_cpu.values) and torch.equal(s.meta.cpu(), s_cpu.meta)
    assert torch.equal(s.to_dense().cpu(), dense)
    assert torch.equal(s_cpu.cuda().cpu().meta, s_cpu.meta)


# ----------------------------------------------------------------------------- errors


def test_error_not_24_names_first_group() -> None:
    dense = random_24(8, 32, torch.float16, seed=10)
    dense[5, 20:24] = torch.tensor([1.0, 2.0, 3.0, 4.0])
    dense[3, 8:12] = torch.tensor([1.0, 0.0, 2.0, 3.0])  # earlier row -> reported first
    with pytest.raises(ValueError, match=r"^not 2:4 sparse: row 3, columns 8\.\.11 have 3 nonzeros "
                       r"\(at most 2 allowed\); use sparsecc\.prune_2to4 first$"):
        compress(dense)


def test_error_nan_counts_as_nonzero() -> None:
    dense = torch.zeros(2, 16, dtype=torch.bfloat16)
    dense[1, 4:8] = torch.tensor([math.nan, 1.0, 0.0, 2.0])
    with pytest.raises(ValueError, match=r"row 1, columns 4\.\.7 have 3 nonzeros, 1 of them NaN"):
        compress(dense)


def test_error_bad_dtype() -> None:
    with pytest.raises(TypeError, match=r"unsupported dtype torch\.float64 \(NV24 supports "
                       r"torch\.float16, torch\.bfloat16, torch\.float8_e4m3fn, torch\.float8_e5m2, torch\.int8\)"):
        compress(torch.zeros(16, 16, dtype=torch.float64))


def test_error_k_not_multiple_of_16() -> None:
    with pytest.raises(ValueError, match="K = 24 is not a multiple of 16"):
        compress(torch.zeros(4, 24, dtype=torch.float16))


def test_error_not_2d() -> None:
    with pytest.raises(ValueError, match=r"2-D \(M x K\) tensor, got 3-D"):
        compress(torch.zeros(2, 4, 16, dtype=torch.float16))
    with pytest.raises(ValueError, match="got 1-D"):
        compress(torch.zeros(16, dtype=torch.float16))


def test_error_empty() -> None:
    with pytest.raises(ValueError, match="empty tensor"):
        compress(torch.zeros(0, 16, dtype=torch.float16))
    with pytest.raises(ValueError, match="empty tensor"):
        compress(torch.zeros(4, 0, dtype=torch.float16))


def test_error_not_a_tensor() -> None:
    with pytest.raises(TypeError, match="expects a torch.Tensor, got list"):
        compress([[0.0] * 16])  # type: ignore[arg-type]
