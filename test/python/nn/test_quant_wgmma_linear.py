"""Quantized weights at prefill on Hopper: sparse_linear's kernel compiled with `quant_wgmma`
(the dequantized W tile is the register A of `wgmma.mma_async.sp`, x^T its B by descriptor).

CPU: the kernels assemble for sm_90a (and, the switch doing nothing there, sm_80) without
spills; the default tiles and the dispatcher's default rule route quantized large-M calls on
Hopper to them; table configs carry the switch. GPU (`gpu`): against `reference_linear` on
ragged token counts, 4- and 8-bit codes, with and without zero points, fp16 and bf16. The
per-thread register contents are checked on the CPU by codegen/test_quant_wgmma_fragments.py.
"""

from __future__ import annotations

import importlib
import math
import re

import pytest
import torch
from ptxas_tools import needs_ptxas

import sparsecc
from sparsecc.ops import dispatch, linear_config
from sparsecc.ops.sparse_linear import (
    LinearConfig,
    launch_linear,
    quantized_default_config,
    quantized_prefill_config,
    reference_linear,
    sparse_linear,
    sparse_linear_kernel,
)

sl = importlib.import_module("sparsecc.ops.sparse_linear")  # the module (sparsecc.ops.sparse_linear is the function)

TILES = [(128, 128, 128, 8, 3), (128, 128, 128, 8, 4), (64, 256, 128, 8, 3), (64, 128, 128, 4, 4),
         (256, 128, 128, 8, 3)]
"""The quant_wgmma tiles: quantized_prefill_config's and the other candidates dispatch_measure times
(the 256-token tile for 16-bit fp16 only: bf16's convert scratch does not fit beside its 3 stages)."""


def _sig(dtype: str, scheme: str) -> dict[str, str]:
    return {"Y": f"*{dtype}", "X": f"*{dtype}", "W": f"*{dtype}:NV24.{scheme}", "BIAS": f"*{dtype}", "M": "i32",
            "N": "i32", "K": "i32", "stride_xm": "i32", "stride_wn": "i32", "stride_ym": "i32"}


def _compile(dtype: str, scheme: str, tile: tuple[int, ...], target: str, rows: bool = False, **opts: bool):
    """The kernel as `launch_linear` compiles a quant_wgmma tile (`quant_wgmma_options` of the
    dtype, unless `opts` say); `rows`: with the stride hints of rows 64 elements apart
    (`ROWS_16B`, `ROWS_64`)."""
    bm, bn, bk, nw, ns = tile
    opts = {**linear_config.quant_wgmma_options(torch.float16 if dtype == "fp16" else torch.bfloat16), **opts}
    consts = {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "HAS_BIAS": True, "ACTIVATION": "silu"}
    if rows:
        consts.update(ROWS_16B=True, ROWS_64=True)
    return sparsecc.compile(sparse_linear_kernel, _sig(dtype, scheme), consts,
                            target=target, num_warps=nw, num_stages=ns, **opts)


@needs_ptxas
@pytest.mark.parametrize("dtype, scheme", [("fp16", "w4g128"), ("fp16", "w8g128"), ("fp16", "w4g128z"),
                                           ("fp16", "w8c"), ("bf16", "w4g128"), ("bf16", "w8g128z")])
def test_the_prefill_tile_assembles_as_register_a_wgmma(dtype, scheme):
    """quantized_prefill_config's tile: a warpgroup MMA per m64 block and k32 step, A from
    registers (fp16: dequantized straight into them with prmt; bf16: through the dot operand's
    convert), no spills."""
    c = quantized_prefill_config(2048, 4096, 4096, torch.float16 if dtype == "fp16" else torch.bfloat16)
    ck = _compile(dtype, scheme, (c.block_m, c.block_n, c.block_k, c.num_warps, c.num_stages), "sm_90a",
                  quant_wgmma=True)
    ttgir, ptx = ck.asm["ttgir"], ck.asm["ptx"]
    assert "versionMajor = 3" in ttgir and "colBlock = 64" in ttgir  # x^T rows: two 128-byte blocks
    if dtype == "fp16":  # 128 of K: 4 k32 steps, the body twice (unrolled) and once after it (an odd count)
        assert ptx.count("wgmma.mma_async.sp.sync.aligned.m64n128k32") == 3 * 4
        assert "wgmma.wait_group.sync.aligned 1" in ptx  # one K step's wgmmas stay in flight
    else:  # the plain loop: each K step waits for its group
        assert ptx.count("wgmma.mma_async.sp.sync.aligned.m64n128k32") == 4
        assert "wgmma.wait_group.sync.aligned 1" not in ptx
    assert "mma.sp" not in ptx.replace("wgmma.mma_async.sp", "")
    assert ("prmt.b32 %fq0" in ptx) == (dtype == "fp16")
    res = ck.metadata["ptxas"]["sparse_linear_kernel"]
    assert res.spill_stores == 0 and res.spill_loads == 0, res
    assert isinstance(ck.asm["cubin"], bytes)


