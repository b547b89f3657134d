"""`sparsecc.ops.stream_k`: the stream-K linear kernel against torch, on the interpreter (few
programs, so that tiles split into two or three pieces, a program's range lies inside one tile,
or covers whole tiles between two pieces) and on the GPU (the shapes bench/stream_k.py times),
into NaN-poisoned outputs, with bias and an activation; and how the programs are counted."""

from __future__ import annotations

import re

import pytest
import torch
from ptxas_tools import needs_ptxas

import sparsecc
from sparsecc.codegen.ptxas import assemble
from sparsecc.ops.sparse_glu import sparse_swiglu
from sparsecc.ops.sparse_linear import LinearConfig, reference_linear, sparse_linear
from sparsecc.ops.stream_k import (
    launch_linear_stream_k,
    sparse_linear_stream_k_kernel,
    stream_k_plan,
)


def _check(device: str, m: int, n: int, k: int, cfg: LinearConfig, sms: int | None, seed: int = 0) -> None:
    g = torch.Generator().manual_seed(seed)
    w = sparsecc.compress(sparsecc.prune_2to4(torch.randn(n, k, generator=g).half()).to(device))
    x = torch.randn(m, k, generator=g).half().to(device)
    bias = torch.randn(n, generator=g).half().to(device)
    y = torch.full((m, n), float("nan"), dtype=torch.float16, device=device)
    launch_linear_stream_k(y, x, w, bias, cfg, has_bias=True, activation="silu", sms=sms)
    assert not y.isnan().any(), "an output element was not written"
    want = reference_linear(x, w, bias, "silu").float()
    torch.testing.assert_close(y.float(), want, rtol=1e-2, atol=1e-2 * max(want.abs().max().item(), 1.0))


@pytest.mark.filterwarnings("ignore::sparsecc.frontend.jit.InterpreterFallbackWarning")
@pytest.mark.parametrize("m, n, k, sms", [
    (37, 48, 96, 3),    # 6 tiles over 3 programs: two full waves, nothing split
    (40, 64, 160, 4),   # 6 tiles: one wave of 4, the last 2 tiles in 2 parts (3 and 2 K steps)
    (33, 70, 64, 7),    # ragged M and N: 9 tiles on 7 programs, 2 K steps a tile: too short to split
    (16, 32, 256, 3),   # one tile of 8 steps in 3 parts (3, 3, 2 steps)
    (48, 32, 512, 9),   # 3 tiles of 16 steps, each in 3 parts on 9 programs
])
def test_stream_k_matches_torch_on_the_interpreter(m, n, k, sms):
    _check("cpu", m, n, k, LinearConfig(16, 32, 32, 4, 1), sms)


def test_the_plan_splits_only_a_sparse_last_wave():
    cfg = LinearConfig(128, 256, 64, 8, 4)
    assert stream_k_plan(512, 11008, 4096, cfg) == (132, 132, 3, 22)  # 172 tiles: 132 whole, 40 in 3 parts
    assert stream_k_plan(512, 4096, 4096, cfg) == (128, 0, 2, 32)  # 64 tiles, each in 2 parts
    assert stream_k_plan(2048, 4096, 4096, cfg) == (132, 256, 1, 64)  # 124 in the last wave: no split
    assert stream_k_plan(512, 28672, 8192, cfg) == (132, 396, 2, 64)  # 448 tiles: 3 waves + 52 in 2 parts
    small = LinearConfig(16, 32, 32, 4, 1)
    assert stream_k_plan(16, 32, 256, small, sms=3) == (3, 0, 3, 3)
    assert stream_k_plan(16, 32, 64, small, sms=8) == (1, 1, 1, 2)  # 2 K steps: too short to split
    programs, whole, split, part = stream_k_plan(16, 32, 160, small, sms=8)
    assert split * part >= 5 > (split - 1) * part  # no empty part


