"""`y = x @ W.T` with W 2:4 sparse (an nn.Linear weight, N×K, 2:4 along K) as Triton users write
it: W's tile is read K×N (K contiguous) and is the *right* operand of tl.dot."""

from __future__ import annotations

import sparsecc
import sparsecc.language as tl


@sparsecc.jit
def linear_block_ptr(Y, X, W, BIAS, M, N, K, stride_xm, stride_wn, stride_ym,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                     HAS_BIAS: tl.constexpr, SILU: tl.constexpr = True):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    x_ptr = tl.make_block_ptr(X, shape=(M, K), strides=(stride_xm, 1), offsets=(pid_m * BLOCK_M, 0),
                              block_shape=(BLOCK_M, BLOCK_K), order=(1, 0))
    w_ptr = tl.make_block_ptr(W, shape=(K, N), strides=(1, stride_wn), offsets=(0, pid_n * BLOCK_N),
                              block_shape=(BLOCK_K, BLOCK_N), order=(0, 1))
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for _ in range(0, tl.cdiv(K, BLOCK_K)):
        x = tl.load(x_ptr, boundary_check=(0, 1), padding_option="zero")
        w = tl.load(w_ptr, boundary_check=(0, 1), padding_option="zero")
        acc = tl.dot(x, w, acc)
        x_ptr = tl.advance(x_ptr, (0, BLOCK_K))
        w_ptr = tl.advance(w_ptr, (BLOCK_K, 0))
    if HAS_BIAS:
        rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        acc += tl.load(BIAS + rn, mask=rn < N, other=0.0).to(tl.float32)[None, :]
    if SILU:
        acc = acc * tl.sigmoid(acc)
    y_ptr = tl.make_block_ptr(Y, shape=(M, N), strides=(stride_ym, 1),
                              offsets=(pid_m * BLOCK_M, pid_n * BLOCK_N),
                              block_shape=(BLOCK_M, BLOCK_N), order=(1, 0))
    tl.store(y_ptr, acc.to(Y.dtype.element_ty), boundary_check=(0, 1))


