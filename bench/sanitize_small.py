"""Small ragged launches of the GPU kernels, for memory checkers.

    compute-sanitizer --tool memcheck python bench/sanitize_small.py [sparse_mm linear_16bit ...]

Shapes are chosen so every boundary check matters: M and N are not multiples of any tile size
and K is not a multiple of BLOCK_K. Exits 1 if the result differs from torch.mm.
"""

from __future__ import annotations

import sys

import torch


def main(only: list[str]) -> int:
    """Every section, or those named on the command line (`SECTIONS`)."""
    if not torch.cuda.is_available():
        print("bench/sanitize_small.py needs a CUDA GPU", file=sys.stderr)
        return 2
    if only:
        unknown = [name for name in only if name not in SECTIONS]
        if unknown:
            print(f"unknown sections {unknown}; known: {', '.join(SECTIONS)}", file=sys.stderr)
            return 2
        return int(any([SECTIONS[name]() for name in only]))
    return int(any([section() for section in SECTIONS.values()]))  # every section, even after a mismatch


def sparse_mm_cases() -> int:
    """sparse_mm on ragged shapes at each of its tile families, fp16 and bf16."""
    import sparsecc
    from sparsecc.ops import sparse_mm
    from sparsecc.ops.sparse_mm import MMConfig

    torch.manual_seed(0)
    status = 0
    # (M, N, K, B column-major): row-major B; one column (read K-major); x.T with N < 16; a
    # 2-warpgroup wgmma tile on sm_90a (M > 128) with K not a multiple of BLOCK_K
    cases = ((37, 45, 80, False), (37, 1, 80, False), (37, 5, 80, True), (300, 45, 208, False))
    configs = (None, MMConfig(32, 32, 64, num_stages=1), MMConfig(128, 128, 64, num_stages=3),
               MMConfig(64, 64, 64, num_stages=4), MMConfig(256, 128, 128, num_warps=8, num_stages=3))
    if torch.cuda.get_device_capability() >= (9, 0):  # CTA pairs: a cluster multicasting B
        configs += (MMConfig(256, 128, 128, num_warps=8, num_stages=3, num_ctas=2),)
    for dtype in (torch.float16, torch.bfloat16):
        for m, n, k, column_major in cases:
            dense = sparsecc.prune_2to4(torch.randn(m, k, dtype=dtype, device="cuda"))
            b = torch.randn(n, k, dtype=dtype, device="cuda").t() if column_major else \
                torch.randn(k, n, dtype=dtype, device="cuda")
            a = sparsecc.compress(dense)
            for cfg in configs:
                out = sparse_mm(a, b, config=cfg)
                torch.cuda.synchronize()
                err = (out.float() - torch.mm(dense, b).float()).abs().max().item()
                ok = err <= 0.05 * (k ** 0.5)
                status |= not ok
                print(f"sparse_mm {dtype} {m}x{n}x{k}{' (B column-major)' if column_major else ''} config={cfg}: "
                      f"max |err| {err:.3g} {'ok' if ok else 'MISMATCH'}")
    return status


def _mismatch(label: str, y: torch.Tensor, want: torch.Tensor) -> bool:
    """Print `label` with y's largest error against `want` (fp32) and whether it is within 2% of
    want's largest magnitude (at least 1); True on a mismatch (a NaN in y is one)."""
    err = (y.float() - want).abs().max().item()
    ok = err <= 0.02 * max(want.abs().max().item(), 1.0)
    print(f"{label}: max |err| {err:.3g} {'ok' if ok else 'MISMATCH'}")
    return not ok


def linear_16bit() -> int:
    """sparse_linear with a 16-bit 2:4 weight on ragged M, N and K whose rows start 16 bytes
    apart (so its tiles stream by TMA), at the prefill and mid-M tiles and split-K, with bias and
    an activation, into a NaN-poisoned output."""
    from sparsecc.ops.sparse_linear import LinearConfig

    tiles = (LinearConfig(128, 256, 64, 8, 4), LinearConfig(128, 128, 64, 4, 4), LinearConfig(64, 64, 128, 4, 4, 2),
             LinearConfig(16, 64, 256, 4, 3))
    return _linear_16bit_tiles("sparse_linear", (517, 392, 720), tiles)


