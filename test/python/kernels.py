"""Kernels several test files share: seed 001's `dot_kernel` (its a_ptr/A slip fixed) and a
masked vector add through tensors of pointers."""

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
