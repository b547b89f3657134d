"""Issue 26: does the dequantization of one K step of sparse_linear's quantized prefill kernel
(`quant_wgmma`, register-A `wgmma.mma_async.sp`) overlap the tensor cores' work on the step
before, and does every register a group in flight reads stay unwritten until it retires?

Read from the PTX with `wgmma_hazards.scan_loop` (the PTX ISA rule for wgmma register
operands, walked over the K loop twice):
- fp16 weights in the overlapped form (`linear_config.QUANT_WGMMA_RING`: the loop unrolled by
  two, an mbarrier ring; `launch_linear` compiles the plain loop by default): every write of an A fragment happens while the other copy's group
  runs (`wgmma.wait_group 1`, never 0 in the loop); without the options each K step waits for
  its group (`wait_group 0`) before it dequantizes;
- bf16 weights reach the fragments through a layout convert (scratch store, CTA barrier,
  ldmatrix), whose barrier drained every group once per K step; `wgmma_ring_in_flight` keeps
  the group committed last running there (`analysis.kloops.ring_in_flight`).
The GPU side (switch on against torch and against the switch off) is
nn/test_quant_ring_in_flight.py.
"""

from __future__ import annotations

import difflib
import re

import pytest
import torch
from ptxas_tools import needs_ptxas
from wgmma_hazards import scan_loop

import sparsecc
from sparsecc.codegen.ptxas import assemble
from sparsecc.ops.linear_config import QUANT_WGMMA_RING, quant_wgmma_options
from sparsecc.ops.sparse_linear import quantized_prefill_config, sparse_linear_kernel

PREFILL = (128, 128, 128, 8, 3)
"""quantized_prefill_config's tile (block_m, block_n, block_k, warps, stages)."""
PLAIN = {"mbarriers": False, "wgmma_unroll": False}


def _sig(dtype: str, weight: str) -> dict[str, str]:
    return {"Y": f"*{dtype}", "X": f"*{dtype}", "W": f"*{dtype}:{weight}", "BIAS": f"*{dtype}", "M": "i32",
            "N": "i32", "K": "i32", "stride_xm": "i32", "stride_wn": "i32", "stride_ym": "i32"}


def _ptx(dtype: str, weight: str, tile: tuple[int, ...] = PREFILL, target: str = "sm_90a", **opts: bool) -> str:
    """sparse_linear_kernel's PTX as launch_linear compiles a quant_wgmma tile (`opts` win)."""
    bm, bn, bk, nw, ns = tile
    opts = {"quant_wgmma": True, **QUANT_WGMMA_RING, "wgmma_ring_in_flight": False, **opts}
    return sparsecc.compile(sparse_linear_kernel, _sig(dtype, weight),
                            {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "HAS_BIAS": True, "ACTIVATION": "silu"},
                            target=target, num_warps=nw, num_stages=ns, **opts).asm["ptx"]


@pytest.mark.parametrize("weight", ["NV24.w4g128", "NV24.w8g128", "NV24.w4g128z", "NV24.w8g128z"])
def test_fp16_dequantization_runs_under_the_other_copys_group(weight):
    """The shipped fp16 loop already overlaps: each copy of the unrolled body dequantizes into
    its own fragment registers while the other copy's group runs, and no write touches a
    register of a group in flight."""
    scan = scan_loop(_ptx("fp16", weight))
    assert scan.hazards == []
    assert scan.fragment_writes > 0 and scan.fragment_writes_in_flight == scan.fragment_writes
    assert scan.waits and 0 not in scan.waits


@pytest.mark.parametrize("weight", ["NV24.w4g128", "NV24.w8g128z"])
def test_the_shipped_fp16_loop_dequantizes_under_the_group_in_flight(weight):
    """`quant_wgmma_options(fp16)` at `quantized_prefill_config`'s four stages: CTA barriers,
    the body unrolled by two, the last group running through the barrier: every fragment write
    happens while the other copy's group runs, and none touches a register of a group in
    flight."""
    cfg = quantized_prefill_config(2048, 4096, 4096, torch.float16)
    tile = (cfg.block_m, cfg.block_n, cfg.block_k, cfg.num_warps, cfg.num_stages)
    ptx = _ptx("fp16", weight, tile, **{**quant_wgmma_options(torch.float16), "mbarriers": False})
    assert "mbarrier.try_wait" not in ptx
    scan = scan_loop(ptx)
    assert scan.hazards == []
    assert scan.fragment_writes > 0 and scan.fragment_writes_in_flight == scan.fragment_writes
    assert scan.waits and 0 not in scan.waits


def test_without_the_options_each_step_drains_before_it_dequantizes():
    """The A/B variant (`bench/quant_prefill.py`'s "plain" columns): one register set, so the
    step waits for its group (`wait_group 0`) before writing the next fragments."""
    scan = scan_loop(_ptx("fp16", "NV24.w8g128", **PLAIN))
    assert scan.hazards == [] and scan.fragment_writes > 0
    assert scan.fragment_writes_in_flight == 0 and 0 in scan.waits