@needs_ptxas
@pytest.mark.parametrize("tile", TILES[1:], ids=str)
@pytest.mark.parametrize("scheme", ["w4g128", "w8g128"])
def test_the_other_candidate_tiles_assemble(tile, scheme):
    ck = _compile("fp16", scheme, tile, "sm_90a", quant_wgmma=True)
    assert "versionMajor = 3" in ck.asm["ttgir"]
    assert isinstance(ck.asm["cubin"], bytes)


@needs_ptxas
@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_the_ring_form_assembles_too(dtype):
    """QUANT_WGMMA_RING (the A/B variant): the mbarrier ring, the body unrolled by two (twice
    and once after it: an odd count of K steps), one K step's wgmmas in flight; no spills."""
    ck = _compile(dtype, "w4g128", TILES[0], "sm_90a", quant_wgmma=True, **linear_config.QUANT_WGMMA_RING)
    ptx = ck.asm["ptx"]
    assert ptx.count("wgmma.mma_async.sp") == 3 * 4 and "wgmma.wait_group.sync.aligned 1" in ptx
    assert "mbarrier.try_wait" in ptx
    assert ck.metadata["ptxas"]["sparse_linear_kernel"].spill_stores == 0


def _loop(ptx: str) -> str:
    """The PTX of the first loop (its label to its back edge)."""
    head = re.search(r"^(\$L__loop\d+):", ptx, re.M)
    assert head is not None
    return ptx[head.start():ptx.index(f"bra {head.group(1)};", head.start())]


@needs_ptxas
@pytest.mark.parametrize("scheme, tile", [("w4g128", TILES[1]), ("w8g128z", TILES[1]), ("w4g128", TILES[4])],
                         ids=str)
def test_rows_of_64_elements_take_the_tma_loop(scheme, tile):
    """With ROWS_16B and ROWS_64 (`launch_constants`: a quantized weight whose rows are multiples of
    64 elements) every tile of the fp16 loop (tokens, metadata, codes) is a TMA copy behind
    mbarriers: the scales (and zero points) are loaded into registers in the accumulator layout
    one K step ahead (`register_scales`), never through shared memory; the loop keeps one wgmma
    group in flight through each step's dequantization, and nothing spills. With
    `register_scales` off the scale column needs a synchronous copy into shared memory and
    the loop stays on cp.async."""
    ck = _compile("fp16", scheme, tile, "sm_90a", rows=True, quant_wgmma=True)
    ptx = ck.asm["ptx"]
    loop = _loop(ptx)
    assert "cp.async.bulk.tensor" in loop and "cp.async.cg" not in ptx and "mbarrier.try_wait" in loop
    assert "ld.global.b16" in loop and "st.shared.b16" not in ptx  # scales straight into registers
    assert "wgmma.wait_group.sync.aligned 1" in loop and "wgmma.wait_group.sync.aligned 0" not in loop
    assert ck.metadata["ptxas"]["sparse_linear_kernel"].spill_stores == 0
    staged = _compile("fp16", scheme, tile, "sm_90a", rows=True, quant_wgmma=True, register_scales=False)
    assert "cp.async.bulk.tensor" not in staged.asm["ptx"] and "cp.async.cg" in staged.asm["ptx"]


@needs_ptxas
def test_without_the_switch_or_on_sm_80_the_kernel_keeps_mma_sp():
    """The switch is what changes the kernel: off (the default), the same tile stays on
    mma.sp, and on sm_80 (no wgmma) the switch does nothing."""
    for target, opts in (("sm_90a", {}), ("sm_80", {"quant_wgmma": True})):
        ck = _compile("fp16", "w4g128", TILES[0], target, **{"quant_wgmma": False, **opts})
        assert "versionMajor = 2" in ck.asm["ttgir"] and "wgmma" not in ck.asm["ptx"], target
        assert isinstance(ck.asm["cubin"], bytes)
    plain = _compile("fp16", "w4g128", TILES[0], "sm_80", quant_wgmma=False)
    assert plain.asm["ptx"] == _compile("fp16", "w4g128", TILES[0], "sm_80", quant_wgmma=True).asm["ptx"]


def _weight(n: int, k: int, dtype: torch.dtype, scheme: str, seed: int = 0) -> sparsecc.QuantizedSparseTensor:
    g = torch.Generator().manual_seed(seed)
    return sparsecc.compress(sparsecc.prune_2to4(torch.randn(n, k, generator=g).to(dtype)), quant=scheme)


@pytest.fixture
def hopper(monkeypatch):
    """sparse_linear's defaults as on an H100 (no GPU needed to pick tiles)."""
    monkeypatch.setattr(sl, "has_quant_wgmma", lambda device: True)