def _linear_16bit_tiles(label: str, shape: tuple[int, int, int], tiles: tuple) -> int:
    """sparse_linear of an M x N x K `shape` with a 16-bit 2:4 weight, fp16 and bf16, bias and
    silu, at each config of `tiles`, against the torch reference; 1 on a mismatch."""
    import sparsecc
    from sparsecc.ops.sparse_linear import reference_linear, sparse_linear

    status = 0
    m, n, k = shape
    for dtype in (torch.float16, torch.bfloat16):
        w = sparsecc.compress(sparsecc.prune_2to4(torch.randn(n, k, dtype=dtype, device="cuda")))
        x = torch.randn(m, k, dtype=dtype, device="cuda")
        bias = torch.randn(n, dtype=dtype, device="cuda")
        want = reference_linear(x, w, bias, "silu").float()
        for cfg in tiles:
            y = sparse_linear(x, w, bias, "silu", config=cfg)
            torch.cuda.synchronize()
            status |= _mismatch(f"{label} {dtype} {m}x{n}x{k} {cfg}", y, want)
    return status


def quantized_prefill() -> int:
    """sparse_linear with a quantized weight on Hopper's quant_wgmma tile (register-A wgmma, the
    loop of TMA copies behind mbarriers, the scales loaded into registers a step ahead) on a
    ragged token count, 4- and 8-bit, with and without zero points, fp16 and bf16."""
    if torch.cuda.get_device_capability() != (9, 0):
        return 0
    import sparsecc
    from sparsecc.ops.sparse_linear import (
        launch_linear,
        quantized_linear_config,
        quantized_prefill_config,
        reference_linear,
    )

    status = 0
    m, n, k = 300, 384, 640
    for dtype, scheme in ((torch.float16, "w4g128"), (torch.float16, "w8g128z"), (torch.bfloat16, "w4g128z")):
        w = sparsecc.compress(sparsecc.prune_2to4(torch.randn(n, k, dtype=dtype, device="cuda")), quant=scheme)
        x = torch.randn(m, k, dtype=dtype, device="cuda")
        y = torch.full((m, n), float("nan"), dtype=dtype, device="cuda")
        cfg = quantized_linear_config(quantized_prefill_config(m, n, k, w.dtype), w)
        launch_linear(y, x, w, y, cfg, has_bias=False, activation="none")
        torch.cuda.synchronize()
        want = reference_linear(x, w).float()
        status |= _mismatch(f"sparse_linear {dtype} {scheme} {m}x{n}x{k} {cfg}", y, want)
    return status


def linear_8bit() -> int:
    """sparse_linear_8bit (fp8 and int8, per-token x quantization fused) on a ragged token count at
    each of its Hopper tiles: `default_config_linear_8bit`'s grid-filling 128x256x128 s4,
    128x128x256 s3 and the 128-token 128x128x128 s7 (both loading their scales before the K
    loop), and the small-M 64x128x256, each against the torch reference."""
    if torch.cuda.get_device_capability() < (9, 0):
        return 0
    import sparsecc
    from sparsecc.nn.quantize import quantize_rows
    from sparsecc.ops.sparse_linear import LinearConfig
    from sparsecc.ops.sparse_linear_8bit import reference_linear_8bit, sparse_linear_8bit

    status = 0
    m, n, k = 517, 392, 704
    tiles = (LinearConfig(128, 256, 128, 8, 4), LinearConfig(128, 128, 256, 8, 3), LinearConfig(128, 128, 128, 8, 7),
             LinearConfig(64, 128, 256, 4, 4))
    for dtype in (torch.float8_e4m3fn, torch.int8):
        q, sw = quantize_rows(sparsecc.prune_2to4(torch.randn(n, k, device="cuda")), dtype)
        w = sparsecc.compress(q)
        x = torch.randn(m, k, dtype=torch.float16, device="cuda")
        bias = torch.randn(n, dtype=torch.float16, device="cuda")
        want = reference_linear_8bit(x, w, sw, bias, "silu").float()
        for cfg in tiles:
            y = sparse_linear_8bit(x, w, sw, bias, "silu", config=cfg)
            torch.cuda.synchronize()
            status |= _mismatch(f"sparse_linear_8bit {dtype} {m}x{n}x{k} {cfg}", y, want)
    return status


