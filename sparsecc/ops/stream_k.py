"""Persistent `sparse_linear` with the last wave split along K (data-parallel + stream-K).

A data-parallel launch of T output tiles on P SMs runs ceil(T / P) waves: 172 tiles of 128x256
(11008x4096 at 512 tokens) take two full waves on an H100's 132 SMs where 1.3 would do, and 64
tiles (4096x4096) leave half the GPU idle. Here P programs take work items in turn: the tiles of
the full waves whole, then each tile of the last wave as SPLIT parts along K (`stream_k_plan`),
so that the last wave spreads over the GPU. A whole tile's program writes its output as
`sparse_linear_kernel` does; a part's fp32 sum goes to scratch (`PARTIALS`), and the program
whose part completes its tile (a ticket per split tile) adds the others to its own sum and runs
the epilogue.

    y = torch.empty(m, n, dtype=x.dtype, device=x.device)
    launch_linear_stream_k(y, x, w, y, LinearConfig(128, 256, 64, 8, 4), has_bias=False, activation="none")

It compiles with `tma_extents`, so that its K loop keeps one TMA ring across the `while` trips
and a producer warp (the fix-up is unrolled over SPLIT so that the K loop stays the only loop in
the `while`). The programs take tiles token tile first, as the data-parallel grid does, so that
those at work together share a few weight panels in L2 (weight tile first, every program streamed
the whole weight once per token tile: 1.7x the DRAM reads).

The dispatcher times it from 256 tokens where its plan splits a last wave
(`LinearConfig(stream_k=True)`; bench/stream_k.py, NOTES stop 25): 11008x4096 at 512 tokens
1.05x F.linear where data-parallel runs 0.97x, 4096x11008 1.10x (0.98x), 11008x4096 at 2048
1.31x (1.24x). A launch without a split compiles no fix-up (SPLIT is a constexpr); it is timed
too where whole tiles make more than a wave with a partial last one, since a program loads its
next tile while the last one's epilogue runs (`w4g128` 11008x4096 at 512 tokens 64.0 us against
64.8, NOTES stop 34). The 8-bit kernel takes that whole-tile form by default from 256 tokens
where 128x256 tiles would make one to two waves (`sparse_linear_8bit._MID_PERSISTENT`: fp8
11008x4096 at 512 tokens 33.1-34.4 us against 39.2). It writes its output tiles by TMA stores
(`tritongpu-coalesce-mma-stores{tma-stores}`: the compute warps go on to the next tile while
the TMA writes; 33.1 us against 34.1 there, NOTES stop 35; the 16-bit and quantized kernels
measured no gain), and its K loop is unrolled by two (`wgmma_unroll`: each copy loads its
wgmma metadata into registers of its own, so the previous step's group need not finish first;
32.4-32.6 us against 33.5-33.7 there). Splitting a last wave over more than half the SMs lost
everywhere measured (45.7 us in thirds there), so the plan does not.
"""

from __future__ import annotations

import torch

import sparsecc
import sparsecc.language as tl
from sparsecc.ops.linear_config import (
    SM_COUNT,
    LinearConfig,
    launch_constants,
    launch_constants_8bit,
)
from sparsecc.ops.mm_tiles import (
    _accumulate_k,
    _linear_epilogue,
    _row_strides,
    _scaled_linear_epilogue,
    _scaled_tile_epilogue,
    _tile_scales,
)
from sparsecc.ops.sparse_mm import sm_count
from sparsecc.runtime.quant_tensor import QuantizedSparseTensor
from sparsecc.runtime.sparse_tensor import SparseTensor
from sparsecc.switches import env_overrides

__all__ = ["MAX_SPLIT", "PERSISTENT_8BIT_OPTIONS", "PINGPONG_OPTIONS", "launch_linear_8bit_stream_k", "launch_linear_stream_k",
           "scaled_sparse_linear_stream_k_kernel", "stream_k_8bit_switches",
           "sparse_linear_stream_k_kernel", "stream_k_plan"]


