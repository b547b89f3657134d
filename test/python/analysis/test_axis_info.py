"""The axis analysis behind 128-bit pointer-tensor accesses (sparsecc/analysis/axis_info.py), the
'*fp32:16' pointer specialization that feeds it, and the vectorized lowering: what it proves,
what it must not claim, and that the kernels still compute the right thing on the interpreter
and assemble for sm_80 and sm_90a."""

from __future__ import annotations

import os
import sys

import pytest
import torch

import sparsecc
import sparsecc.language as tl
from sparsecc import formats
from sparsecc.analysis.axis_info import AxisAnalysis, AxisInfo
from sparsecc.analysis.divisibility import Divisibility
from sparsecc.dialects import tt
from sparsecc.frontend.jit import specialize
from sparsecc.frontend.types import parse_signature_type, signature_hint

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "bench"))


@sparsecc.jit
def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


@sparsecc.jit
def le_mask(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs <= n, other=0.0), mask=offs <= n)


@sparsecc.jit
def strided(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + 2 * offs, mask=mask), mask=mask)


@sparsecc.jit
def shifted(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs + 1, mask=mask), mask=mask)


def _analysis(kernel, sig: dict[str, str]) -> tuple[AxisAnalysis, list]:
    ck = sparsecc.compile(kernel, sig, {"BLOCK": 1024})
    func = next(op for op in ck.module.walk() if isinstance(op, tt.FuncOp))
    accesses = [op for op in func.walk() if isinstance(op, tt.LoadOp | tt.StoreOp)]
    return AxisAnalysis(func, Divisibility(func)), accesses


def _widths(kernel, sig: dict[str, str]) -> list[int]:
    axes, accesses = _analysis(kernel, sig)
    return [axes.vector_width(op.ptr, op.mask, getattr(op, "other", None), 0, 4, 4) for op in accesses]


ALIGNED = {"x_ptr": "*fp32:16", "y_ptr": "*fp32:16", "out_ptr": "*fp32:16", "n": "i32:16"}


def test_contiguous_aligned_offsets_are_vectors_of_four():
    axes, accesses = _analysis(add, ALIGNED)
    load = accesses[0]
    assert axes.of(load.ptr) == AxisInfo((1024,), (16,), (1,))  # 16 bytes: the pointer's alignment
    assert axes.of(load.mask).constancy == (16,)  # n % 16 == 0: no boundary inside 16 elements
    assert _widths(add, ALIGNED) == [4, 4, 4]


@pytest.mark.parametrize("change", [{"x_ptr": "*fp32", "out_ptr": "*fp32"}, {"n": "i32"}])
def test_a_missing_fact_gives_per_element_accesses(change):
    sig = ALIGNED | change
    widths = _widths(add, sig)
    if "n" in change:  # the mask may change inside any vector
        assert widths == [1, 1, 1]
    else:  # only y keeps its 16-byte alignment
        assert widths == [1, 4, 1]


@pytest.mark.parametrize("kernel", [le_mask, strided, shifted])
def test_what_must_not_be_a_vector(kernel):
    """`offs <= n` changes at n + 1; `2 * offs` is not contiguous; `offs + 1` is not aligned."""
    sig = {"x_ptr": "*fp32:16", "out_ptr": "*fp32:16", "n": "i32:16"}
    widths = _widths(kernel, sig)
    assert widths[0] == 1
    if kernel is not le_mask:
        assert widths[1] == 4  # the store of `out_ptr + offs` is still a vector


@sparsecc.jit
def rows2d(X, Y, M, N, stride_x, stride_y, BM: tl.constexpr, BN: tl.constexpr):
    offs_m = tl.program_id(0) * BM + tl.arange(0, BM)
    offs_n = tl.program_id(1) * BN + tl.arange(0, BN)
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    v = tl.load(X + offs_m[:, None] * stride_x + offs_n[None, :], mask=mask, other=0.0)
    tl.store(Y + offs_m[:, None] * stride_y + offs_n[None, :], v, mask=mask)