@pytest.mark.gpu
@pytest.mark.parametrize("m, n, k", [(512, 4096, 4096), (517, 11008, 4096), (300, 392, 704)])
def test_stream_k_matches_torch_on_the_gpu(m, n, k):
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    _check("cuda", m, n, k, LinearConfig(128, 256, 64, 8, 4), None)
    _check("cuda", m, n, k, LinearConfig(128, 128, 64, 4, 4), 7)
    _check("cuda", m, n, k, LinearConfig(128, 128, 64, 8, 4), 100)
    g = torch.Generator().manual_seed(2)  # the dispatch table's route: a stream_k config through sparse_linear
    w = sparsecc.compress(sparsecc.prune_2to4(torch.randn(n, k, generator=g).half()).cuda())
    x = torch.randn(m, k, generator=g).half().cuda()
    y = sparse_linear(x, w, config=LinearConfig(128, 256, 64, 8, 4, stream_k=True))
    torch.testing.assert_close(y.float(), reference_linear(x, w).float(), rtol=1e-2, atol=1e-2 * (k / 64) ** 0.5)


@pytest.mark.filterwarnings("ignore::sparsecc.frontend.jit.InterpreterFallbackWarning")
def test_sparse_linear_runs_a_stream_k_config():
    """`LinearConfig(stream_k=True)` is the dispatch table's way to pick this kernel: through
    `sparse_linear`'s checks to `launch_linear`, on the interpreter's 4 programs (40x64 in 6
    tiles of 16x32: one wave of 4 whole, 2 tiles split in 2 parts)."""
    g = torch.Generator().manual_seed(1)
    w = sparsecc.compress(sparsecc.prune_2to4(torch.randn(64, 160, generator=g).half()))
    x = torch.randn(40, 160, generator=g).half()
    y = sparse_linear(x, w, config=LinearConfig(16, 32, 32, 4, 1, stream_k=True))
    torch.testing.assert_close(y.float(), reference_linear(x, w).float(), rtol=1e-2, atol=1e-2)
    wq = sparsecc.compress(sparsecc.prune_2to4(torch.randn(64, 512, generator=g).half()), quant="w4g128")
    xq = torch.randn(40, 512, generator=g).half()  # 6 tiles of 4 K steps: 2 split in 2 parts
    yq = sparse_linear(xq, wq, config=LinearConfig(16, 32, 128, 4, 1, stream_k=True))
    torch.testing.assert_close(yq.float(), reference_linear(xq, wq).float(), rtol=1e-2, atol=2e-2)
    with pytest.raises(ValueError, match="sparse_swiglu: config stream_k is not a form of the fused kernel"):
        sparse_swiglu(x, sparsecc.compress(sparsecc.prune_2to4(torch.randn(128, 160, generator=g).half())),
                      config=LinearConfig(16, 32, 32, 4, 1, stream_k=True))


@pytest.mark.gpu
@pytest.mark.parametrize("quant", ["w4g128", "w8g128"])
def test_quantized_stream_k_on_the_register_a_wgmma_tile(quant):
    """The dispatch table's quant_wgmma + stream_k configs (flags 3): a quantized weight through
    sparse_linear on the persistent kernel, whole tiles and split ones (plans for 9 SMs)."""
    if not torch.cuda.is_available() or torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("needs an sm_90 GPU (the register-A wgmma tile)")
    g = torch.Generator().manual_seed(3)
    w = sparsecc.compress(sparsecc.prune_2to4(torch.randn(392, 1536, generator=g).half()).cuda(), quant=quant)
    x = torch.randn(517, 1536, generator=g).half().cuda()
    bias = torch.randn(392, generator=g).half().cuda()
    want = reference_linear(x, w, bias, "silu").float()
    for cfg in (LinearConfig(128, 128, 128, 8, 4, quant_wgmma=True, stream_k=True),
                LinearConfig(256, 128, 128, 8, 3, quant_wgmma=True, stream_k=True)):
        for sms in (4, 9, None):
            y = torch.full((517, 392), float("nan"), dtype=torch.float16, device="cuda")
            launch_linear_stream_k(y, x, w, bias, cfg, has_bias=True, activation="silu", sms=sms)
            torch.testing.assert_close(y.float(), want, rtol=1e-2, atol=2e-2 * max(want.abs().max().item(), 1.0))
        y = sparse_linear(x, w, bias, "silu", config=cfg)
        torch.testing.assert_close(y.float(), want, rtol=1e-2, atol=2e-2 * max(want.abs().max().item(), 1.0))


