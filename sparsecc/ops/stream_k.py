"""Stream-K `sparse_linear`: a fixed grid of programs shares the (output tile, K step) work evenly.

A data-parallel launch of T output tiles on P SMs runs ceil(T / P) waves: 172 tiles of
128x256 (11008x4096 at 512 tokens) take two full waves on an H100's 132 SMs where 1.3 would do,
and 64 tiles (4096x4096) leave half the GPU idle. Here program p of P takes the K steps
[p * per, (p + 1) * per) of the T * steps flattened (tile, step) space, `per` = ceil(T * steps /
P): a run of whole K loops, with a partial tile at either end. A program that ran a tile's
whole K loop writes its output as `sparse_linear_kernel` does; the pieces of a split tile go to
fp32 scratch (`PARTIALS`: two slots a program, its first piece and its last) and the program
whose piece completes the tile's K steps (a ticket per tile counting them) adds the other
pieces, in program order, to its own sum and runs the epilogue.

    y = torch.empty(m, n, dtype=x.dtype, device=x.device)
    launch_linear_stream_k(y, x, w, y, LinearConfig(128, 256, 64, 8, 4), has_bias=False, activation="none")

Not dispatched: on the H100 it runs 0.56-0.96x F.linear where the data-parallel kernel runs
0.95-1.34x (bench/stream_k.py, M = 128-2048, NOTES stop 24). It compiles with `tma_extents`, so
that its K loop keeps one TMA ring across the `while` trips with a producer warp (the piece
fix-up is unrolled over `PIECES` so that the K loop stays the only loop in the `while`). The
pieces are the cost: whole tiles only (a grid that divides the work) ran 64.9 us where the
data-parallel kernel ran 68.0 (4096x4096 at 2048 tokens), the same work in pieces 119 us, with 2.8x
the DRAM reads and 7x the writes (ncu). It is the measuring stick for a cheaper fix-up.
"""

from __future__ import annotations

import importlib

import torch

import sparsecc
import sparsecc.language as tl
from sparsecc.ops.mm_tiles import _accumulate_k
from sparsecc.ops.sparse_linear import SM_COUNT, LinearConfig, _activate
from sparsecc.runtime.quant_tensor import QuantizedSparseTensor
from sparsecc.runtime.sparse_tensor import SparseTensor

_jit = importlib.import_module("sparsecc.frontend.jit")

__all__ = ["launch_linear_stream_k", "sparse_linear_stream_k_kernel", "stream_k_programs"]