@sparsecc.jit
def linear_pointers(Y, X, W, M, N, K, stride_xm, stride_wn, stride_ym,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    x_ptrs = X + rm[:, None] * stride_xm + rk[None, :]
    w_ptrs = W + rk[:, None] + rn[None, :] * stride_wn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        x = tl.load(x_ptrs, mask=(rm[:, None] < M) & (rk[None, :] + k < K), other=0.0)
        w = tl.load(w_ptrs, mask=(rk[:, None] + k < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(x, w, acc)
        x_ptrs += BLOCK_K
        w_ptrs += BLOCK_K
    tl.store(Y + rm[:, None] * stride_ym + rn[None, :], acc.to(tl.float16),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


@sparsecc.jit
def linear_trans(Y, X, W, M, N, K, stride_xm, stride_wn, stride_ym,
                 BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """The other spelling: W's tile read as stored (BLOCK_N × BLOCK_K) and transposed."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    x_ptr = tl.make_block_ptr(X, shape=(M, K), strides=(stride_xm, 1), offsets=(pid_m * BLOCK_M, 0),
                              block_shape=(BLOCK_M, BLOCK_K), order=(1, 0))
    w_ptr = tl.make_block_ptr(W, shape=(N, K), strides=(stride_wn, 1), offsets=(pid_n * BLOCK_N, 0),
                              block_shape=(BLOCK_N, BLOCK_K), order=(1, 0))
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for _ in range(0, tl.cdiv(K, BLOCK_K)):
        x = tl.load(x_ptr, boundary_check=(0, 1), padding_option="zero")
        w = tl.load(w_ptr, boundary_check=(0, 1), padding_option="zero")
        acc = tl.dot(x, tl.trans(w), acc)
        x_ptr = tl.advance(x_ptr, (0, BLOCK_K))
        w_ptr = tl.advance(w_ptr, (0, BLOCK_K))
    y_ptr = tl.make_block_ptr(Y, shape=(M, N), strides=(stride_ym, 1),
                              offsets=(pid_m * BLOCK_M, pid_n * BLOCK_N),
                              block_shape=(BLOCK_M, BLOCK_N), order=(1, 0))
    tl.store(y_ptr, acc.to(Y.dtype.element_ty), boundary_check=(0, 1))


@sparsecc.jit
def linear_while_k(Y, X, W, M, N, K, stride_xm, stride_wn, stride_ym,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """The K loop as a `while`: the accumulator is carried by an scf.while."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    x_ptr = tl.make_block_ptr(X, shape=(M, K), strides=(stride_xm, 1), offsets=(pid_m * BLOCK_M, 0),
                              block_shape=(BLOCK_M, BLOCK_K), order=(1, 0))
    w_ptr = tl.make_block_ptr(W, shape=(K, N), strides=(1, stride_wn), offsets=(0, pid_n * BLOCK_N),
                              block_shape=(BLOCK_K, BLOCK_N), order=(0, 1))
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    k = 0
    while k < K:
        x = tl.load(x_ptr, boundary_check=(0, 1), padding_option="zero")
        w = tl.load(w_ptr, boundary_check=(0, 1), padding_option="zero")
        acc = tl.dot(x, w, acc)
        x_ptr = tl.advance(x_ptr, (0, BLOCK_K))
        w_ptr = tl.advance(w_ptr, (BLOCK_K, 0))
        k += BLOCK_K
    y_ptr = tl.make_block_ptr(Y, shape=(M, N), strides=(stride_ym, 1),
                              offsets=(pid_m * BLOCK_M, pid_n * BLOCK_N),
                              block_shape=(BLOCK_M, BLOCK_N), order=(1, 0))
    tl.store(y_ptr, acc.to(Y.dtype.element_ty), boundary_check=(0, 1))


@sparsecc.jit
def linear_deferred_store(Y, X, W, M, N, K, stride_xm, stride_wn, stride_ym,
                          BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """Persistent over output tiles, each tile's sum stored one trip later: the previous tile's
    sum and coordinates are carried by the scf.while around the K loop."""
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles = tiles_m * tl.cdiv(N, BLOCK_N)
    tile = tl.program_id(0)
    prev = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    prev_m = 0
    prev_n = 0
    has_prev = 0
    while tile < tiles:
        pid_n = tile // tiles_m
        pid_m = tile - pid_n * tiles_m
        x_ptr = tl.make_block_ptr(X, shape=(M, K), strides=(stride_xm, 1), offsets=(pid_m * BLOCK_M, 0),
                                  block_shape=(BLOCK_M, BLOCK_K), order=(1, 0))
        w_ptr = tl.make_block_ptr(W, shape=(K, N), strides=(1, stride_wn), offsets=(0, pid_n * BLOCK_N),
                                  block_shape=(BLOCK_K, BLOCK_N), order=(0, 1))
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for _ in range(0, tl.cdiv(K, BLOCK_K)):
            x = tl.load(x_ptr, boundary_check=(0, 1), padding_option="zero")
            w = tl.load(w_ptr, boundary_check=(0, 1), padding_option="zero")
            acc = tl.dot(x, w, acc)
            x_ptr = tl.advance(x_ptr, (0, BLOCK_K))
            w_ptr = tl.advance(w_ptr, (BLOCK_K, 0))
        if has_prev != 0:
            y_ptr = tl.make_block_ptr(Y, shape=(M, N), strides=(stride_ym, 1),
                                      offsets=(prev_m * BLOCK_M, prev_n * BLOCK_N),
                                      block_shape=(BLOCK_M, BLOCK_N), order=(1, 0))
            tl.store(y_ptr, prev.to(Y.dtype.element_ty), boundary_check=(0, 1))
        prev = acc
        prev_m = pid_m
        prev_n = pid_n
        has_prev = 1
        tile += tl.num_programs(0)
    if has_prev != 0:
        y_ptr = tl.make_block_ptr(Y, shape=(M, N), strides=(stride_ym, 1),
                                  offsets=(prev_m * BLOCK_M, prev_n * BLOCK_N),
                                  block_shape=(BLOCK_M, BLOCK_N), order=(1, 0))
        tl.store(y_ptr, prev.to(Y.dtype.element_ty), boundary_check=(0, 1))