@sparsecc.jit
def _stream_k_where(item, WHOLE, PART_STEPS, steps, tiles_m, SPLIT: tl.constexpr):
    """Where work item `item` lies: (split, j, part, tile, first, count, pid_m, pid_n). Items
    below WHOLE are whole output tiles; item WHOLE + j is part j % SPLIT (PART_STEPS K steps from
    K step `first`, `count` of them) of tile WHOLE + j // SPLIT; `steps` K steps a tile,
    `tiles_m` token tiles."""
    split = item >= WHOLE
    j = tl.maximum(item - WHOLE, 0)  # the part's index among all parts
    part = j % SPLIT
    tile = tl.where(split, WHOLE + j // SPLIT, item)
    first = tl.where(split, part * PART_STEPS, 0)
    count = tl.where(split, tl.minimum(PART_STEPS, steps - first), steps)
    pid_n = tile // tiles_m  # token tiles fastest, as the data-parallel grid: the programs at
    pid_m = tile - pid_n * tiles_m  # work together share a few weight panels in L2
    return split, j, part, tile, first, count, pid_m, pid_n


@sparsecc.jit
def _stream_k_sum(X, W, M, N, K, stride_xm, stride_wn, first, count, pid_m, pid_n,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, ACC_INT: tl.constexpr):
    """The sum (fp32, or int32 with ACC_INT) of output tile (pid_m, pid_n) over `count` K steps
    from K step `first`."""
    x_ptr = tl.make_block_ptr(X, shape=(M, K), strides=(stride_xm, 1), offsets=(pid_m * BLOCK_M, first * BLOCK_K),
                              block_shape=(BLOCK_M, BLOCK_K), order=(1, 0))
    w_ptr = tl.make_block_ptr(W, shape=(K, N), strides=(1, stride_wn), offsets=(first * BLOCK_K, pid_n * BLOCK_N),
                              block_shape=(BLOCK_K, BLOCK_N), order=(0, 1))
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.int32 if ACC_INT else tl.float32)
    return _accumulate_k(acc, x_ptr, w_ptr, count, BLOCK_K)


@sparsecc.jit
def _stream_k_fixup(PARTIALS, TICKETS, acc, item, split, j, part, tile, WHOLE, ITEMS,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, SPLIT: tl.constexpr):
    """(acc, finish): a whole tile's sum as it is; a part's sum stored to PARTIALS, and, in the
    program whose part completes its tile (its ticket), the sum of all the tile's parts."""
    finish = item < WHOLE
    if SPLIT > 1:  # (constexpr: a launch that splits nothing compiles no fix-up)
        if split:
            # a block pointer: each element's address is the thread's base plus constants
            parts = tl.make_block_ptr(PARTIALS, shape=((ITEMS - WHOLE) * BLOCK_M, BLOCK_N), strides=(BLOCK_N, 1),
                                      offsets=(j * BLOCK_M, 0), block_shape=(BLOCK_M, BLOCK_N), order=(1, 0))
            tl.store(parts, acc)
            done = tl.atomic_add(TICKETS + (tile - WHOLE), 1, sem="acq_rel")  # publishes the part, sees the others
            finish = done == SPLIT - 1
            if finish:
                for other in tl.static_range(SPLIT):  # unrolled: the K loop stays the only loop in the `while`
                    if other != part:
                        acc += tl.load(tl.advance(parts, ((other - part) * BLOCK_M, 0)))
    return acc, finish