_SIG = {"Y": "*fp16", "X": "*fp16", "W": "*fp16:NV24", "BIAS": "*fp16", "PARTIALS": "*fp32", "TICKETS": "*i32",
        "M": "i32:16", "N": "i32:16", "K": "i32:16", "stride_xm": "i32:16", "stride_wn": "i32:16", "stride_ym": "i32:16",
        "WHOLE": "i32", "PART_STEPS": "i32", "ITEMS": "i32"}


@needs_ptxas
@pytest.mark.parametrize("tile", [(128, 256, 64, 8), (128, 128, 64, 4)])
def test_the_dispatched_tiles_assemble_without_spills(tile):
    """The forms the H100 table dispatches (whole tiles only, and 2 or 3 parts a split tile) on
    sm_90a as a launch specializes them: no spills (the parts' scratch through a block pointer,
    no fix-up code without a split; a whole-tile launch spilled 1,012 bytes before), and only a
    split launch has the ticket atomic."""
    bm, bn, bk, warps = tile
    consts = {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "HAS_BIAS": False, "ACTIVATION": "none", "ROWS_16B": True}
    for split in (1, 2, 3):
        ck = sparsecc.compile(sparse_linear_stream_k_kernel, signature=_SIG, constexprs=consts | {"SPLIT": split},
                              target="sm_90a", num_warps=warps, num_stages=4, tma_extents=True)
        ptx = ck.asm["ptx"]
        assert ("atom." in ptx) == (split > 1), split
        res = assemble(ptx, "sm_90a").kernel_resources()
        assert res.spill_stores == 0 and res.spill_loads == 0, (split, res)


def _check_8bit(device: str, m: int, n: int, k: int, cfg: LinearConfig, sms: int | None, wdt: torch.dtype,
                seed: int = 0, **options: bool) -> None:
    """The 8-bit stream-K kernel (`launch_linear_8bit_stream_k`) into a NaN-poisoned y, against
    `reference_linear_8bit` (the float64 product of the same codes, both scales, bias, silu)."""
    from sparsecc.nn.quantize import quantize_rows
    from sparsecc.ops.quantize_rows import quantize_rows_fused
    from sparsecc.ops.sparse_linear_8bit import reference_linear_8bit
    from sparsecc.ops.stream_k import launch_linear_8bit_stream_k

    g = torch.Generator().manual_seed(seed)
    q, sw = quantize_rows(sparsecc.prune_2to4(torch.randn(n, k, generator=g)), wdt)
    w = sparsecc.compress(q.to(device))
    sw = sw.to(device)
    x = torch.randn(m, k, generator=g).half().to(device)
    bias = torch.randn(n, generator=g).half().to(device)
    xq, xs = quantize_rows_fused(x, wdt)
    y = torch.full((m, n), float("nan"), dtype=torch.float16, device=device)
    launch_linear_8bit_stream_k(y, xq, xs, w, sw, bias, cfg, True, "silu", sms=sms, **options)
    assert not y.isnan().any(), "an output element was not written"
    want = reference_linear_8bit(x, w, sw, bias, "silu").float()
    torch.testing.assert_close(y.float(), want, rtol=1e-2, atol=1e-2 * max(want.abs().max().item(), 1.0))