def user_kernels() -> int:
    """The conformance grid's kernel on ragged shapes: tensors of pointers raised to block
    pointers, and a sparse right operand (x^T a K-major wgmma operand), both epilogues."""
    import os

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "test", "python", "conformance"))
    from test_dot_grid import run_case

    status = 0
    for sparse in ("A", "B"):
        for addr in ("block", "pointers"):
            for tiles, warps in (((64, 64, 64), 4), ((128, 128, 64), 8)):
                try:
                    run_case(300, 136, 208, torch.float16, sparse, addr, "bias_relu", "cuda", tiles, warps)
                    print(f"grid kernel sparse {sparse} {addr} {tiles} w{warps}: ok")
                except AssertionError as e:
                    status = 1
                    print(f"grid kernel sparse {sparse} {addr} {tiles} w{warps}: MISMATCH {e}")
    return status


def _linear_launches(cases: list, plans: tuple[int | None, ...]) -> int:
    """Each (quant, K, cfg) of `cases` on a 517 x 392 output (ragged for every tile), with bias and
    silu, into NaN-poisoned outputs, once per entry of `plans`: None for the data-parallel kernel,
    else the stream-K kernel planned for that many SMs."""
    import sparsecc
    from sparsecc.ops.sparse_linear import launch_linear, reference_linear
    from sparsecc.ops.stream_k import launch_linear_stream_k

    status = 0
    m, n = 517, 392
    for quant, k, cfg in cases:
        w = sparsecc.compress(sparsecc.prune_2to4(torch.randn(n, k, dtype=torch.float16, device="cuda")), quant=quant)
        x = torch.randn(m, k, dtype=torch.float16, device="cuda")
        bias = torch.randn(n, dtype=torch.float16, device="cuda")
        want = reference_linear(x, w, bias, "silu").float()
        for sms in plans:
            y = torch.full((m, n), float("nan"), dtype=torch.float16, device="cuda")
            if sms is None:
                launch_linear(y, x, w, bias, cfg, True, "silu")
            else:
                launch_linear_stream_k(y, x, w, bias, cfg, True, "silu", sms=sms)
            torch.cuda.synchronize()
            form = "data-parallel" if sms is None else f"stream_k on {sms} SMs"
            status |= _mismatch(f"{quant or 'fp16'} {m}x{n}x{k} {cfg} {form}", y, want)
    return status


def stream_k() -> int:
    """The stream-K linear kernel planned for few SMs, so that a ragged shape has whole tiles and
    split ones (fp32 parts through scratch, a ticket each): 16-bit with bias and an activation,
    and on Hopper a 4-bit weight on the register-A wgmma tile, into NaN-poisoned outputs."""
    from sparsecc.ops.linear_config import LinearConfig

    cases = [(None, 1488, LinearConfig(128, 128, 64, 4, 4)), (None, 1488, LinearConfig(128, 256, 64, 8, 4))]
    if torch.cuda.get_device_capability() == (9, 0):  # K in whole quantization groups
        cases.append(("w4g128", 1536, LinearConfig(128, 128, 128, 8, 4, quant_wgmma=True)))
    return _linear_launches(cases, (4, 9))  # 20 or 10 tiles: whole tiles only, or whole ones and the rest in 2-4 parts


def quant_256() -> int:
    """The 256-token register-A wgmma tile of quantized weights (Hopper, fp16), data-parallel and
    stream-K (planned for 4 and 9 SMs: whole tiles only, then split ones), 4- and 8-bit codes,
    ragged M and N, with bias and an activation, into NaN-poisoned outputs."""
    from sparsecc.ops.linear_config import LinearConfig

    if torch.cuda.get_device_capability() != (9, 0):
        print("quant_256: needs an sm_90 GPU (the register-A wgmma tile)")
        return 0
    cfg = LinearConfig(256, 128, 128, 8, 3, quant_wgmma=True)
    return _linear_launches([(quant, 1536, cfg) for quant in ("w4g128", "w8g128")], (None, 4, 9))