@sparsecc.jit
def sparse_linear_stream_k_kernel(Y, X, W, BIAS, PARTIALS, TICKETS, M, N, K, stride_xm, stride_wn, stride_ym,
                                  WHOLE, PART_STEPS, ITEMS,
                                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                                  SPLIT: tl.constexpr, HAS_BIAS: tl.constexpr, ACTIVATION: tl.constexpr,
                                  ROWS_16B: tl.constexpr = False, ROWS_64: tl.constexpr = False):
    """Y[M, N] = act(X[M, K] @ W[N, K].T + BIAS[N]) (W 2:4 along K) over ITEMS work items, program p
    taking items p, p + P, ...: items below WHOLE are the first WHOLE output tiles, whole; the
    others are the parts of the remaining tiles, SPLIT a tile, PART_STEPS K steps each
    (`stream_k_plan`). PARTIALS: (ITEMS - WHOLE) x BLOCK_M x BLOCK_N fp32, a part's sum; TICKETS:
    one zeroed int32 per split tile."""
    stride_xm, stride_wn = _row_strides(stride_xm, stride_wn, ROWS_16B, ROWS_64)
    steps = tl.cdiv(K, BLOCK_K)
    tiles_m = tl.cdiv(M, BLOCK_M)
    item = tl.program_id(0)
    while item < ITEMS:
        split, j, part, tile, first, count, pid_m, pid_n = _stream_k_where(item, WHOLE, PART_STEPS, steps, tiles_m,
                                                                           SPLIT)
        acc = _stream_k_sum(X, W, M, N, K, stride_xm, stride_wn, first, count, pid_m, pid_n, BLOCK_M, BLOCK_N, BLOCK_K,
                            False)
        acc, finish = _stream_k_fixup(PARTIALS, TICKETS, acc, item, split, j, part, tile, WHOLE, ITEMS,
                                      BLOCK_M, BLOCK_N, SPLIT)
        if finish:
            _linear_epilogue(Y, BIAS, acc, M, N, stride_ym, pid_m, pid_n, BLOCK_M, BLOCK_N, HAS_BIAS, ACTIVATION)
        item += tl.num_programs(0)


@sparsecc.jit
def scaled_sparse_linear_stream_k_kernel(Y, X, W, SCALE_X, SCALE_W, BIAS, PARTIALS, TICKETS, M, N, K, stride_xm,
                                         stride_wn, stride_ym, WHOLE, PART_STEPS, ITEMS,
                                         BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                                         SPLIT: tl.constexpr, ACC_INT: tl.constexpr, HAS_BIAS: tl.constexpr,
                                         ACTIVATION: tl.constexpr, K_32: tl.constexpr = False,
                                         EARLY_SCALES: tl.constexpr = False):
    """The 8-bit `scaled_sparse_linear_kernel` (X and W int8 or fp8, both scales in the
    epilogue) as `sparse_linear_stream_k_kernel`'s work items: PARTIALS holds int32 parts for
    int8 (ACC_INT: the sum stays exact), fp32 for fp8. K_32: rows 16-byte aligned (TMA).
    EARLY_SCALES: each item loads its tile's scales before its K loop, so that their latency
    is not paid after it (`early_scales`)."""
    if K_32:
        stride_wn = tl.multiple_of(stride_wn, 32)
        stride_xm = tl.multiple_of(stride_xm, 32)
    steps = tl.cdiv(K, BLOCK_K)
    tiles_m = tl.cdiv(M, BLOCK_M)
    item = tl.program_id(0)
    while item < ITEMS:
        split, j, part, tile, first, count, pid_m, pid_n = _stream_k_where(item, WHOLE, PART_STEPS, steps, tiles_m,
                                                                           SPLIT)
        if EARLY_SCALES:
            scale_x, scale_w = _tile_scales(SCALE_X, SCALE_W, M, N, pid_m, pid_n, BLOCK_M, BLOCK_N)
        acc = _stream_k_sum(X, W, M, N, K, stride_xm, stride_wn, first, count, pid_m, pid_n, BLOCK_M, BLOCK_N, BLOCK_K,
                            ACC_INT)
        acc, finish = _stream_k_fixup(PARTIALS, TICKETS, acc, item, split, j, part, tile, WHOLE, ITEMS,
                                      BLOCK_M, BLOCK_N, SPLIT)
        if finish:
            if EARLY_SCALES:
                _scaled_tile_epilogue(Y, BIAS, scale_x, scale_w, acc, M, N, stride_ym, pid_m, pid_n, BLOCK_M, BLOCK_N,
                                      HAS_BIAS, ACTIVATION)
            else:
                _scaled_linear_epilogue(Y, BIAS, SCALE_X, SCALE_W, acc, M, N, stride_ym, pid_m, pid_n, BLOCK_M,
                                        BLOCK_N, HAS_BIAS, ACTIVATION)
        item += tl.num_programs(0)


