"""`quantize_rows_fused` (one @sparsecc.jit launch) against `quantize_rows` (torch), bit for bit:
on the interpreter for fp16 / bf16 / fp32 inputs and int8 / fp8 e4m3 codes, ragged rows, zero
rows, huge and tiny values, rounding ties; its PTX assembled for sm_90a and sm_80; the float ->
fp8 bit sequence the PTX printer emits (sparsecc/codegen/fp8_casts.py), modelled in Python,
against torch's cast on every kind of f32; and the same comparisons on the GPU (`gpu`)."""

from __future__ import annotations

import warnings

import pytest
import torch
from ptxas_tools import needs_ptxas

import sparsecc
import sparsecc.language as tl
from sparsecc.codegen import fp8_casts, ptxas
from sparsecc.nn.quantize import quantize_rows
from sparsecc.ops.quantize_rows import (
    quantize_rows_config,
    quantize_rows_fused,
    quantize_rows_kernel,
)

EIGHT_BIT = [torch.int8, torch.float8_e4m3fn]
X_DTYPES = [torch.float16, torch.bfloat16, torch.float32]


@pytest.fixture(autouse=True)
def _quiet_interpreter():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the CPU tensors run on the interpreter: that is the point
        yield


def _rows(m: int, k: int, dtype: torch.dtype, seed: int) -> torch.Tensor:
    """Random rows spanning many magnitudes (row i scaled by 10**(i - m/2)), an all-zero row,
    a row with one non-zero, and a row of exact int8 rounding ties."""
    g = torch.Generator().manual_seed(seed)
    big = {torch.float16: 2.0, torch.bfloat16: 30.0, torch.float32: 30.0}[dtype]
    mags = torch.logspace(-big, big, m, dtype=torch.float64)
    x = torch.randn(m, k, generator=g, dtype=torch.float64) * mags[:, None]
    if m > 3:
        x[1] = 0.0
        x[2] = 0.0
        x[2, k // 2] = -3.0
        x[3] = torch.arange(k, dtype=torch.float64) % 255 - 127  # amax 127: scale 1, ties where .5
        x[3, 0] = 127.0
        if k >= 4:
            x[3, 1:4] = torch.tensor([0.5, 1.5, -2.5], dtype=torch.float64)
    return x.to(dtype)


def _assert_same(x: torch.Tensor, dtype: torch.dtype) -> None:
    m, k = x.shape
    q = torch.full((m, k), 77, dtype=torch.int8).view(dtype)  # poisoned codes
    scale = torch.full((m,), float("nan"))  # poisoned: every row must be written
    q, scale = quantize_rows_fused(x, dtype, q=q, scale=scale)
    rq, rs = quantize_rows(x, dtype)
    assert torch.equal(scale.view(torch.int32), rs.view(torch.int32)), (scale, rs)
    assert torch.equal(q.view(torch.int8), rq.view(torch.int8)), (q.float() - rq.float()).abs().max()


@pytest.mark.parametrize("dtype", EIGHT_BIT, ids=str)
@pytest.mark.parametrize("xdtype", X_DTYPES, ids=str)
@pytest.mark.parametrize("m, k", [(1, 16), (6, 33), (19, 100), (5, 1000), (3, 4096)])
def test_bit_for_bit_quantize_rows_on_the_interpreter(dtype, xdtype, m, k):
    _assert_same(_rows(m, k, xdtype, seed=m * 1000 + k), dtype)


@pytest.mark.parametrize("dtype", EIGHT_BIT, ids=str)
def test_extremes_on_the_interpreter(dtype):
    """fp32's largest and subnormal values, fp16's largest, rows whose scaled values land on fp8
    denormals, and a strided view of x."""
    x = torch.tensor([[3.0e38, -1.0, 1e-30, 0.0] * 4,
                      [1e-42, -3e-43, 1e-44, 0.0] * 4,  # subnormal f32 only
                      [448.0, 1.0 / 512, -1.0 / 1024, 3.0 / 2048] * 4,  # fp8 denormals after scaling by 1
                      [65504.0, -65504.0, 6e-8, 1.0] * 4])
    _assert_same(x, dtype)
    _assert_same(x.half()[:, ::1][3:], dtype)
    wide = torch.randn(4, 64)
    q, s = quantize_rows_fused(wide[:, ::2], dtype)  # column stride 2: copied first
    rq, rs = quantize_rows(wide[:, ::2], dtype)
    assert torch.equal(q.view(torch.int8), rq.view(torch.int8)) and torch.equal(s, rs)


def test_empty_and_bad_arguments():
    q, s = quantize_rows_fused(torch.zeros(0, 32), torch.int8)
    assert q.shape == (0, 32) and s.shape == (0,)
    with pytest.raises(TypeError, match="dtype must be one of"):
        quantize_rows_fused(torch.randn(2, 16), torch.float8_e5m2)
    with pytest.raises(TypeError, match="2-d fp16, bf16 or fp32"):
        quantize_rows_fused(torch.randn(2, 3, 16), torch.int8)
    with pytest.raises(TypeError, match="2-d fp16, bf16 or fp32"):
        quantize_rows_fused(torch.randn(2, 16).double(), torch.int8)


def test_quantize_rows_divides_by_a_tensor():
    """quantize_rows' scale is amax / qmax rounded once (the division CUDA would otherwise turn
    into a multiply by 1/qmax, one ulp off in places): the regression behind the GPU test
    `test_quantize_rows_same_bits_on_cuda_and_cpu`."""
    amax = torch.rand(4096) * 100 + 1e-3
    x = torch.diag(amax)
    for dtype, qmax in ((torch.int8, 127.0), (torch.float8_e4m3fn, 448.0)):
        _, s = quantize_rows(x, dtype)
        exact = (amax.double() / qmax).float()  # the correctly rounded quotient
        assert torch.equal(s, exact)
        assert not torch.equal(s, amax * torch.tensor(1.0 / qmax, dtype=torch.float32))  # the reciprocal's


def test_config_covers_llama_widths():
    for k in (1, 16, 100, 4096, 11008, 14336):
        block_k, rows, warps = quantize_rows_config(k)
        assert block_k >= k and block_k & (block_k - 1) == 0
        assert rows * block_k <= max(2048, block_k) and block_k * rows // (32 * warps) <= 32


# -- the PTX ---------------------------------------------------------------------------------------


def _sig(xdtype: str, qdtype: str, aligned: bool) -> dict[str, str]:
    hint = ":16" if aligned else ""
    return {"Q": f"*{qdtype}:16", "SCALE": "*fp32:16", "X": f"*{xdtype}:16", "M": "i32", "K": f"i32{hint}",
            "stride_xm": f"i32{hint}", "stride_qm": f"i32{hint}"}


@needs_ptxas
@pytest.mark.parametrize("target", ["sm_90a", "sm_80"])
@pytest.mark.parametrize("qdtype, qmax", [("i8", 127.0), ("fp8e4nv", 448.0)])
@pytest.mark.parametrize("xdtype", ["fp16", "bf16", "fp32"])
@pytest.mark.parametrize("k", [100, 4096, 14336])
def test_ptx_assembles_without_spills(target, qdtype, qmax, xdtype, k):
    block_k, rows, warps = quantize_rows_config(k)
    kernel = sparsecc.compile(quantize_rows_kernel, _sig(xdtype, qdtype, k % 16 == 0),
                              {"BLOCK_K": block_k, "ROWS": rows, "QMAX": qmax, "INT8": qdtype == "i8"},
                              target=target, num_warps=warps)
    ptx = kernel.asm["ptx"]
    res = ptxas.assemble(ptx, target).kernel_resources()
    assert res.spill_stores == res.spill_loads == 0
    assert "div.rn.f32" in ptx  # IEEE divisions, as torch's (not div.full.f32)
    if k == 4096:  # one read of x, one write of q, vectorized
        assert "ld.global.v4.b32" in ptx and "st.global.v4.b32" in ptx


# -- the fp8 bit sequence ---------------------------------------------------------------------------


def _model(fmt: fp8_casts._Fp8Format, f: torch.Tensor) -> torch.Tensor:
    """The instructions `emit_fp8_cast` prints, on int64 copies of the f32 bits."""
    bits = f.view(torch.int32).long() & 0xFFFFFFFF
    sign, mag = bits & 0x80000000, bits & 0x7FFFFFFF
    magic = torch.tensor([fmt.denorm_magic_bits], dtype=torch.int32).view(torch.float32)
    den = ((mag.to(torch.int32).view(torch.float32) + magic).view(torch.int32).long() & 0xFFFFFFFF) \
        - fmt.denorm_magic_bits
    nrm = (((mag + fmt.rebias) & 0xFFFFFFFF) + ((mag >> fmt.shift) & 1)) & 0xFFFFFFFF
    res = torch.where(mag < fmt.normal_min_bits, den, nrm >> fmt.shift)
    res = torch.where(mag >= fmt.overflow_bits, fmt.overflow_code, res)
    res = torch.where(mag > 0x7F800000, 0x7F, res)
    return ((res | (sign >> 24)) & 0xFF).to(torch.uint8)


@pytest.mark.parametrize("fmt, dtype", [(fp8_casts._E4M3FN, torch.float8_e4m3fn), (fp8_casts._E5M2, torch.float8_e5m2)],
                         ids=["e4m3fn", "e5m2"])
def test_fp8_bit_sequence_rounds_as_torch(fmt, dtype):
    """Every fp8 value, the midpoints between neighbours (ties to even) and one ulp either side,
    random f32 of all exponents, zeros, infinities and NaN: the modelled sequence gives torch's
    byte."""
    codes = torch.arange(256, dtype=torch.int32).to(torch.uint8).view(dtype).float()
    codes = codes[codes.isfinite()].unique()
    mids = (codes[1:] + codes[:-1]) / 2
    around = torch.cat([mids, codes]).view(torch.int32)
    near = torch.cat([around - 1, around, around + 1]).view(torch.float32)
    rand = torch.randint(-2**31, 2**31 - 1, (200000,), dtype=torch.int64,
                         generator=torch.Generator().manual_seed(0)).to(torch.int32).view(torch.float32)
    special = torch.tensor([0.0, -0.0, float("inf"), -float("inf"), float("nan"), 448.0, 463.99, 464.0, 57344.0,
                            61439.0, 61440.0, 65536.0, 1e-45, -1e-45])
    f = torch.cat([near, -near, rand, special])
    f = torch.cat([f, -torch.tensor([float("nan")])])
    got = _model(fmt, f)
    want = f.to(dtype).view(torch.uint8)
    bad = (got != want).nonzero()
    assert bad.numel() == 0, [(f[i].item(), got[i].item(), want[i].item()) for i in bad[:5, 0]]


def test_fp8_widening_sequence_is_exact():
    """The widening `fp8_casts._widen` prints, modelled: every e4m3fn byte shifted into an f16
    (sign apart) times 256, 0x7F / 0xFF NaN; every e5m2 byte the high byte of an f16."""
    byte = torch.arange(256, dtype=torch.int32)
    mag, sgn = byte & 0x7F, (byte & 0x80) << 8
    half = ((mag << 7) | sgn).to(torch.int16).view(torch.float16).float() * 256
    e4m3 = torch.where(mag == 0x7F, float("nan"), half)
    want = byte.to(torch.uint8).view(torch.float8_e4m3fn).float()
    torch.testing.assert_close(e4m3, want, rtol=0, atol=0, equal_nan=True)
    e5m2 = (byte << 8).to(torch.int16).view(torch.float16).float()
    torch.testing.assert_close(e5m2, byte.to(torch.uint8).view(torch.float8_e5m2).float(), rtol=0, atol=0,
                               equal_nan=True)


@needs_ptxas
@pytest.mark.parametrize("target", ["sm_90a", "sm_80"])
def test_fp8_casts_assemble_both_ways(target):
    for src, dst in (("fp32", "fp8e4nv"), ("bf16", "fp8e5"), ("fp8e4nv", "fp32"), ("fp8e4nv", "bf16"),
                     ("fp8e5", "fp16"), ("fp8e4nv", "fp8e5")):  # the last through f32 (the frontend's)
        kernel = sparsecc.compile(_cast_kernel, {"Y": f"*{dst}", "X": f"*{src}", "n": "i32"}, {"BLOCK": 256},
                                  target=target, num_warps=4)
        ptxas.assemble(kernel.asm["ptx"], target)


@sparsecc.jit
def _cast_kernel(Y, X, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(Y + offs, tl.load(X + offs, mask=offs < n).to(Y.dtype.element_ty), mask=offs < n)


# -- the GPU ---------------------------------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", EIGHT_BIT, ids=str)
@pytest.mark.parametrize("xdtype", X_DTYPES, ids=str)
@pytest.mark.parametrize("m, k", [(1, 4096), (7, 100), (33, 1000), (64, 11008), (300, 14336), (2048, 4096)])
def test_bit_for_bit_quantize_rows_on_the_gpu(dtype, xdtype, m, k):
    x = _rows(m, k, xdtype, seed=m + k).cuda()
    q = torch.full((m, k), 77, dtype=torch.int8, device="cuda").view(dtype)
    scale = torch.full((m,), float("nan"), device="cuda")
    q, scale = quantize_rows_fused(x, dtype, q=q, scale=scale)
    rq, rs = quantize_rows(x, dtype)
    assert torch.equal(scale.view(torch.int32), rs.view(torch.int32))
    assert torch.equal(q.view(torch.int8), rq.view(torch.int8))
    cq, cs = quantize_rows(x.cpu(), dtype)  # and the CPU's bits
    assert torch.equal(q.cpu().view(torch.int8), cq.view(torch.int8)) and torch.equal(scale.cpu(), cs)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", EIGHT_BIT, ids=str)
def test_quantize_rows_same_bits_on_cuda_and_cpu(dtype):
    x = torch.randn(512, 4096) * torch.logspace(-3, 3, 512)[:, None]
    q, s = quantize_rows(x.cuda(), dtype)
    cq, cs = quantize_rows(x, dtype)
    assert torch.equal(s.cpu(), cs) and torch.equal(q.cpu().view(torch.int8), cq.view(torch.int8))


@pytest.mark.gpu
def test_fp8_casts_on_the_gpu_round_as_torch():
    """`_cast_kernel` casting f32 / f16 / bf16 to e4m3fn (saturating) and e5m2 on the GPU, against
    torch's cast (random f32 bits, NaN and infinities included, and a sweep across the fp8 range), and
    every fp8 byte back to f32 / f16 / bf16."""
    rand = torch.randint(-2**31, 2**31 - 1, (1 << 20,), dtype=torch.int64,
                         generator=torch.Generator().manual_seed(1)).to(torch.int32).view(torch.float32)
    for dtype in (torch.float8_e4m3fn, torch.float8_e5m2):
        for xdtype in (torch.float32, torch.float16, torch.bfloat16):
            x = torch.cat([rand, torch.linspace(-600, 600, 100003)]).to(xdtype).cuda()
            y = torch.empty(x.shape, dtype=dtype, device="cuda")
            _cast_kernel[(-(-x.numel() // 256),)](y, x, x.numel(), BLOCK=256)
            # e4m3fn has no infinity: the cast saturates at +-448 (torch's CPU cast, and PTX's
            # cvt.satfinite that Triton emits); CUDA torch 2.11 gives NaN past 464 instead
            want = (x.clamp(-448, 448) if dtype == torch.float8_e4m3fn else x).to(dtype)
            assert torch.equal(y.view(torch.uint8), want.view(torch.uint8)), (dtype, xdtype)
        codes = torch.arange(256, dtype=torch.int32).to(torch.uint8).view(dtype).cuda()
        for wide in (torch.float32, torch.float16, torch.bfloat16):
            out = torch.empty(256, dtype=wide, device="cuda")
            _cast_kernel[(1,)](out, codes, 256, BLOCK=256)
            torch.testing.assert_close(out, codes.to(wide), rtol=0, atol=0, equal_nan=True)
