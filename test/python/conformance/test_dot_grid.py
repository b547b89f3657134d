"""A conformance grid in the manner of Triton's test_dot: dtype × shape (ragged too) × num_warps ×
which operand is 2:4 sparse (A, or B as in `x @ W.T`) × addressing (block pointers, tensors of
pointers) × epilogue. One kernel covers the grid: the sparse operand is chosen by the argument
(a SparseTensor) and its strides, the rest by constexprs. CI runs it on the interpreter; the GPU
suite runs it on the H100."""

from __future__ import annotations

import itertools

import pytest
import torch

import sparsecc
import sparsecc.language as tl


@sparsecc.jit
def grid_kernel(C, A, B, BIAS, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm,
                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                ADDR: tl.constexpr, B_KMAJOR: tl.constexpr, EPILOGUE: tl.constexpr, INT: tl.constexpr = False):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.int32 if INT else tl.float32)
    if ADDR == "block":
        a_ptr = tl.make_block_ptr(A, shape=(M, K), strides=(stride_am, stride_ak),
                                  offsets=(pid_m * BLOCK_M, 0), block_shape=(BLOCK_M, BLOCK_K), order=(1, 0))
        if B_KMAJOR:
            b_ptr = tl.make_block_ptr(B, shape=(K, N), strides=(stride_bk, stride_bn),
                                      offsets=(0, pid_n * BLOCK_N), block_shape=(BLOCK_K, BLOCK_N), order=(0, 1))
        else:
            b_ptr = tl.make_block_ptr(B, shape=(K, N), strides=(stride_bk, stride_bn),
                                      offsets=(0, pid_n * BLOCK_N), block_shape=(BLOCK_K, BLOCK_N), order=(1, 0))
        for _ in range(0, tl.cdiv(K, BLOCK_K)):
            a = tl.load(a_ptr, boundary_check=(0, 1), padding_option="zero")
            b = tl.load(b_ptr, boundary_check=(0, 1), padding_option="zero")
            acc = tl.dot(a, b, acc)
            a_ptr = tl.advance(a_ptr, (0, BLOCK_K))
            b_ptr = tl.advance(b_ptr, (BLOCK_K, 0))
    else:
        rk = tl.arange(0, BLOCK_K)
        a_ptrs = A + rm[:, None] * stride_am + rk[None, :] * stride_ak
        b_ptrs = B + rk[:, None] * stride_bk + rn[None, :] * stride_bn
        for k in range(0, K, BLOCK_K):
            a = tl.load(a_ptrs, mask=(rm[:, None] < M) & (rk[None, :] + k < K), other=0)
            b = tl.load(b_ptrs, mask=(rk[:, None] + k < K) & (rn[None, :] < N), other=0)
            acc += tl.dot(a, b)
            a_ptrs += BLOCK_K * stride_ak
            b_ptrs += BLOCK_K * stride_bk
    if INT:
        acc = acc.to(tl.float32)
    if EPILOGUE == "bias_relu":
        acc = tl.maximum(acc + tl.load(BIAS + rn, mask=rn < N, other=0.0).to(tl.float32)[None, :], 0.0)
    elif EPILOGUE == "silu":
        acc = acc * tl.sigmoid(acc)
    elif EPILOGUE == "leaky_relu":
        acc = tl.where(acc >= 0, acc, 0.01 * acc)
    c_ptrs = C + rm[:, None] * stride_cm + rn[None, :]
    tl.store(c_ptrs, acc.to(C.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))


EPILOGUES = {
    "none": lambda d, bias: d,
    "bias_relu": lambda d, bias: torch.relu(d + bias.float()),
    "silu": lambda d, bias: torch.nn.functional.silu(d),
    "leaky_relu": lambda d, bias: torch.nn.functional.leaky_relu(d, 0.01),
}


LOW_PRECISION = (torch.int8, torch.float8_e4m3fn, torch.float8_e5m2, torch.float32)
"""Operand types whose tensor cores read the dense operand K-major (fp32: tf32, NV12's 1:2)."""


