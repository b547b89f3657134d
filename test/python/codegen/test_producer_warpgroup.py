"""The producer warpgroup (`producer_warpgroup` switch, tritongpu-warp-specialize{warpgroup}):
a warp-specialized kernel of two compute warpgroups gets four producer warps instead of one;
all four hand registers back with `setmaxnreg.dec`, the compute warps take them with
`setmaxnreg.inc` (232 a thread instead of the 168 ptxas allows 384 threads), and one producer
warp issues the copies. The 8-bit stream-K kernel at 128x256x128 spills ~400 bytes in the
one-warp form and none in this one."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
import torch
from ptxas_tools import needs_ptxas

import sparsecc
from sparsecc.codegen.lower_async import check_register_pool, register_split
from sparsecc.codegen.ptxas import KernelResources
from sparsecc.ops.stream_k import scaled_sparse_linear_stream_k_kernel
from sparsecc.passes.tritongpu_warp_specialize import producer_warps

_SIG = {"Y": "*fp16", "X": "*fp8e4nv", "W": "*fp8e4nv:NV24", "SCALE_X": "*fp32", "SCALE_W": "*fp32", "BIAS": "*fp16",
        "PARTIALS": "*fp32", "TICKETS": "*i32", "M": "i32:16", "N": "i32:16", "K": "i32:16", "stride_xm": "i32:16",
        "stride_wn": "i32:16", "stride_ym": "i32:16", "WHOLE": "i32", "PART_STEPS": "i32", "ITEMS": "i32"}
_TILE = {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 128, "ACC_INT": False, "HAS_BIAS": False, "ACTIVATION": "none",
         "K_32": True}


def _stream_k(warps: int = 8, **switches: bool) -> sparsecc.CompiledKernel:
    return sparsecc.compile(scaled_sparse_linear_stream_k_kernel, signature=_SIG, constexprs=_TILE | {"SPLIT": 2},
                            target="sm_90a", num_warps=warps, num_stages=4, tma_extents=True, **switches)


def test_the_register_split_fills_the_register_file():
    for warps in (8, 12, 16):
        producer, compute = register_split(warps)
        assert compute % 8 == 0 and 24 <= producer <= compute <= 256
        assert 128 * producer + 32 * warps * compute <= 65536
        assert 128 * producer + 32 * warps * (compute + 8) > 65536  # nothing left on the table
    assert register_split(8) == (40, 232)


def test_only_whole_compute_warpgroups_of_two_or_more_get_a_producer_warpgroup():
    assert [producer_warps(w, True) for w in (1, 2, 4, 8, 12, 16, 28, 32)] == [1, 1, 1, 4, 4, 4, 4, 1]
    assert all(producer_warps(w, False) == 1 for w in (4, 8, 16))


def test_the_producer_warpgroup_trades_registers_and_one_warp_copies():
    ptx = _stream_k(producer_warpgroup=True).asm["ptx"]
    assert ".maxntid 384, 1, 1" in ptx
    dec, inc = ptx.index("setmaxnreg.dec.sync.aligned.u32 40;"), ptx.index("setmaxnreg.inc.sync.aligned.u32 232;")
    split = ptx.index("shfl.sync.idx.b32")  # the warp-uniform producer / compute branch
    copies = ptx.index("cp.async.bulk.tensor")
    assert split < dec < copies < inc, "the producers give back first, then copy; the compute warps take after"
    # between the producers' setmaxnreg and their copies: a branch on the first producer warp (8)
    assert re.search(r"setmaxnreg\.dec[^\n]*\n\tmov\.b32 (%r\d+), 8;\n\tsetp\.eq\.b32 %p\d+, %r\d+, \1;", ptx)
    assert ptx.count("setmaxnreg") == 2


def test_without_the_switch_or_at_one_compute_warpgroup_nothing_changes():
    ptx = _stream_k().asm["ptx"]
    assert "setmaxnreg" not in ptx and ".maxntid 288, 1, 1" in ptx
    four = _stream_k(warps=4, producer_warpgroup=True).asm["ptx"]
    assert "setmaxnreg" not in four and ".maxntid 160, 1, 1" in four
    capped = _stream_k(producer_warpgroup=True, maxnreg=168).asm["ptx"]  # a user cap: no registers to hand out
    assert "setmaxnreg" not in capped


@needs_ptxas
def test_the_8bit_stream_k_tile_stops_spilling():
    one = _stream_k().metadata["ptxas"]
    group = _stream_k(producer_warpgroup=True).metadata["ptxas"]
    (one,), (group,) = one.values(), group.values()
    assert one.spill_stores > 0, "the one-warp form no longer spills: this test lost its point"
    assert group.spill_stores == 0 and group.spill_loads == 0
    assert group.registers * 384 >= 128 * 40 + 256 * 232, "ptxas gave the CTA fewer registers than setmaxnreg takes"


def test_a_register_pool_smaller_than_setmaxnreg_asks_is_an_internal_error():
    ptx = ".maxntid 384, 1, 1\nsetmaxnreg.dec.sync.aligned.u32 40;\nsetmaxnreg.inc.sync.aligned.u32 232;\n"
    check_register_pool(ptx, {"k": KernelResources(registers=168)}, 384)
    with pytest.raises(RuntimeError, match="internal error: setmaxnreg asks for 64512 registers.*48384"):
        check_register_pool(ptx, {"k": KernelResources(registers=126)}, 384)


gpu = pytest.mark.gpu


@gpu
@pytest.mark.parametrize("wdt", [torch.float8_e4m3fn, torch.int8], ids=["fp8", "int8"])
@pytest.mark.parametrize("stream_k", [False, True], ids=["data-parallel", "stream-k"])
def test_8bit_linear_with_a_producer_warpgroup_on_the_gpu(monkeypatch, wdt, stream_k):
    if not torch.cuda.is_available():
        pytest.skip("no GPU")
    from sparsecc.frontend.jit import drop_fast_paths
    from sparsecc.nn.quantize import quantize_rows
    from sparsecc.ops.linear_config import LinearConfig
    from sparsecc.ops.sparse_linear_8bit import reference_linear_8bit, sparse_linear_8bit

    monkeypatch.setenv("SPARSECC_PRODUCER_WARPGROUP", "1")
    drop_fast_paths()
    g = torch.Generator().manual_seed(7)
    m, n, k = 517, 2000, 1536  # ragged M and N; on an H100 stream-K splits all 40 tiles in 3 parts
    q, sw = quantize_rows(sparsecc.prune_2to4(torch.randn(n, k, generator=g)), wdt)
    w, sw = sparsecc.compress(q.cuda()), sw.cuda()
    x = torch.randn(m, k, generator=g).half().cuda()
    bias = torch.randn(n, generator=g).half().cuda()
    cfg = LinearConfig(128, 256, 128, 8, 4, stream_k=stream_k)
    y = sparse_linear_8bit(x, w, sw, bias, "silu", config=cfg)
    drop_fast_paths()
    assert not y.isnan().any()
    want = reference_linear_8bit(x, w, sw, bias, "silu").float()
    torch.testing.assert_close(y.float(), want, rtol=1e-2, atol=1e-2 * max(want.abs().max().item(), 1.0))


@gpu
@pytest.mark.parametrize("routing", [(1, 0), (300, 2)], ids=["1tok", "300tok"])
def test_moe_tma_form_with_a_producer_warpgroup_on_the_gpu(routing):
    """bench/moe.py's prefill form (tma_extents, 128x256x64 w8 s4) with the producer warpgroup:
    one ring across each program's token tiles, filled by one warp of the four."""
    if not torch.cuda.is_available():
        pytest.skip("no GPU")
    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))
    import moe

    experts, n, k = 8, 512, 1088
    x, offs, _ = moe.route(routing[0], experts, moe.TOP_K, k, "cuda", seed=routing[1])
    w = moe.make_weights(experts, n, k, "cuda", seed=3)
    y = torch.full((x.shape[0], n), float("nan"), dtype=torch.float16, device="cuda")
    kernel = moe.pk.sparsecc_kernel(moe.moe_gemm_kernel)
    moe.launch(kernel, sparsecc.compress(w), x, y, offs, n, k, moe.Tile(128, 256, 64, 8, 4), experts,
               tma_extents=True, producer_warpgroup=True)
    torch.cuda.synchronize()
    torch.testing.assert_close(y.float(), moe.reference(w, x, offs, n), rtol=1e-2, atol=1e-2)
