"""tl.math: each function on the interpreter against torch (fp32, fp16, bf16), the PTX forms
assembled by ptxas, the same kernels on the GPU, and a sparse GEMM with a SiLU epilogue."""

from __future__ import annotations

import pytest
import torch

import sparsecc
import sparsecc.language as tl
from sparsecc.frontend.errors import CompilationError


@sparsecc.jit
def f_exp(x):
    return tl.exp(x)


@sparsecc.jit
def f_exp2(x):
    return tl.exp2(x)


@sparsecc.jit
def f_log(x):
    return tl.log(tl.abs(x) + 0.5)


@sparsecc.jit
def f_log2(x):
    return tl.log2(tl.abs(x) + 0.5)


@sparsecc.jit
def f_sqrt(x):
    return tl.sqrt(tl.abs(x))


@sparsecc.jit
def f_rsqrt(x):
    return tl.rsqrt(tl.abs(x) + 0.5)


@sparsecc.jit
def f_sin(x):
    return tl.sin(x)


@sparsecc.jit
def f_cos(x):
    return tl.math.cos(x)


@sparsecc.jit
def f_tanh(x):
    return tl.tanh(x)


@sparsecc.jit
def f_floor(x):
    return tl.floor(x)


@sparsecc.jit
def f_ceil(x):
    return tl.ceil(x)


@sparsecc.jit
def f_abs(x):
    return tl.abs(x)


@sparsecc.jit
def f_sigmoid(x):
    return tl.sigmoid(x)


@sparsecc.jit
def f_fma(x):
    return tl.fma(x, x, 1.0)


@sparsecc.jit
def f_clamp(x):
    return tl.clamp(x, -0.5, 0.75)


FUNCS = {
    "exp": (f_exp, torch.exp),
    "exp2": (f_exp2, torch.exp2),
    "log": (f_log, lambda x: torch.log(x.abs() + 0.5)),
    "log2": (f_log2, lambda x: torch.log2(x.abs() + 0.5)),
    "sqrt": (f_sqrt, lambda x: x.abs().sqrt()),
    "rsqrt": (f_rsqrt, lambda x: (x.abs() + 0.5).rsqrt()),
    "sin": (f_sin, torch.sin),
    "cos": (f_cos, torch.cos),
    "tanh": (f_tanh, torch.tanh),
    "floor": (f_floor, torch.floor),
    "ceil": (f_ceil, torch.ceil),
    "abs": (f_abs, torch.abs),
    "sigmoid": (f_sigmoid, torch.sigmoid),
    "fma": (f_fma, lambda x: x * x + 1),
    "clamp": (f_clamp, lambda x: x.clamp(-0.5, 0.75)),
}


