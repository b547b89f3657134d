"""Kernels in the style of real code that use Triton's shape ops (join/split/interleave,
permute/trans, cat, reshape/view/ravel, broadcast/broadcast_to, expand_dims, the method forms),
for test_shape_ops.py."""

from __future__ import annotations

import sparsecc
import sparsecc.language as tl


@sparsecc.jit
def complex_mul_kernel(Z, W, OUT, n, BLOCK: tl.constexpr):
    """out = z * w for n complex numbers stored (re, im) interleaved (torch.view_as_real)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    idx = offs[:, None] * 2 + tl.arange(0, 2)[None, :]
    mask = idx < 2 * n
    z = tl.load(Z + idx, mask=mask, other=0.0)
    w = tl.load(W + idx, mask=mask, other=0.0)
    zr, zi = tl.split(z)
    wr, wi = w.split()
    out = tl.join(zr * wr - zi * wi, zr * wi + zi * wr)
    tl.store(OUT + idx, out, mask=mask)


@sparsecc.jit
def rope_kernel(X, COS, SIN, OUT, seq_len, stride_row, HALF: tl.constexpr):
    """Rotary embedding, interleaved (GPT-J) style: one row of a (seq, 2 * HALF) tensor per
    program; pairs (x[2i], x[2i+1]) rotate by the angle of (cos[i], sin[i])."""
    row = tl.program_id(0)
    cols = tl.arange(0, 2 * HALF)
    x = tl.load(X + row * stride_row + cols)
    x0, x1 = tl.split(tl.reshape(x, (HALF, 2)))
    h = tl.arange(0, HALF)
    c = tl.load(COS + row * HALF + h)
    s = tl.load(SIN + row * HALF + h)
    out = tl.interleave(x0 * c - x1 * s, x0 * s + x1 * c)
    tl.store(OUT + row * stride_row + cols, out)


@sparsecc.jit
def transpose_kernel(X, Y, M, N, stride_xm, stride_ym, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """Y = X.T, one BLOCK_M x BLOCK_N tile per program (ragged edges masked)."""
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(X + rm[:, None] * stride_xm + rn[None, :], mask=mask)
    tl.store(Y + rn[:, None] * stride_ym + rm[None, :], tl.trans(x), mask=mask.T)


@sparsecc.jit
def permute3_kernel(X, Y, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr, P0: tl.constexpr,
                    P1: tl.constexpr, P2: tl.constexpr):
    """Y (contiguous, of X's shape permuted by (P0, P1, P2)) = X.permute(P0, P1, P2)."""
    a = tl.arange(0, A)[:, None, None]
    b = tl.arange(0, B)[None, :, None]
    c = tl.arange(0, C)[None, None, :]
    x = tl.load(X + a * B * C + b * C + c)
    y = x.permute(P0, P1, P2)
    s = y.shape
    i = tl.arange(0, s[0])[:, None, None]
    j = tl.arange(0, s[1])[None, :, None]
    k = tl.arange(0, s[2])[None, None, :]
    tl.store(Y + i * s[1] * s[2] + j * s[2] + k, y)


@sparsecc.jit
def batched_trans_kernel(X, Y, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr):
    """Y = X.transpose(1, 2) of a contiguous (A, B, C) tensor: tl.trans swaps the last two dims."""
    a = tl.arange(0, A)[:, None, None]
    b = tl.arange(0, B)[None, :, None]
    c = tl.arange(0, C)[None, None, :]
    y = tl.trans(tl.load(X + a * B * C + b * C + c))
    c2 = tl.arange(0, C)[None, :, None]
    b2 = tl.arange(0, B)[None, None, :]
    tl.store(Y + a * C * B + c2 * B + b2, y)


@sparsecc.jit
def cat_kernel(X, Y, OUT, M, N, M_BLOCK: tl.constexpr, N_BLOCK: tl.constexpr, DIM: tl.constexpr):
    """OUT = torch.cat((X, Y), DIM) of two (M, N) tensors, one tile (ragged: masked)."""
    rm = tl.arange(0, M_BLOCK)
    rn = tl.arange(0, N_BLOCK)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(X + rm[:, None] * N + rn[None, :], mask=mask, other=0.0)
    y = tl.load(Y + rm[:, None] * N + rn[None, :], mask=mask, other=0.0)
    z = tl.cat(x, y, dim=DIM)
    if DIM == 0:
        r = tl.arange(0, 2 * M_BLOCK)
        src_row = tl.where(r < M_BLOCK, r, r - M_BLOCK)
        row = tl.where(r < M_BLOCK, r, r - M_BLOCK + M)
        ok = (src_row[:, None] < M) & (rn[None, :] < N)
        tl.store(OUT + row[:, None] * N + rn[None, :], z, mask=ok)
    else:
        c = tl.arange(0, 2 * N_BLOCK)
        src_col = tl.where(c < N_BLOCK, c, c - N_BLOCK)
        col = tl.where(c < N_BLOCK, c, c - N_BLOCK + N)
        ok = (rm[:, None] < M) & (src_col[None, :] < N)
        tl.store(OUT + rm[:, None] * (2 * N) + col[None, :], z, mask=ok)


@sparsecc.jit
def cat1d_kernel(X, Y, OUT, BLOCK: tl.constexpr):
    """tl.cat(x, y, can_reorder=True) of 1-D blocks (sparsecc keeps the order)."""
    r = tl.arange(0, BLOCK)
    z = tl.cat(tl.load(X + r), tl.load(Y + r), can_reorder=True)
    tl.store(OUT + tl.arange(0, 2 * BLOCK), z)


@sparsecc.jit
def join_split3_kernel(X, Y, OUT, SUM, A: tl.constexpr, B: tl.constexpr):
    """Rank-3 join/split: (A, B) x 2 -> (A, B, 2) -> split -> joined swapped and scaled -> (A, 2B);
    the sum over the new dim through tl.sum of the (A, B, 2) tensor."""
    a = tl.arange(0, A)[:, None]
    b = tl.arange(0, B)[None, :]
    x = tl.load(X + a * B + b)
    y = tl.load(Y + a * B + b)
    j = tl.join(x, y)
    p, q = tl.split(j)
    k = tl.join(q * 2, p)
    tl.store(OUT + a * 2 * B + tl.arange(0, 2 * B)[None, :], k.reshape(A, 2 * B))
    tl.store(SUM + a * B + b, tl.sum(j, axis=2))


@sparsecc.jit
def views_kernel(X, OUT, BLOCK: tl.constexpr):
    """ravel/view/reshape(can_reorder)/expand_dims/broadcast_to/broadcast on one (BLOCK, BLOCK)
    tile; OUT gets four (BLOCK * BLOCK) results."""
    r = tl.arange(0, BLOCK)
    x = tl.load(X + r[:, None] * BLOCK + r[None, :])
    n: tl.constexpr = BLOCK * BLOCK
    flat = tl.arange(0, n)
    tl.store(OUT + flat, tl.ravel(x) * 2)
    col = tl.expand_dims(tl.sum(x, axis=1), 1)           # (BLOCK, 1)
    row = tl.expand_dims(tl.max(x, axis=0), (0,))        # (1, BLOCK)
    tl.store(OUT + n + flat, tl.reshape(tl.broadcast_to(col, (BLOCK, BLOCK)), n, can_reorder=True))
    c2, r2 = tl.broadcast(col, row)
    tl.store(OUT + 2 * n + flat, (c2 - r2).view(n))
    t3 = tl.expand_dims(x, (0, 3))                        # (1, BLOCK, BLOCK, 1)
    tl.store(OUT + 3 * n + flat, t3.reshape(n) + x.broadcast_to(BLOCK, BLOCK).ravel())


@sparsecc.jit
def mask_interleave_kernel(X, OUT, n, BLOCK: tl.constexpr):
    """Interleaved masks (i1 join + reshape): element 2i and 2i+1 are kept iff i < n."""
    offs = tl.arange(0, BLOCK)
    m = offs < n
    o2 = tl.arange(0, 2 * BLOCK)
    x = tl.load(X + o2, mask=tl.interleave(m, m), other=-1.0)
    tl.store(OUT + o2, x)


@sparsecc.jit
def scalar_join_kernel(X, OUT):
    """tl.split of a (2,) tensor gives two scalars; tl.join of two scalars is a (2,) tensor."""
    a, b = tl.split(tl.load(X + tl.arange(0, 2)))
    j = tl.join(a, b * 3)
    p, q = tl.split(j)
    tl.store(OUT + tl.arange(0, 2), j)
    tl.store(OUT + 2, p + q)


@sparsecc.jit
def methods_kernel(X, OUT, M: tl.constexpr, N: tl.constexpr):
    """The method and varargs forms: x.trans(), x.trans(1, 0), tl.trans(x, (1, 0)), x.permute((1, 0)),
    x.reshape(...), x.expand_dims(...), x.broadcast_to(...), x.view(...), x.ravel(), and a rank-4
    permute; OUT gets six (M * N) results."""
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    x = tl.load(X + rm[:, None] * N + rn[None, :])
    n: tl.constexpr = M * N
    f = tl.arange(0, n)
    tl.store(OUT + f, x.trans().ravel())
    tl.store(OUT + n + f, (x.trans(1, 0) + tl.trans(x, (1, 0)) - x.permute((1, 0))).reshape(n))
    e = x.expand_dims(0).broadcast_to(2, M, N)                      # (2, M, N)
    tl.store(OUT + 2 * n + f, tl.sum(e, axis=0).view(n))
    q = x.reshape(2, M // 2, N // 2, 2).permute(3, 1, 0, 2)        # rank 4
    tl.store(OUT + 3 * n + f, tl.reshape(q, n))
    tl.store(OUT + 4 * n + f, tl.ravel(tl.expand_dims(x, -1).trans(2, 0, 1)))
    tl.store(OUT + 5 * n + f, tl.reshape(tl.cat(x, x * 3, dim=-1), 2 * n).reshape(2, n).trans().ravel().reshape(n, 2).split()[1])


@sparsecc.jit
def permute_dtypes_kernel(X, Y, OUT, n, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr):
    """Y (B, C, A) = X.permute(1, 2, 0) where the flat index < n (an i1 mask permuted alongside,
    through shared memory too); OUT (A, B, 2C) = X interleaved with itself along C."""
    a = tl.arange(0, A)[:, None, None]
    b = tl.arange(0, B)[None, :, None]
    c = tl.arange(0, C)[None, None, :]
    off = a * B * C + b * C + c
    x = tl.load(X + off)
    m = tl.permute(off < n, (1, 2, 0))
    y = tl.permute(x, (1, 2, 0))
    a2 = tl.arange(0, A)[None, None, :]
    b2 = tl.arange(0, B)[:, None, None]
    c2 = tl.arange(0, C)[None, :, None]
    tl.store(Y + b2 * C * A + c2 * A + a2, y, mask=m)
    j = tl.reshape(tl.join(x, x), (A, B, 2 * C))
    tl.store(OUT + a * B * 2 * C + b * 2 * C + tl.arange(0, 2 * C)[None, None, :], j)
