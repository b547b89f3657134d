"""`sparse_mm(A, B)`: D = A_dense @ B for a 2:4-sparse A (NV24), as one `@sparsecc.jit` kernel.

The kernel is ordinary Triton-style code written against the DENSE view of A: its block pointer
says shape (M, K) and strides (K, 1), and `decompose-sparse-tensors` turns that into the values
(M x K/2) and metadata (ceil(M/16) x K) block pointers. Every load and the store check both
bounds, so any M, N >= 1 and any K the compressor accepts (a multiple of 16) work, also when K
is not a multiple of BLOCK_K. CPU tensors run through the interpreter (the frontend dispatches
on the device), CUDA tensors through the compiled cubin.
"""

from __future__ import annotations

import functools
import importlib
from dataclasses import dataclass
from typing import Any

import torch

import sparsecc
import sparsecc.language as tl
from sparsecc.defaults import NUM_CTAS
from sparsecc.ops import dispatch as _dispatch
from sparsecc.ops.mm_tiles import (
    MMConfig,
    _operand_ptrs,
    _store_tile,
    _tile_coords,
    _tile_sum,
    is_column_major,
)
from sparsecc.ops.mm_tiles import check_out as _check_out
from sparsecc.ops.mm_tiles import kernel_stride_bn as _stride_bn
from sparsecc.ops.sparse_mm_8bit import EIGHT_BIT_DTYPES, sparse_mm_8bit
from sparsecc.passes.convert_tt_to_ttg import has_wgmma
from sparsecc.runtime.launcher import ALIGNMENT
from sparsecc.runtime.sparse_tensor import SparseTensor

# The module, not the decorator: `sparsecc.frontend` exports a function named `jit`, which
# `from sparsecc.frontend import jit` would bind instead (tests patch the module's current_target).
_jit = importlib.import_module("sparsecc.frontend.jit")

__all__ = ["MMConfig", "candidate_configs", "default_config", "has_wgmma", "sparse_mm", "sparse_mm_kernel", "tuned_config"]


@sparsecc.jit
def sparse_mm_kernel(D, A, B, M, N, K, stride_am, stride_bk, stride_bn, stride_dm, stride_dn,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                     GROUP_M: tl.constexpr, B_KMAJOR: tl.constexpr = False, PERSISTENT: tl.constexpr = False,
                     CLUSTER_M: tl.constexpr = 1):
    # B_KMAJOR: B is column-major (stride_bk == 1, e.g. x.T of a row-major x, or one column):
    # its tiles are loaded, staged and read K-major.
    # PERSISTENT: launched with one program per SM (at most), each walks many tiles.
    # CLUSTER_M = 2 (launched with num_ctas=2): programs 2j and 2j+1 take vertically adjacent
    # tiles of one column panel, so their B tiles are the same (a cluster loads them once).
    if PERSISTENT:
        _persistent_tiles(D, A, B, M, N, K, stride_am, stride_bk, stride_bn, stride_dm, stride_dn,
                          BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, B_KMAJOR)
    else:
        _one_tile(D, A, B, M, N, K, stride_am, stride_bk, stride_bn, stride_dm, stride_dn,
                  BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, B_KMAJOR, CLUSTER_M)


@sparsecc.jit
def _one_tile(D, A, B, M, N, K, stride_am, stride_bk, stride_bn, stride_dm, stride_dn,
              BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
              GROUP_M: tl.constexpr, B_KMAJOR: tl.constexpr, CLUSTER_M: tl.constexpr):
    # one program per output tile (with CLUSTER_M = 2: pairs of programs per pair of row tiles;
    # an odd last row tile's partner reads zeros and stores nothing)
    if CLUSTER_M == 2:
        pair_m, pid_n = _tile_coords(tl.program_id(0) // 2, tl.cdiv(tl.cdiv(M, BLOCK_M), 2), tl.cdiv(N, BLOCK_N),
                                     (GROUP_M + 1) // 2)
        pid_m = pair_m * 2 + tl.program_id(0) % 2
    else:
        pid_m, pid_n = _tile_coords(tl.program_id(0), tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N), GROUP_M)
    acc = _tile_sum(A, B, M, N, K, stride_am, stride_bk, stride_bn, pid_m, pid_n,
                    BLOCK_M, BLOCK_N, BLOCK_K, B_KMAJOR)
    _store_tile(D, acc, M, N, stride_dm, stride_dn, pid_m, pid_n, BLOCK_M, BLOCK_N)


