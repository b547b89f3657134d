"""`tritongpu-scale-after-dot` on sparse_linear's quantized decode kernel, on the CPU: with the
switch on, the mma.sp fragments hold `code - zero` (no f16x2 multiply), each scale group's sums
are scaled once by fp32 FMAs, and ptxas assembles the result; wgmma dots and bf16 results are
left as they are. The GPU suite checks the results
(test/python/nn/test_quantized_linear.py::test_decode_switches_on_the_gpu)."""

from __future__ import annotations

import numpy as np
import pytest
from ptxas_tools import needs_ptxas

import sparsecc
from sparsecc.ops.sparse_linear import sparse_linear_kernel


def _compile(enc: str, target: str, dtype: str = "fp16", after_dot: bool = True, **switches):
    sig = {"Y": f"*{dtype}", "X": f"*{dtype}", "W": f"*{dtype}:{enc}", "BIAS": f"*{dtype}", "M": "i32",
           "N": "i32:16", "K": "i32:16", "stride_xm": "i32:16", "stride_wn": "i32:16", "stride_ym": "i32:16"}
    consts = {"BLOCK_M": 8, "BLOCK_N": 64, "BLOCK_K": 512, "HAS_BIAS": True, "ACTIVATION": "silu",
              "ROWS_16B": True, "ROWS_64": True}
    return sparsecc.compile(sparse_linear_kernel, signature=sig, constexprs=consts, target=target, num_warps=4,
                            num_stages=2, scale_after_dot=after_dot, **switches)


# scheme -> scale groups in a 512-column K step (groups run along the dense K: w4g128's 128 columns
# are 64 kept ones; w8c has one scale a row)
GROUPS = {"NV24.w4g128": 4, "NV24.w8g128": 4, "NV24.w4g64z": 8, "NV24.w8c": 1}


@needs_ptxas
@pytest.mark.parametrize("target", ["sm_90a", "sm_80"])
@pytest.mark.parametrize("enc", sorted(GROUPS))
def test_the_scales_move_after_the_mma(enc, target):
    on, off = _compile(enc, target), _compile(enc, target, after_dot=False)
    assert "ttg.scale_after_dot" in on.asm["ttgir"] and "ttg.scale_after_dot" not in off.asm["ttgir"]
    ptx_on, ptx_off = on.asm["ptx"], off.asm["ptx"]
    assert ptx_off.count("mul.rn.f16x2") == 64  # a thread's 128 values a step, one multiply a pair
    assert ptx_on.count("mul.rn.f16x2") == 0
    assert ptx_on.count("mma.sp") == ptx_off.count("mma.sp") == 16
    # one m16n8 tile a warp: 4 accumulator registers, one FMA each at the end of every group
    assert ptx_on.count("fma.rn.f32") - ptx_off.count("fma.rn.f32") == 4 * GROUPS[enc]
    assert on.asm["cubin"]  # ptxas took it


@needs_ptxas
def test_a_bf16_result_is_left_alone():
    on, off = _compile("NV24.w4g128", "sm_80", "bf16"), _compile("NV24.w4g128", "sm_80", "bf16", after_dot=False)
    assert "ttg.scale_after_dot" not in on.asm["ttgir"]
    assert on.asm["ptx"] == off.asm["ptx"]


@needs_ptxas
def test_a_wgmma_dot_is_left_alone():
    """The register-A wgmma kernel (its accumulators are read asynchronously) keeps the
    per-value scaling."""
    on, off = _compile_wgmma(True), _compile_wgmma(False)
    assert "ttg.scale_after_dot" not in on.asm["ttgir"]
    assert on.asm["ptx"] == off.asm["ptx"]


def _compile_wgmma(after_dot: bool):
    sig = {"Y": "*fp16", "X": "*fp16", "W": "*fp16:NV24.w4g128", "BIAS": "*fp16", "M": "i32", "N": "i32:16",
           "K": "i32:16", "stride_xm": "i32:16", "stride_wn": "i32:16", "stride_ym": "i32:16"}
    consts = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 128, "HAS_BIAS": False, "ACTIVATION": "none",
              "ROWS_16B": True, "ROWS_64": True}
    return sparsecc.compile(sparse_linear_kernel, signature=sig, constexprs=consts, target="sm_90a", num_warps=8,
                            num_stages=3, scale_after_dot=after_dot, quant_wgmma=True)


def test_scaling_the_sums_is_at_least_as_accurate():
    """The arithmetic of both orders in numpy, against float64: dequantize-then-MMA rounds each
    scaled weight to f16; scaling each group's fp32 sum rounds nothing but the sums."""
    rng = np.random.default_rng(0)
    codes = rng.integers(0, 16, size=(64, 256))
    scales = rng.uniform(0.001, 0.05, size=(64, 4)).astype(np.float16)
    x = rng.standard_normal(256).astype(np.float16)
    s_full = np.repeat(scales, 64, axis=1)
    exact = ((codes - 8) * s_full.astype(np.float64)) @ x.astype(np.float64)
    per_value = ((codes - 8).astype(np.float16) * s_full).astype(np.float16).astype(np.float32) @ x.astype(np.float32)
    sums = ((codes - 8).astype(np.float32) * x.astype(np.float32)).reshape(64, 4, 64).sum(axis=2)
    after = (sums * scales.astype(np.float32)).sum(axis=1)
    assert np.abs(after - exact).max() <= np.abs(per_value - exact).max() + 1e-6
