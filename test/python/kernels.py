"""Kernels several test files share: seed 001's `dot_kernel` (its a_ptr/A slip fixed), a
masked vector add through tensors of pointers and `pointer_gemm`, a sparse GEMM in the Triton
tutorial's tensor-of-pointers style."""

from __future__ import annotations

import sparsecc
import sparsecc.language as tl


@sparsecc.jit
def dot_kernel(D, A, B, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    a_ptrs = tl.make_block_ptr(A, shape=(BLOCK_M, BLOCK_K), strides=(BLOCK_K, 1), offsets=(0, 0),
                               block_shape=(BLOCK_M, BLOCK_K), order=(1, 0))
    b_ptrs = tl.make_block_ptr(B, shape=(BLOCK_K, BLOCK_N), strides=(BLOCK_N, 1), offsets=(0, 0),
                               block_shape=(BLOCK_K, BLOCK_N), order=(1, 0))
    d_ptrs = tl.make_block_ptr(D, shape=(BLOCK_M, BLOCK_N), strides=(BLOCK_N, 1), offsets=(0, 0),
                               block_shape=(BLOCK_M, BLOCK_N), order=(1, 0))
    a = tl.load(a_ptrs)
    b = tl.load(b_ptrs)
    d = tl.dot(a, b).to(tl.float16)
    tl.store(d_ptrs, d)


SEED_SIG = {"D": "*fp16", "A": "*fp16:NV24", "B": "*fp16"}
SEED_BLOCKS = {"BLOCK_M": 32, "BLOCK_N": 16, "BLOCK_K": 64}


@sparsecc.jit
def masked_add_kernel(X, Y, Z, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(X + offs, mask=mask, other=0.0)
    y = tl.load(Y + offs, mask=mask, other=0.0)
    tl.store(Z + offs, x + y, mask=mask)


@sparsecc.jit
def pointer_gemm(D, A, B, M, N, K, stride_am, stride_bk, stride_dm,
                 BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """The Triton tutorial idiom: tensors of pointers, masks, `a_ptrs += BK`."""
    offs_m = tl.program_id(0) * BM + tl.arange(0, BM)
    offs_n = tl.program_id(1) * BN + tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    a_ptrs = A + offs_m[:, None] * stride_am + offs_k[None, :]
    b_ptrs = B + offs_k[:, None] * stride_bk + offs_n[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for kk in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < K - kk * BK), other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] < K - kk * BK) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BK
        b_ptrs += BK * stride_bk
    d_ptrs = D + offs_m[:, None] * stride_dm + offs_n[None, :]
    tl.store(d_ptrs, acc.to(tl.float16), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


POINTER_SIG = {"D": "*fp16", "A": "*fp16:NV24", "B": "*fp16", "M": "i32", "N": "i32", "K": "i32",
               "stride_am": "i32", "stride_bk": "i32", "stride_dm": "i32"}


@sparsecc.jit
def bools(X, Y, A, And, Pick, Less, flag, n, BLOCK: tl.constexpr):
    """Bool tensors and a bool argument through memory: `&`, `|`, `tl.where` on a bool, a
    comparison stored as bool (test_argument_dtypes runs it, test_bool_memory_ptx reads its PTX)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(X + offs, mask=m, other=False)
    y = tl.load(Y + offs, mask=m, other=True)
    a = tl.load(A + offs, mask=m, other=0.0)
    tl.store(And + offs, (x & y) | flag, mask=m)
    tl.store(Pick + offs, tl.where(x, a, -a), mask=m)
    tl.store(Less + offs, a < 0.5, mask=m)
