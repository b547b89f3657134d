"""Reductions in registers (handlers/reduce.py): PTX size and ptxas resources of the row
kernels (softmax, layer norm, RMSNorm over 4096 fp16 values) against Triton 3.6's, and the
PTX of every reduction builtin assembling for sm_90a and sm_80 without spills.

Triton's line counts below are what `python bench/reduce_ptx.py` prints for the same kernel
sources (triton 3.6, `triton.compile` for GPUTarget("cuda", 90, 32), no GPU needed). Before
the register lowering, sparsecc's softmax row was 32,419 lines at 4 warps (28x Triton's);
now it is 769 (0.67x).
"""

from __future__ import annotations

import re

import pytest
import reduction_kernels
from ptxas_tools import needs_ptxas
from reduction_kernels import ROW_SIGS, dot_rowmax_kernel, reduce2d_kernel, row_stats_kernel

import sparsecc
from sparsecc.codegen import ptxas

TRITON_LINES = {
    ("softmax", 4): 1148, ("softmax", 8): 792,
    ("layernorm", 4): 1654, ("layernorm", 8): 1050,
    ("rmsnorm", 4): 1254, ("rmsnorm", 8): 804,
}
"""PTX lines of Triton 3.6 for the row kernels with BLOCK = 4096, by (kernel, num_warps)."""


def _ptx(kernel, sig, consts, num_warps: int, target: str = "sm_90a") -> str:
    return sparsecc.compile(kernel, signature=sig, constexprs=consts, num_warps=num_warps,
                            target=target).asm["ptx"]


@pytest.mark.parametrize("num_warps", [4, 8])
@pytest.mark.parametrize("name", list(ROW_SIGS))
def test_row_kernel_ptx_within_3x_triton(name: str, num_warps: int) -> None:
    """The issue's bound: no larger than 3x Triton's PTX for the same source (and the
    reductions themselves are butterflies, not unrolled reads of the row)."""
    kernel = getattr(reduction_kernels, f"{name}_kernel")
    ptx = _ptx(kernel, ROW_SIGS[name], {"BLOCK": 4096}, num_warps)
    lines = ptx.count("\n")
    assert lines <= 3 * TRITON_LINES[name, num_warps], (name, num_warps, lines)
    reductions = 1 if name == "rmsnorm" else 2
    if num_warps < 8:
        # the warps' partials come back as 4-word vectors: one load per 4 warps and reduction
        assert ptx.count("shfl.sync.bfly.b32") == 5 * reductions
        assert len(re.findall(r"ld\.shared\.v4\.b32", ptx)) == reductions * num_warps // 4
        assert len(re.findall(r"ld\.shared", ptx)) == reductions * num_warps // 4
    else:
        # from 8 warps on, as Triton: one partial per lane, log2(warps) more butterflies
        more = num_warps.bit_length() - 1
        assert ptx.count("shfl.sync.bfly.b32") == (5 + more) * reductions
        assert len(re.findall(r"ld\.shared\.b32", ptx)) == reductions
        assert len(re.findall(r"ld\.shared", ptx)) == reductions


@needs_ptxas
@pytest.mark.parametrize("target", ["sm_90a", "sm_80"])
@pytest.mark.parametrize("num_warps", [4, 8])
def test_reduction_kernels_assemble_without_spills(target: str, num_warps: int) -> None:
    f32_outs = {k: "*fp32" for k in ("OUT_SUM", "OUT_MAX", "OUT_MIN", "OUT_PROD")}
    cases = [
        (reduce2d_kernel, {"X": "*fp32", **f32_outs, "OUT_ARGMAX": "*i32", "OUT_ARGMIN": "*i32", "M": "i32",
                           "N": "i32"}, {"AXIS": axis, "BM": 64, "BN": 64})
        for axis in (0, 1)
    ]
    cases.append((row_stats_kernel, {"X": "*fp32", "VAL": "*fp32", "IDX": "*i32", "PAIR_MAX": "*fp32",
                                     "PAIR_SUM": "*fp32", "XOR": "*i32", "KEEP": "*fp32", "N": "i32"},
                  {"BLOCK": 1024}))
    cases.append((dot_rowmax_kernel, {"A": "*fp16", "B": "*fp16", "OUT_MAX": "*fp32", "OUT_SUM": "*fp32",
                                      "OUT_ARG": "*i32"}, {"K": 32, "BM": 64, "BN": 64}))
    cases += [(getattr(reduction_kernels, f"{n}_kernel"), sig, {"BLOCK": 4096}) for n, sig in ROW_SIGS.items()]
    for kernel, sig, consts in cases:
        res = ptxas.assemble(_ptx(kernel, sig, consts, num_warps, target), target).kernel_resources()
        assert res.spill_stores == res.spill_loads == 0, (kernel.__name__, consts, res)


@needs_ptxas
@pytest.mark.parametrize("target", ["sm_90a", "sm_80"])
@pytest.mark.parametrize("name", list(ROW_SIGS))
def test_row_kernels_one_barrier_per_reduction(name: str, target: str) -> None:
    """Regression (issue 30): each reduction's warp exchange has a scratch of its own, so the
    second reduction of softmax / layer norm writes its partials without waiting for the
    first one's reads (tritongpu-insert-barriers tracks private scratches): one `bar.sync` per
    reduction, where there were three for two. Triton 3.6 has three (it reuses one scratch)."""
    kernel = getattr(reduction_kernels, f"{name}_kernel")
    ptx = _ptx(kernel, ROW_SIGS[name], {"BLOCK": 4096}, 8, target)
    reductions = 1 if name == "rmsnorm" else 2
    assert ptx.count("bar.sync") == reductions
    res = ptxas.assemble(ptx, target).resources
    assert all(r.spill_stores == 0 and r.spill_loads == 0 for r in res.values())