@pytest.mark.parametrize("scheme", ["w4g128", "w8g128"])
def test_fp16_decode_over_4096_rows_keeps_a_third_stage(scheme):
    """At up to 8 tokens on K <= 4096, fp16 tokens and more than 4096 output rows take the
    8x64x512 decode tile with three stages (measured faster on the H100); bf16, 4096 rows, more
    tokens and the fused SwiGLU kernel keep two."""
    cuda = torch.device("cuda")
    w16, wb = _weight(256, 512, torch.float16, scheme), _weight(256, 512, torch.bfloat16, scheme)
    assert quantized_default_config(1, 11008, 4096, w16, cuda) == LinearConfig(8, 64, 512, 4, 3)
    assert quantized_default_config(8, 22016, 4096, w16, cuda).num_stages == 3
    assert quantized_default_config(1, 11008, 4096, wb, cuda).num_stages == 2
    assert quantized_default_config(1, 4096, 4096, w16, cuda).num_stages == 2
    assert quantized_default_config(16, 11008, 4096, w16, cuda) == sl.quantized_linear_config(
        sl.quantized_decode_config(16, 11008, 4096), w16)
    assert sl.quantized_decode_config(1, 11008, 4096).num_stages == 2  # what the fused SwiGLU kernel takes


def test_quantized_prefill_on_hopper_takes_the_wgmma_tiles(hopper):
    w = _weight(256, 512, torch.float16, "w4g128")
    cuda = torch.device("cuda")
    cfg = quantized_default_config(2048, 11008, 4096, w, cuda)
    assert cfg == quantized_prefill_config(2048, 11008, 4096, torch.float16) and cfg.quant_wgmma and cfg.block_k == 128
    assert cfg.num_stages == 4  # fp16: a wgmma group in flight, copies two steps ahead
    assert quantized_default_config(sl.QUANT_WGMMA_FROM, 4096, 4096, w, cuda).quant_wgmma
    assert not quantized_default_config(sl.QUANT_WGMMA_FROM - 1, 4096, 4096, w, cuda).quant_wgmma
    assert quantized_default_config(16, 4096, 4096, w, cuda) == sl.quantized_linear_config(
        sl.quantized_decode_config(16, 4096, 4096), w)
    # from 128 tokens; K split in two where the 128x128 tiles make under half a wave
    mid = quantized_default_config(128, 4096, 4096, w, cuda)
    assert mid.quant_wgmma and mid.split_k == 2
    assert quantized_default_config(128, 11008, 4096, w, cuda).split_k == 1
    assert quantized_default_config(512, 4096, 4096, w, cuda).split_k == 1
    wide = _weight(256, 512, torch.float16, "w4g256")
    assert quantized_default_config(2048, 4096, 4096, wide, cuda).block_k == 256  # whole groups


def test_other_gpus_and_the_cpu_keep_their_tiles(monkeypatch):
    monkeypatch.setattr(sl, "has_quant_wgmma", lambda device: False)
    w = _weight(256, 512, torch.float16, "w8g128")
    assert not quantized_default_config(2048, 4096, 4096, w, torch.device("cuda")).quant_wgmma
    assert not quantized_default_config(2048, 4096, 4096, w, torch.device("cpu")).quant_wgmma
    assert not sl.has_quant_wgmma(torch.device("cpu"))


def test_the_repr_names_the_switch_only_where_set():
    assert "quant_wgmma" not in repr(LinearConfig(16, 32, 512))
    assert repr(quantized_prefill_config(4096, 4096, 4096)).endswith("split_k=1, quant_wgmma=True)")


def test_a_config_whose_quant_wgmma_is_not_a_bool_is_an_error():
    w = _weight(64, 256, torch.float16, "w4g128")
    x = torch.randn(4, 256).half()
    with pytest.raises(ValueError, match="quant_wgmma must be a bool, got 1"):
        sparse_linear(x, w, config=LinearConfig(16, 32, 128, quant_wgmma=1))


def test_default_rule_keeps_quantized_weights_on_their_kernel_with_wgmma():
    """Up to QUANT_WGMMA_UP_TO tokens (where the H100 table measured the kernel ahead of the
    16-bit route), sparse16 above, as other GPUs do from DEFAULT_SPARSE_UP_TO."""
    assert dispatch.default_mode("w4g128", 1024, quant_wgmma=True) == "sparse"
    assert dispatch.default_mode("w8g128z", 512, quant_wgmma=True) == "sparse"
    assert dispatch.default_mode("w4g128", 1025, quant_wgmma=True) == "sparse16"
    assert dispatch.default_mode("w8g128z", 512) == "sparse16"
    assert dispatch.default_mode("w4g128", 4096) == "sparse16"
    assert dispatch.default_mode("fp8", 4096, quant_wgmma=True) == "sparse16"  # 8-bit weights: not quantized codes
    assert dispatch.default_mode("w4g128", 4096, cached=True, quant_wgmma=True) == "dense"