@pytest.mark.filterwarnings("ignore::sparsecc.frontend.jit.InterpreterFallbackWarning")
@pytest.mark.parametrize("wdt", [torch.float8_e4m3fn, torch.int8], ids=["fp8", "int8"])
@pytest.mark.parametrize("m, n, k, sms", [
    (40, 64, 320, 4),   # 6 tiles: one wave of 4, the last 2 tiles in 2 parts
    (16, 32, 512, 3),   # one tile of 8 steps in 3 parts (int8: int32 parts, exact)
    (33, 70, 128, 7),   # ragged M and N, 2 K steps a tile: nothing split
])
def test_8bit_stream_k_matches_the_quantized_arithmetic_on_the_interpreter(m, n, k, sms, wdt):
    _check_8bit("cpu", m, n, k, LinearConfig(16, 32, 64, 4, 1), sms, wdt)


@pytest.mark.gpu
@pytest.mark.parametrize("wdt", [torch.float8_e4m3fn, torch.int8], ids=["fp8", "int8"])
@pytest.mark.parametrize("m, n, k, cfg", [
    (512, 11008, 4096, LinearConfig(128, 256, 128, 8, 4, stream_k=True)),  # 172 tiles: 40 in 3 parts
    (512, 4096, 4096, LinearConfig(128, 256, 128, 8, 4, stream_k=True)),   # 64 tiles, each in 2 parts
    (512, 11008, 4096, LinearConfig(128, 128, 128, 8, 7, stream_k=True)),  # whole tiles, early scales
    (130, 11008, 4096, LinearConfig(64, 128, 256, 4, 5, stream_k=True)),   # ragged M
    (300, 1000, 1536, LinearConfig(128, 128, 256, 8, 3, stream_k=True)),   # ragged N, a short K
    (300, 1040, 1536, LinearConfig(128, 128, 128, 8, 7, stream_k=True)),   # ragged, TMA-stored tiles
])
def test_8bit_stream_k_on_the_gpu(m, n, k, cfg, wdt):
    """The 8-bit stream-K launch into a poisoned y, then the layer with the same config, whose
    ragged token counts (130, 300) run on rows padded to whole token tiles (`padded_tokens`)
    and return the first m."""
    if not torch.cuda.is_available():
        pytest.skip("no GPU")
    _check_8bit("cuda", m, n, k, cfg, None, wdt, seed=m + n)
    from sparsecc.nn.quantize import quantize_rows
    from sparsecc.ops.sparse_linear_8bit import reference_linear_8bit, sparse_linear_8bit

    g = torch.Generator().manual_seed(3)  # the public entry point with a stream_k config
    q, sw = quantize_rows(sparsecc.prune_2to4(torch.randn(n, k, generator=g)), wdt)
    w = sparsecc.compress(q.cuda())
    x = torch.randn(m, k, generator=g).half().cuda()
    want = reference_linear_8bit(x, w, sw.cuda()).float()
    y = sparse_linear_8bit(x, w, sw.cuda(), config=cfg).float()
    assert y.shape == (m, n)
    torch.testing.assert_close(y, want, rtol=1e-2, atol=1e-2 * max(want.abs().max().item(), 1.0))


@pytest.mark.gpu
@pytest.mark.parametrize("cfg, boxes", [
    (LinearConfig(128, 128, 128, 4, 6, stream_k=True), False),  # each group a whole 32 KiB store tile
    (LinearConfig(128, 128, 128, 4, 7, stream_k=True), True),   # each group one 16 KiB box (64 x 128)
    (LinearConfig(128, 128, 256, 4, 4, stream_k=True), True),   # each group one 8 KiB box (64 x 64)
], ids=["tile", "boxes", "k256-boxes"])
@pytest.mark.parametrize("wdt", [torch.float8_e4m3fn, torch.int8], ids=["fp8", "int8"])
@pytest.mark.parametrize("m, n, k, sms", [
    (512, 11008, 4096, None),  # 344 whole tiles on 132 programs: two or three trips each, groups alternate
    (300, 1040, 1536, None),   # ragged, 27 tiles: one trip a program, the second group idle
    (512, 4096, 4096, 20),     # planned for 20 SMs: whole tiles, then the last wave in K parts (tickets)
    (130, 2048, 4160, 7),      # ragged M, K not a multiple of the K step, parts
])
def test_8bit_stream_k_pingpong_on_the_gpu(m, n, k, sms, wdt, cfg, boxes):
    """Two compute warpgroups taking the work items in turn (`pingpong`), into a poisoned y;
    with `tma_store_boxes` each group's tile goes out box by box, so the ring has more stages."""
    if not torch.cuda.is_available():
        pytest.skip("no GPU")
    _check_8bit("cuda", m, n, k, cfg, sms, wdt, seed=m + k, pingpong=True, tma_store_boxes=boxes)


