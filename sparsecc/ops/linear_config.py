"""What one launch of a 2:4 linear kernel takes: its tiles (`LinearConfig`, as the dispatch table
stores them), the compile options of Hopper's register-A wgmma tiles for quantized weights, and
the constexprs every linear kernel (data-parallel, split-K, stream-K) is launched with.

    cfg = LinearConfig(128, 256, 64, num_warps=8, num_stages=4)
    consts = launch_constants(x, w, cfg, has_bias=False, activation="none")
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

import torch

from sparsecc.defaults import NUM_STAGES, NUM_WARPS
from sparsecc.runtime.quant_tensor import QuantizedSparseTensor
from sparsecc.runtime.sparse_tensor import SparseTensor
from sparsecc.switches import env_overrides

__all__ = ["QUANT_WGMMA_OPTIONS", "QUANT_WGMMA_PLAIN", "QUANT_WGMMA_RING", "SM_COUNT", "LinearConfig",
           "early_scales", "launch_constants", "launch_constants_8bit", "quant_wgmma_options", "split_k_scratch",
           "table_linear_config"]


@dataclass(frozen=True)
class LinearConfig:
    """Tiles of one sparse_linear launch (BLOCK_M over tokens, BLOCK_N over output features);
    `split_k` > 1 splits K over that many programs per output tile (decode: more CTAs).

    `quant_wgmma`: for a quantized W on sm_90a, compile with the `quant_wgmma` switch (the
    dequantized W tile is wgmma's register A; needs 4 or 8 warps and BLOCK_M a multiple of 16);
    it changes nothing for 16-bit weights or other GPUs.

    `stream_k`: run the persistent kernel of `sparsecc.ops.stream_k` (one program an SM, the
    last wave's tiles split along K where it would leave most SMs idle); not with `split_k`.

    `pingpong`: the 8-bit kernel's `stream_k` form at 4 warps with two compute warpgroups taking
    the work items in turn, one's epilogue under the other's K loop, each group's output tile
    staged box by box (the `pingpong` and `tma_store_boxes` switches; CUTLASS's ping-pong
    kernels). 8-bit weights only.

    `cta_pairs`: the 8-bit kernel (`sparse_linear_8bit`) runs as clusters of two CTAs on
    adjacent weight tiles of one token tile, which load each X tile once between them (TMA
    multicast), a third less L2 traffic at 128x128x256. Only there, and not with `split_k` or
    `stream_k`. A pair splits each stage's X tile by its TMA boxes (128 bytes of K each), so
    BLOCK_K = 128 (one box) runs the pairing unclustered. Measured 4-30% slower than one CTA a
    tile on the H100 (fp8, 256-4096 tokens, NOTES stop 33 run 6): an opt-in for other GPUs and
    shapes, not a default.

        >>> LinearConfig(16, 32, 512, num_warps=4, num_stages=2, split_k=4)
        LinearConfig(block_m=16, block_n=32, block_k=512, num_warps=4, num_stages=2, split_k=4)
        >>> LinearConfig(128, 256, 64, 8, 4, stream_k=True)
        LinearConfig(block_m=128, block_n=256, block_k=64, num_warps=8, num_stages=4, split_k=1, stream_k=True)
    """

    block_m: int
    block_n: int
    block_k: int
    num_warps: int = NUM_WARPS
    num_stages: int = NUM_STAGES
    split_k: int = 1
    quant_wgmma: bool = False
    stream_k: bool = False
    maxnreg: int | None = None
    """The registers a thread may use (the kernel's `.maxnreg`; None: ptxas decides)."""
    cta_pairs: bool = False
    pingpong: bool = False

    def __post_init__(self) -> None:
        if self.pingpong and (not self.stream_k or self.num_warps != 4):
            raise ValueError(f"LinearConfig: pingpong runs two 4-warp groups of the stream_k kernel; it takes "
                             f"stream_k=True and num_warps=4, not stream_k={self.stream_k}, "
                             f"num_warps={self.num_warps}")
        if self.stream_k and self.split_k > 1:
            raise ValueError(f"LinearConfig: stream_k splits the last wave itself; it takes split_k=1, "
                             f"not {self.split_k}")
        if self.cta_pairs and (self.split_k > 1 or self.stream_k):
            raise ValueError("LinearConfig: cta_pairs runs one program per output tile; it takes neither "
                             "split_k nor stream_k")

    def __repr__(self) -> str:
        """The fields, the switches and `maxnreg` only where set (most tiles have none)."""
        names = [f.name for f in fields(self) if f.name not in _SWITCHES or getattr(self, f.name)]
        return f"LinearConfig({', '.join(f'{n}={getattr(self, n)!r}' for n in names)})"

    def table_row(self) -> list[int]:
        """The config as a dispatch table stores it: the six ints, then a 7th of flags (1:
        `quant_wgmma`, 2: `stream_k`, 4: `pingpong`) where any is set or `maxnreg` follows as an 8th;
        `table_linear_config` reads it back. `cta_pairs` is a launch option only (measured
        slower than one CTA a tile on the H100, so no table picks it): a ValueError here.

            >>> LinearConfig(128, 128, 128, 8, 3, quant_wgmma=True, stream_k=True).table_row()
            [128, 128, 128, 8, 3, 1, 3]
            >>> LinearConfig(8, 64, 512, 4, 2, maxnreg=128).table_row()
            [8, 64, 512, 4, 2, 1, 0, 128]
        """
        if self.cta_pairs:
            raise ValueError(f"{self!r}: cta_pairs is a launch option, not a dispatch table config")
        flags = int(self.quant_wgmma) | 2 * int(self.stream_k) | 4 * int(self.pingpong)
        tail = [flags, self.maxnreg] if self.maxnreg is not None else [flags] if flags else []
        return [self.block_m, self.block_n, self.block_k, self.num_warps, self.num_stages, self.split_k, *tail]


_SWITCHES = ("quant_wgmma", "stream_k", "maxnreg", "cta_pairs", "pingpong")


SM_COUNT = 132
"""Streaming multiprocessors of an H100 SXM / H200: the CTA count one wave fills."""


QUANT_WGMMA_RING: dict[str, bool] = {"mbarriers": True, "wgmma_unroll": True, "wgmma_in_flight": False}
"""The mbarrier-ring form of `quant_wgmma` loops (for A/B runs): a per-slot mbarrier ring and the
K loop unrolled by two, so that each warp's dequantization of one K step overlaps the wgmmas of
the step before. Measured 4-7% slower than the plain loop on the H100 (w4g128 fp16 and bf16,
4096x4096 and 11008x4096 at M = 512 / 2048: bench/results/NOTES.md, stop 23 run 2). bf16
weights reach the fragments through a layout convert whose CTA barrier drains every group once
per K step; `SPARSECC_WGMMA_RING_IN_FLIGHT=1` (switch `wgmma_ring_in_flight`) keeps the last
group running there (no gain measured)."""

QUANT_WGMMA_OPTIONS: dict[str, bool] = {"mbarriers": False, "wgmma_unroll": True, "wgmma_in_flight": True}
"""Compile options of fp16 `quant_wgmma` launches: the CTA-barrier loop unrolled by two (each copy
of the body its own fragment registers) with the wgmma group of the step before running through
the barrier (`wgmma_in_flight`: copies S-2 steps ahead, so `quantized_prefill_config` gives fp16
four stages), each K step's dequantization overlapping the previous step's wgmmas: 4-7% faster
than the plain loop on the H100 (stop 23 run 8). A switch set in the environment wins."""

QUANT_WGMMA_PLAIN: dict[str, bool] = {"mbarriers": False, "wgmma_unroll": False, "wgmma_in_flight": False}
"""The plain CTA-barrier loop: bf16 `quant_wgmma` launches (four stages do not fit beside the
bf16 fragments' convert scratch, and in flight at three the kernel takes 254 registers,
unmeasured)."""


def quant_wgmma_options(dtype: torch.dtype) -> dict[str, bool]:
    """The compile options of a `quant_wgmma` launch whose activations are `dtype`.

        >>> quant_wgmma_options(torch.float16)["wgmma_in_flight"], quant_wgmma_options(torch.bfloat16)["wgmma_unroll"]
        (True, False)
    """
    return QUANT_WGMMA_OPTIONS if dtype == torch.float16 else QUANT_WGMMA_PLAIN


def split_k_scratch(op: str, cfg: LinearConfig, m: int, n: int, tiles: int, device: torch.device,
                    dtype: torch.dtype = torch.float32) -> tuple[torch.Tensor, torch.Tensor]:
    """(partials, tickets) of a split-K linear launch of `cfg` over `tiles` output tiles: the
    `cfg.split_k` x m x n partial sums (`dtype`) and one zeroed int32 ticket a tile. Every element
    a program's tile covers is written before it is read, and the tickets are zeroed per launch
    (a memset), so launches on several streams or in CUDA graphs never share them. A split too
    large for the kernels' 32-bit offsets into the partials is a ValueError naming `op`.

        >>> p, t = split_k_scratch("sparse_linear", LinearConfig(8, 64, 256, split_k=2), 3, 128, 2, torch.device("cpu"))
        >>> tuple(p.shape), t.tolist()
        ((2, 3, 128), [0, 0])
    """
    if cfg.split_k * m * n >= 2**31:
        raise ValueError(f"{op}: split_k={cfg.split_k} partial tiles of {m}x{n} exceed 2**31 elements; "
                         "use a smaller split_k (split-K is for a few tokens)")
    partials = torch.empty((cfg.split_k, m, n), dtype=dtype, device=device)
    return partials, torch.zeros(tiles, dtype=torch.int32, device=device)


def table_linear_config(picked: tuple[int, ...]) -> LinearConfig:
    """The LinearConfig of a dispatch table's config: 6 ints (block_m, block_n, block_k,
    num_warps, num_stages, split_k), a 7th of flags and an 8th, maxnreg (`LinearConfig.table_row`).

        >>> table_linear_config((128, 128, 128, 8, 3, 1, 1)).quant_wgmma
        True
        >>> table_linear_config((128, 256, 64, 8, 4, 1, 2)).stream_k
        True
        >>> table_linear_config((8, 64, 512, 4, 2, 1, 0, 128)).maxnreg
        128
        >>> table_linear_config((128, 128, 256, 4, 4, 1, 6)).pingpong
        True
    """
    flags = picked[6] if len(picked) > 6 else 0
    return LinearConfig(*picked[:6], quant_wgmma=bool(flags & 1), stream_k=bool(flags & 2),
                        maxnreg=picked[7] if len(picked) > 7 else None, pingpong=bool(flags & 4))


def _tile_constants(cfg: LinearConfig, has_bias: bool, activation: str) -> dict[str, Any]:
    """What every linear kernel launch of `cfg` passes: tiles, epilogue, warps, stages and
    `maxnreg` where set."""
    consts: dict[str, Any] = dict(BLOCK_M=cfg.block_m, BLOCK_N=cfg.block_n, BLOCK_K=cfg.block_k, HAS_BIAS=has_bias,
                                  ACTIVATION=activation, num_warps=cfg.num_warps, num_stages=cfg.num_stages)
    if cfg.maxnreg is not None:
        consts["maxnreg"] = cfg.maxnreg
    return consts


def launch_constants_8bit(w: SparseTensor, k: int, cfg: LinearConfig, has_bias: bool,
                          activation: str) -> dict[str, Any]:
    """The constexprs and compile options of an 8-bit linear kernel launch of `cfg` (int8 or fp8
    W, K inputs): `launch_constants`' tiles and epilogue, `ACC_INT` (an exact int32 sum for int8)
    and `K_32` (K % 32 == 0: W's and X's rows 16-byte aligned, for TMA).

        >>> import sparsecc
        >>> w8 = sparsecc.compress(torch.zeros(8, 64).to(torch.int8))
        >>> c = launch_constants_8bit(w8, 64, LinearConfig(16, 32, 64, maxnreg=128), False, "none")
        >>> c["ACC_INT"], c["K_32"], c["maxnreg"]
        (True, True, 128)
    """
    consts = _tile_constants(cfg, has_bias, activation) | {"ACC_INT": w.dtype == torch.int8, "K_32": k % 32 == 0}
    if early_scales(cfg):
        consts["EARLY_SCALES"] = True
    return consts


def early_scales(cfg: LinearConfig) -> bool:
    """Whether an 8-bit linear launch of `cfg` loads its tile's scales before the K loop rather
    than after it: tiles of at least 128 tokens whose sum takes at most 64 fp32 registers a thread
    (128x128 at 8 warps), where the scales' registers fit beside it. On the H100 (fp8, cold L2,
    NOTES stop 34 run 2) 2-3% faster at 128x128x256 and up to 5% in the persistent form, whose
    every tile otherwise waited on the loads behind a busy L2; 128x256 tiles lost 5-9%.

        >>> early_scales(LinearConfig(128, 128, 128, 8, 7)), early_scales(LinearConfig(128, 256, 128, 8, 4))
        (True, False)
    """
    return cfg.block_m >= 128 and cfg.block_m * cfg.block_n <= 64 * 32 * cfg.num_warps


def launch_constants(x: torch.Tensor, w: SparseTensor | QuantizedSparseTensor, cfg: LinearConfig, has_bias: bool,
                     activation: str) -> dict[str, Any]:
    """The constexprs and compile options of a linear kernel launch of `cfg` (the tiles, the
    epilogue, `quant_wgmma` with its dtype's loop options unless the environment sets them,
    `ROWS_16B` where X's and W's rows start 16 bytes apart, and for a quantized W `ROWS_64` where
    its dense rows are multiples of 64 elements), shared by every linear kernel.

        >>> import sparsecc
        >>> launch_constants(torch.zeros(4, 64).half(), sparsecc.compress(torch.zeros(8, 64).half()),
        ...                  LinearConfig(16, 32, 64), False, "none")["ROWS_16B"]
        True
    """
    consts = _tile_constants(cfg, has_bias, activation)
    if cfg.quant_wgmma and isinstance(w, QuantizedSparseTensor):
        consts["quant_wgmma"] = True  # otherwise left unset: $SPARSECC_QUANT_WGMMA decides
        env = env_overrides()
        consts.update({name: on for name, on in quant_wgmma_options(x.dtype).items() if name not in env})
    quantized = isinstance(w, QuantizedSparseTensor)
    if x.stride(0) % 8 == 0 and w.stride(0) % (64 if quantized else 16) == 0:
        consts["ROWS_16B"] = True
        if quantized:  # the codes' rows: K/4 (4-bit) or K/2 (8-bit) bytes
            consts["ROWS_64"] = True
    return consts