@pytest.mark.parametrize("weight", ["NV24.w4g128", "NV24.w8g128z"])
def test_bf16_convert_barriers_keep_the_group_in_flight_with_the_switch(weight):
    """bf16: off, the convert's barrier drains every group each K step (the fragments are
    written with no group running); on, it keeps the last one, the fragments are written
    under it, and the only change to the PTX is the two `wait_group 0` of the body."""
    off, on = _ptx("bf16", weight), _ptx("bf16", weight, wgmma_ring_in_flight=True)
    before, after = scan_loop(off), scan_loop(on)
    assert before.hazards == [] and after.hazards == []
    assert 0 in before.waits and before.fragment_writes_in_flight == 0
    assert 0 not in after.waits and after.fragment_writes_in_flight == after.fragment_writes > 0
    diff = [d for d in difflib.unified_diff(off.splitlines(), on.splitlines(), lineterm="", n=0)
            if d[:1] in "+-" and d[:3] not in ("---", "+++")]
    assert diff == ["-\twgmma.wait_group.sync.aligned 0;"] * 2


def test_the_checker_finds_a_fragment_written_under_its_own_group():
    """`scan_loop` can fail: with the waits loosened (two groups kept instead of one), the
    dequantization writes registers the group in flight still reads."""
    scan = scan_loop(_ptx("fp16", "NV24.w8g128").replace("wait_group.sync.aligned 1;", "wait_group.sync.aligned 2;"))
    assert scan.hazards and any("sub.f16x2" in h or "ldmatrix" in h for h in scan.hazards)


@pytest.mark.parametrize("weight", ["NV24.w4g128", "NV24.w8g128z"])
def test_fp16_kernels_are_unchanged_by_the_switch(weight):
    """fp16 fragments come straight from the codes: no barrier or scratch store in the body."""
    assert _ptx("fp16", weight, wgmma_ring_in_flight=True) == _ptx("fp16", weight)


@pytest.mark.parametrize("dtype, weight, opts", [
    ("bf16", "NV24.w4g128", PLAIN),  # the CTA-barrier loop: not a ring
    ("bf16", "NV24.w4g128", {"wgmma_a_smem": True}),  # A may be read from the convert's scratch
    ("fp16", "NV24", {}),  # the 16-bit kernel (TMA)
    ("fp16", "NV24", {"tma": False, "mbarriers": True}),  # a cp.async ring without barriers in its body
])
def test_the_switch_leaves_other_loops_alone(dtype, weight, opts):
    tile = (64, 128, 128, 4, 3) if weight == "NV24" else PREFILL
    base = {} if weight == "NV24" else None
    kw = {"quant_wgmma": False, "mbarriers": False, "wgmma_unroll": False} if base is not None else {}
    assert (_ptx(dtype, weight, tile, **{**kw, **opts, "wgmma_ring_in_flight": True})
            == _ptx(dtype, weight, tile, **{**kw, **opts}))


def test_sm_80_ignores_the_switch():
    assert (_ptx("bf16", "NV24.w4g128", target="sm_80", wgmma_ring_in_flight=True)
            == _ptx("bf16", "NV24.w4g128", target="sm_80"))


def test_the_pipeline_marks_the_ring_only_when_asked():
    """`tritongpu-pipeline{ring-in-flight}` marks the ring's top wait; the ttgir shows it."""
    def ttgir(on: bool) -> str:
        bm, bn, bk, nw, ns = PREFILL
        return sparsecc.compile(sparse_linear_kernel, _sig("bf16", "NV24.w4g128"),
                                {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "HAS_BIAS": False,
                                 "ACTIVATION": "none"}, target="sm_90a", num_warps=nw, num_stages=ns,
                                quant_wgmma=True, **QUANT_WGMMA_RING, wgmma_ring_in_flight=on).asm["ttgir"]
    marked = re.compile(r"ttg\.wait_barrier [^\n]*ttg\.wgmma_in_flight")
    assert len(marked.findall(ttgir(True))) == 3  # both copies of the unrolled body, and the odd step after it
    assert not marked.findall(ttgir(False))


@needs_ptxas
@pytest.mark.parametrize("weight", ["NV24.w4g128", "NV24.w8g128z"])
def test_the_bf16_loop_with_the_switch_assembles_and_keeps_its_waits(weight):
    """ptxas keeps the groups asynchronous (no serialization warning; the SASS waits of the
    body are `WARPGROUP.DEPBAR.LE gsb0, 0x1`, two `0x0` fewer than without the switch) and
    the kernel keeps to 255 registers without spills."""
    from sparsecc.codegen.ptxas import dump_sass

    on = assemble(_ptx("bf16", weight, wgmma_ring_in_flight=True), "sm_90a")
    off = assemble(_ptx("bf16", weight), "sm_90a")
    res = on.kernel_resources()
    assert res.spill_stores == 0 and res.spill_loads == 0 and res.registers <= 255, res
    assert "serializ" not in on.log.lower(), on.log

    def depbars(cubin) -> list[str]:
        return re.findall(r"WARPGROUP\.DEPBAR\.LE gsb0, (0x\d)", dump_sass(cubin))
    try:
        with_switch, without = depbars(on), depbars(off)
    except Exception as e:  # noqa: BLE001 - cuobjdump is optional where ptxas is not
        pytest.skip(f"no cuobjdump: {e}")
    assert without.count("0x0") - with_switch.count("0x0") == 2
    assert with_switch.count("0x1") == without.count("0x1")
