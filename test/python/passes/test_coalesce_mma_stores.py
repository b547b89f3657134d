"""tritongpu-coalesce-mma-stores: an MMA tile stored into memory contiguous along its rows (the
MoE GEMM's transposed product W·xᵀ stored into y, tokens x features) goes through a swizzled
column-major scratch and leaves as 16-byte `st.global.v4`, where it was one `st.global.b16`
per element.

CPU: the scratch layout simulated over every lane (a bijection; the MMA side's writes free of
bank conflicts; the blocked side's reads whole aligned 16-byte chunks), the PTX of bench/moe.py's
tiles (stores, registers, ptxas on sm_90a and sm_80), and the stores the pass leaves alone.
GPU (`gpu`): transposed-store GEMMs against torch at ragged sizes, fp16 and fp32 outputs, into
NaN-poisoned buffers.
"""

from __future__ import annotations

import os
import re
import sys
from collections import Counter

import pytest
import torch

import sparsecc
import sparsecc.language as tl
from sparsecc.analysis.layouts import distributed, stored_coords
from sparsecc.codegen.mma_stmatrix import transposed_scratch_encoding
from sparsecc.dialects.ttg import MmaEncodingAttr
from sparsecc.passes.tritongpu_coalesce_mma_stores import coalesced_layout, tma_store_encoding

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "bench"))
import moe  # noqa: E402

KERNEL = moe.pk.sparsecc_kernel(moe.moe_gemm_kernel)


def _stores(ptx: str) -> Counter:
    return Counter(m.group(0) for m in re.finditer(r"st\.global[.\w]*", ptx))


# --------------------------------------------------------------------------------------
# The scratch layout, simulated
# --------------------------------------------------------------------------------------

LAYOUTS = [
    (MmaEncodingAttr((4, 1), 3, (64, 128)), (128, 128), 2),  # the 128x128 w4 prefill tile
    (MmaEncodingAttr((8, 1), 3, (64, 128)), (128, 256), 2),  # 128x256 w8
    (MmaEncodingAttr((8, 1), 3, (64, 128)), (256, 128), 2),
    (MmaEncodingAttr((4, 1), 3, (64, 16)), (64, 16), 2),  # a decode tile
    (MmaEncodingAttr((2, 2)), (128, 64), 2),  # mma.sp's sm_80 layout, warps along both dims
    (MmaEncodingAttr((4, 1), 3, (64, 64)), (128, 64), 4),  # an fp32 output
]


@pytest.mark.parametrize("mma, shape, elt_bytes", LAYOUTS)
def test_scratch_is_a_bijection_written_without_bank_conflicts_and_read_in_whole_chunks(mma, shape, elt_bytes):
    from xdsl.dialects.builtin import TensorType, f16, f32

    elt = f16 if elt_bytes == 2 else f32
    src = TensorType(elt, shape, mma)
    dst = coalesced_layout(src, (0, 1), mma.num_warps)
    enc = transposed_scratch_encoding(src, dst)
    assert enc is not None and tuple(enc.order) == (0, 1)

    def offset(i0: int, i1: int) -> int:
        return enc.swizzled_offset(*stored_coords(enc, i0, i1, shape))

    offsets = {offset(i0, i1) for i0 in range(shape[0]) for i1 in range(shape[1])}
    assert offsets == set(range(shape[0] * shape[1]))  # every element its own slot, no gaps

    # the MMA side: one st.shared per register and lane; a warp instruction is conflict-free
    # when no bank is asked for two different 32-bit words
    src_dl = distributed(mma, shape)
    for warp in range(mma.num_warps):
        for r in range(src_dl.num_regs):
            words_of_bank: dict[int, set[int]] = {}
            for lane in range(32):
                word = offset(*src_dl.coord(warp, lane, r)) * elt_bytes // 4
                words_of_bank.setdefault(word % 32, set()).add(word)
            assert max(len(w) for w in words_of_bank.values()) == 1, (warp, r)

    # the blocked side: each thread's run of 16 bytes along dim 0 is one aligned chunk
    vec = 16 // elt_bytes
    dst_dl = distributed(dst, shape)
    assert dst.size_per_thread[0] == vec
    for warp in range(mma.num_warps):
        for lane in range(32):
            for r0 in range(0, dst_dl.num_regs, vec):
                offs = [offset(*dst_dl.coord(warp, lane, r0 + k)) for k in range(vec)]
                assert offs[0] % vec == 0 and offs == list(range(offs[0], offs[0] + vec))


