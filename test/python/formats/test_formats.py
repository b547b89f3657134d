"""Sparse formats as data: the NV24 definition against compress's real output, the registry,
and the stages that ask it (#tt.sparse, signatures, the flat argument list)."""

from __future__ import annotations

import pytest
import torch
from xdsl.dialects.builtin import bf16, f16, f32, i8, i16, i32
from xdsl.utils.exceptions import VerifyException

from sparsecc import formats
from sparsecc.dialects import tt
from sparsecc.formats import INT, NV24
from sparsecc.frontend.types import parse_signature_type
from sparsecc.runtime.codec import decode_meta_tile
from sparsecc.runtime.compress import compress, prune_2to4


def _random_sparse(m: int, k: int, dtype: torch.dtype, seed: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    return prune_2to4(torch.randn(m, k, generator=gen).to(dtype))


# --------------------------------------------------------------------------------------
# The definition
# --------------------------------------------------------------------------------------


def test_nv24_data():
    assert (NV24.group.kept, NV24.group.size) == (2, 4)
    assert NV24.meta.element.ir == i16 and NV24.meta.element.bits == 16
    assert (NV24.meta.word_cols, NV24.meta.block_rows, NV24.meta.pad_word) == (16, 16, 0x4444)
    assert NV24.meta.groups_per_word(NV24.group) == 4
    # a word holds exactly its groups' kept indices
    assert NV24.meta.groups_per_word(NV24.group) * NV24.group.kept * NV24.meta.index_bits == 16
    assert [e.name for e in NV24.element_types] == ["fp16", "bf16", "fp8e4nv", "fp8e5", "i8"]
    assert [e.name for e in NV24.runtime_element_types] == ["fp16", "bf16", "fp8e4nv", "fp8e5", "i8"]
    assert [a.suffix for a in NV24.arrays] == ["values", "meta"]
    assert [i.ptx for i in NV24.instructions] == ["mma.sp::ordered_metadata", "wgmma.mma_async.sp"] * 2
    assert {i.shape[2] for i in NV24.instructions} == {32, 64}


@pytest.mark.parametrize("m,k", [(1, 16), (16, 32), (17, 64), (45, 48), (64, 128), (130, 256)])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_array_shapes_and_strides_match_compress(m: int, k: int, dtype: torch.dtype):
    sp = compress(_random_sparse(m, k, dtype, seed=m * 1000 + k))
    assert tuple(sp.values.shape) == NV24.values.shape(INT, m, k) == (m, k // 2)
    assert tuple(sp.meta.shape) == NV24.metadata.shape(INT, m, k) == (-(-m // 16), k)
    assert sp.meta.dtype == getattr(torch, NV24.meta.element.torch_name)
    # the dense row-major strides (K, 1) map onto the arrays' own (contiguous) strides
    assert sp.values.stride() == NV24.values.strides(INT, k, 1)
    assert sp.meta.stride() == NV24.metadata.strides(INT, k, 1)
    if m % 16:  # rows past M exist only in the metadata and hold the pad word
        assert (sp.meta[-1, (m % 16)::16] == NV24.meta.pad_word).all()


@pytest.mark.parametrize("seed", range(6))
def test_block_offsets_and_tiles_address_the_dense_block(seed: int):
    """A dense BM x BK block at (om, ok) is what the values and metadata sub-blocks at the
    format's offsets, with the format's tiles, decode to (what decompose-sparse-tensors emits)."""
    gen = torch.Generator().manual_seed(seed)
    m, k = 16 * int(torch.randint(2, 6, (), generator=gen)), 16 * int(torch.randint(2, 8, (), generator=gen))
    dense = _random_sparse(m, k, torch.float16, seed)
    sp = compress(dense)
    bm = 16 * int(torch.randint(1, m // 16 + 1, (), generator=gen))
    bk = 16 * int(torch.randint(1, k // 16 + 1, (), generator=gen))
    om = 16 * int(torch.randint(0, (m - bm) // 16 + 1, (), generator=gen))
    ok = 16 * int(torch.randint(0, (k - bk) // 16 + 1, (), generator=gen))
    assert NV24.check_tile(bm, bk) is None
    tiles = []
    for array, data in zip(NV24.arrays, (sp.values, sp.meta), strict=True):
        r0, c0 = array.offsets(INT, om, ok)
        rows, cols = array.tile(bm, bk)
        tiles.append(data[r0:r0 + rows, c0:c0 + cols])
    assert torch.equal(decode_meta_tile(*tiles, NV24), dense[om:om + bm, ok:ok + bk])
    # `tt.advance` moves each array as an offset: advancing by (bm, bk) lands on the next block
    for array in NV24.arrays:
        a, b = array.offsets(INT, om, ok), array.offsets(INT, bm, bk)
        assert array.offsets(INT, om + bm, ok + bk) == (a[0] + b[0], a[1] + b[1])


@pytest.mark.parametrize("m,k", [(32, 64), (48, 32)])
def test_pointer_tensor_offsets_match_flat_indices(m: int, k: int):
    """Pointer tensors: a dense element offset r*K + c becomes, per array, the grouped row term
    divided by row_offset_div plus the grouped column term divided by col_div, which is the
    array's flat index of (row r // row_div, column c // col_div)."""
    sp = compress(_random_sparse(m, k, torch.float16, seed=7))
    for array, data in zip(NV24.arrays, (sp.values, sp.meta), strict=True):
        flat = data.flatten()
        for r in range(0, m, array.row_div):
            for c in range(0, k, array.col_div):
                offset = (r * k) // array.row_offset_div + c // array.col_div
                assert flat[offset] == data[r // array.row_div, c // array.col_div]


def test_tile_rule():
    assert NV24.check_tile(32, 64) is None
    why = NV24.check_tile(8, 32)
    assert why is not None and "multiples of 16" in why and why.endswith("got 8x32")
    assert NV24.values.tile(1, 32) == (1, 16) and NV24.metadata.tile(32, 1) == (2, 1)


# --------------------------------------------------------------------------------------
# The registry
# --------------------------------------------------------------------------------------


def test_registry_lookup():
    assert formats.names() == ("NV24", "NV12")
    assert formats.lookup("NV24") is NV24 and formats.get("NV24") is NV24
    assert formats.get("CSR") is None
    with pytest.raises(formats.UnknownFormatError, match='unknown sparse format "NV42"; known formats: "NV24", "NV12"'):
        formats.lookup("NV42")


def test_signature_helpers():
    assert formats.of_signature("*fp16:NV24") is NV24
    assert formats.of_signature("*fp16") is None and formats.of_signature("i32:16") is None
    assert formats.flat_params("A", "*bf16:NV24") == [("A.values", "*bf16"), ("A.meta", "*i16")]
    assert formats.flat_params("n", "i32:16") == [("n", "i32:16")]
    assert formats.is_array_name("A.values") and formats.is_array_name("A.meta")
    assert not formats.is_array_name("meta") and not formats.is_array_name("A.other")
    with pytest.raises(formats.UnknownFormatError, match="known formats"):
        formats.of_signature("*fp16:NV42")


# --------------------------------------------------------------------------------------
# The stages that ask it
# --------------------------------------------------------------------------------------


def test_sparse_attribute_checks_format_and_element():
    with pytest.raises(VerifyException, match='unknown sparse format "NV99"; known formats: "NV24", "NV12"'):
        tt.SparseEncodingAttr("NV99")
    enc = tt.SparseEncodingAttr("NV24")
    assert enc.definition is NV24
    for ok in (f16, bf16, i8):
        tt.PointerType(ok, enc)
    with pytest.raises(VerifyException, match=r'#tt.sparse<"NV24"> cannot hold f32 elements: NV24 sparsity '
                                              r"needs a 16- or 8-bit element type \(fp16, bf16, fp8e4nv, fp8e5, i8\)"):
        tt.PointerType(f32, enc)
    from xdsl.dialects.builtin import TensorType

    with pytest.raises(VerifyException, match="cannot hold i32 elements"):
        tt.PointerType(TensorType(i32, [16, 32], enc))


def test_signature_errors_name_the_format():
    assert tt.sparse_encoding_of(parse_signature_type("*bf16:NV24")).definition is NV24
    with pytest.raises(ValueError, match=r"'\*fp16:NV42': unknown sparse format \"NV42\"; known formats: \"NV24\", \"NV12\""):
        parse_signature_type("*fp16:NV42")
    with pytest.raises(ValueError, match=r"'\*fp32:NV24': NV24 sparsity needs a 16- or 8-bit element type "
                                         r"\(\*fp16, \*bf16, \*fp8e4nv, \*fp8e5, \*i8\)"):
        parse_signature_type("*fp32:NV24")


def test_dot_metadata_shape_comes_from_the_format():
    assert tt.meta_shape(17, 64) == NV24.metadata.shape(INT, 17, 64) == (2, 64)
