"""Frontend -> decompose-sparse-tensors -> interpreter, on random 2:4 data (no GPU needed).

These prove the decomposition keeps the meaning of the sparse program: the interpreter executes
the decomposed IR, addressing values and metadata exactly as the GPU kernel does, and the result
must equal torch.mm(A.to_dense(), B).
"""

from __future__ import annotations

import pytest
import torch
from kernels import pointer_gemm

import sparsecc
from sparsecc.demo import sparse_gemm_kernel

SHAPES = [(64, 48, 128), (33, 17, 64), (16, 40, 96), (48, 32, 32)]


@pytest.fixture(autouse=True)
def interpret(monkeypatch):
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")


def _problem(m: int, n: int, k: int, dtype: torch.dtype, seed: int):
    g = torch.Generator().manual_seed(seed)
    dense = sparsecc.prune_2to4(torch.randn(m, k, generator=g).to(dtype))
    b = torch.randn(k, n, generator=g).to(dtype)
    out = torch.full((m, n), float("nan"), dtype=dtype)
    return dense, sparsecc.compress(dense), b, out


def _check(out: torch.Tensor, dense: torch.Tensor, b: torch.Tensor) -> None:
    ref = dense.float() @ b.float()
    assert torch.isfinite(out).all(), "some outputs were never written"
    tol = 1e-2 if out.dtype == torch.float16 else 2e-2
    torch.testing.assert_close(out.float(), ref, rtol=tol, atol=tol * ref.abs().max().item())


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("m, n, k", SHAPES)
def test_block_pointer_gemm(m, n, k, dtype):
    dense, a, b, out = _problem(m, n, k, dtype, seed=m * 1000 + n)
    grid = ((m + 31) // 32, (n + 31) // 32)
    sparse_gemm_kernel[grid](out, a, b, m, n, k, a.stride(0), b.stride(0), out.stride(0),
                             BLOCK_M=32, BLOCK_N=32, BLOCK_K=32)
    _check(out, dense, b)


@pytest.mark.parametrize("m, n, k", SHAPES)
def test_pointer_tensor_gemm(m, n, k):
    dense, a, b, out = _problem(m, n, k, torch.float16, seed=k)
    grid = ((m + 31) // 32, (n + 31) // 32)
    pointer_gemm[grid](out, a, b, m, n, k, a.stride(0), b.stride(0), out.stride(0), BM=32, BN=32, BK=32)
    _check(out, dense, b)


def test_sparse_mm_on_cpu_uses_the_interpreter():
    from sparsecc.ops import sparse_mm

    dense, a, b, _ = _problem(40, 24, 64, torch.bfloat16, seed=7)
    _check(sparse_mm(a, b), dense, b)


def test_sparse_mm_asks_the_jit_module_for_the_cuda_target(monkeypatch):
    # The CUDA path's tile choice depends on the target: sparse_mm must reach the module's
    # current_target (the package also exports a function named `jit` that shadows it).
    import importlib

    smm = importlib.import_module("sparsecc.ops.sparse_mm")
    monkeypatch.setattr(importlib.import_module("sparsecc.frontend.jit"), "current_target", lambda: "sm_90a")
    assert smm._target("cuda") == "sm_90a"
    assert smm._target("cpu") is None


def test_wrong_metadata_changes_the_result():
    """The test above could not pass with garbage metadata: flipping it must break the result."""
    dense, a, b, out = _problem(32, 32, 64, torch.float16, seed=3)
    broken = sparsecc.SparseTensor(a.values, a.meta ^ 0x0101, a.shape)  # swap kept positions
    sparse_gemm_kernel[(1, 1)](out, broken, b, 32, 32, 64, 64, b.stride(0), out.stride(0),
                               BLOCK_M=32, BLOCK_N=32, BLOCK_K=32)
    ref = dense.float() @ b.float()
    assert (out.float() - ref).abs().max() > 0.5


@pytest.mark.gpu
def test_interpreter_takes_cuda_tensors():
    """SPARSECC_INTERPRET=1 with CUDA tensors runs on CPU copies and writes the results back."""
    dense, a, b, out = _problem(48, 40, 64, torch.float16, seed=11)
    a, b, out = a.cuda(), b.cuda(), out.cuda()
    sparse_gemm_kernel[(2, 2)](out, a, b, 48, 40, 64, a.stride(0), b.stride(0), out.stride(0),
                               BLOCK_M=32, BLOCK_N=32, BLOCK_K=32)
    assert out.is_cuda
    _check(out.cpu(), dense, b.cpu())


def test_sparse_mm_reads_narrow_and_column_major_b_k_major():
    # which B layout each GPU problem gets (meta tensors: strides without data)
    import importlib

    plan = importlib.import_module("sparsecc.ops.sparse_mm")._b_plan

    def col_major(k, n):
        return torch.empty(n, k, device="meta").t()

    def row_major(k, n):
        return torch.empty(k, n, device="meta")

    for target in ("sm_80", "sm_90a"):
        assert plan(row_major(4096, 1), target) == plan(col_major(4096, 1), target)  # one column: both
        assert plan(row_major(4096, 1), target).kmajor and not plan(row_major(4096, 1), target).copy
        assert plan(row_major(512, 3), target).copy == "kmajor"  # rows narrower than a 16-byte copy
        assert plan(col_major(512, 3), target).kmajor and not plan(col_major(512, 3), target).copy
        assert plan(col_major(4096, 16), target).kmajor
        assert plan(row_major(4096, 16), target) == plan(row_major(4096, 4096), target)  # as given
        assert not plan(row_major(4096, 4096), target).kmajor
    assert plan(col_major(4096, 4096), "sm_80").kmajor  # mma.sp reads it K-major
    assert plan(col_major(4096, 4096), "sm_90a").copy == "rowmajor"  # wgmma reads B N-major
    assert not plan(torch.empty(64, 3), "sm_90a").kmajor  # the CPU interpreter: as given


def test_sparse_mm_kernel_with_k_major_b_on_the_interpreter():
    # the kernel's B_KMAJOR variant (block pointer order (0, 1)) means the same on any strides
    from sparsecc.ops.sparse_mm import sparse_mm_kernel

    dense, a, b, out = _problem(40, 24, 96, torch.float16, seed=11)
    bt = b.t().contiguous().t()  # column-major
    m, k = dense.shape
    n = b.shape[1]
    sparse_mm_kernel[(2 * 2,)](out, a, bt, m, n, k, k, bt.stride(0), bt.stride(1), n, 1,
                               BLOCK_M=32, BLOCK_N=16, BLOCK_K=32, GROUP_M=4, B_KMAJOR=True)
    _check(out, dense, b)