@sparsecc.jit
def _persistent_tiles(D, A, B, M, N, K, stride_am, stride_bk, stride_bn, stride_dm, stride_dn,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                      GROUP_M: tl.constexpr, B_KMAJOR: tl.constexpr):
    # Program pid walks tiles pid, pid + P, pid + 2P, ... (P programs) in ONE flat loop over
    # (tile, K step): the pipeline then fetches the next tile's first K steps while this
    # tile's last ones and its epilogue run, and no program starts or fills per tile.
    pid = tl.program_id(0)
    programs = tl.num_programs(0)
    num_m = tl.cdiv(M, BLOCK_M)
    num_n = tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    num_tiles = num_m * num_n
    my_tiles = (num_tiles - pid + programs - 1) // programs
    pid_m, pid_n = _tile_coords(min(pid, num_tiles - 1), num_m, num_n, GROUP_M)  # (no tile: no steps)
    a_ptr, b_ptr = _operand_ptrs(A, B, M, N, K, stride_am, stride_bk, stride_bn, pid_m, pid_n,
                                 BLOCK_M, BLOCK_N, BLOCK_K, B_KMAJOR)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for step in range(0, my_tiles * k_tiles):
        a = tl.load(a_ptr, boundary_check=(0, 1), padding_option="zero")
        b = tl.load(b_ptr, boundary_check=(0, 1), padding_option="zero")
        acc = tl.dot(a, b, acc)
        # where step + 1 reads: the same tile's next K step, or the next tile's first (after
        # the last step: a tile that exists, so the offsets stay defined). Few divisions: the
        # pipeline evaluates this for a step S-1 ahead too, on every step.
        t = step // k_tiles
        k_now = step - t * k_tiles
        ends = k_now == k_tiles - 1
        tile = pid + t * programs
        next_tile = min(tile + programs, num_tiles - 1)
        tile_m, tile_n = _tile_coords(tile, num_m, num_n, GROUP_M)
        next_m, next_n = _tile_coords(next_tile, num_m, num_n, GROUP_M)
        dk = (1 - k_tiles) * BLOCK_K if ends else BLOCK_K
        dm = (next_m - tile_m) * BLOCK_M if ends else 0
        dn = (next_n - tile_n) * BLOCK_N if ends else 0
        a_ptr = tl.advance(a_ptr, (dm, dk))
        b_ptr = tl.advance(b_ptr, (dk, dn))
        if ends:  # the tile's last K step: its epilogue, and a fresh sum for the next
            _store_tile(D, acc, M, N, stride_dm, stride_dn, tile_m, tile_n, BLOCK_M, BLOCK_N)
            acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)




# One m16n8k32 mma.sp step needs BLOCK_M % 16 == 0 and BLOCK_K % 32 == 0; metadata tiles need
# BLOCK_M % 16 == 0 (16-row word blocks). fp16 and bf16 share the tile shapes. On sm_90a a tile
# with BLOCK_M % (16 * num_warps) == 0 and BLOCK_N <= 256 runs on wgmma.mma_async.sp (see
# convert-tt-to-ttg); the others on mma.sp. Picks measured on the H100 (bench/results/NOTES.md):
# large problems: 256x128x128, 8 warps (two warpgroups, two m64n128 blocks each), 3 stages of
# 68 KB, GROUP_M 16: 820-980 TFLOP/s at 4096^3-16384^3 with TMA copies and a producer warp (the
# best mma.sp tile: ~440); decode (N <= 16): 32x16x256, 4 stages, mma.sp: many CTAs and 16 KB of
# A in flight per stage, memory-bound at ~1.5x cuBLAS; N <= 256: 64x64x128 (wgmma).
_LARGE = {True: MMConfig(256, 128, 128, group_m=16, num_warps=8, num_stages=3),
          False: MMConfig(128, 128, 64, group_m=8, num_warps=4, num_stages=3)}