def _compile_8bit_stream_k(cfg: LinearConfig, **options: bool):
    """The 8-bit stream-K kernel for `cfg` on sm_90a (one program a whole tile), with the
    persistent launch's TMA stores and unrolled K loop unless `options` say otherwise."""
    from sparsecc.ops.linear_config import launch_constants_8bit
    from sparsecc.ops.stream_k import scaled_sparse_linear_stream_k_kernel

    w = sparsecc.compress(torch.zeros(8, 64).to(torch.float8_e4m3fn))
    sig = {"Y": "*bf16", "X": "*fp8e4nv", "W": "*fp8e4nv:NV24", "SCALE_X": "*fp32", "SCALE_W": "*fp32",
           "BIAS": "*bf16", "PARTIALS": "*fp32", "TICKETS": "*i32", "M": "i32", "N": "i32:16", "K": "i32:16",
           "stride_xm": "i32:16", "stride_wn": "i32:16", "stride_ym": "i32:16", "WHOLE": "i32",
           "PART_STEPS": "i32", "ITEMS": "i32"}
    consts = launch_constants_8bit(w, 4096, cfg, False, "none")
    launch = {name: consts.pop(name) for name in ("num_warps", "num_stages")}
    switches = {"tma_stores": True, "wgmma_unroll": True} | options
    return sparsecc.compile(scaled_sparse_linear_stream_k_kernel, sig, consts | {"SPLIT": 1}, target="sm_90a",
                            tma_extents=True, **launch, **switches)


def test_pingpong_kernel_has_two_groups_and_a_producer_warpgroup():
    """The 8-bit stream-K kernel at 4 warps with `pingpong`: 384 threads (two compute warpgroups
    and a producer warpgroup trading registers), two ordering mbarriers, each group's own named
    barrier; it assembles, and ptxas's register pool covers what setmaxnreg asks. At 8 warps the
    switch changes nothing."""
    threads = {}
    for warps, stages in ((4, 6), (8, 7)):
        ck = _compile_8bit_stream_k(LinearConfig(128, 128, 128, warps, stages, stream_k=True), pingpong=True)
        threads[warps] = ck.metadata["threads"]
        if warps == 4:
            ptx = ck.asm["ptx"]
            assert "setmaxnreg.dec.sync.aligned.u32 40;" in ptx and "setmaxnreg.inc.sync.aligned.u32 232;" in ptx
            assert ptx.count("mbarrier.init.shared::cta.b64") == 2 * stages + 2  # full, empty, and the order pair
            assert re.search(r"bar\.sync %r\d+, 128;", ptx)  # a group's epilogue barrier
            assert "bar.sync 1, 128;" not in ptx
            assert ck.asm["cubin"]
    assert threads == {4: 384, 8: 288}