def _table(config: list[int]) -> dict:
    return {"entries": [{"scheme": "w4g128", "dtype": "float16", "n": 4096, "k": 4096, "densify_us": 10.0,
                         "m": {"2048": {"sparse": 50.0, "sparse16": 60.0, "mm": 70.0, "config": config}}}]}


def test_a_table_config_may_name_a_quant_wgmma_tile():
    entry = dispatch.parse_entries(_table([128, 128, 128, 8, 3, 1, 1]))[0]
    assert sl.table_linear_config(entry.configs[0]) == quantized_prefill_config(2048, 4096, 4096)
    assert not sl.table_linear_config((128, 256, 128, 8, 3, 1)).quant_wgmma
    for bad in ([128, 128, 128, 8, 3, 1, 0], [128, 128, 128, 8, 3, 1, 4], [128, 128, 128, 8, 3, 1, 1, 1]):
        with pytest.raises(ValueError, match="entry 0: config must be 6 positive ints"):
            dispatch.parse_entries(_table(bad))


# ---------------------------------------------------------------------------------------------
# GPU

def _close(a: torch.Tensor, b: torch.Tensor) -> None:
    assert not a.isnan().any(), "NaN in the output: an element was not written"
    torch.testing.assert_close(a.float(), b.float(), rtol=1e-2, atol=1e-2 * max(b.abs().max().item(), 1.0))


def _on_hopper() -> None:
    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("the quant_wgmma kernel is sm_90a's")


def _case(m: int, n: int, k: int, dtype: torch.dtype, scheme: str):
    w = _weight(n, k, dtype, scheme, seed=m + n).cuda()
    g = torch.Generator(device="cuda").manual_seed(m)
    x = torch.randn(m, k, generator=g, device="cuda").to(dtype)
    bias = torch.randn(n, generator=g, device="cuda").to(dtype)
    return w, x, bias


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("scheme", ["w4g128", "w8g128", "w4g128z", "w8g128z", "w4g64", "w8c"])
@pytest.mark.parametrize("m, n, k", [(300, 384, 512), (1000, 640, 384), (2049, 4096, 4096)])
def test_quant_wgmma_tiles_match_the_reference(m, n, k, scheme, dtype):
    """Each quant_wgmma tile, launched into a NaN-poisoned output, on token counts that end
    inside a tile (and N = 640 inside a 256-row tile), with bias and silu in the epilogue.
    bf16 (whose values reach the fragments through a shared-memory convert, twice with the
    unrolled loop) fits the default tile only: the others exceed 227 KiB of shared memory."""
    _on_hopper()
    w, x, bias = _case(m, n, k, dtype, scheme)
    want = reference_linear(x, w, bias, "silu")
    for bm, bn, bk, nw, ns in TILES if dtype == torch.float16 else TILES[:1]:
        cfg = sl.quantized_linear_config(LinearConfig(bm, bn, bk, nw, ns, quant_wgmma=True), w)
        y = torch.full((m, n), math.nan, dtype=dtype, device="cuda")
        launch_linear(y, x, w, bias, cfg, has_bias=True, activation="silu")
        _close(y, want)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("scheme", ["w4g128", "w8g128z"])
def test_sparse_linear_routes_prefill_to_the_wgmma_tiles(scheme, dtype, monkeypatch):
    """The default path at 1000 tokens takes quantized_prefill_config (as the dispatcher's
    "sparse" mode) and agrees with the reference and with the mma.sp kernel of the same tile."""
    _on_hopper()
    m, n, k = 1000, 1024, 2048
    w, x, bias = _case(m, n, k, dtype, scheme)
    seen: list[LinearConfig] = []
    real = sl.launch_linear
    monkeypatch.setattr(sl, "launch_linear", lambda *a, **kw: (seen.append(a[4]), real(*a, **kw))[1])
    y = sparse_linear(x, w, bias, "relu", dispatch="sparse")
    assert seen and seen[0].quant_wgmma, seen
    _close(y, reference_linear(x, w, bias, "relu"))
    mma_sp = sparse_linear(x, w, bias, "relu", config=LinearConfig(128, 128, 128, 8, 3))
    _close(y, mma_sp)


@pytest.mark.gpu
def test_split_k_with_quant_wgmma_tiles():
    """`split_k` and `quant_wgmma` compose (the split-K kernel compiles with the switch too)."""
    _on_hopper()
    w, x, bias = _case(517, 512, 2048, torch.float16, "w4g128")
    y = sparse_linear(x, w, bias, config=LinearConfig(128, 128, 128, 8, 3, split_k=2, quant_wgmma=True))
    _close(y, reference_linear(x, w, bias))
