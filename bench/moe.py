"""Mixtral-shaped MoE GEMM: a 2:4-sparse-expert grouped GEMM (sparsecc) against the same dense
grouped GEMM compiled by Triton, in one run.

The layer is Mixtral's first expert projection: 8 experts, each y = x @ W.T with W 14336x4096
(fp16), top-2 routing. Tokens are sorted by expert (as fused-MoE kernels do) and the per-expert
row offsets live in a device array that the kernel loads as scalars. The kernel below is written
once in Triton's language; `parity_kernels.triton_kernel` and `parity_kernels.sparsecc_kernel`
compile the same source. All experts' weights are one 2-D tensor (experts*N x K): dense for
Triton, `sparsecc.compress`ed (NV24, 2:4 along K) for sparsecc, pruned identically for both.

    python bench/moe.py [--quick] [--out bench/results/moe.md]   # on the GPU
    python bench/moe.py --check                                   # CPU: interpreter vs torch, PTX

Times are `triton.testing.do_bench_cudagraph` medians (CUDA graphs); each side takes its best of
a few tile configs. Correctness of both sides is checked against torch before timing.
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
from dataclasses import dataclass
from typing import Any

try:  # the kernel is Triton's source; without triton (CI), sparsecc's language stands in
    import triton.language as tl
except ImportError:  # pragma: no cover - depends on the environment
    import sparsecc.language as tl  # type: ignore[no-redef]

os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")  # Triton 3.9's default, without its warning

# parity_kernels (one source, two compilers) lives with the conformance tests
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "test", "python", "conformance"))
import parity_kernels as pk  # noqa: E402

EXPERTS, N_FF, D_MODEL, TOP_K = 8, 14336, 4096, 2
DECODE_TOKENS = [1, 16, 64]
PREFILL_TOKENS = [2048, 8192]


def moe_gemm_kernel(w_ptr, x_ptr, y_ptr, expert_offs_ptr, N, K, stride_wn, stride_xm, stride_ym,
                    BLOCK_N: tl.constexpr, BLOCK_T: tl.constexpr, BLOCK_K: tl.constexpr):
    """Grouped GEMM over experts: y[t, :] = x[t, :] @ W_e.T for the rows t of expert e.

    x and y hold the routed token rows sorted by expert; rows expert_offs[e] .. expert_offs[e+1]
    go to expert e, whose weight is rows e*N .. e*N+N of w (experts*N x K). One program per
    (N tile, expert) walks that expert's token tiles with a `while` loop, so the grid does not
    depend on the routing (one CUDA graph serves every batch). The product is computed
    transposed, W tile (BLOCK_N x K) times x tile (K x BLOCK_T): the 2:4 weight is the left
    operand of the MMA, and a decode step's few tokens fill its narrow side.
    N % BLOCK_N == 0 and K % BLOCK_K == 0 (the weights are not masked).
    """
    pid_n = tl.program_id(0)
    expert = tl.program_id(1)
    start = tl.load(expert_offs_ptr + expert)
    end = tl.load(expert_offs_ptr + expert + 1)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    w_rows = expert * N + offs_n
    t0 = start
    while t0 < end:
        offs_t = t0 + tl.arange(0, BLOCK_T)
        w_ptrs = w_ptr + w_rows[:, None] * stride_wn + offs_k[None, :]
        x_ptrs = x_ptr + offs_t[None, :] * stride_xm + offs_k[:, None]
        acc = tl.zeros((BLOCK_N, BLOCK_T), dtype=tl.float32)
        for _ in range(0, tl.cdiv(K, BLOCK_K)):
            w = tl.load(w_ptrs)
            xt = tl.load(x_ptrs, mask=offs_t[None, :] < end, other=0.0)
            acc = tl.dot(w, xt, acc)
            w_ptrs += BLOCK_K
            x_ptrs += BLOCK_K
        y_ptrs = y_ptr + offs_t[None, :] * stride_ym + offs_n[:, None]
        tl.store(y_ptrs, acc.to(tl.float16), mask=offs_t[None, :] < end)
        t0 += BLOCK_T


@dataclass(frozen=True)
class Tile:
    """One launch config: tile sizes, warps and pipeline stages."""

    block_n: int
    block_t: int
    block_k: int
    warps: int = 4
    stages: int = 3

    @property
    def constexprs(self) -> dict[str, int]:
        return {"BLOCK_N": self.block_n, "BLOCK_T": self.block_t, "BLOCK_K": self.block_k}


DECODE_TILES = [Tile(64, 16, 128, 4, 4), Tile(128, 16, 128, 4, 4), Tile(128, 16, 64, 4, 4), Tile(64, 16, 64, 4, 6)]
PREFILL_TILES = [Tile(128, 128, 64, 4, 3), Tile(128, 128, 64, 8, 3), Tile(128, 256, 64, 8, 3),
                 Tile(256, 128, 64, 8, 3), Tile(128, 256, 64, 8, 4)]
SPARSECC_PREFILL_FORMS: list[tuple[Tile, dict[str, bool]]] = [
    (Tile(128, 256, 64, 8, 4), {"tma_extents": True}),
    (Tile(128, 256, 64, 8, 4), {"tma_extents": True, "wgmma_unroll": True}),
    (Tile(128, 256, 64, 8, 4), {"tma_extents": True, "producer_warpgroup": True}),
    (Tile(128, 256, 64, 8, 4), {"tma_extents": True, "producer_warpgroup": True, "wgmma_unroll": True})]
"""sparsecc's prefill configs with compile switches, beside the tiles both sides try: the K loop
on TMA copies with the tensor maps sized from the allocations (`tma_extents`: one ring across a
program's token tiles, filled by a producer warp), four stages deep. `bench/moe_sweep.py`
(NOTES stop 31 run 9, H100): 0.817-0.823 ms against 0.915 for the same tile on cp.async; with
three stages the TMA form waits on its ring (ncu: 51% of stall samples on the full-slot
mbarrier) and runs 0.99-1.01 ms. With a producer warpgroup whose registers go to the compute
warps (`producer_warpgroup`): 0.795 ms against 0.823 in one `moe_sweep.py` run, but in the next
`bench/moe.py` run the unrolled form without it was the best (0.816 ms): within run-to-run noise
(NOTES stop 32 runs 2-4)."""


def route(tokens: int, experts: int, top_k: int, d_model: int, device: str, seed: int = 0) -> tuple[Any, Any, Any]:
    """Random top-k routing of `tokens` tokens: (x sorted by expert (tokens*top_k x d_model),
    int32 offsets (experts+1), the expert of each sorted row). Setup, not timed."""
    import torch

    g = torch.Generator(device="cpu").manual_seed(seed)
    x = torch.randn(tokens, d_model, generator=g).to(torch.float16)
    logits = torch.randn(tokens, experts, generator=g)
    chosen = logits.topk(top_k, dim=1).indices.reshape(-1)  # (tokens*top_k,)
    order = torch.argsort(chosen, stable=True)
    rows = torch.arange(tokens).repeat_interleave(top_k)[order]
    counts = torch.bincount(chosen, minlength=experts)
    offs = torch.zeros(experts + 1, dtype=torch.int32)
    offs[1:] = torch.cumsum(counts, 0)
    return x[rows].contiguous().to(device), offs.to(device), chosen[order].to(device)


def make_weights(experts: int, n: int, k: int, device: str, seed: int = 1) -> Any:
    """All experts' weights stacked (experts*n x k), pruned 2:4 along K."""
    import torch

    import sparsecc

    g = torch.Generator(device="cpu").manual_seed(seed)
    w = (torch.randn(experts * n, k, generator=g) / k**0.5).to(torch.float16)
    return sparsecc.prune_2to4(w.to(device))


def reference(w: Any, x: Any, offs: Any, n: int) -> Any:
    """torch's dense grouped GEMM, expert by expert, in fp32."""
    import torch

    y = torch.empty(x.shape[0], n, dtype=torch.float32, device=x.device)
    o = offs.tolist()
    for e in range(len(o) - 1):
        if o[e + 1] > o[e]:
            y[o[e]:o[e + 1]] = x[o[e]:o[e + 1]].float() @ w[e * n:(e + 1) * n].float().T
    return y


def launch(kernel: Any, w: Any, x: Any, y: Any, offs: Any, n: int, k: int, tile: Tile, experts: int,
           **switches: bool) -> None:
    """One launch of `kernel` (either compiler's); `switches` are sparsecc compile switches
    (`sparsecc.switches.SWITCHES`, e.g. mbarriers=True), for sparsecc's kernel only."""
    grid = (n // tile.block_n, experts)
    kernel[grid](w, x, y, offs, n, k, w.stride(0), x.stride(0), y.stride(0), **tile.constexprs,
                 num_warps=tile.warps, num_stages=tile.stages, **switches)


def max_error(y: Any, ref: Any) -> float:
    """Max abs error relative to max(1, |ref|); NaN (unwritten rows) counts as infinite."""
    err = (y.float() - ref).abs().max().item() if y.numel() else 0.0
    return float("inf") if err != err else err / max(1.0, ref.abs().max().item() if ref.numel() else 1.0)


# --------------------------------------------------------------------------------------
# CPU mode: interpreter against torch, and both compilers' PTX for sm_90a
# --------------------------------------------------------------------------------------


def sparsecc_signature(sparse: bool = True) -> dict[str, str]:
    """The signature `sparsecc.jit` specializes the GPU launches to (Mixtral's shapes: 16-byte
    aligned tensors, every size and stride a multiple of 16), so that the CPU's PTX is the
    GPU's."""
    return {"w_ptr": "*fp16:NV24" if sparse else "*fp16:16", "x_ptr": "*fp16:16", "y_ptr": "*fp16:16",
            "expert_offs_ptr": "*i32:16", "N": "i32:16", "K": "i32:16", "stride_wn": "i32:16",
            "stride_xm": "i32:16", "stride_ym": "i32:16"}


def sparsecc_ptx(tile: Tile, target: str = "sm_90a") -> str:
    import sparsecc

    ck = sparsecc.compile(pk.sparsecc_kernel(moe_gemm_kernel), sparsecc_signature(), tile.constexprs,
                          target=target, num_warps=tile.warps, num_stages=tile.stages)
    return str(ck.asm["ptx"])


def triton_ptx(tile: Tile) -> str:
    import triton
    from triton.backends.compiler import GPUTarget

    sig = {"w_ptr": "*fp16", "x_ptr": "*fp16", "y_ptr": "*fp16", "expert_offs_ptr": "*i32", "N": "i32",
           "K": "i32", "stride_wn": "i32", "stride_xm": "i32", "stride_ym": "i32",
           **{name: "constexpr" for name in tile.constexprs}}
    src = triton.compiler.ASTSource(pk.triton_kernel(moe_gemm_kernel), sig, tile.constexprs)
    k = triton.compile(src, target=GPUTarget("cuda", 90, 32),
                       options={"num_warps": tile.warps, "num_stages": tile.stages})
    return str(k.asm["ptx"])


def cpu_check() -> int:
    """Tiny shapes on sparsecc's interpreter against torch (ragged expert sizes, an empty
    expert), then sparsecc's and Triton's PTX for sm_90a."""
    import torch

    import sparsecc

    os.environ["SPARSECC_INTERPRET"] = "1"
    kernel = pk.sparsecc_kernel(moe_gemm_kernel)
    experts, n, k = 4, 64, 128
    failures = 0
    for tokens in [1, 5, 23]:
        x, offs, _ = route(tokens, experts, TOP_K, k, "cpu", seed=tokens)
        w = make_weights(experts, n, k, "cpu", seed=tokens + 1)
        ref = reference(w, x, offs, n)
        for sparse in (True, False):
            y = torch.full((x.shape[0], n), float("nan"), dtype=torch.float16)
            launch(kernel, sparsecc.compress(w) if sparse else w, x, y, offs, n, k, Tile(32, 16, 32),
                   experts)
            err = max_error(y, ref)
            ok = err < 1e-2
            failures += not ok
            print(f"interpreter tokens={tokens:3d} {'2:4' if sparse else 'dense'}: max rel err {err:.2e} "
                  f"{'ok' if ok else 'FAIL'}")
    for tile in (DECODE_TILES[1], PREFILL_TILES[0]):
        ptx = sparsecc_ptx(tile)
        sp = "wgmma.mma_async.sp" in ptx or "mma.sp" in ptx
        failures += not sp
        print(f"sparsecc sm_90a {tile}: {'wgmma.sp' if 'wgmma.mma_async.sp' in ptx else 'mma.sp' if sp else 'NO sparse MMA'}"
              f", {len(ptx.splitlines())} PTX lines")
        tptx = triton_ptx(tile)
        print(f"triton   sm_90a {tile}: {'wgmma' if 'wgmma' in tptx else 'mma'}, {len(tptx.splitlines())} PTX lines")
    print("check:", "ok" if not failures else f"{failures} FAILED")
    return 1 if failures else 0


# --------------------------------------------------------------------------------------
# GPU mode: both sides, same run, CUDA graphs
# --------------------------------------------------------------------------------------


@dataclass
class Row:
    phase: str
    tokens: int
    triton_ms: float | None = None
    sparsecc_ms: float | None = None
    triton_tile: str = ""
    sparsecc_tile: str = ""
    note: str = ""

    @property
    def speedup(self) -> float | None:
        return self.triton_ms / self.sparsecc_ms if self.triton_ms and self.sparsecc_ms else None


def _tile_name(t: Tile) -> str:
    return f"{t.block_n}x{t.block_t}x{t.block_k}/w{t.warps}s{t.stages}"


def _config_name(tile: Tile, switches: dict[str, bool]) -> str:
    """'128x256x64/w8s4', with the compile switches after it: '128x256x64/w8s4 tma_extents'."""
    return " ".join([_tile_name(tile), *(k if v else f"{k}=0" for k, v in switches.items())])


def best_time(kernel: Any, w: Any, x: Any, offs: Any, ref: Any, configs: list[Tile | tuple[Tile, dict[str, bool]]],
              notes: list[str]) -> tuple[float | None, str]:
    """Best do_bench_cudagraph median over `configs` (tiles, or (tile, compile switches) for
    sparsecc's kernel), each checked against `ref` first."""
    import torch
    import triton.testing

    best: tuple[float | None, str] = (None, "")
    for config in configs:
        tile, switches = config if isinstance(config, tuple) else (config, {})
        name = _config_name(tile, switches)
        y = torch.full((x.shape[0], N_FF), float("nan"), dtype=torch.float16, device="cuda")
        def fn(tile: Tile = tile, y: Any = y, switches: dict[str, bool] = switches) -> None:
            launch(kernel, w, x, y, offs, N_FF, D_MODEL, tile, EXPERTS, **switches)
        try:
            fn()
            torch.cuda.synchronize()
        except Exception as e:  # noqa: BLE001 - a refused config is a note, the others still run
            notes.append(f"{name}: {type(e).__name__}: {str(e).splitlines()[0][:120]}")
            continue
        err = max_error(y, ref)
        if not err < 2e-2:
            notes.append(f"{name}: WRONG (max rel err {err:.3g})")
            continue
        ms = float(triton.testing.do_bench_cudagraph(fn, rep=100, return_mode="median"))
        if best[0] is None or ms < best[0]:
            best = (ms, name)
    return best


def gpu_bench(tokens_list: list[tuple[str, int]]) -> list[Row]:
    import sparsecc

    w = make_weights(EXPERTS, N_FF, D_MODEL, "cuda")
    w_sparse = sparsecc.compress(w)
    dense_k, sparse_k = pk.triton_kernel(moe_gemm_kernel), pk.sparsecc_kernel(moe_gemm_kernel)
    rows = []
    for phase, tokens in tokens_list:
        x, offs, _ = route(tokens, EXPERTS, TOP_K, D_MODEL, "cuda", seed=tokens)
        ref = reference(w, x, offs, N_FF)
        tiles = DECODE_TILES if phase == "decode" else PREFILL_TILES
        notes: list[str] = []
        row = Row(phase, tokens)
        row.triton_ms, row.triton_tile = best_time(dense_k, w, x, offs, ref, tiles, notes)
        forms = SPARSECC_PREFILL_FORMS if phase == "prefill" else []
        row.sparsecc_ms, row.sparsecc_tile = best_time(sparse_k, w_sparse, x, offs, ref, [*tiles, *forms], notes)
        row.note = "; ".join(notes)
        rows.append(row)
        print(f"{phase} {tokens}: triton {row.triton_ms} sparsecc {row.sparsecc_ms} {row.note}", flush=True)
    return rows


def _ms(v: float | None) -> str:
    return f"{v:.4f}" if v is not None else "refused"


def table(rows: list[Row], device: str) -> str:
    import torch
    import triton

    lines = [f"# MoE grouped GEMM, Mixtral shape ({EXPERTS} experts, W {N_FF}x{D_MODEL}, top-{TOP_K}, fp16)",
             "", f"{datetime.date.today()}, {device}, torch {torch.__version__}, triton {triton.__version__}. "
             "Same kernel source (bench/moe.py: moe_gemm_kernel); Triton compiles it with dense experts, "
             "sparsecc with 2:4 experts (one NV24 tensor, experts*N x K). do_bench_cudagraph medians, "
             "best config per side (sparsecc's with compile switches where named). Target: >=1.5x at decode, >=1.3x at prefill.", "",
             "| phase | tokens | routed rows | Triton dense ms | sparsecc 2:4 ms | speedup | target | Triton tile | sparsecc tile |",
             "|---|---:|---:|---:|---:|---:|---:|---|---|"]
    for r in rows:
        target = 1.5 if r.phase == "decode" else 1.3
        sp = f"{r.speedup:.2f}x" if r.speedup else "-"
        met = "" if r.speedup is None else (" met" if r.speedup >= target else " missed")
        lines.append(f"| {r.phase} | {r.tokens} | {r.tokens * TOP_K} | {_ms(r.triton_ms)} | {_ms(r.sparsecc_ms)} | "
                     f"{sp} | {target}x{met} | {r.triton_tile} | {r.sparsecc_tile} |")
    notes = [f"- {r.phase} {r.tokens}: {r.note}" for r in rows if r.note]
    if notes:
        lines += ["", "Configs that did not run:", *notes]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="CPU: interpreter vs torch on tiny shapes, and PTX")
    p.add_argument("--quick", action="store_true", help="one decode and one prefill size")
    p.add_argument("--out", help="write the table as markdown to this file")
    a = p.parse_args(argv)
    if a.check:
        return cpu_check()
    import torch

    if not torch.cuda.is_available():
        print("no GPU: use --check on the CPU", file=sys.stderr)
        return 2
    sizes = [("decode", t) for t in DECODE_TOKENS] + [("prefill", t) for t in PREFILL_TOKENS]
    if a.quick:
        sizes = [("decode", 16), ("prefill", 2048)]
    rows = gpu_bench(sizes)
    text = table(rows, torch.cuda.get_device_name())
    if a.out:
        os.makedirs(os.path.dirname(a.out) or ".", exist_ok=True)
        with open(a.out, "w") as f:
            f.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
