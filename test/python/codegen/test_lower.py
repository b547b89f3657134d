"""CPU tests of the ttgir -> PTX lowering: layout maps, ptxas acceptance, SASS, errors."""

from __future__ import annotations

from collections import Counter

import pytest
from sgemm_ir import sparse_gemm_ttir

from sparsecc.analysis.layouts import distributed
from sparsecc.dialects.ttg import (
    BlockedEncodingAttr,
    MmaEncodingAttr,
    SharedEncodingAttr,
    SliceEncodingAttr,
)


def _owners(dl, num_warps):
    return Counter(dl.coord(w, lane, r) for w in range(num_warps) for lane in range(32) for r in range(dl.num_regs))


@pytest.mark.parametrize("shape", [(64, 32), (4, 64), (2, 8), (128, 64)])
def test_blocked_covers_every_element_equally(shape):
    lay = BlockedEncodingAttr([1, 8], [4, 8], [4, 1], [1, 0])
    owners = _owners(distributed(lay, shape), 4)
    assert set(owners) == {(i, j) for i in range(shape[0]) for j in range(shape[1])}
    assert len(set(owners.values())) == 1  # replication is uniform


def test_blocked_thread_owns_contiguous_run():
    dl = distributed(BlockedEncodingAttr([1, 8], [8, 4], [4, 1], [1, 0]), (64, 32))
    assert [dl.coord(1, 5, r) for r in range(8)] == [(8 + 1, 8 + c) for c in range(8)]


def test_mma_matches_ptx_accumulator_fragment():
    lay = MmaEncodingAttr([2, 2])
    dl = distributed(lay, (64, 64))
    owners = _owners(dl, 4)
    assert len(owners) == 64 * 64 and set(owners.values()) == {1}
    # warp 1 = (wm 0, wn 1); lane 6 = (g 1, t 2): c0 = (1, 8 + 4), c3 = (9, 8 + 5)
    assert dl.coord(1, 6, 0) == (1, 12) and dl.coord(1, 6, 3) == (9, 13)
    # second n-tile of that warp is 16 columns further (8 * wN)
    assert dl.coord(1, 6, 4) == (1, 28)


def test_slice_drops_dim_and_replicates():
    parent = BlockedEncodingAttr([1, 8], [4, 8], [4, 1], [1, 0])
    dl = distributed(SliceEncodingAttr(0, parent), (64,))
    owners = _owners(dl, 4)
    assert set(owners) == {(j,) for j in range(64)}


def test_swizzle_is_a_permutation_per_row():
    enc = SharedEncodingAttr(8, 2, 4, [1, 0])
    offs = [enc.swizzled_offset(r, c, 32) for r in range(64) for c in range(32)]
    assert sorted(offs) == list(range(64 * 32))


def _ttgir(bm, bn, bk, dtype="f16", stages=1, warps=4, target="sm_90"):
    from xdsl.parser import Parser

    from sparsecc.compiler import CompileOptions, run_passes, ttgir_rewrites
    from sparsecc.dialects import make_context

    module = Parser(make_context(), sparse_gemm_ttir(bm, bn, bk, dtype)).parse_module()
    passes = [f"convert-tt-to-ttg{{num-warps={warps} target={target}}}", "sparse-gpu-encoding"]
    if stages > 1:
        passes.append(f"tritongpu-pipeline{{num-stages={stages}}}")
    return run_passes(module, passes + ["canonicalize", "cse", *ttgir_rewrites(CompileOptions(target=target))])


@pytest.mark.parametrize("target", ["sm_80", "sm_90"])
@pytest.mark.parametrize("stages", [1, 3])
@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_sparse_gemm_assembles_with_hmma_sp(target, stages, dtype):
    from sparsecc.codegen.ptxas import assemble, dump_sass
    from sparsecc.compiler import CompileOptions, lower_to_ptx

    _, ptx, meta = lower_to_ptx(_ttgir(64, 64, 64, dtype, stages, target=target), CompileOptions(target=target))
    assert meta["name"] == "sgemm" and meta["threads"] == 128 and meta["num_warps"] == 4
    assert [k for _, k in meta["params"]] == ["ptr", "ptr", "ptr", "ptr", "i32", "i32", "i32"]
    assert meta["shared"] >= stages * (64 * 32 + 64 * 64 + 4 * 64) * 2
    assert f"m16n8k32.row.col.f32.{dtype}.{dtype}.f32" in ptx
    assert "ldmatrix.sync.aligned.m8n8.x4.trans" in ptx
    assert ("cp.async.cg" in ptx) == (stages > 1)
    cubin = assemble(ptx, target)
    res = cubin.kernel_resources()
    assert res.spill_stores == 0 and res.registers <= 255
    sass = dump_sass(cubin)
    assert "HMMA.SP.16832.F32" in sass
    assert "LDSM" in sass


def test_unsupported_op_is_named():
    from sparsecc.codegen.lower import LoweringError
    from sparsecc.compiler import CompileOptions, lower_to_ptx

    module = _ttgir(64, 64, 64)
    func = next(iter(module.ops))
    from xdsl.dialects import arith
    from xdsl.dialects.builtin import IntegerAttr, i32

    bad = arith.CeilDivSIOp(arith.ConstantOp(IntegerAttr(3, i32)), arith.ConstantOp(IntegerAttr(2, i32)))
    block = func.body.block
    block.insert_ops_before([bad.lhs.owner, bad.rhs.owner, bad], block.first_op)
    with pytest.raises(LoweringError, match="arith.ceildivsi"):
        lower_to_ptx(module, CompileOptions(target="sm_90"))


@pytest.mark.parametrize("spt, tpw, wpc, shape", [
    ([1, 8], [4, 8], [4, 1], (2, 128)),    # a metadata tile: 16 rows of threads over 2 rows
    ([1, 8], [8, 4], [4, 1], (16, 16)),    # a small values tile under 128 threads
    ([1, 8], [2, 16], [8, 1], (4, 64)),    # wrapped along both dims with 8 warps
    ([1, 8], [4, 8], [4, 1], (64, 64)),    # no wrap: every thread owns its chunks
])
def test_each_chunk_of_a_replicated_layout_has_one_copying_thread(spt, tpw, wpc, shape):
    """The owner rule of `lower_mem.first_replica` (unwrapped coordinate < shape - register
    offset along every wrapped dim), evaluated for every thread: each 16-byte chunk of the
    tile is copied by exactly one thread, so no two cp.async write the same shared bytes."""
    dl = distributed(BlockedEncodingAttr(spt, tpw, wpc, [1, 0]), shape)
    owners: dict[tuple[int, ...], int] = {}
    for warp in range(wpc[0] * wpc[1]):
        for lane in range(32):
            for r0 in range(0, dl.num_regs, 8):
                unwrapped = [sum(t.eval(lane, warp) for t in dl.base[d]) for d in range(2)]
                if all(not dl.wrap[d] or unwrapped[d] < dl.shape[d] - dl.regs[r0][d] for d in range(2)):
                    key = dl.coord(warp, lane, r0)
                    owners[key] = owners.get(key, 0) + 1
    chunks = {(r, c) for r in range(shape[0]) for c in range(0, shape[1], 8)}
    assert set(owners) == chunks and set(owners.values()) == {1}
