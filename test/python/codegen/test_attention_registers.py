"""The parity benchmark's fused attention kernel (conformance/parity_kernels.py, 128x64 tiles, head dim
64, 8 warps) stays within 128 ptxas registers: 8 warps of 128 registers are 32768, so two blocks
fit an SM's 65536, and from 129 on (allocated in units of 8: 136) only one does.

The loop's PTX was the same at 123 and at 130 registers: ptxas's allocation moved with the
prologue's scalar head offset (`q_ptr + head * stride_h`), which the rownorm merge had turned into
`mul.wide.s32`; the kernel went from 1.19x to 1.49x of Triton's time on the H200.
`lower_ptrs.scalar_byte_offset` keeps that offset as cvt.s64.s32 + mul.lo.s64 (119 registers)."""

from __future__ import annotations

import os
import sys

from ptxas_tools import needs_ptxas

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "bench"))

import parity  # noqa: E402

from sparsecc.codegen import ptxas  # noqa: E402


@needs_ptxas
def test_attention_fits_two_blocks_per_sm() -> None:
    case = next(c for c in parity.cases() if c.name == "fused attention fwd")
    shape = (32, 2048, 64)
    launch = case.launches(shape)[0]
    assert launch.num_warps == 8 and launch.constexprs == {"HEAD_DIM": 64, "BLOCK_M": 128, "BLOCK_N": 64}
    ptx = parity.compile_sparsecc_ptx(case, launch, shape)
    res = next(iter(ptxas.assemble(ptx, "sm_90a").resources.values()))
    assert res.spill_stores == res.spill_loads == 0
    assert res.registers <= 128, res.registers
    # q's head offset as cvt + mul.lo.s64; its per-register offsets stay mul.wide.s32
    prologue = ptx.split("ld.global")[0]
    assert "cvt.s64.s32" in prologue and "mul.lo.s64" in prologue and "mul.wide.s32" in prologue
