"""`narrow_copies` on the CPU: the scales tile of a quantized weight's decode loop ([BLOCK_N, 4]
fp16: 8 bytes a row) streams by 8-byte `cp.async.ca` copies behind the same runtime alignment
test as the 16-byte ones, instead of a synchronous ld.global + st.shared each K step; ptxas
assembles the kernel, and with the switch off nothing changes. The GPU suite checks the results
(test/python/nn/test_quantized_linear.py::test_decode_switches_on_the_gpu)."""

from __future__ import annotations

import re

import pytest
from ptxas_tools import needs_ptxas

import sparsecc
from sparsecc.ops.sparse_linear import sparse_linear_kernel


def _compile(enc: str, target: str, narrow: bool):
    sig = {"Y": "*fp16", "X": "*fp16", "W": f"*fp16:{enc}", "BIAS": "*fp16", "M": "i32",
           "N": "i32:16", "K": "i32:16", "stride_xm": "i32:16", "stride_wn": "i32:16", "stride_ym": "i32:16"}
    consts = {"BLOCK_M": 8, "BLOCK_N": 64, "BLOCK_K": 512, "HAS_BIAS": False, "ACTIVATION": "none",
              "ROWS_16B": True, "ROWS_64": True}
    return sparsecc.compile(sparse_linear_kernel, signature=sig, constexprs=consts, target=target, num_warps=4,
                            num_stages=2, narrow_copies=narrow)


@needs_ptxas
@pytest.mark.parametrize("target", ["sm_90a", "sm_80"])
@pytest.mark.parametrize("enc", ["NV24.w4g128", "NV24.w8g128"])
def test_the_scales_stream_by_8_byte_async_copies(enc, target):
    on, off = _compile(enc, target, True), _compile(enc, target, False)
    narrow = re.findall(r"cp\.async\.ca\.shared\.global \[[^\]]+\], \[[^\]]+\], (\d+)", on.asm["ptx"])
    assert narrow == ["8", "8"]  # the prologue's stage and the loop's
    assert "cp.async.ca" not in off.asm["ptx"]
    # the 16-byte copies (tokens, codes, metadata) are the same
    assert on.asm["ptx"].count("cp.async.cg") == off.asm["ptx"].count("cp.async.cg")
    assert on.asm["cubin"]


@needs_ptxas
def test_two_byte_rows_keep_the_synchronous_copy():
    """w8c has one scale a row (2 bytes): narrower than cp.async's 4, so nothing changes."""
    assert _compile("NV24.w8c", "sm_90a", True).asm["ptx"] == _compile("NV24.w8c", "sm_90a", False).asm["ptx"]