def run_case(m, n, k, dtype, sparse, addr, epilogue, device, tiles=(32, 32, 32), num_warps=4):
    g = torch.Generator().manual_seed(m * 7 + n * 3 + k)
    if dtype == torch.int8:
        a = torch.randint(-8, 8, (m, k), generator=g, dtype=torch.int8)
        b = torch.randint(-8, 8, (k, n), generator=g, dtype=torch.int8)
    else:
        a = torch.randn(m, k, generator=g).to(dtype)
        b = torch.randn(k, n, generator=g).to(dtype)
    out_dtype = torch.bfloat16 if dtype in LOW_PRECISION[:3] else dtype
    bias = torch.randn(n, generator=g).to(out_dtype).to(device)
    prune = sparsecc.prune_1to2 if dtype == torch.float32 else sparsecc.prune_2to4
    if sparse == "A":
        a = prune(a)
        ref = EPILOGUES[epilogue](a.float() @ b.float(), bias.cpu())
        a_arg = sparsecc.compress(a.to(device))
        if dtype in LOW_PRECISION and device == "cuda":  # read K-major: b column-major
            b_arg = b.to(device).t().contiguous().t()
            strides = (a_arg.stride(0), 1, 1, b_arg.stride(1))
            kmajor = True
        else:
            b_arg = b.to(device)
            strides = (a_arg.stride(0), 1, b.stride(0), 1)
            kmajor = False
    else:  # B sparse: the weight W = b.T (N x K) stored compressed along K
        w = prune(b.T.contiguous())
        ref = EPILOGUES[epilogue](a.float() @ w.float().T, bias.cpu())
        a_arg, b_arg = a.to(device), sparsecc.compress(w.to(device))
        strides = (a.stride(0), 1, 1, b_arg.stride(0))
        kmajor = True
    c = torch.full((m, n), float("nan"), dtype=out_dtype, device=device)
    bm, bn, bk = tiles
    grid = ((m + bm - 1) // bm, (n + bn - 1) // bn)
    grid_kernel[grid](c, a_arg, b_arg, bias, m, n, k, *strides, c.stride(0), BLOCK_M=bm, BLOCK_N=bn,
                      BLOCK_K=bk, ADDR=addr, B_KMAJOR=kmajor, EPILOGUE=epilogue, INT=dtype == torch.int8,
                      num_warps=num_warps)
    if device == "cuda":
        torch.cuda.synchronize()
    out = c.float().cpu()
    assert torch.isfinite(out).all(), "some outputs were never written"
    tol = {torch.float16: 1e-2, torch.float32: 5e-3}.get(dtype, 2e-2)
    torch.testing.assert_close(out, ref, rtol=tol, atol=tol * max(ref.abs().max().item(), 1.0))


CPU_GRID = list(itertools.product(
    [torch.float16, torch.bfloat16], [(33, 17, 64), (64, 48, 128)], ["A", "B"], ["block", "pointers"],
    ["none", "bias_relu", "silu"]))


@pytest.mark.parametrize("dtype, shape, sparse, addr, epilogue", CPU_GRID)
def test_dot_grid_on_the_interpreter(dtype, shape, sparse, addr, epilogue, monkeypatch):
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    run_case(*shape, dtype, sparse, addr, epilogue, "cpu")


LOW_CPU_GRID = list(itertools.product(LOW_PRECISION, [(33, 17, 64)], ["A", "B"], ["block", "pointers"], ["bias_relu"]))


@pytest.mark.parametrize("dtype, shape, sparse, addr, epilogue", LOW_CPU_GRID, ids=str)
def test_low_precision_grid_on_the_interpreter(dtype, shape, sparse, addr, epilogue, monkeypatch):
    """int8 (int32 sums), fp8 e4m3 / e5m2 and tf32 (NV12) in the same kernel and grid."""
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    run_case(*shape, dtype, sparse, addr, epilogue, "cpu")


LOW_GPU_GRID = list(itertools.product(LOW_PRECISION, [(300, 136, 256), (16, 1024, 512)], ["A", "B"], ["block", "pointers"]))


@pytest.mark.gpu
@pytest.mark.parametrize("dtype, shape, sparse, addr", LOW_GPU_GRID, ids=str)
def test_low_precision_grid_on_the_gpu(dtype, shape, sparse, addr):
    tiles = (64, 64, 128) if dtype != torch.float32 else (64, 64, 32)
    run_case(*shape, dtype, sparse, addr, "silu", "cuda", tiles=tiles, num_warps=4)


GPU_SHAPES = [(300, 136, 208), (1024, 512, 1024), (16, 4096, 1024)]
GPU_GRID = [(dtype, shape, warps, sparse, addr, list(EPILOGUES)[i % 4])
            for i, (dtype, shape, warps, sparse, addr) in enumerate(itertools.product(
                [torch.float16, torch.bfloat16], GPU_SHAPES, [4, 8], ["A", "B"], ["block", "pointers"]))]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype, shape, warps, sparse, addr, epilogue", GPU_GRID)
def test_dot_grid_on_the_gpu(dtype, shape, warps, sparse, addr, epilogue):
    tiles = (64, 64, 64) if warps == 4 else (128, 128, 64)
    run_case(*shape, dtype, sparse, addr, epilogue, "cuda", tiles=tiles, num_warps=warps)