PERSISTENT_8BIT_OPTIONS = {"tma_stores": True, "wgmma_unroll": True}
"""The compile options `launch_linear_8bit_stream_k` adds (unless the environment sets them): the
output by TMA stores while the next tile's K loop starts, and the K loop unrolled by two so that
a wgmma group stays in flight while the next step's metadata loads (NOTES stop 35)."""

PINGPONG_OPTIONS = {"pingpong": True, "tma_store_boxes": True}
"""The compile switches a `LinearConfig.pingpong` config turns on: two compute warpgroups taking
the work items in turn, each group's output tile staged box by box (so that both groups' buffers
fit beside the ring)."""


def stream_k_8bit_switches(cfg: LinearConfig) -> dict[str, bool]:
    """The compile switches `launch_linear_8bit_stream_k` sets for `cfg`: `PERSISTENT_8BIT_OPTIONS`
    (where the environment sets one, it decides), and `PINGPONG_OPTIONS` for a `cfg.pingpong`
    config.

        >>> sorted(stream_k_8bit_switches(LinearConfig(128, 128, 256, 4, 4, stream_k=True, pingpong=True)))
        ['pingpong', 'tma_store_boxes', 'tma_stores', 'wgmma_unroll']
    """
    env = env_overrides()
    switches = {name: on for name, on in PERSISTENT_8BIT_OPTIONS.items() if name not in env}
    return switches | (PINGPONG_OPTIONS if cfg.pingpong else {})


MAX_SPLIT = 4
"""The most parts a tail tile is split into (each part's fp32 sum goes through global memory)."""