@pytest.mark.parametrize("stride", ["i32", "i32:16"])
def test_a_row_stride_of_unknown_divisibility_is_no_vector(stride):
    """Regression (a misaligned-address fault on the H100): `offs_m[:, None] * stride` takes
    every row start along the new dim, so its divisibility there is the divisor all of
    `offs_m` shares (1, as `offs_m` is contiguous), not that of its first element; with a row
    stride of 137 halves, rows start unaligned. With `stride` a multiple of 16 they may be."""
    sig = {"X": "*fp16:16", "Y": "*fp16:16", "M": "i32:16", "N": "i32:16", "stride_x": stride,
           "stride_y": stride}
    ck = sparsecc.compile(rows2d, sig, {"BM": 32, "BN": 64})
    func = next(op for op in ck.module.walk() if isinstance(op, tt.FuncOp))
    axes = AxisAnalysis(func, Divisibility(func))
    load = next(op for op in func.walk() if isinstance(op, tt.LoadOp))
    row_div = axes.of(load.ptr).divisibility[1]
    assert (row_div >= 16) == (stride == "i32:16"), axes.of(load.ptr)
    ptx = sparsecc.compile(rows2d, sig, {"BM": 32, "BN": 64}, target="sm_90a").asm["ptx"]
    assert ("ld.global.v4" in ptx) == (stride == "i32:16")


def test_pointer_hint_in_signatures():
    assert signature_hint("*fp32:16") == "16" and signature_hint("*fp16:NV24") is None
    assert parse_signature_type("*fp32:16") == parse_signature_type("*fp32")
    assert formats.of_signature("*fp32:16") is None
    assert formats.flat_params("x", "*fp32:16") == [("x", "*fp32:16")]
    with pytest.raises(ValueError, match="unknown sparse format"):
        parse_signature_type("*fp32:8")


def test_cpu_tensors_carry_no_alignment_hint():
    """The interpreter reads no alignment: CPU launches keep one specialization per dtype."""
    x = torch.randn(64)
    assert specialize(x, "x", "k") == "*fp32" and specialize(x[1:], "x", "k") == "*fp32"


@pytest.mark.gpu
def test_gpu_launches_specialize_on_alignment():
    x = torch.randn(3000, device="cuda")
    assert specialize(x, "x", "k") == "*fp32:16"
    assert specialize(x[1:], "x", "k") == "*fp32"
    assert specialize(x.half()[8:], "x", "k") == "*fp16:16"


@pytest.mark.gpu
@pytest.mark.parametrize("offset", [0, 1, 3, 4])
def test_gpu_results_aligned_and_not(offset):
    """The vector path (offset 0, 4: 16-byte aligned) and the per-element one (1, 3), one after
    the other in the same process (the launch cache must tell them apart), ragged n."""
    n = 5000 - offset
    x, y = torch.randn(5000, device="cuda")[offset:], torch.randn(5000, device="cuda")[offset:]
    out = torch.full((5000,), float("nan"), device="cuda")[offset:]
    add[(5,)](x, y, out, n, BLOCK=1024)
    torch.testing.assert_close(out, x + y)


@pytest.mark.parametrize("offset", [0, 1, 3])
def test_interpreter_results_aligned_and_not(monkeypatch, offset):
    """Ragged n and views that start off a 16-byte boundary, each compiled as what it is."""
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    n = 3000 - offset
    x, y = torch.randn(3000)[offset:], torch.randn(3000)[offset:]
    out = torch.full((3000,), float("nan"))[offset:]
    add[(3,)](x, y, out, n, BLOCK=1024)
    torch.testing.assert_close(out, x + y)


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_parity_kernels_assemble_with_vectors(target):
    """The parity benchmark's memory-bound kernels, as a launch on aligned tensors compiles them:
    128-bit global accesses only, and a cubin from ptxas."""
    import parity

    for case in parity.cases():
        if case.name not in ("vector add fp32", "SwiGLU fp16", "softmax", "layer norm fwd", "RMSNorm fwd",
                             "cross-entropy fwd"):
            continue
        shape = case.shapes[0]
        launch = case.launches(shape)[0]
        _, _, sig = parity.signatures(case, launch, shape)
        ck = sparsecc.compile(parity.pk.sparsecc_kernel(case.fn), sig, launch.constexprs, target=target,
                              num_warps=launch.num_warps)
        stats = parity.ptx_stats(ck.asm["ptx"])
        assert isinstance(ck.asm["cubin"], bytes)
        scalar_ld = 1 if case.name == "cross-entropy fwd" else 0  # its target index and logit
        assert stats["ld.global"] - stats["ld.v4"] == 2 * scalar_ld, (case.name, stats)
        assert stats["st.global"] == stats["st.v4"] or case.name == "cross-entropy fwd", (case.name, stats)