_DECODE = MMConfig(32, 16, 256, group_m=8, num_warps=4, num_stages=4)
_SMALL = {True: MMConfig(64, 64, 128, group_m=8, num_warps=4, num_stages=4),
          False: MMConfig(64, 64, 64, group_m=8, num_warps=4, num_stages=2)}
_CPU = MMConfig(32, 32, 32, group_m=4, num_warps=4, num_stages=1)


def default_config(m: int, n: int, k: int, dtype: torch.dtype, device_type: str = "cuda",
                   target: str | None = "sm_90a") -> MMConfig:
    """The tile config sparse_mm uses for an (m, n, k) problem of `dtype` on `device_type`
    compiled for `target`."""
    if device_type == "cpu":
        return _CPU  # the interpreter: small tiles keep the per-program work cheap
    hopper = has_wgmma(target)
    if n <= 16:
        return _DECODE
    if m <= 256 or n <= 256:
        return _SMALL[hopper]
    return _LARGE[hopper]


def candidate_configs(m: int, n: int, k: int, dtype: torch.dtype, target: str | None = "sm_90a") -> list[MMConfig]:
    """What `sparse_mm(..., autotune=True)` times for this problem: the default pick first, then
    the runners-up it was chosen over on the H100 (bench/results/NOTES.md)."""
    hopper = has_wgmma(target)
    first = default_config(m, n, k, dtype, "cuda", target)
    if n <= 16:
        rest = [MMConfig(32, 16, 128, num_warps=4, num_stages=8), MMConfig(64, 16, 256, num_warps=4, num_stages=4)]
    elif m <= 256 or n <= 256:
        rest = ([MMConfig(64, 32, 128, num_warps=4, num_stages=4), MMConfig(64, 128, 128, num_warps=4, num_stages=3)]
                if hopper else [MMConfig(64, 32, 64, num_warps=4, num_stages=3), MMConfig(64, 64, 64, num_warps=4, num_stages=3)])
    else:
        rest = ([MMConfig(256, 128, 128, group_m=8, num_warps=8, num_stages=3),  # TMA runners-up
                 MMConfig(256, 128, 64, group_m=16, num_warps=8, num_stages=5)]
                if hopper else [MMConfig(128, 128, 64, num_warps=4, num_stages=4), MMConfig(256, 128, 64, num_warps=8, num_stages=3)])
    return [first] + [c for c in rest if c != first]


_TUNERS: dict[tuple[MMConfig, ...], Any] = {}


def _tuner(configs: list[MMConfig]) -> Any:
    """One autotuner per candidate list (keyed by M, N, K and D's dtype; winners kept on disk)."""
    from sparsecc.runtime.autotune import Autotuner, Config

    key = tuple(configs)
    if key not in _TUNERS:
        _TUNERS[key] = Autotuner(sparse_mm_kernel, [
            Config({"BLOCK_M": c.block_m, "BLOCK_N": c.block_n, "BLOCK_K": c.block_k, "GROUP_M": c.group_m,
                    "PERSISTENT": c.persistent}, num_warps=c.num_warps, num_stages=c.num_stages) for c in configs],
            key=["M", "N", "K", "D", "B_KMAJOR"], verbose=False)
    return _TUNERS[key]


def tuned_config(a: Any, b: torch.Tensor) -> MMConfig:
    """The config `sparse_mm(a, b, autotune=True)` runs (tuning first if this problem is new)."""
    m = a.shape[0]
    n = b.shape[1]
    plan = _b_plan(b, _target(b.device.type))
    return _autotuned(a, plan.apply(b), torch.empty((m, n), dtype=a.dtype, device=b.device), plan.kmajor)