def stream_k_plan(m: int, n: int, k: int, cfg: LinearConfig, sms: int = SM_COUNT) -> tuple[int, int, int, int]:
    """(programs, whole tiles, parts a split tile, K steps a part) of a launch on `sms` SMs: the
    full waves of tiles run whole; when the last wave would leave more than half the SMs idle,
    its tiles are split along K into as many parts (at most `MAX_SPLIT`, at least two K steps
    each) as spread them over the GPU. A ping-pong config (`LinearConfig.pingpong`) runs whole
    tiles only: its parts lost at every split measured (H100, fp8, 512 tokens, NOTES stop 37 run
    8: 14336x4096 40.4 us whole against 42.5 in two parts, 11008x4096 31.5 against 40.4).

        >>> stream_k_plan(512, 11008, 4096, LinearConfig(128, 256, 64, 8, 4))  # 172 tiles: 132 + 40 in 3
        (132, 132, 3, 22)
        >>> stream_k_plan(2048, 4096, 4096, LinearConfig(128, 256, 64, 8, 4))  # 256 tiles: no split
        (132, 256, 1, 64)
    """
    steps = -(-k // cfg.block_k)
    tiles = -(-m // cfg.block_m) * -(-n // cfg.block_n)
    tail = tiles % sms
    split = min(sms // tail, MAX_SPLIT, steps // 2) if tail and not cfg.pingpong else 1
    if split < 2 or 2 * tail > sms:
        return min(tiles, sms), tiles, 1, steps
    part_steps = -(-steps // split)
    split = -(-steps // part_steps)  # no empty part
    items = tiles - tail + tail * split
    return min(items, sms), tiles - tail, split, part_steps


def _plan_and_scratch(y: torch.Tensor, m: int, n: int, k: int, cfg: LinearConfig, sms: int | None,
                      part_dtype: torch.dtype) -> tuple[int, int, int, int, int, torch.Tensor, torch.Tensor]:
    """(programs, whole tiles, parts a split tile, K steps a part, work items, PARTIALS, TICKETS)
    of a stream-K launch writing `y`: the scratch of the parts (`part_dtype`) and a zeroed ticket
    per split tile (one memset launch), or `y` for both when nothing is split (never touched)."""
    if sms is None:
        sms = sm_count(y.device.index) if y.is_cuda else 4
    programs, whole, split, part_steps = stream_k_plan(m, n, k, cfg, sms)
    tiles = -(-m // cfg.block_m) * -(-n // cfg.block_n)
    items = whole + (tiles - whole) * split
    if split > 1:
        partials = torch.empty((items - whole, cfg.block_m, cfg.block_n), dtype=part_dtype, device=y.device)
        tickets = torch.zeros(tiles - whole, dtype=torch.int32, device=y.device)
    else:
        partials = tickets = y
    return programs, whole, split, part_steps, items, partials, tickets


def launch_linear_stream_k(y: torch.Tensor, x: torch.Tensor, w: SparseTensor | QuantizedSparseTensor,
                           bias: torch.Tensor, cfg: LinearConfig, has_bias: bool, activation: str,
                           sms: int | None = None) -> None:
    """One launch of `cfg`'s tiles on `stream_k_plan`'s programs writing `y` (M x N), as
    `launch_linear` takes them (no checks); `sms`: the SMs to plan for (default: the device's)."""
    m, k = x.shape
    n = w.shape[0]
    programs, whole, split, part_steps, items, partials, tickets = _plan_and_scratch(y, m, n, k, cfg, sms,
                                                                                     torch.float32)
    consts = launch_constants(x, w, cfg, has_bias, activation) | {"SPLIT": split, "tma_extents": True}
    sparse_linear_stream_k_kernel[(programs,)](y, x, w, bias, partials, tickets, m, n, k, x.stride(0), w.stride(0),
                                               y.stride(0), whole, part_steps, items, **consts)


def launch_linear_8bit_stream_k(y: torch.Tensor, xq: torch.Tensor, x_scale: torch.Tensor, w: SparseTensor,
                                weight_scale: torch.Tensor, bias: torch.Tensor, cfg: LinearConfig, has_bias: bool,
                                activation: str, sms: int | None = None, **options: bool) -> None:
    """`launch_linear_stream_k` for the 8-bit kernel (`launch_linear_8bit`'s arguments: codes
    `xq` and their per-token scales, W's per-channel scales): int32 parts for int8, fp32 for fp8.
    `options`: compile switches beside `PERSISTENT_8BIT_OPTIONS` (`pingpong=True` with a 4-warp
    `cfg`: two compute warpgroups taking the work items in turn; a `cfg.pingpong` config turns it
    and `tma_store_boxes` on).

        launch_linear_8bit_stream_k(y, xq, xs, w8, sw, y, LinearConfig(128, 256, 128, 8, 4), False, "none")
    """
    m, k = xq.shape
    n = w.shape[0]
    programs, whole, split, part_steps, items, partials, tickets = _plan_and_scratch(
        y, m, n, k, cfg, sms, torch.int32 if w.dtype == torch.int8 else torch.float32)
    consts = launch_constants_8bit(w, k, cfg, has_bias, activation) | {"SPLIT": split, "tma_extents": True}
    consts |= stream_k_8bit_switches(cfg) | options
    scaled_sparse_linear_stream_k_kernel[(programs,)](
        y, xq, w, x_scale, weight_scale, bias, partials, tickets, m, n, k, xq.stride(0), w.stride(0), y.stride(0),
        whole, part_steps, items, **consts)