def wide_kmajor() -> int:
    """16-bit sparse_linear on wgmma tiles whose x^T tile is K-major over two 128-byte column
    blocks (BLOCK_K = 128, from 64 tokens): ragged M, N and K (a partial last step), split-K too."""
    from sparsecc.ops.sparse_linear import LinearConfig

    tiles = (LinearConfig(64, 128, 128, 4, 4), LinearConfig(128, 128, 128, 8, 3),
             LinearConfig(64, 128, 128, 4, 4, split_k=2))
    return _linear_16bit_tiles("wide K-major", (130, 264, 1040), tiles)


def linear_8bit_deep() -> int:
    """The 8-bit decode rings 8 and 10 stages deep (16x64 and 32x64 tiles, as the defaults pick
    where the grid leaves each SM one CTA), fp8 and int8, ragged tokens and N, K of 11 steps."""
    if torch.cuda.get_device_capability() < (9, 0):
        return 0
    import sparsecc
    from sparsecc.nn.quantize import quantize_rows
    from sparsecc.ops.sparse_linear import LinearConfig
    from sparsecc.ops.sparse_linear_8bit import reference_linear_8bit, sparse_linear_8bit

    status = 0
    n, k = 136, 2816
    cases = ((5, LinearConfig(16, 64, 256, 4, 10)), (40, LinearConfig(32, 64, 256, 4, 8)))
    for dtype in (torch.float8_e4m3fn, torch.int8):
        q, sw = quantize_rows(sparsecc.prune_2to4(torch.randn(n, k, device="cuda")), dtype)
        w = sparsecc.compress(q)
        for m, cfg in cases:
            x = torch.randn(m, k, dtype=torch.float16, device="cuda")
            want = reference_linear_8bit(x, w, sw).float()
            y = sparse_linear_8bit(x, w, sw, config=cfg)
            torch.cuda.synchronize()
            status |= _mismatch(f"sparse_linear_8bit {dtype} {m}x{n}x{k} {cfg}", y, want)
    return status


def _stream_k_8bit_runs(m: int, n: int, k: int, dtype: torch.dtype, runs: tuple, **options: bool) -> int:
    """The 8-bit stream-K kernel (`launch_linear_8bit_stream_k` with `options`) on one ragged
    problem with bias and silu, once per (config, SMs planned for) of `runs`, each into a
    NaN-poisoned y, against the float64 reference; 1 if any mismatched."""
    import sparsecc
    from sparsecc.nn.quantize import quantize_rows
    from sparsecc.ops.quantize_rows import quantize_rows_fused
    from sparsecc.ops.sparse_linear_8bit import reference_linear_8bit
    from sparsecc.ops.stream_k import launch_linear_8bit_stream_k

    q, sw = quantize_rows(sparsecc.prune_2to4(torch.randn(n, k, device="cuda")), dtype)
    w = sparsecc.compress(q)
    x = torch.randn(m, k, dtype=torch.float16, device="cuda")
    bias = torch.randn(n, dtype=torch.float16, device="cuda")
    xq, xs = quantize_rows_fused(x, dtype)
    want = reference_linear_8bit(x, w, sw, bias, "silu").float()
    status = 0
    for cfg, sms in runs:
        y = torch.full((m, n), float("nan"), dtype=torch.float16, device="cuda")
        launch_linear_8bit_stream_k(y, xq, xs, w, sw, bias, cfg, True, "silu", sms=sms, **options)
        torch.cuda.synchronize()
        name = "8-bit stream_k" + "".join(f" {o}" for o, on in options.items() if on)
        status |= _mismatch(f"{name} {dtype} {m}x{n}x{k} {cfg} on {sms or 'all'} SMs", y, want)
    return status


