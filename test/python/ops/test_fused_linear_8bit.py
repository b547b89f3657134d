"""`sparse_linear_8bit`: fused per-token quantization, then one 8-bit 2:4 kernel whose epilogue
applies both scales, the bias and the activation and writes y (tokens x out) in x's dtype.
The kernel on the interpreter against `reference_linear_8bit` (torch) on ragged shapes; its PTX
for sm_90a (fp8, int8) and sm_80 (int8: fp8 tensor cores start at sm_89) at the default tiles;
bad arguments; and on the GPU (`gpu`): the kernels against torch, the layer in a CUDA graph and
under torch.compile, and the path's launches (no transposes or copies of x or y)."""

from __future__ import annotations

import re
import warnings

import pytest
import torch
from ptxas_tools import needs_ptxas

import sparsecc
from sparsecc.codegen import ptxas
from sparsecc.nn import SparseLinear
from sparsecc.nn.quantize import quantize_rows
from sparsecc.ops.linear_config import table_linear_config
from sparsecc.ops.sparse_linear import LinearConfig
from sparsecc.ops.sparse_linear_8bit import (
    FILLED_CTAS,
    default_config_linear_8bit,
    padded_tokens,
    reference_linear_8bit,
    scaled_sparse_linear_kernel,
    scaled_sparse_linear_splitk_kernel,
    sparse_linear_8bit,
)
from sparsecc.ops.stream_k import stream_k_plan

EIGHT_BIT = [torch.int8, torch.float8_e4m3fn]


@pytest.fixture(autouse=True)
def _quiet_interpreter():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # CPU tensors run on the interpreter here on purpose
        yield