_PICKED: dict[tuple[Any, ...], MMConfig] = {}
"""(M, N, K, dtypes, strides) -> the autotuner's pick: later calls pay one dict lookup."""


def _autotuned(a: Any, b: torch.Tensor, d: torch.Tensor, kmajor: bool) -> MMConfig:
    m, k = a.shape
    n = b.shape[1]
    key = (m, n, k, a.dtype, d.dtype, b.stride(), d.stride(), b.device.index, kmajor)
    cfg = _PICKED.get(key)
    if cfg is None:
        best = _tuner(candidate_configs(m, n, k, a.dtype, _target("cuda"))).choose(
            _grid(m, n, d.device), _args(d, a, b, kmajor), {"B_KMAJOR": kmajor})
        kw = best.kwargs
        cfg = _PICKED[key] = MMConfig(kw["BLOCK_M"], kw["BLOCK_N"], kw["BLOCK_K"], kw["GROUP_M"], best.num_warps,
                                      best.num_stages, bool(kw.get("PERSISTENT", False)))
    return cfg


def _target(device_type: str) -> str | None:
    """The compile target for tensors on `device_type` (None: the CPU interpreter)."""
    return _jit.current_target() if device_type == "cuda" else None


def _grid(m: int, n: int, device: torch.device) -> Any:
    return lambda meta: (_programs(m, n, meta["BLOCK_M"], meta["BLOCK_N"], meta.get("PERSISTENT", False), device),)