@pytest.mark.parametrize("scratch", ["convert", "tma"])
@pytest.mark.parametrize("mma, shape, elt_bytes", [x for x in LAYOUTS if x[2] == 2])
def test_stmatrix_trans_writes_every_element_where_the_reads_expect_it(mma, shape, elt_bytes, scratch):
    """Simulate `stmatrix.x4.trans` over every warp: block i's column j (8 elements, fragment
    rows 0..7: lane 4*row + j/2, half j%2 of the block's register pair) lands at the 16 bytes
    lane 8i+j addresses; each must be the scratch slots of exactly those elements. Both shared
    layouts: the convert's scratch and a TMA store's tile (`tma_store_encoding`)."""
    from xdsl.dialects.builtin import TensorType, f16

    from sparsecc.codegen.mma_stmatrix import block_of_lane, stmatrix_groups

    src = TensorType(f16, shape, mma)
    if scratch == "tma":
        enc = tma_store_encoding(src)
    else:
        enc = transposed_scratch_encoding(src, coalesced_layout(src, (0, 1), mma.num_warps))
    dl = distributed(mma, shape)
    groups = stmatrix_groups(dl, 2, enc)
    assert groups is not None and len(groups) * 8 == dl.num_regs

    def offset(i0: int, i1: int) -> int:
        return enc.swizzled_offset(*stored_coords(enc, i0, i1, shape))

    written = []
    for warp in range(mma.num_warps):
        base = dl.coord(warp, 0, 0)  # lane 0's register 0: the warp's corner (no lane terms)
        for group in groups:
            for lane in range(32):
                i, j = block_of_lane(lane)
                r = group[i]
                addr = offset(base[0] + dl.regs[r][0], base[1] + dl.regs[r][1] + j)  # store_stmatrix's rule
                column = [dl.coord(warp, 4 * row + j // 2, r + j % 2) for row in range(8)]
                assert [offset(*e) for e in column] == list(range(addr, addr + 8))
                written += column
    assert sorted(written) == sorted((a, b) for a in range(shape[0]) for b in range(shape[1]))


@pytest.mark.parametrize("mma, shape, elt_bytes", [x for x in LAYOUTS if x[2] == 2 and x[0].version_major == 3])
def test_tma_store_tile_is_laid_out_as_the_tma_boxes(mma, shape, elt_bytes):
    """A TMA store's shared tile, element by element, is where TMA reads its boxes: dim 0 (the
    memory's contiguous dim) cut into 64-element boxes of dim-1 rows under the 128-byte swizzle,
    or one narrower box (32 elements: 64 bytes), each element in its own slot."""
    from xdsl.dialects.builtin import TensorType, f16

    from sparsecc.analysis.swizzle import box_offset
    from sparsecc.analysis.tma import box_plan
    from sparsecc.dialects.ttg import MemDescType

    ty = TensorType(f16, shape, mma)
    enc = tma_store_encoding(ty)
    plan = box_plan(MemDescType(shape, f16, enc), 2)
    width = min(64, shape[0])
    assert plan is not None and plan.transposed
    assert (plan.rows, plan.width, plan.count, plan.swizzle) == (shape[1], width, shape[0] // width, 2 * width)
    offsets = {}
    for i0 in range(shape[0]):
        for i1 in range(shape[1]):
            at = enc.swizzled_offset(*stored_coords(enc, i0, i1, shape)) * 2
            assert at == box_offset(i1, i0, plan.width, plan.rows, 2, plan.swizzle)
            offsets[at] = (i0, i1)
    assert len(offsets) == shape[0] * shape[1]


@pytest.mark.parametrize("mma, shape, elt_bytes", [x for x in LAYOUTS if x[2] == 2 and x[0].version_major == 3
                                                   and x[0].warps_per_cta[0] == 4])
def test_staged_boxes_are_the_tma_boxes_moved_back(mma, shape, elt_bytes):
    """A box-staged tile (`ttg.box_staged = R`) at every row count the pass may pick: element
    (i0, i1) lies in staged box b = its column block * parts + i1 // R, and its tile offset less
    b boxes (`store_box`'s address) is where a TMA box of R rows (`BoxPlan.staged`) holds it;
    every stmatrix group of a one-warpgroup tile falls in one staged box (`box_groups`)."""
    from xdsl.dialects.builtin import TensorType, f16

    from sparsecc.analysis.layouts import distributed
    from sparsecc.analysis.shared_memory import box_bytes, staged_row_counts
    from sparsecc.analysis.swizzle import box_offset
    from sparsecc.analysis.tma import box_plan
    from sparsecc.codegen.mma_stmatrix import stmatrix_groups
    from sparsecc.dialects.ttg import MemDescType

    tile = MemDescType(shape, f16, tma_store_encoding(TensorType(f16, shape, mma)))
    enc = tile.encoding
    dl = distributed(mma, tuple(shape))
    groups = stmatrix_groups(dl, 2, enc)
    counts = staged_row_counts(tile)
    assert counts and counts[-1] == 16 and groups
    for rows in counts:
        plan = box_plan(tile, 2).staged(rows)
        assert plan is not None and plan.rows == rows and plan.row_parts * rows == shape[1]
        for i0 in range(shape[0]):
            for i1 in range(shape[1]):
                b = i0 // plan.width * plan.row_parts + i1 // rows
                at = enc.swizzled_offset(*stored_coords(enc, i0, i1, shape)) * 2 - b * box_bytes(tile, rows)
                assert at == box_offset(i1 % rows, i0 % plan.width, plan.width, rows, 2, plan.swizzle)
        for group in groups:
            boxes = {d0 // plan.width * plan.row_parts + d1 // rows
                     for d0, d1 in (dl.coord(w, lane, r + c) for r in group for c in (0, 1)
                                    for w in range(4) for lane in range(32))}
            assert len(boxes) == 1, (rows, group)


def test_tma_stores_replace_the_vector_stores_of_a_wgmma_kernel():
    """With tma_stores on sm_90a: the transposed tile goes out as two TMA boxes of 64 x 128 (the
    memory's tensor map: C's base, dims N x M, row stride), written by stmatrix; no st.global and
    no read-back; the stores' waits before the tile is rewritten and before the kernel ends; the
    kernel assembles. On sm_80 (no TMA) the switch changes nothing."""
    ck = sparsecc.compile(_gemm_kernel, _SIG, {"BM": 128, "BN": 128, "BK": 64, "TRANSPOSED": True},
                          target="sm_90a", tma_stores=True)
    ttgir, ptx = str(ck.asm["ttgir"]), ck.asm["ptx"]
    assert ttgir.count("ttg.async_tma_store ") == 1 and ttgir.count("ttg.async_tma_store_wait") == 2
    assert "ttg.convert_layout" not in ttgir and "tt.store" not in ttgir
    assert ptx.count("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group") == 2
    assert ptx.count("cp.async.bulk.commit_group") == 1 and ptx.count("cp.async.bulk.wait_group.read 0") == 2
    assert ptx.count("stmatrix.sync.aligned.m8n8.x4.trans") == 128 * 128 // 128 // 8 and not _stores(ptx)
    assert "ld.shared.v4" not in ptx.split("stmatrix", 1)[1]  # nothing read back
    c_arg = [name for name, _ in ck.metadata["params"]].index("c_ptr")
    (store_map,) = [t for t in ck.metadata["tensor_maps"] if t["arg"] == c_arg]
    assert store_map["box"] == [64, 128] and store_map["swizzle"] == 128 and store_map["dtype"] == "fp16"
    assert ck.asm.get("cubin")
    off = sparsecc.compile(_gemm_kernel, _SIG, {"BM": 64, "BN": 128, "BK": 64, "TRANSPOSED": True},
                           target="sm_80", tma_stores=True)
    on = sparsecc.compile(_gemm_kernel, _SIG, {"BM": 64, "BN": 128, "BK": 64, "TRANSPOSED": True},
                          target="sm_80", tma_stores=False)
    assert off.asm["ptx"] == on.asm["ptx"]


@pytest.mark.parametrize("m_sig", ["i32", "i32:1"])
def test_a_contiguous_extent_of_unknown_bytes_keeps_the_vector_stores(m_sig):
    """Cᵀ's contiguous extent is M: where M is not known to be a multiple of 16 elements (any M,
    or M = 1), the store stays 16-byte vectors: a TMA store clips that dim to whole 16-byte
    chunks only."""
    ck = sparsecc.compile(_gemm_kernel, _SIG | {"M": m_sig}, {"BM": 128, "BN": 128, "BK": 64, "TRANSPOSED": True},
                          target="sm_90a", tma_stores=True)
    assert "ttg.async_tma_store" not in str(ck.asm["ttgir"]) and "ttg.convert_layout" in str(ck.asm["ttgir"])


def test_an_mma_sync_kernel_keeps_the_vector_stores():
    """A kernel without wgmma (a quantized weight's decode tile on sm_90a, mma.sp) keeps the
    16-byte vector stores with tma_stores: its shared memory is not 1 KiB aligned, which the
    TMA's swizzle needs."""
    from sparsecc.ops.sparse_linear import sparse_linear_kernel

    sig = {"Y": "*fp16:16", "X": "*fp16:16", "W": "*fp16:NV24.w8g128", "BIAS": "*fp16:16", "M": "i32:1",
           "N": "i32:16", "K": "i32:16", "stride_xm": "i32:16", "stride_wn": "i32:16", "stride_ym": "i32:16"}
    consts = {"BLOCK_M": 8, "BLOCK_N": 64, "BLOCK_K": 256, "HAS_BIAS": True, "ACTIVATION": "silu", "ROWS_16B": True,
              "ROWS_64": True}
    ck = sparsecc.compile(sparse_linear_kernel, sig, consts, target="sm_90a", num_warps=4, num_stages=3,
                          tma_stores=True)
    assert "wgmma" not in ck.asm["ptx"] and "cp.async.bulk.tensor.2d.global" not in ck.asm["ptx"]
    assert "ttg.convert_layout" in str(ck.asm["ttgir"])


def test_other_converts_keep_the_row_major_scratch():
    from xdsl.dialects.builtin import TensorType, f16

    from sparsecc.dialects.ttg import BlockedEncodingAttr

    src = TensorType(f16, (128, 128), MmaEncodingAttr((4, 1), 3, (64, 128)))
    row_major = BlockedEncodingAttr([1, 8], [4, 8], [4, 1], [1, 0])
    assert transposed_scratch_encoding(src, row_major) is None
    blocked = TensorType(f16, (128, 128), row_major)
    assert transposed_scratch_encoding(blocked, BlockedEncodingAttr([8, 1], [16, 2], [1, 4], [0, 1])) is None


# --------------------------------------------------------------------------------------
# bench/moe.py's kernel: PTX
# --------------------------------------------------------------------------------------

D, P = moe.DECODE_TILES, moe.PREFILL_TILES
FITS = {  # (tile, target): whether the scratch fits next to the pipeline's rings without costing
    # a resident CTA per SM (sm_80's 164 KiB: the 2-4 CTAs the small tiles run, one more
    # 16-64 KiB buffer for the prefill tiles), else the store stays per element
    **{(t, "sm_90a"): True for t in D + P[:4]}, (P[4], "sm_90a"): False,
    (D[0], "sm_80"): False, (D[1], "sm_80"): True, (D[2], "sm_80"): True, (D[3], "sm_80"): False,
    **{(t, "sm_80"): False for t in P[:4]},
}


@pytest.mark.parametrize("tile, target", list(FITS), ids=lambda x: moe._tile_name(x) if isinstance(x, moe.Tile) else x)
def test_moe_store_is_16_byte_vectors_where_the_scratch_fits(tile, target):
    ck = sparsecc.compile(KERNEL, moe.sparsecc_signature(), tile.constexprs, target=target,
                          num_warps=tile.warps, num_stages=tile.stages)
    ptx = ck.asm["ptx"]
    stores = _stores(ptx)
    per_thread = tile.block_n * tile.block_t // (32 * tile.warps)
    if FITS[tile, target]:
        # one 16-byte vector per 8 elements, no scalar fallback path, no other store
        assert stores == Counter({"st.global.v4.b32": per_thread // 8}), stores
        assert ptx.count("ld.shared.v4.b32") >= per_thread // 8
        if target == "sm_90a":  # the scratch written 4 blocks of 8x8 an instruction
            assert ptx.count("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16") == per_thread // 8
            assert "st.shared.b16" not in ptx
        else:
            assert ptx.count("st.shared.b16") == per_thread and "stmatrix" not in ptx
    else:  # the old per-element path, still compiling
        assert stores["st.global.b16"] == per_thread, stores
    assert ck.asm.get("cubin"), "ptxas did not assemble it"
    (res,) = ck.metadata["ptxas"].values()
    assert (res.spill_stores, res.spill_loads) == (0, 0), res


def test_row_major_gemm_store_is_left_alone():
    """A GEMM's usual C (contiguous along the MMA's columns) keeps its quad-transposed stores."""
    ck = sparsecc.compile(_gemm_kernel, _SIG, {"BM": 128, "BN": 128, "BK": 64, "TRANSPOSED": False},
                          target="sm_90a")
    assert "ttg.convert_layout" not in str(ck.asm["ttgir"])
    assert "shfl.sync.bfly" in ck.asm["ptx"]


@pytest.mark.parametrize("target, bm, bn, f32", [("sm_90a", 128, 128, False), ("sm_80", 64, 128, False)])
def test_transposed_gemm_store_takes_the_new_path(target, bm, bn, f32):
    """Cᵀ = (A @ B)ᵀ: 16-byte vectors along M, behind the run-time test of the boundary-checked
    dim (M % 8), with the per-element path as its fallback. (An fp32 Cᵀ's scratch, 32-64 KiB
    for these tiles, would cost a resident CTA: it keeps its stores; the scratch layout of
    fp32 is checked by the simulation above.)"""
    sig = _SIG | {"c_ptr": "*fp32:16"} if f32 else _SIG
    ck = sparsecc.compile(_gemm_kernel, sig, {"BM": bm, "BN": bn, "BK": 64, "TRANSPOSED": True, "F32_OUT": f32},
                          target=target)
    ttgir = str(ck.asm["ttgir"])
    assert "ttg.convert_layout" in ttgir and f"sizePerThread = [{4 if f32 else 8}, 1]" in ttgir
    stores = _stores(ck.asm["ptx"])
    assert stores["st.global.v4.b32"] == bm * bn // 128 // (4 if f32 else 8), stores
    assert ck.asm.get("cubin")


def test_a_scratch_that_would_cost_a_resident_cta_is_not_taken():
    """sm_80, 64x64: 38400 bytes of rings run four CTAs per SM (164 KiB); 8 KiB more would
    leave three. The store keeps its per-element path and the kernel its shared memory."""
    ck = sparsecc.compile(_gemm_kernel, _SIG, {"BM": 64, "BN": 64, "BK": 64, "TRANSPOSED": True}, target="sm_80")
    assert "ttg.convert_layout" not in str(ck.asm["ttgir"])
    assert ck.metadata["shared"] == 38400
    assert _stores(ck.asm["ptx"])["st.global.b16"] == 64 * 64 // 128


# --------------------------------------------------------------------------------------
# GPU
# --------------------------------------------------------------------------------------


@sparsecc.jit
def _gemm_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                 BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, TRANSPOSED: tl.constexpr,
                 F32_OUT: tl.constexpr = False):
    """C = A @ B (A 2:4), stored as C (M x N) or, TRANSPOSED, as Cᵀ (N x M, row stride
    stride_cm): the tile's memory then runs along its rows."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_ptrs = a_ptr + rm[:, None] * stride_am + rk[None, :]
    b_ptrs = b_ptr + rk[:, None] * stride_bk + rn[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_ptrs, mask=(rm[:, None] < M) & (rk[None, :] < K - k * BK), other=0.0)
        b = tl.load(b_ptrs, mask=(rk[:, None] < K - k * BK) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BK
        b_ptrs += BK * stride_bk
    if TRANSPOSED:
        c_ptrs = c_ptr + rn[None, :] * stride_cm + rm[:, None]
    else:
        c_ptrs = c_ptr + rm[:, None] * stride_cm + rn[None, :]
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    if F32_OUT:
        tl.store(c_ptrs, acc, mask=mask)
    else:
        tl.store(c_ptrs, acc.to(tl.float16), mask=mask)


_SIG = {"a_ptr": "*fp16:NV24", "b_ptr": "*fp16:16", "c_ptr": "*fp16:16", "M": "i32:16", "N": "i32:16",
        "K": "i32:16", "stride_am": "i32:16", "stride_bk": "i32:16", "stride_cm": "i32:16"}


@pytest.mark.gpu
@pytest.mark.parametrize("tma_stores", [False, True])
@pytest.mark.parametrize("dtype", [torch.float16, torch.float32])
@pytest.mark.parametrize("m, n, k", [(256, 128, 128), (200, 136, 256), (72, 40, 64), (100, 50, 64)])
@pytest.mark.parametrize("bm, bn, warps", [(128, 128, 4), (64, 64, 4), (128, 64, 8)])
def test_transposed_gemm_store_on_the_gpu_matches_torch(dtype, m, n, k, bm, bn, warps, tma_stores):
    g = torch.Generator(device="cpu").manual_seed(m * 7 + n)
    a = sparsecc.prune_2to4((torch.randn(m, k, generator=g) / k**0.5).to(torch.float16).cuda())
    b = torch.randn(k, n, generator=g).to(torch.float16).cuda()
    c = torch.full((n + 3, m), float("nan"), dtype=dtype, device="cuda")  # Cᵀ, poisoned, 3 spare rows
    grid = (triton_cdiv(m, bm), triton_cdiv(n, bn))
    _gemm_kernel[grid](sparsecc.compress(a), b, c, m, n, k, a.stride(0), b.stride(0), c.stride(0),
                       BM=bm, BN=bn, BK=64, TRANSPOSED=True, F32_OUT=dtype == torch.float32, num_warps=warps)
    torch.cuda.synchronize()
    ref = (a.float() @ b.float()).T
    assert torch.isnan(c[n:]).all(), "rows past N were written"
    torch.testing.assert_close(c[:n].float(), ref, rtol=1e-2, atol=1e-2)



@pytest.mark.gpu
@pytest.mark.parametrize("m, n, k", [(256, 128, 128), (208, 136, 256), (48, 200, 64), (1, 64, 64), (65, 64, 64)])
@pytest.mark.parametrize("bm, bn, warps", [(128, 128, 4), (64, 64, 4), (128, 256, 8), (256, 128, 8)])
def test_tma_stores_write_the_tile_and_nothing_around_it(m, n, k, bm, bn, warps):
    """Cᵀ with tma_stores (its row stride a multiple of 16 elements, poisoned columns past M and
    3 rows past N): every element of Cᵀ right, nothing written past M or N. M a multiple of 16:
    TMA stores, whose tensor map clips the boxes of the ragged tiles; M = 1 or 65: the vector
    stores (a TMA store wrote the rest of the last 16-byte chunk past M there, NOTES stop 35)."""
    g = torch.Generator(device="cpu").manual_seed(m * 5 + n)
    a = sparsecc.prune_2to4((torch.randn(m, k, generator=g) / k**0.5).to(torch.float16).cuda())
    b = torch.randn(k, n, generator=g).to(torch.float16).cuda()
    pad = 16 - m % 16 if m % 16 else 16
    c = torch.full((n + 3, m + pad), float("nan"), dtype=torch.float16, device="cuda")
    grid = (triton_cdiv(m, bm), triton_cdiv(n, bn))
    _gemm_kernel[grid](sparsecc.compress(a), b, c, m, n, k, a.stride(0), b.stride(0), c.stride(0),
                       BM=bm, BN=bn, BK=64, TRANSPOSED=True, num_warps=warps, tma_stores=True)
    torch.cuda.synchronize()
    ref = (a.float() @ b.float()).T
    assert torch.isnan(c[n:]).all() and torch.isnan(c[:, m:]).all(), "elements past M or N were written"
    torch.testing.assert_close(c[:n, :m].float(), ref, rtol=1e-2, atol=1e-2)


def triton_cdiv(a: int, b: int) -> int:
    return -(-a // b)