def _weight(n: int, k: int, dtype: torch.dtype, device: str = "cpu", seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    w = sparsecc.prune_2to4(torch.randn(n, k, generator=g) * 0.05).to(device)
    q, sw = quantize_rows(w, dtype)
    return sparsecc.compress(q), sw


@pytest.mark.parametrize("wdt", EIGHT_BIT, ids=str)
@pytest.mark.parametrize("xdt", [torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("m, n, k, act, bias", [(1, 64, 64, "none", False), (5, 48, 96, "silu", True),
                                                (17, 40, 128, "relu", True), (33, 72, 160, "gelu_tanh", False)])
def test_interpreter_matches_torch(wdt, xdt, m, n, k, act, bias):
    w, sw = _weight(n, k, wdt, seed=m)
    g = torch.Generator().manual_seed(m + n)
    x = (torch.randn(2, m, k, generator=g) * 3).to(xdt)
    b = torch.randn(n, generator=g).to(xdt) if bias else None
    y = sparse_linear_8bit(x, w, sw, b, act)
    ref = reference_linear_8bit(x, w, sw, b, act)
    assert y.shape == (2, m, n) and y.dtype == xdt
    torch.testing.assert_close(y, ref)  # fp32 sums of the same codes, one rounding to x's dtype


@pytest.mark.parametrize("wdt", EIGHT_BIT, ids=str)
@pytest.mark.parametrize("m, n, k, split", [(1, 64, 256, 2), (3, 40, 320, 3), (17, 72, 192, 4), (2, 48, 64, 2)])
def test_split_k_on_the_interpreter(wdt, m, n, k, split):
    """K split over `split` programs (uneven slices; with K = 64 and BLOCK_K = 64 the second
    program has no K step and adds a zero partial): the partial sums of each slice (int32 for
    int8, so still exact), added in order by the last program, equal the one-program result."""
    w, sw = _weight(n, k, wdt, seed=k)
    g = torch.Generator().manual_seed(m * k)
    x = (torch.randn(m, k, generator=g) * 2).half()
    b = torch.randn(n, generator=g).half()
    cfg = LinearConfig(16, 32, 64, num_warps=4, num_stages=1, split_k=split)
    y = sparse_linear_8bit(x, w, sw, b, "silu", config=cfg)
    torch.testing.assert_close(y, reference_linear_8bit(x, w, sw, b, "silu"))
    whole = sparse_linear_8bit(x, w, sw, b, "silu", config=LinearConfig(16, 32, 64, num_warps=4, num_stages=1))
    if wdt == torch.int8:  # integer partials: the same sums whatever the split
        assert torch.equal(y, whole)


@pytest.mark.parametrize("m, n, k", [(3, 72, 128), (19, 64, 192), (1, 32, 64)])
def test_cta_pairs_on_the_interpreter(m, n, k):
    """CTA pairs (programs 2j, 2j+1 on adjacent weight tiles of one token tile): the same result
    as one CTA a tile, with an odd count of weight tiles (72 / 32: the last pair's partner lies
    past N and stores nothing) and a lone tile padded to a pair."""
    w, sw = _weight(n, k, torch.float8_e4m3fn, seed=n)
    x = (torch.randn(m, k, generator=torch.Generator().manual_seed(k)) * 2).half()
    b = torch.randn(n, generator=torch.Generator().manual_seed(m)).half()
    cfg = LinearConfig(16, 32, 64, num_warps=4, num_stages=1, cta_pairs=True)
    y = sparse_linear_8bit(x, w, sw, b, "silu", config=cfg)
    torch.testing.assert_close(y, reference_linear_8bit(x, w, sw, b, "silu"))


def test_cta_pairs_config_is_refused_where_it_cannot_run():
    with pytest.raises(ValueError, match="neither split_k nor stream_k"):
        LinearConfig(128, 128, 256, 8, 3, split_k=2, cta_pairs=True)
    w16 = sparsecc.compress(sparsecc.prune_2to4(torch.randn(32, 64)).half())
    with pytest.raises(ValueError, match="cta_pairs is for 8-bit weights"):
        sparsecc.ops.sparse_linear(torch.randn(2, 64).half(), w16, config=LinearConfig(16, 32, 64, cta_pairs=True))


@needs_ptxas
@pytest.mark.parametrize("tile", [(128, 128, 256, 8, 3), (64, 128, 256, 4, 4)])
def test_cta_pairs_multicast_the_token_tiles(tile):
    """The paired kernel runs as clusters of two, its X tiles (the tokens, B of the transposed
    dot) come by TMA multicast to both CTAs while W's do not, and it assembles without spills."""
    bm, bn, bk, nw, ns = tile
    kernel = sparsecc.compile(scaled_sparse_linear_kernel, _sig("fp8e4nv"),
                              {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "ACC_INT": False, "HAS_BIAS": True,
                               "ACTIVATION": "silu", "K_32": True, "PAIR_N": True},
                              target="sm_90a", num_warps=nw, num_stages=ns, num_ctas=2)
    ptx = kernel.asm["ptx"]
    assert ".reqnctapercluster 2, 1, 1" in ptx and kernel.metadata["cluster"] == 2
    copies = [line for line in ptx.splitlines() if "cp.async.bulk.tensor" in line]
    assert any("multicast::cluster" in line for line in copies)
    assert any("multicast" not in line for line in copies)  # W's values and metadata: each CTA its own
    assert ptxas.assemble(ptx, "sm_90a").kernel_resources().spill_stores == 0


def test_cta_pairs_of_one_box_token_tiles_run_unclustered():
    """At BLOCK_K = 128 a stage's X tile is one TMA box (128 bytes of K), which a pair cannot
    split: the kernel compiles without a cluster (the pairing of programs stays, correct but
    without the shared copy), as `LinearConfig.cta_pairs` says."""
    kernel = sparsecc.compile(scaled_sparse_linear_kernel, _sig("fp8e4nv"),
                              {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 128, "ACC_INT": False, "HAS_BIAS": False,
                               "ACTIVATION": "none", "K_32": True, "PAIR_N": True},
                              target="sm_90a", num_warps=8, num_stages=4, num_ctas=2)
    assert kernel.metadata.get("cluster", 1) == 1 and "multicast" not in kernel.asm["ptx"]


def test_bad_arguments():
    w, sw = _weight(32, 64, torch.int8)
    x = torch.randn(3, 64).half()
    with pytest.raises(ValueError, match="takes 64 features"):
        sparse_linear_8bit(torch.randn(3, 32).half(), w, sw)
    with pytest.raises(ValueError, match=r"weight_scale must be a float32 tensor of shape \(32,\)"):
        sparse_linear_8bit(x, w, sw[:4])
    with pytest.raises(ValueError, match="bias must be"):
        sparse_linear_8bit(x, w, sw, torch.zeros(5).half())
    with pytest.raises(ValueError, match="activation must be one of"):
        sparse_linear_8bit(x, w, sw, None, "tanh")
    with pytest.raises(TypeError, match="int8 or float8_e4m3fn"):
        sparse_linear_8bit(x, sparsecc.compress(sparsecc.prune_2to4(torch.randn(32, 64).half())), sw)
    with pytest.raises(TypeError, match="fp16, bf16 or fp32"):
        sparse_linear_8bit(x.double(), w, sw)


def _sig(elt: str) -> dict[str, str]:
    return {"Y": "*fp16", "X": f"*{elt}", "W": f"*{elt}:NV24", "SCALE_X": "*fp32", "SCALE_W": "*fp32",
            "BIAS": "*fp16", "M": "i32", "N": "i32:16", "K": "i32:16", "stride_xm": "i32:16",
            "stride_wn": "i32:16", "stride_ym": "i32:16"}


@pytest.mark.parametrize("m, n, want, persistent", [
    (256, 4096, (64, 128), False), (256, 11008, (128, 256), False), (512, 4096, (128, 128), False),
    (512, 11008, (128, 128), True), (512, 12288, (128, 128), True), (512, 14336, (128, 128), True),
    (448, 14336, (128, 128), True), (300, 12288, (128, 128), True), (300, 13824, (128, 128), True),
    (384, 12288, (128, 128), True), (384, 14336, (128, 128), True), (256, 22016, (128, 128), True),
    (256, 32000, (128, 128), True), (256, 28672, (128, 256), False), (200, 32000, (128, 256), False),
    (1024, 4096, (128, 256), False), (2048, 14336, (128, 256), False), (64, 28672, (64, 128), False),
    (16, 4096, (16, 64), False), (256, 8192, (128, 128), False), (256, 5120, (128, 128), False),
    (768, 8192, (128, 256), False), (1024, 8192, (128, 256), False)])
def test_hopper_tiles_fill_the_gpu(m, n, want, persistent):
    """From 256 tokens on sm_90a the largest tile whose grid reaches FILLED_CTAS CTAs, as
    bench/linear_8bit_tiles.py measured best on the H100 (NOTES stop 23 run 4): 128x256 where
    it fills (from 86 CTAs), 128x128x256 at 512 tokens on 4096 outputs (64 CTAs of 128x256),
    64x128 below; decode tiles and 64x128 below 256 tokens, unmeasured, unchanged. Above 128
    tokens, where 128x256 makes 1-2 waves (172 and 192 CTAs at 512 tokens, 172 and 250 at 256),
    persistent 128x128 programs over whole tiles (NOTES stop 34), not above `PERSISTENT_TOKENS`
    (8192 outputs at 768 and 1024 tokens: 128x256). Above 256 tokens those programs are
    ping-pong ones (two 4-warp groups, K steps of 256 in 4 stages; NOTES stop 37), which take
    whole tiles also where the 8-warp plan would split the last wave (12288 outputs at 384
    tokens: 288 tiles, 24 in the last; 14336 at 512: 448 tiles, 52 in the last), with ragged token
    tiles too (14336 at 448, 12288 and 13824 at 300: the rows padded; NOTES stop 38); at 256
    tokens the split plan's shapes (28672: 448 tiles, 52 in the last) keep 128x256. At 256
    tokens where 128x256 leaves too few CTAs, 128x128x128 s7 where its grid has FILLED_CTAS (8192
    and 5120 outputs; NOTES stop 35)."""
    cfg = default_config_linear_8bit(m, n, 4096, "cuda", "sm_90a")
    assert (cfg.block_m, cfg.block_n) == want
    assert cfg.stream_k == persistent
    if persistent:
        tile = (256, 4, 4) if m > 256 else (128, 8, 7)
        assert stream_k_plan(m, n, 4096, cfg)[2] == 1 and (cfg.block_k, cfg.num_warps, cfg.num_stages) == tile
        assert cfg.pingpong == (m > 256)
        if not cfg.pingpong:
            # on 114 SMs the rule asks that GPU's plan (22016x4096: 2 tiles past 3 waves, split: 128x256)
            other = default_config_linear_8bit(m, n, 4096, "cuda", "sm_90a", sms=114)
            assert not other.stream_k or stream_k_plan(m, n, 4096, other, 114)[2] == 1
    if m >= 256 and want != (64, 128):
        assert -(-m // cfg.block_m) * -(-n // cfg.block_n) >= FILLED_CTAS
    if want == (128, 256):
        assert cfg.num_stages == 4
    if m == 256 and want == (128, 128) and not persistent:
        assert (cfg.block_k, cfg.num_stages) == (128, 7)
    assert default_config_linear_8bit(m, n, 4096, "cuda", "sm_80").block_n in (64, 128)  # no wgmma: unchanged


@pytest.mark.parametrize("m, cfg, hopper, rows", [
    (300, LinearConfig(128, 256, 128, 8, 4), True, 384),                   # data-parallel, 128-token tiles
    (448, LinearConfig(128, 128, 256, 8, 4), True, 512),
    (512, LinearConfig(128, 256, 128, 8, 4), True, 512),                   # whole tiles: as is
    (300, LinearConfig(128, 256, 128, 8, 4), False, 300),                  # no wgmma: unmeasured, as is
    (200, LinearConfig(64, 128, 256, 4, 5), True, 200),                    # 64-token tiles: as is
    (130, LinearConfig(64, 128, 256, 4, 5, stream_k=True), False, 192),    # persistent: always whole tiles
    (1, LinearConfig(16, 64, 256, 4, 8), True, 1)])
def test_token_rows_are_padded_to_whole_tiles(m, cfg, hopper, rows):
    """`sparse_linear_8bit` runs persistent configs, and on sm_90a tiles of 128 tokens or more,
    on token rows rounded up to whole tiles: a ragged last token tile ran 1-35% slower on the
    H100 than the same tiles whole (NOTES stop 37 runs 9, 13-14; stop 38 runs 5-6, 8)."""
    assert padded_tokens(m, cfg, hopper) == rows


@pytest.mark.parametrize("m, n, k, want", [
    (1, 4096, 4096, (16, 64, 8)), (16, 8192, 4096, (16, 64, 8)), (1, 11008, 4096, (16, 64, 4)),
    (1, 4096, 14336, (16, 64, 10)), (16, 4096, 11008, (16, 64, 10)), (1, 8192, 8192, (16, 64, 8)),
    (64, 4096, 4096, (32, 64, 8)), (64, 4096, 14336, (32, 64, 10)), (128, 4096, 4096, (32, 64, 6)),
    (128, 4096, 11008, (32, 64, 6)), (64, 11008, 4096, (64, 128, 5)), (128, 8192, 4096, (64, 128, 5)),
    (200, 4096, 4096, (64, 128, 5)), (128, 11008, 4096, (128, 128, 7)), (200, 28672, 8192, (128, 256, 4)),
    (64, 28672, 8192, (64, 128, 5))])
def test_hopper_tiles_below_256_tokens(m, n, k, want):
    """Below 256 tokens on sm_90a, the tiles bench/fp8_torchao.py measured best against torchao
    (NOTES stop 30, stop 31 runs 12-13): 8 stages at decode while the grid leaves each SM at most
    one CTA (10 from LONG_K); 64x128 with 5 stages where its grid reaches FILLED_CTAS, else 32x64
    with 8 (10 from LONG_K) while its grid leaves each SM one CTA, else 6 (two CTAs an SM); from
    128 tokens 128x128x128 with 7 stages where the 64x128 grid is more than a wave, and above 128
    128x256 where its grid reaches FILLED_CTAS (NOTES stop 34)."""
    cfg = default_config_linear_8bit(m, n, k, "cuda", "sm_90a")
    assert (cfg.block_m, cfg.block_n, cfg.num_stages) == want
    if want == (128, 128, 7):
        assert cfg.block_k == 128
    assert cfg.split_k == 1


@needs_ptxas
@pytest.mark.parametrize("target, elt", [("sm_90a", "fp8e4nv"), ("sm_90a", "i8"), ("sm_80", "i8")])
@pytest.mark.parametrize("m, k", [(1, 4096), (64, 4096), (512, 4096), (2048, 4096), (1, 14336), (64, 14336)])
def test_default_tiles_assemble(target, elt, m, k):
    """The default tiles compile for each target and assemble (within shared memory: the
    10-stage rings of a long K too); on sm_90a the operands come by TMA and the decode and mid
    tiles keep their registers (no spills)."""
    cfg = default_config_linear_8bit(m, 4096, k, "cuda", target)
    kernel = sparsecc.compile(scaled_sparse_linear_kernel, _sig(elt),
                              {"BLOCK_M": cfg.block_m, "BLOCK_N": cfg.block_n, "BLOCK_K": cfg.block_k,
                               "ACC_INT": elt == "i8", "HAS_BIAS": True, "ACTIVATION": "silu", "K_32": True},
                              target=target, num_warps=cfg.num_warps, num_stages=cfg.num_stages)
    ptx = kernel.asm["ptx"]
    res = ptxas.assemble(ptx, target).kernel_resources()
    if target == "sm_90a":
        assert "cp.async.bulk.tensor" in ptx and "wgmma" in ptx
        if m <= 256:
            assert res.spill_stores == 0, res
        if m == 512:  # 128x128x256 with four stages: within the 227 KB a CTA may take, no spills
            assert (cfg.block_m, cfg.block_n, cfg.num_stages) == (128, 128, 4), cfg
            assert kernel.metadata["shared"] <= 227 * 1024 and res.spill_stores == 0, (kernel.metadata["shared"], res)
    assert ".sp" in ptx  # the sparse tensor cores (mma.sp / wgmma .sp)


def _stream_k_kernel(cfg: LinearConfig, elt: str) -> object:
    """The 8-bit stream-K kernel for `cfg` compiled as its launch specializes it (one program a
    whole tile: SPLIT = 1; bias and silu; `stream_k_8bit_switches`)."""
    from sparsecc.ops.linear_config import launch_constants_8bit
    from sparsecc.ops.stream_k import scaled_sparse_linear_stream_k_kernel, stream_k_8bit_switches

    w = sparsecc.compress(torch.zeros(8, 64).to(torch.int8 if elt == "i8" else torch.float8_e4m3fn))
    consts = launch_constants_8bit(w, 4096, cfg, True, "silu")
    options = {name: consts.pop(name) for name in ("num_warps", "num_stages")}
    order = ["Y", "X", "W", "SCALE_X", "SCALE_W", "BIAS", "PARTIALS", "TICKETS", "M", "N", "K",
             "stride_xm", "stride_wn", "stride_ym", "WHOLE", "PART_STEPS", "ITEMS"]
    sig = {**_sig(elt), "PARTIALS": "*i32" if elt == "i8" else "*fp32", "TICKETS": "*i32", "WHOLE": "i32",
           "PART_STEPS": "i32", "ITEMS": "i32"}
    return sparsecc.compile(scaled_sparse_linear_stream_k_kernel, {name: sig[name] for name in order},
                            consts | {"SPLIT": 1}, target="sm_90a", tma_extents=True, **stream_k_8bit_switches(cfg),
                            **options)


@needs_ptxas
@pytest.mark.parametrize("elt", ["fp8e4nv", "i8"])
def test_the_persistent_default_tile_assembles(elt):
    """The persistent whole-tile default at 256 tokens (22016x4096) compiles as its launch
    specializes it (no split: no fix-up, no ticket atomic; the scales loaded before the K loop;
    TMA stores; the K loop unrolled by two) and assembles for sm_90a within the 227 KB a CTA may
    take, with no spills."""
    from sparsecc.ops.linear_config import launch_constants_8bit

    cfg = default_config_linear_8bit(256, 22016, 4096, "cuda", "sm_90a")
    assert cfg.stream_k and not cfg.pingpong and stream_k_plan(256, 22016, 4096, cfg)[2] == 1
    assert launch_constants_8bit(sparsecc.compress(torch.zeros(8, 64).to(torch.int8)), 4096, cfg, True,
                                 "silu")["EARLY_SCALES"]
    kernel = _stream_k_kernel(cfg, elt)
    ptx = kernel.asm["ptx"]
    assert "wgmma.mma_async.sp" in ptx and "cp.async.bulk.tensor" in ptx and "atom." not in ptx
    # the output tiles go out by TMA: two 64-column boxes a tile, no st.global
    assert ptx.count("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group") == 2 and "st.global" not in ptx
    # the K loop unrolled by two: one wgmma group stays in flight while the next step's metadata loads
    (loop,) = [body for label, body in re.findall(r"^(\$L__loop\d+):\n(.*?)bra \1;", ptx, re.M | re.S)
               if "wgmma.mma_async" in body]
    assert loop.count("wgmma.commit_group") == 2 and "wgmma.wait_group.sync.aligned 0" not in loop
    res = ptxas.assemble(ptx, "sm_90a").kernel_resources()
    assert kernel.metadata["shared"] <= 227 * 1024 and res.spill_stores == 0, (kernel.metadata["shared"], res)


@needs_ptxas
@pytest.mark.parametrize("elt", ["fp8e4nv", "i8"])
def test_the_pingpong_default_tile_assembles(elt):
    """The ping-pong default above 256 tokens (11008x4096 at 512) compiles as its launch asks
    (`LinearConfig.pingpong`: the `pingpong` and `tma_store_boxes` switches): two compute
    warpgroups and a producer warpgroup (384 threads, setmaxnreg), the tile out in four 64 x 64
    boxes, within the 227 KB a CTA may take, and assembles with no spills."""
    cfg = default_config_linear_8bit(512, 11008, 4096, "cuda", "sm_90a")
    assert cfg.pingpong and (cfg.block_k, cfg.num_warps, cfg.num_stages) == (256, 4, 4)
    kernel = _stream_k_kernel(cfg, elt)
    ptx = kernel.asm["ptx"]
    assert kernel.metadata["threads"] == 384 and "setmaxnreg.inc.sync.aligned.u32 232;" in ptx
    assert ptx.count("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group") == 4 and "st.global" not in ptx
    assert kernel.metadata["tensor_maps"][-1]["box"] == [64, 64]
    res = ptxas.assemble(ptx, "sm_90a").kernel_resources()
    assert kernel.metadata["shared"] <= 227 * 1024 and res.spill_stores == 0, (kernel.metadata["shared"], res)


def test_pingpong_config_is_refused_where_it_cannot_run():
    """`LinearConfig.pingpong` is the 4-warp stream-K kernel's, for 8-bit weights only."""
    with pytest.raises(ValueError, match="stream_k=True and num_warps=4"):
        LinearConfig(128, 128, 256, 4, 4, pingpong=True)
    with pytest.raises(ValueError, match="stream_k=True and num_warps=4"):
        LinearConfig(128, 128, 256, 8, 4, stream_k=True, pingpong=True)
    cfg = LinearConfig(128, 128, 256, 4, 4, stream_k=True, pingpong=True)
    assert table_linear_config(tuple(cfg.table_row())) == cfg and "pingpong=True" in repr(cfg)
    w16 = sparsecc.compress(sparsecc.prune_2to4(torch.randn(32, 64)).half())
    with pytest.raises(ValueError, match="pingpong is for 8-bit weights"):
        sparsecc.ops.sparse_linear(torch.randn(2, 64).half(), w16, config=cfg)


@needs_ptxas
@pytest.mark.parametrize("target, elt", [("sm_90a", "fp8e4nv"), ("sm_90a", "i8"), ("sm_80", "i8")])
def test_split_k_tiles_assemble(target, elt):
    """The split-K kernel at the decode tile compiles and assembles for each target, on the
    sparse tensor cores, with no spills, and publishes its partial with an acq_rel atomic."""
    cfg = default_config_linear_8bit(1, 4096, 4096, "cuda", target)
    sig = {**_sig(elt), "PARTIALS": "*i32" if elt == "i8" else "*fp32", "TICKETS": "*i32"}
    order = ["Y", "X", "W", "SCALE_X", "SCALE_W", "BIAS", "PARTIALS", "TICKETS", "M", "N", "K",
             "stride_xm", "stride_wn", "stride_ym"]
    kernel = sparsecc.compile(scaled_sparse_linear_splitk_kernel, {name: sig[name] for name in order},
                              {"BLOCK_M": cfg.block_m, "BLOCK_N": cfg.block_n, "BLOCK_K": cfg.block_k,
                               "SPLIT_K": 2, "ACC_INT": elt == "i8", "HAS_BIAS": True, "ACTIVATION": "silu",
                               "K_32": True},
                              target=target, num_warps=cfg.num_warps, num_stages=cfg.num_stages)
    ptx = kernel.asm["ptx"]
    assert ".sp" in ptx and "atom" in ptx and ".acq_rel" in ptx
    assert ptxas.assemble(ptx, target).kernel_resources().spill_stores == 0


# -- the GPU ---------------------------------------------------------------------------------------


def _layer(wdt: torch.dtype, n: int, k: int, activation: str = "none") -> SparseLinear:
    torch.manual_seed(n + k)
    linear = torch.nn.Linear(k, n, device="cuda", dtype=torch.float16)
    with torch.no_grad():
        linear.bias.normal_()
    layer = SparseLinear.from_linear(linear, weight_dtype=wdt, activation=activation)
    layer.dispatch = "sparse"  # this test is about the sparse path
    return layer


def _layer_reference(layer: SparseLinear, x: torch.Tensor) -> torch.Tensor:
    return reference_linear_8bit(x, layer.weight(), layer.weight_scale, layer.bias, layer.activation)


@pytest.mark.gpu
@pytest.mark.parametrize("wdt", EIGHT_BIT, ids=str)
@pytest.mark.parametrize("xdt", [torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("m, n, k", [(1, 4096, 4096), (4, 11008, 4096), (16, 4096, 11008), (64, 1000, 512),
                                     (200, 512, 1024), (600, 4096, 4096), (2048, 14336, 4096), (7, 96, 64),
                                     (300, 12288, 4096), (448, 14336, 4096)])
def test_gpu_matches_torch(wdt, xdt, m, n, k):
    """The default tiles against torch; 300 and 448 tokens on 12288 and 14336 outputs run the
    ping-pong kernel on token rows padded to whole tiles (`padded_tokens`)."""
    w, sw = _weight(n, k, wdt, "cuda", seed=m)
    g = torch.Generator(device="cuda").manual_seed(m)
    x = torch.randn(m, k, device="cuda", generator=g).to(xdt)
    b = torch.randn(n, device="cuda", generator=g).to(xdt)
    y = sparse_linear_8bit(x, w, sw, b, "silu")
    ref = reference_linear_8bit(x, w, sw, b, "silu")
    assert y.isfinite().all()
    err = (y.float() - ref.float()).abs().max().item()
    # the same codes (bit for bit: test_quantize_rows_fused), fp32 sums in another order
    assert err <= 1e-2 * max(ref.float().abs().max().item(), 1.0), err


@pytest.mark.gpu
@pytest.mark.parametrize("wdt", EIGHT_BIT, ids=str)
@pytest.mark.parametrize("m, n, k, cfg", [
    (1, 4096, 11008, LinearConfig(16, 64, 256, 4, 4, split_k=2)), (16, 4096, 11008, LinearConfig(16, 64, 256, 4, 4, split_k=4)),
    (5, 1000, 4160, LinearConfig(16, 64, 256, 4, 4, split_k=3)), (64, 4096, 4096, LinearConfig(64, 128, 256, 4, 4, split_k=2))])
def test_split_k_on_the_gpu(wdt, m, n, k, cfg):
    """Split-K launches (ragged N and K included) against torch, every output finite (none left unwritten)."""
    w, sw = _weight(n, k, wdt, "cuda", seed=k)
    g = torch.Generator(device="cuda").manual_seed(m)
    x = torch.randn(m, k, device="cuda", generator=g).half()
    b = torch.randn(n, device="cuda", generator=g).half()
    ref = reference_linear_8bit(x, w, sw, b, "silu")
    for _ in range(2):  # the second launch finds the tickets of the first zeroed again
        y = sparse_linear_8bit(x, w, sw, b, "silu", config=cfg)
        assert y.isfinite().all()
        err = (y.float() - ref.float()).abs().max().item()
        assert err <= 1e-2 * max(ref.float().abs().max().item(), 1.0), err


@pytest.mark.gpu
@pytest.mark.parametrize("wdt", EIGHT_BIT, ids=str)
@pytest.mark.parametrize("m, n, k, tile", [
    (512, 4096, 4096, (128, 128, 256, 8, 3)), (300, 1000, 4160, (128, 128, 256, 8, 3)),
    (517, 11008, 4096, (128, 256, 128, 8, 4)), (130, 384, 1024, (128, 256, 128, 8, 4)),
    (64, 96, 512, (64, 128, 256, 4, 4))])
def test_cta_pairs_on_the_gpu(wdt, m, n, k, tile):
    """CTA pairs multicasting the token tiles, against torch (every output finite, so none left
    unwritten in the fresh `torch.empty`): even and odd weight-tile counts (1000 / 128 and 384 / 256: a partner past N), ragged M and K, one lone
    tile (96 outputs) padded to a pair; twice, so the second launch reuses the compiled kernel."""
    w, sw = _weight(n, k, wdt, "cuda", seed=n)
    g = torch.Generator(device="cuda").manual_seed(m)
    x = torch.randn(m, k, device="cuda", generator=g).half()
    b = torch.randn(n, device="cuda", generator=g).half()
    ref = reference_linear_8bit(x, w, sw, b, "silu")
    cfg = LinearConfig(*tile, cta_pairs=True)
    for _ in range(2):
        y = sparse_linear_8bit(x, w, sw, b, "silu", config=cfg)
        assert y.isfinite().all()
        err = (y.float() - ref.float()).abs().max().item()
        assert err <= 1e-2 * max(ref.float().abs().max().item(), 1.0), err


@pytest.mark.gpu
@pytest.mark.parametrize("wdt", EIGHT_BIT, ids=str)
@pytest.mark.parametrize("m", [1, 16, 300])
def test_layer_in_a_cuda_graph_and_under_compile(wdt, m):
    layer = _layer(wdt, 4096, 4096, "silu")
    x = torch.randn(m, 4096, device="cuda", dtype=torch.float16)
    with torch.no_grad():
        eager = layer(x)
        ref = _layer_reference(layer, x)
        tol = 1e-2 * max(ref.float().abs().max().item(), 1.0)
        assert (eager.float() - ref.float()).abs().max().item() <= tol
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            static = layer(x)
        x.copy_(torch.randn_like(x))
        graph.replay()
        torch.cuda.synchronize()
        assert (static.float() - _layer_reference(layer, x).float()).abs().max().item() <= tol
        compiled = torch.compile(layer, fullgraph=True, mode="reduce-overhead")
        for _ in range(3):  # warm-up, record, replay
            out = compiled(x)
        torch.testing.assert_close(out, layer(x), rtol=0, atol=0)  # the same kernels, the same bits


@pytest.mark.gpu
@pytest.mark.parametrize("wdt", EIGHT_BIT, ids=str)
def test_the_path_launches_two_kernels(wdt):
    """One quantization launch and one GEMM launch per forward: no torch kernels (casts,
    transposes, copies, bias or activation passes) over x or y."""
    layer = _layer(wdt, 4096, 4096, "silu")
    x = torch.randn(16, 4096, device="cuda", dtype=torch.float16)
    with torch.no_grad():
        layer(x)  # compile the kernels
        torch.cuda.synchronize()
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            layer(x)
            torch.cuda.synchronize()
    kernels = [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    kernels = [k for k in kernels if "memset" not in k.lower() and "memcpy" not in k.lower()]
    assert len(kernels) == 2, kernels
    assert "quantize_rows_kernel" in kernels[0] and "scaled_sparse_linear_" in kernels[1], kernels


@pytest.mark.parametrize("dtype, k, maxnreg", [(torch.int8, 4096, 128), (torch.float8_e4m3fn, 4112, None)])
def test_8bit_launch_constants(dtype, k, maxnreg):
    """Every 8-bit launch (data-parallel, split-K, stream-K) takes its constants from one place:
    the 16-bit kernels' tiles, epilogue, warps, stages and `maxnreg` where the config sets it,
    an exact int32 sum for int8 and K_32 only where K % 32 == 0."""
    from sparsecc.ops.linear_config import launch_constants_8bit

    w = sparsecc.compress(torch.zeros(8, k).to(dtype))
    cfg = LinearConfig(16, 64, 256, 4, 8, maxnreg=maxnreg)
    c = launch_constants_8bit(w, k, cfg, True, "silu")
    assert (c["BLOCK_M"], c["BLOCK_N"], c["BLOCK_K"], c["num_warps"], c["num_stages"]) == (16, 64, 256, 4, 8)
    assert (c["ACC_INT"], c["K_32"], c["HAS_BIAS"], c["ACTIVATION"]) == (dtype == torch.int8, k % 32 == 0, True, "silu")
    assert c.get("maxnreg") == maxnreg