def _programs(m: int, n: int, block_m: int, block_n: int, persistent: bool, device: torch.device,
              num_ctas: int = NUM_CTAS) -> int:
    """Programs to launch: one per tile (whole pairs of row tiles for CTA pairs), or
    (persistent) one per SM of `device` while there are tiles (8 programs on the CPU
    interpreter)."""
    rows = -(-m // block_m)
    tiles = (rows + rows % num_ctas) * -(-n // block_n)
    if not persistent:
        return tiles
    return min(tiles, sm_count(device.index) if device.type == "cuda" else 8)


@functools.cache
def sm_count(index: int | None) -> int:
    """The streaming multiprocessors of CUDA device `index` (None: the current device), cached:
    the program count of a persistent launch.

        programs = min(tiles, sm_count(x.device.index))
    """
    return _sm_count_of(torch.cuda.current_device() if index is None else index)


@functools.cache
def _sm_count_of(index: int) -> int:
    return torch.cuda.get_device_properties(index).multi_processor_count


def _args(d: torch.Tensor, a: Any, b: torch.Tensor, kmajor: bool = False) -> tuple[Any, ...]:
    m, k = a.shape
    n = b.shape[1]
    return (d, a, b, m, n, k, a.stride(0), b.stride(0), _stride_bn(b, k, kmajor), d.stride(0), d.stride(1))


NARROW_N = 8
"""Below this many columns B is read K-major: a row-major K x N B with N < 8 has rows narrower
than one 16-byte copy (per-element loads: 8192x1x8192 took 61 us against 40 us for N = 16),
while its columns are K long. One column is both; a wider one is copied column-major first."""


@dataclass(frozen=True)
class _BPlan:
    """How sparse_mm reads B: as given or after one copy, row-major or K-major tiles."""

    kmajor: bool = False
    copy: str = ""  # "": as given; "kmajor": to column-major; "rowmajor": to row-major

    def apply(self, b: torch.Tensor) -> torch.Tensor:
        if self.copy == "kmajor":
            return b.t().contiguous().t()
        if self.copy == "rowmajor":
            return b.contiguous()
        return b


def _b_plan(b: torch.Tensor, target: str | None) -> _BPlan:
    """K-major tiles for narrow B and for column-major B on mma.sp; wgmma tiles (sm_90a, N > 16)
    read B row-major, so a column-major B is copied there (K x N bytes against a GEMM's work)."""
    if b.device.type == "cpu":
        return _BPlan()  # the interpreter reads any strides
    n = b.shape[1]
    aligned = b.data_ptr() % ALIGNMENT == 0  # a view at an offset is copied (the kernel's vectors)
    column_major = is_column_major(b)
    if column_major and (n <= 16 or not has_wgmma(target)):
        return _BPlan(kmajor=True, copy="" if aligned else "kmajor")
    if n < NARROW_N:
        return _BPlan(kmajor=True, copy="kmajor")
    if column_major or not aligned:
        return _BPlan(copy="rowmajor")
    return _BPlan()


def _check(a: Any, b: torch.Tensor, out_dtype: torch.dtype | None) -> torch.dtype:
    """Validate operands; one clear message per problem. Returns the output dtype."""
    from sparsecc.runtime.sparse_tensor import SparseTensor

    if not isinstance(a, SparseTensor):
        if type(a).__name__ == "QuantizedSparseTensor":
            raise TypeError(f"sparse_mm: A is a quantized ({a.encoding}) QuantizedSparseTensor, which "
                            "sparse_mm does not take yet: use sparsecc.ops.sparse_linear(x, W) for "
                            "y = x @ W.T, or pass it to your own @sparsecc.jit kernel")
        raise TypeError(f"sparse_mm: A must be a sparsecc.SparseTensor (use sparsecc.compress(dense)), "
                        f"got {type(a).__name__}")
    if not isinstance(b, torch.Tensor):
        raise TypeError(f"sparse_mm: B must be a torch.Tensor, got {type(b).__name__}")
    if b.dim() != 2:
        raise ValueError(f"sparse_mm: B must be 2-D (K x N), got shape {tuple(b.shape)}")
    m, k = a.shape
    if b.shape[0] != k:
        raise ValueError(f"sparse_mm: shape mismatch: A is {m}x{k} but B is "
                         f"{b.shape[0]}x{b.shape[1]} (B needs {k} rows)")
    if b.dtype != a.dtype:
        raise TypeError(f"sparse_mm: dtype mismatch: A is {a.dtype} but B is {b.dtype}")
    if a.device != b.device:
        raise ValueError(f"sparse_mm: device mismatch: A is on {a.device} but B is on {b.device}")
    if b.device.type not in ("cpu", "cuda"):
        raise ValueError(f"sparse_mm: operands on {b.device} are not supported (CUDA tensors run "
                         "on the GPU, CPU tensors in the interpreter)")
    out = a.dtype if out_dtype is None else out_dtype
    allowed = (torch.float16, torch.bfloat16, torch.float32)
    if out not in allowed:
        raise TypeError(f"sparse_mm: out_dtype must be one of {', '.join(map(str, allowed))}, "
                        f"got {out}")
    return out


def sparse_mm(a: Any, b: torch.Tensor, out_dtype: torch.dtype | None = None, *,
              out: torch.Tensor | None = None, config: MMConfig | None = None,
              autotune: bool = False, scale_a: torch.Tensor | None = None,
              scale_b: torch.Tensor | None = None, dispatch: str | None = None) -> torch.Tensor:
    """A_dense @ B for A a 2:4 SparseTensor (M x K) and B dense (K x N) of A's dtype.

    fp16 and bf16 are described here; int8 and fp8 (float8_e4m3fn, float8_e5m2) operands, and
    the rowwise scales `scale_a` (M) / `scale_b` (N) they may take, go to
    `sparsecc.ops.sparse_mm_8bit.sparse_mm_8bit` (int32 or bf16 output; see there).

        >>> A = sparsecc.compress(sparsecc.prune_2to4(torch.randn(64, 32, dtype=torch.float16)))
        >>> sparse_mm(A, torch.randn(32, 16, dtype=torch.float16)).shape
        torch.Size([64, 16])

    Accumulates in fp32 and returns `out_dtype` (default: A's dtype, or `out`'s dtype when `out`
    is given). `out` (M x N, any strides) receives the result. `config` overrides the default
    tiles (BLOCK_M/BLOCK_N multiples of 16, BLOCK_K a multiple of 32). `autotune=True` (CUDA)
    times `candidate_configs` on the first call for each (M, N, K, dtype) and keeps the fastest,
    in memory and in the cache folder; without it the measured default pick runs.

    B may have any strides. Row-major B is read as is; column-major B (`x.T`) and B with fewer
    than 8 columns are read K-major (no padding); a wide column-major B on sm_90a and a B or
    `out` that starts off a 16-byte boundary are first copied (the kernel's vectors need it).

    fp16/bf16 A without a `config` or `autotune` goes through the dispatcher
    (`sparsecc.ops.dispatch`, A read as a layer's N x K weight and B's columns as its tokens):
    the 2:4 kernel, or A decompressed and `torch.mm` where the measured table says that is
    faster (on CUDA; the CPU runs the interpreter unless forced); `dispatch` ("auto", "sparse",
    "dense"; None: the global setting) forces one. int8,
    fp8 and tf32 A always run the 2:4 kernel (`dispatch="dense"` is an error for them).
    """
    if _mm_mode(a, b, config, autotune, dispatch) == "dense":
        return _dense_mm(a, b, out_dtype, out)
    scaled = scale_a is not None or scale_b is not None
    if isinstance(a, SparseTensor) and (a.dtype in EIGHT_BIT_DTYPES or a.encoding == "NV12" or scaled):
        # int8, fp8 and tf32 (NV12): the kernel that reads B K-major (sparse_mm_8bit)
        _check(a, b, torch.float32)  # operands; that path checks the output dtype
        if scaled and a.dtype not in EIGHT_BIT_DTYPES:
            raise TypeError(f"sparse_mm: scale_a/scale_b apply to int8 and fp8 operands, got {a.dtype}")
        if autotune:
            raise ValueError(f"sparse_mm: autotune=True is not available for {a.dtype} operands yet; pass a config")
        return sparse_mm_8bit(a, b, out_dtype, out=out, config=config, scale_a=scale_a, scale_b=scale_b)
    hot_key = None
    if out is None and out_dtype is None and config is None and isinstance(b, torch.Tensor) and isinstance(a, SparseTensor):
        # Repeated calls on operands like an earlier call's (decode loops): the checks passed for
        # them already and the launch function is known; these kernels take about as long as
        # the host path, so its microseconds show.
        hot_key = (a.__class__, a.shape, a.dtype, a.device, b.__class__, b.shape, b.dtype, b.stride(), b.device,
                   autotune, b.data_ptr() % ALIGNMENT)
        hot = _HOT.get(hot_key)
        if hot is not None:
            entry, grid, kwargs, m, n, k, plan = hot
            d = torch.empty((m, n), dtype=a.dtype, device=b.device)
            if plan.copy:
                b = plan.apply(b)
            entry(grid, (d, a, b, m, n, k, k, b.stride(0), _stride_bn(b, k, plan.kmajor), n, 1), kwargs)
            return d
    if out is not None and out_dtype is None and isinstance(out, torch.Tensor):
        out_dtype = out.dtype
    dtype = _check(a, b, out_dtype)
    m, k = a.shape
    n = b.shape[1]
    if out is None:
        d = torch.empty((m, n), dtype=dtype, device=b.device)
    else:
        _check_out(out, (m, n), dtype, b.device)
        d = out
    if m == 0 or n == 0:
        return d
    if d.is_cuda and d.data_ptr() % ALIGNMENT:  # `out` is a view at an offset: via an aligned copy
        out.copy_(sparse_mm(a, b, dtype, config=config, autotune=autotune))
        return out
    target = _target(b.device.type)
    plan = _b_plan(b, target)
    b = plan.apply(b)
    if autotune and config is None and b.device.type == "cuda":
        config = _autotuned(a, b, d, plan.kmajor)
    if config is None:
        config = default_config(m, n, k, a.dtype, b.device.type, target)
    elif not isinstance(config, MMConfig):
        raise TypeError(f"sparse_mm: config must be a sparsecc.ops.MMConfig, got {type(config).__name__}")
    cfg = config
    if cfg.block_m % 16 or cfg.block_n % 16 or cfg.block_k % 32:
        raise ValueError(f"sparse_mm: config {cfg} needs BLOCK_M and BLOCK_N multiples of 16 and "
                         "BLOCK_K a multiple of 32")
    if cfg.num_ctas not in (1, 2) or (cfg.num_ctas == 2 and cfg.persistent):
        raise ValueError(f"sparse_mm: config {cfg}: num_ctas must be 1, or 2 without persistent")
    grid = (_programs(m, n, cfg.block_m, cfg.block_n, cfg.persistent, d.device, cfg.num_ctas),)
    args = _args(d, a, b, plan.kmajor)
    kwargs = {"BLOCK_M": cfg.block_m, "BLOCK_N": cfg.block_n, "BLOCK_K": cfg.block_k, "GROUP_M": cfg.group_m,
              "B_KMAJOR": plan.kmajor, "PERSISTENT": cfg.persistent, "num_warps": cfg.num_warps,
              "num_stages": cfg.num_stages}
    if cfg.num_ctas != 1:
        kwargs.update(CLUSTER_M=cfg.num_ctas, num_ctas=cfg.num_ctas)
    sparse_mm_kernel[grid](*args, **kwargs)
    if hot_key is not None and b.device.type == "cuda" and a.stride(0) == k and d.stride() == (n, 1):
        entry = sparse_mm_kernel.fast.get(sparse_mm_kernel.fast_key(args, kwargs))
        if entry is not None:
            _HOT[hot_key] = (entry, grid, kwargs, m, n, k, plan)
    return d


_HOT: dict[tuple[Any, ...], tuple[Any, ...]] = {}
"""Operand description -> (launch function, grid, kwargs, M, N, K, B plan) of an earlier checked call."""


def _mm_mode(a: Any, b: Any, config: MMConfig | None, autotune: bool, dispatch: str | None) -> str:
    """The dispatcher's path for `sparse_mm(a, b)`: "dense" or "sparse" (the kernel)."""
    setting = _dispatch.resolve(dispatch)
    if not isinstance(a, SparseTensor) or not isinstance(b, torch.Tensor) or b.dim() != 2:
        return "sparse"  # the kernel path's checks say what is wrong
    sixteen = a.dtype in (torch.float16, torch.bfloat16) and a.encoding == "NV24"
    if dispatch in ("dense", "sparse16") and not sixteen:
        raise ValueError(f"sparse_mm: dispatch={dispatch!r}: only fp16/bf16 2:4 A has a dense path, A is {a.dtype} "
                         f"({a.encoding})")
    if not sixteen or config is not None or autotune or setting == "sparse":
        return "sparse"
    m, k = a.shape
    return _dispatch.choose(b.shape[1], m, k, a.dtype, "nv24", b.device, setting).mode


def _dense_mm(a: SparseTensor, b: torch.Tensor, out_dtype: torch.dtype | None,
              out: torch.Tensor | None) -> torch.Tensor:
    """`sparse_mm` the dense way: A decompressed, then torch.mm (fp32 accumulation as the
    kernel's; the result in `out_dtype` / `out`'s dtype)."""
    from sparsecc.ops.densify import dense_weight

    if out is not None and out_dtype is None and isinstance(out, torch.Tensor):
        out_dtype = out.dtype
    dtype = _check(a, b, out_dtype)
    m, k = a.shape
    if out is not None:
        _check_out(out, (m, b.shape[1]), dtype, b.device)
    w = dense_weight(a.values, a.meta, k)
    # an fp32 result is summed and kept in fp32 (as the kernel's), not rounded to 16 bits first
    d = torch.mm(w.float(), b.float()) if dtype == torch.float32 else torch.mm(w, b).to(dtype)
    if out is None:
        return d
    out.copy_(d)
    return out