@sparsecc.jit
def sparse_linear_stream_k_kernel(Y, X, W, BIAS, PARTIALS, TICKETS, M, N, K, stride_xm, stride_wn, stride_ym, PER,
                                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                                  PIECES: tl.constexpr, HAS_BIAS: tl.constexpr, ACTIVATION: tl.constexpr,
                                  ROWS_16B: tl.constexpr = False):
    """Y[M, N] = act(X[M, K] @ W[N, K].T + BIAS[N]) (W 2:4 along K), program p running the
    flattened (tile, K step) indices [p * PER, (p + 1) * PER) (module docstring); PIECES: the
    most programs one tile's K steps span (`stream_k_programs`). PARTIALS:
    num_programs x 2 x BLOCK_M x BLOCK_N fp32; TICKETS: one zeroed int32 per output tile."""
    if ROWS_16B:
        stride_wn = tl.multiple_of(stride_wn, 16)
        stride_xm = tl.multiple_of(stride_xm, 8)
    pid = tl.program_id(0)
    steps = tl.cdiv(K, BLOCK_K)
    tiles_n = tl.cdiv(N, BLOCK_N)
    total = tl.cdiv(M, BLOCK_M) * tiles_n * steps
    start = pid * PER
    end = tl.minimum(start + PER, total)
    it = start
    rows = tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    while it < end:
        tile = it // steps
        first = it - tile * steps
        count = tl.minimum(steps - first, end - it)
        pid_m = tile // tiles_n
        pid_n = tile - pid_m * tiles_n
        x_ptr = tl.make_block_ptr(X, shape=(M, K), strides=(stride_xm, 1), offsets=(pid_m * BLOCK_M, first * BLOCK_K),
                                  block_shape=(BLOCK_M, BLOCK_K), order=(1, 0))
        w_ptr = tl.make_block_ptr(W, shape=(K, N), strides=(1, stride_wn), offsets=(first * BLOCK_K, pid_n * BLOCK_N),
                                  block_shape=(BLOCK_K, BLOCK_N), order=(0, 1))
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        acc = _accumulate_k(acc, x_ptr, w_ptr, count, BLOCK_K)
        rn = pid_n * BLOCK_N + cols
        finish = count == steps
        if count != steps:
            # a piece: its slot is 0 where it starts the program's range, else 1 (its last piece)
            slot = tl.where(it == start, 0, 1)
            scratch = PARTIALS + ((pid * 2 + slot) * BLOCK_M + rows[:, None]) * BLOCK_N + cols[None, :]
            tl.store(scratch, acc)
            done = tl.atomic_add(TICKETS + tile, count, sem="acq_rel")  # publishes the piece, sees the others
            finish = done + count == steps
            if finish:
                tile_first = tile * steps
                q_first = tile_first // PER
                q_last = (tile_first + steps - 1) // PER
                for j in tl.static_range(PIECES):  # unrolled: the K loop stays the only loop in the `while`
                    q = q_first + j
                    if (q <= q_last) & (q != pid):
                        other = tl.where(q * PER >= tile_first, 0, 1)
                        piece = PARTIALS + ((q * 2 + other) * BLOCK_M + rows[:, None]) * BLOCK_N + cols[None, :]
                        acc += tl.load(piece)
        if finish:
            out = acc
            if HAS_BIAS:
                out += tl.load(BIAS + rn, mask=rn < N, other=0.0).to(tl.float32)[None, :]
            out = _activate(out, ACTIVATION)
            y_ptr = tl.make_block_ptr(Y, shape=(M, N), strides=(stride_ym, 1),
                                      offsets=(pid_m * BLOCK_M, pid_n * BLOCK_N),
                                      block_shape=(BLOCK_M, BLOCK_N), order=(1, 0))
            tl.store(y_ptr, out.to(Y.dtype.element_ty), boundary_check=(0, 1))
        it += count


def stream_k_programs(m: int, n: int, k: int, cfg: LinearConfig, sms: int = SM_COUNT) -> tuple[int, int, int]:
    """(programs, K steps a program, the most programs a tile's steps span) of a stream-K
    launch: one program an SM, each at least two K steps' worth.

        >>> stream_k_programs(512, 11008, 4096, LinearConfig(128, 256, 64, 8, 4))
        (132, 84, 2)
    """
    steps = -(-k // cfg.block_k)
    total = -(-m // cfg.block_m) * -(-n // cfg.block_n) * steps
    per = max(-(-total // sms), 2)
    pieces = min(-(-(steps - 1) // per) + 1, -(-total // per))
    return -(-total // per), per, pieces


def launch_linear_stream_k(y: torch.Tensor, x: torch.Tensor, w: SparseTensor | QuantizedSparseTensor,
                           bias: torch.Tensor, cfg: LinearConfig, has_bias: bool, activation: str,
                           sms: int | None = None) -> None:
    """One stream-K launch of `cfg`'s tiles writing `y` (M x N), as `launch_linear` takes them
    (no checks); `sms`: the programs to spread over (default: the device's SM count)."""
    m, k = x.shape
    n = w.shape[0]
    if sms is None:
        sms = torch.cuda.get_device_properties(x.device).multi_processor_count if x.is_cuda else 4
    programs, per, pieces = stream_k_programs(m, n, k, cfg, sms)
    tiles = -(-m // cfg.block_m) * -(-n // cfg.block_n)
    partials = torch.empty((programs, 2, cfg.block_m, cfg.block_n), dtype=torch.float32, device=y.device)
    tickets = torch.zeros(tiles, dtype=torch.int32, device=y.device)
    consts = dict(BLOCK_M=cfg.block_m, BLOCK_N=cfg.block_n, BLOCK_K=cfg.block_k, PIECES=pieces, HAS_BIAS=has_bias,
                  ACTIVATION=activation, num_warps=cfg.num_warps, num_stages=cfg.num_stages, tma_extents=True)
    if not isinstance(w, QuantizedSparseTensor) and x.stride(0) % 8 == 0 and w.stride(0) % 16 == 0:
        consts["ROWS_16B"] = True
    sparse_linear_stream_k_kernel[(programs,)](y, x, w, bias, partials, tickets, m, n, k, x.stride(0), w.stride(0),
                                               y.stride(0), per, **consts)