def _kernel(name: str):
    fn = FUNCS[name][0]

    @sparsecc.jit
    def unary(X, Y, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(X + offs, mask=mask, other=0.0)
        tl.store(Y + offs, fn(x), mask=mask)

    return unary


KERNELS = {name: _kernel(name) for name in FUNCS}
DTYPES = {torch.float32: 2e-5, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}


def _run_and_check(name: str, dtype: torch.dtype, device: str) -> None:
    g = torch.Generator().manual_seed(len(name))
    x = (torch.randn(1000, generator=g) * 2).to(dtype).to(device)
    y = torch.full_like(x, float("nan"))
    KERNELS[name][(8,)](x, y, x.numel(), BLOCK=128)
    ref = FUNCS[name][1](x.float()).to(dtype).float()
    tol = DTYPES[dtype]
    torch.testing.assert_close(y.float().cpu(), ref.cpu(), rtol=tol, atol=tol * 4)


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("name", list(FUNCS))
def test_math_on_the_interpreter(name, dtype, monkeypatch):
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    _run_and_check(name, dtype, "cpu")


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_math_assembles(target):
    for name, kernel in KERNELS.items():
        ck = sparsecc.compile(kernel, {"X": "*fp16", "Y": "*fp16", "n": "i32"}, {"BLOCK": 128}, target=target)
        assert isinstance(ck.asm["cubin"], bytes), name
    ptx = sparsecc.compile(KERNELS["exp"], {"X": "*fp32", "Y": "*fp32", "n": "i32"}, {"BLOCK": 128},
                           target=target).asm["ptx"]
    assert "ex2.approx.ftz.f32" in ptx


def test_math_on_ints_is_a_located_error():
    @sparsecc.jit
    def bad(X, n: tl.constexpr):
        x = tl.load(X + tl.arange(0, n))
        tl.store(X + tl.arange(0, n), tl.exp(x))

    with pytest.raises(CompilationError, match="tl.exp needs a floating-point input") as info:
        sparsecc.compile(bad, {"X": "*i32"}, {"n": 16})
    assert "tl.exp(x)" in str(info.value)


def test_math_outside_a_kernel_says_so():
    with pytest.raises(tl.OutsideKernelError, match="tl.sigmoid"):
        tl.sigmoid(1.0)


@sparsecc.jit
def silu_gemm(D, A, B, M, N, K, stride_am, stride_bk, stride_dm,
              BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    a_ptr = tl.make_block_ptr(A, shape=(M, K), strides=(stride_am, 1), offsets=(pid_m * BLOCK_M, 0),
                              block_shape=(BLOCK_M, BLOCK_K), order=(1, 0))
    b_ptr = tl.make_block_ptr(B, shape=(K, N), strides=(stride_bk, 1), offsets=(0, pid_n * BLOCK_N),
                              block_shape=(BLOCK_K, BLOCK_N), order=(1, 0))
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for _ in range(0, tl.cdiv(K, BLOCK_K)):
        acc = tl.dot(tl.load(a_ptr, boundary_check=(0, 1), padding_option="zero"),
                     tl.load(b_ptr, boundary_check=(0, 1), padding_option="zero"), acc)
        a_ptr = tl.advance(a_ptr, (0, BLOCK_K))
        b_ptr = tl.advance(b_ptr, (BLOCK_K, 0))
    acc = acc * tl.sigmoid(acc)
    d_ptr = tl.make_block_ptr(D, shape=(M, N), strides=(stride_dm, 1), offsets=(pid_m * BLOCK_M, pid_n * BLOCK_N),
                              block_shape=(BLOCK_M, BLOCK_N), order=(1, 0))
    tl.store(d_ptr, acc.to(tl.float16), boundary_check=(0, 1))


def _silu_problem(m, n, k, device):
    torch.manual_seed(m + n)
    dense = sparsecc.prune_2to4(torch.randn(m, k, dtype=torch.float16, device=device))
    b = torch.randn(k, n, dtype=torch.float16, device=device)
    out = torch.full((m, n), float("nan"), dtype=torch.float16, device=device)
    ref = torch.nn.functional.silu(dense.float() @ b.float())
    return sparsecc.compress(dense), b, out, ref


def test_sparse_gemm_with_a_silu_epilogue_on_the_interpreter(monkeypatch):
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    a, b, out, ref = _silu_problem(48, 40, 96, "cpu")
    silu_gemm[(2, 2)](out, a, b, 48, 40, 96, a.stride(0), b.stride(0), out.stride(0),
                      BLOCK_M=32, BLOCK_N=32, BLOCK_K=32)
    torch.testing.assert_close(out.float(), ref, rtol=1e-2, atol=1e-2 * ref.abs().max().item())


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", list(DTYPES))
def test_math_on_the_gpu(dtype):
    for name in FUNCS:
        _run_and_check(name, dtype, "cuda")


@pytest.mark.gpu
@pytest.mark.parametrize("m, n, k", [(300, 136, 208), (1024, 512, 1024)])
def test_sparse_gemm_with_a_silu_epilogue_on_the_gpu(m, n, k):
    a, b, out, ref = _silu_problem(m, n, k, "cuda")
    for bm, bn, bk, warps in [(128, 128, 64, 8), (64, 64, 64, 4)]:
        out.fill_(float("nan"))
        silu_gemm[((m + bm - 1) // bm, (n + bn - 1) // bn)](
            out, a, b, m, n, k, a.stride(0), b.stride(0), out.stride(0), BLOCK_M=bm, BLOCK_N=bn,
            BLOCK_K=bk, num_warps=warps)
        torch.cuda.synchronize()
        torch.testing.assert_close(out.float(), ref, rtol=1e-2, atol=1e-2 * ref.abs().max().item())


@sparsecc.jit
def bits_roundtrip(X, Y, B, n: tl.constexpr):
    offs = tl.arange(0, n)
    x = tl.load(X + offs)
    bits = x.to(tl.int32, bitcast=True)
    tl.store(B + offs, bits)
    tl.store(Y + offs, tl.cast(bits ^ -2147483648, tl.float32, bitcast=True))  # flip the sign bit


def _bits(device: str) -> None:
    x = torch.randn(64, device=device)
    y = torch.full_like(x, float("nan"))
    b = torch.zeros(64, dtype=torch.int32, device=device)
    bits_roundtrip[(1,)](x, y, b, n=64)
    assert torch.equal(b.cpu(), x.cpu().view(torch.int32)) and torch.equal(y.cpu(), -x.cpu())


def test_bitcast_on_the_interpreter(monkeypatch):
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    _bits("cpu")


def test_bitcast_assembles_and_checks_widths():
    ck = sparsecc.compile(bits_roundtrip, {"X": "*fp32", "Y": "*fp32", "B": "*i32"}, {"n": 64}, target="sm_90a")
    assert isinstance(ck.asm["cubin"], bytes)
    with pytest.raises(CompilationError, match="a bitcast keeps the width"):
        sparsecc.compile(bits_roundtrip, {"X": "*fp16", "Y": "*fp32", "B": "*i32"}, {"n": 64})


@pytest.mark.gpu
def test_bitcast_on_the_gpu():
    _bits("cuda")