def test_box_staged_tma_store_goes_box_by_box():
    """`tma_store_boxes` on the 4-warp 8-bit stream-K kernel: its epilogue buffer holds one of
    the tile's two TMA boxes (16 KiB less shared memory), and the store writes box 0 (8
    `stmatrix.trans`), stores it, waits until the TMA has read it, then box 1, into the same
    buffer."""
    shared, ptx = {}, {}
    for boxes in (False, True):
        ck = _compile_8bit_stream_k(LinearConfig(128, 128, 128, 4, 6, stream_k=True), wgmma_unroll=False,
                                    tma_store_boxes=boxes)
        shared[boxes], ptx[boxes] = ck.metadata["shared"], ck.asm["ptx"]
        assert ck.asm["cubin"]
    assert shared[False] - shared[True] == 128 * 64 * 2
    epilogue = ptx[True].split("cp.async.bulk.tensor.2d.global", 1)
    assert len(epilogue) == 2 and epilogue[0].rsplit("cp.async.bulk.tensor.2d.shared", 1)[-1].count("stmatrix") == 8
    box0, box1 = ptx[True].split("cp.async.bulk.tensor.2d.global")[1:3]
    assert "cp.async.bulk.wait_group.read 0;" in box0 and box0.count("stmatrix") == 8
    buffers = re.findall(r"cp\.async\.bulk\.tensor\.2d\.global\.shared::cta\.bulk_group \[[^]]*\], \[(%r\d+)\]",
                         ptx[True])
    assert len(buffers) == 2 and buffers[0] == buffers[1]  # one buffer, both boxes
    assert len(re.findall(r"cp\.async\.bulk\.tensor\.2d\.global", ptx[False])) == 2


def test_pingpong_stages_smaller_boxes_where_two_groups_would_not_fit():
    """Ping-pong at K steps of 256 with 4 stages (208 KB of ring): two groups' 16 KiB boxes (64
    x 128) would not fit beside the ring, so each group stages boxes of 64 x 64 (8 KiB): four
    TMA stores a tile from one buffer, the second of each column block 64 rows on, through a
    tensor map whose box is 64 x 64; the ordering mbarriers sit in the ring's alignment gap,
    and the kernel takes all 227 KiB. One group (no ping-pong) keeps the 64 x 128 boxes."""
    cfg = LinearConfig(128, 128, 256, 4, 4, stream_k=True)
    pp = _compile_8bit_stream_k(cfg, pingpong=True, tma_store_boxes=True)
    one = _compile_8bit_stream_k(cfg, tma_store_boxes=True)
    assert pp.metadata["threads"] == 384 and one.metadata["threads"] == 160
    assert pp.metadata["shared"] == 232448 >= one.metadata["shared"]
    assert pp.metadata["tensor_maps"][-1]["box"] == [64, 64] and one.metadata["tensor_maps"][-1]["box"] == [64, 128]
    ptx = pp.asm["ptx"]
    stores = re.findall(r"cp\.async\.bulk\.tensor\.2d\.global\.shared::cta\.bulk_group \[[^,]*, \{([^}]*)\}\], "
                        r"\[(%r\d+)\]", ptx)
    assert len(stores) == 4 and len({buffer for _, buffer in stores}) == 1  # 4 boxes, one buffer
    assert len({coords for coords, _ in stores}) == 4  # each at its own (column, row) corner
    assert len(re.findall(r"cp\.async\.bulk\.tensor\.2d\.global", one.asm["ptx"])) == 2
    assert ptx.count("cp.async.bulk.wait_group.read 0;") >= 3  # between the boxes
    assert pp.asm["cubin"]


def test_pingpong_falls_back_to_one_group_where_two_do_not_fit():
    """Two 32 KiB store tiles beside 7 stages of 26 KiB do not fit 227 KiB, and without box
    staging nothing shrinks them: the kernel runs one compute warpgroup and a producer warp
    instead of failing to allocate."""
    ck = _compile_8bit_stream_k(LinearConfig(128, 128, 128, 4, 7, stream_k=True), pingpong=True)
    assert ck.metadata["threads"] == 160 and ck.metadata["shared"] <= 232448
    assert "setmaxnreg" not in ck.asm["ptx"] and ck.asm["cubin"]