def stream_k_8bit() -> int:
    """The 8-bit stream-K kernel planned for 4 SMs (whole tiles and split ones: fp32 or int32
    parts through scratch), fp8 and int8, ragged M and N, into NaN-poisoned outputs; the
    persistent default above 256 tokens (128x128x128 s7, scales loaded before the K loop) on
    the same 4 SMs and on the device's (whole tiles only). N = 200 stores 16-byte vectors; N =
    208 (rows of whole 16-byte chunks) TMA stores."""
    if torch.cuda.get_device_capability() < (9, 0):
        return 0
    from sparsecc.ops.linear_config import LinearConfig

    runs = ((LinearConfig(128, 128, 256, 8, 3, stream_k=True), 4), (LinearConfig(64, 128, 256, 4, 5, stream_k=True), 4),
            (LinearConfig(128, 128, 128, 8, 7, stream_k=True), 4), (LinearConfig(128, 128, 128, 8, 7, stream_k=True), None))
    status = 0
    for dtype, n in ((torch.float8_e4m3fn, 200), (torch.int8, 200), (torch.float8_e4m3fn, 208), (torch.int8, 208)):
        status |= _stream_k_8bit_runs(130, n, 1536, dtype, runs)
    return status


def stream_k_pingpong() -> int:
    """The 8-bit stream-K kernel with two compute warpgroups taking the work items in turn
    (`pingpong`, 128x128x128 at 4 warps, 6 stages), 10 tiles planned for 4 SMs (8 whole, 2 in
    two parts with tickets: three trips a program), 2 SMs (five whole tiles a program) and 3 SMs
    (9 whole, one in three parts); then K steps of 256 with 4 stages, each group's tile staged
    in boxes of 64 x 64 (`tma_store_boxes`: two 16 KiB boxes would not fit beside the ring), on
    4 and 3 SMs; fp8 and int8, ragged M and N, into NaN-poisoned outputs."""
    if torch.cuda.get_device_capability() < (9, 0):
        return 0
    from sparsecc.ops.linear_config import LinearConfig

    cfg = LinearConfig(128, 128, 128, 4, 6, stream_k=True)
    deep = LinearConfig(128, 128, 256, 4, 4, stream_k=True)
    status = 0
    for dtype in (torch.float8_e4m3fn, torch.int8):
        status |= _stream_k_8bit_runs(200, 520, 1536, dtype, ((cfg, 4), (cfg, 2), (cfg, 3)), pingpong=True)
        status |= _stream_k_8bit_runs(200, 520, 1536, dtype, ((deep, 4), (deep, 3)), pingpong=True,
                                      tma_store_boxes=True)
    return status


def moe_tma() -> int:
    """bench/moe.py's grouped GEMM under tma_extents (one TMA ring across a program's token tiles,
    filled by a producer warp) at its prefill tile, four stages, on a small ragged routing with
    an empty expert: two programs an expert, five K steps."""
    if torch.cuda.get_device_capability() != (9, 0):
        return 0
    import os

    sys.path.insert(0, os.path.dirname(__file__))
    import moe

    import sparsecc

    experts, n, k = 3, 256, 320
    counts = torch.tensor([0, 37, 260])
    offs = torch.zeros(experts + 1, dtype=torch.int32)
    offs[1:] = torch.cumsum(counts, 0)
    offs = offs.cuda()
    x = torch.randn(int(counts.sum()), k, dtype=torch.float16, device="cuda")
    w = moe.make_weights(experts, n, k, "cuda", seed=7)
    kernel = moe.pk.sparsecc_kernel(moe.moe_gemm_kernel)
    status = 0
    for unroll in (False, True):
        y = torch.full((x.shape[0], n), float("nan"), dtype=torch.float16, device="cuda")
        moe.launch(kernel, sparsecc.compress(w), x, y, offs, n, k, moe.Tile(128, 256, 64, 8, 4), experts,
                   tma_extents=True, wgmma_unroll=unroll)
        torch.cuda.synchronize()
        status |= _mismatch(f"moe tma_extents 128x256x64 s4 unroll={unroll}", y, moe.reference(w, x, offs, n))
    return status


SECTIONS = {"sparse_mm": sparse_mm_cases, "user_kernels": user_kernels, "quantized_prefill": quantized_prefill,
            "linear_8bit": linear_8bit, "linear_16bit": linear_16bit, "stream_k": stream_k, "quant_256": quant_256,
            "wide_kmajor": wide_kmajor, "linear_8bit_deep": linear_8bit_deep, "stream_k_8bit": stream_k_8bit,
            "stream_k_pingpong": stream_k_pingpong, "moe_tma": moe_tma}
"""The sections `python bench/sanitize_small.py [SECTION ...]` runs."""


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
