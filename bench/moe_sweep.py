"""Tuning sweep of bench/moe.py's MoE grouped GEMM: both compilers, many tiles, one GPU call.

    python bench/moe_sweep.py                          # decode 16 and prefill 2048, <= ~4 min
    python bench/moe_sweep.py --phase decode --tokens 64
    python bench/moe_sweep.py --tile decode:64x16x128w4s6 --tile prefill:256x128x64w8s4
    python bench/moe_sweep.py --budget 120             # stop starting configs after 120 s

Each config is one line: phase, tokens, side, tile, the sparsecc compile switches it ran with,
the do_bench_cudagraph median (ms) and the max relative error against torch (`ok`, `WRONG`, or
why it did not run). Configs run in priority order, alternating the sides, and the sweep stops
starting new ones once `--budget` seconds have passed (the rest are listed as skipped). The last
lines give the best config of each side per phase and the speedup. Both sides try every tile
(the same source: Triton with dense experts, sparsecc with 2:4 experts); sparsecc also tries
each tile under the compile switches in SPARSECC_VARIANTS.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass, field
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import moe  # noqa: E402
import moe_ncu  # noqa: E402

pk = moe.pk

DECODE_SWEEP = [moe.Tile(64, 16, 128, 4, 4), moe.Tile(128, 16, 128, 4, 4), moe.Tile(128, 16, 64, 4, 4),
                moe.Tile(64, 16, 128, 4, 6), moe.Tile(64, 16, 64, 4, 6), moe.Tile(128, 16, 64, 4, 8),
                moe.Tile(64, 16, 256, 4, 3), moe.Tile(128, 16, 128, 4, 3), moe.Tile(64, 16, 64, 4, 4),
                moe.Tile(128, 16, 128, 8, 4)]
"""Decode tiles, most promising first: BLOCK_T = 16 (a decode step routes a few rows per
expert), BLOCK_N x BLOCK_K weight tiles streamed from DRAM, deeper rings for more bytes in flight."""
PREFILL_SWEEP = [moe.Tile(128, 256, 64, 8, 3), moe.Tile(128, 128, 64, 8, 3), moe.Tile(256, 128, 64, 8, 3),
                 moe.Tile(128, 256, 64, 8, 4), moe.Tile(128, 128, 64, 8, 4), moe.Tile(128, 128, 64, 4, 3),
                 moe.Tile(128, 256, 32, 8, 5), moe.Tile(128, 128, 128, 8, 3)]
"""Prefill tiles, most promising first (Triton's best of bench/moe.md first)."""
SPARSECC_VARIANTS: list[dict[str, bool]] = [
    {}, {"mbarriers": True}, {"mbarriers": True, "wgmma_unroll": True},
    {"mbarriers": True, "wgmma_unroll": True, "wgmma_a_smem": True},
    {"wgmma_in_flight": True, "wgmma_unroll": True}, {"wgmma_in_flight": True, "wgmma_unroll": True, "wgmma_a_smem": True},
    {"tma_extents": True}, {"tma_extents": True, "wgmma_unroll": True},
    {"tma_extents": True, "warp_specialize": False}, {"wgmma_a_smem": True}, {"wgmma_a_smem": True, "wgmma_unroll": True},
    {"tma_extents": True, "producer_warpgroup": True}]
"""sparsecc compile switches tried per tile (`sparsecc.switches.SWITCHES`): the defaults (CTA
barriers: each iteration drains the wgmma group before the barrier); per-slot mbarriers (no CTA
barrier, but the ldmatrix of the next fragments still waits for the group in flight, whose
registers it overwrites); mbarriers with the loop unrolled by two (each half has its own
fragment and metadata registers: one wgmma group stays in flight while the next is loaded);
the same with wgmma's A (the 2:4 values) read from shared memory (fewer registers); CTA barriers
with one wgmma group kept in flight through them (copies one step less ahead), unrolled by two; TMA
copies whose tensor maps take the weights' and tokens' extents from their allocations (the
values read by wgmma through a descriptor, one mbarrier ring for all token tiles, filled by a
producer warp; `tma_extents`), alone and unrolled by two (each half its own metadata
registers); and for the A/B of that producer warp, tma_extents without warp specialization
(a ring initialised per token tile, thread 0 copying in line with the compute warps); and the
CTA-barrier loop with wgmma's A read through a descriptor (no ldmatrix of the values), alone
and unrolled by two; and tma_extents with a producer warpgroup whose registers setmaxnreg moves
to the compute warps (`producer_warpgroup`, at 8 warps only). A switch
that does not apply to a tile (mma.sp loops) gives the default's PTX: not re-timed."""


SHORT = {"mbarriers": "mbar", "wgmma_unroll": "unroll", "wgmma_a_smem": "asmem", "tma_extents": "tmaext",
         "warp_specialize": "ws", "producer_warpgroup": "pwg"}
"""Switch names as the result lines print them."""


def switch_label(switches: dict[str, bool]) -> str:
    """{'mbarriers': True, 'wgmma_unroll': True} -> 'mbar+unroll' ('-': the defaults)."""
    return "+".join(SHORT.get(k, k) + ("" if v else "=0") for k, v in switches.items()) or "-"


@dataclass
class Result:
    phase: str
    tokens: int
    side: str
    tile: moe.Tile
    switches: dict[str, bool] = field(default_factory=dict)
    ms: float | None = None
    err: float | None = None
    note: str = ""

    def line(self) -> str:
        sw = switch_label(self.switches)
        ms = f"{self.ms:8.4f} ms" if self.ms is not None else "       - ms"
        err = f"err {self.err:.1e}" if self.err is not None else "err    -"
        return (f"{self.phase:7s} {self.tokens:5d} {self.side:8s} {moe._tile_name(self.tile):18s} {sw:17s} "
                f"{ms}  {err}  {self.note}")


def run_config(kernel: Any, w: Any, x: Any, offs: Any, ref: Any, r: Result, rep: int) -> None:
    """Launch once (compile), check against torch, then time with CUDA graphs; fills `r`."""
    import torch
    import triton.testing

    y = torch.full((x.shape[0], moe.N_FF), float("nan"), dtype=torch.float16, device="cuda")

    def fn() -> None:
        moe.launch(kernel, w, x, y, offs, moe.N_FF, moe.D_MODEL, r.tile, moe.EXPERTS, **r.switches)

    try:
        fn()
        torch.cuda.synchronize()
    except Exception as e:  # noqa: BLE001 - a refused config is a line, the others still run
        r.note = f"{type(e).__name__}: {str(e).splitlines()[0][:110] if str(e) else ''}"
        return
    r.err = moe.max_error(y, ref)
    if not r.err < 2e-2:
        r.note = "WRONG"
        return
    r.ms = float(triton.testing.do_bench_cudagraph(fn, rep=rep, return_mode="median"))
    r.note = "ok"


def sparsecc_ptx_hash(r: Result) -> str | None:
    """A digest of the PTX sparsecc compiles config `r` to (the compile lands in the disk cache,
    which the launch then reads), or None if it does not compile: variants whose switches do not
    apply to a tile (mbarriers in an mma.sp loop) give the default's PTX and are not re-timed."""
    import hashlib

    import sparsecc

    try:
        ck = sparsecc.compile(pk.sparsecc_kernel(moe.moe_gemm_kernel), moe.sparsecc_signature(), r.tile.constexprs,
                              target="sm_90a", num_warps=r.tile.warps, num_stages=r.tile.stages, **r.switches)
    except Exception:  # noqa: BLE001 - the launch reports it
        return None
    return hashlib.sha256(str(ck.asm["ptx"]).encode()).hexdigest()


def plan(phase: str, tokens: int, tiles: list[moe.Tile],
         variants: list[dict[str, bool]] | None = None) -> list[Result]:
    """The configs of one phase in run order: per tile Triton, then sparsecc's variants
    (`SPARSECC_VARIANTS` unless given)."""
    out = []
    for tile in tiles:
        out.append(Result(phase, tokens, "triton", tile))
        out += [Result(phase, tokens, "sparsecc", tile, dict(v)) for v in variants or SPARSECC_VARIANTS]
    return out


def parse_variants(spec: str) -> list[dict[str, bool]] | None:
    """'-,tmaext,tmaext+unroll' -> those SPARSECC_VARIANTS (by `switch_label`); '' -> None (all).

    >>> parse_variants("-,mbar")
    [{}, {'mbarriers': True}]
    """
    if not spec:
        return None
    by_label = {switch_label(v): v for v in SPARSECC_VARIANTS}
    unknown = [lab for lab in spec.split(",") if lab not in by_label]
    if unknown:
        raise SystemExit(f"moe_sweep: unknown variant(s) {', '.join(unknown)}; known: {', '.join(by_label)}")
    return [by_label[lab] for lab in spec.split(",")]


def best(results: list[Result], side: str) -> Result | None:
    timed = [r for r in results if r.side == side and r.ms is not None]
    return min(timed, key=lambda r: r.ms or 0.0) if timed else None


def summary(phase: str, tokens: int, results: list[Result]) -> str:
    t, s = best(results, "triton"), best(results, "sparsecc")
    target = 1.5 if phase == "decode" else 1.3
    parts = [f"best {phase} {tokens}:"]
    for name, r in (("triton", t), ("sparsecc", s)):
        sw = switch_label(r.switches) if r and r.switches else ""
        parts.append(f"{name} {r.ms:.4f} ms ({moe._tile_name(r.tile)}{' ' + sw if sw else ''})" if r else f"{name} -")
    if t and s and t.ms and s.ms:
        sp = t.ms / s.ms
        parts.append(f"speedup {sp:.2f}x (target {target}x {'met' if sp >= target else 'missed'})")
    return " ".join(parts)


def parse_extra(specs: list[str]) -> dict[str, list[moe.Tile]]:
    """--tile phase:NxTxKwWsS -> {phase: [tiles]}."""
    out: dict[str, list[moe.Tile]] = {"decode": [], "prefill": []}
    for spec in specs:
        phase, _, tile = spec.partition(":")
        if phase not in out or not tile:
            raise SystemExit(f"--tile {spec!r}: expected decode:NxTxKwWsS or prefill:NxTxKwWsS")
        out[phase].append(moe_ncu.parse_tile(tile))
    return out


def dry_run(per_phase: dict[str, list[Result]]) -> int:
    """On the CPU: compile every sparsecc config for sm_90a (PTX + ptxas) and print its
    registers, spills and MMA form; the configs that a GPU sweep would find refused show here."""
    import sparsecc

    kernel = pk.sparsecc_kernel(moe.moe_gemm_kernel)
    failed = 0
    for results in per_phase.values():
        for r in results:
            if r.side != "sparsecc":
                continue
            try:
                ck = sparsecc.compile(kernel, moe.sparsecc_signature(), r.tile.constexprs, target="sm_90a",
                                      num_warps=r.tile.warps, num_stages=r.tile.stages, **r.switches)
            except Exception as e:  # noqa: BLE001 - reported per config
                failed += 1
                r.note = f"{type(e).__name__}: {str(e).splitlines()[0][:110] if str(e) else ''}"
                print(r.line())
                continue
            (res,) = ck.metadata["ptxas"].values()
            form = "wgmma.sp" if "wgmma.mma_async.sp" in ck.asm["ptx"] else "mma.sp"
            r.note = (f"compiles: {res.registers} regs, spills {res.spill_stores}/{res.spill_loads} B, {form}, "
                      f"{ck.metadata.get('shared', 0)} B shared")
            print(r.line(), flush=True)
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--phase", choices=["decode", "prefill", "both"], default="both")
    p.add_argument("--tokens", type=int, help="token count (default: decode 16, prefill 2048)")
    p.add_argument("--tile", action="append", default=[], help="extra tile, phase:NxTxKwWsS (tried first)")
    p.add_argument("--only-extra", action="store_true", help="run only the --tile configs")
    p.add_argument("--budget", type=float, default=200.0, help="seconds after which no config starts")
    p.add_argument("--rep", type=int, default=50, help="do_bench_cudagraph rep (ms)")
    p.add_argument("--variants", default="", help="only these sparsecc variants, by label: -,tmaext,...")
    p.add_argument("--dry-run", action="store_true", help="CPU: compile sparsecc's configs (sm_90a), run nothing")
    a = p.parse_args(argv)
    extra = parse_extra(a.tile)
    phases = ["decode", "prefill"] if a.phase == "both" else [a.phase]
    per_phase: dict[str, list[Result]] = {}
    for phase in phases:
        tokens = a.tokens or (16 if phase == "decode" else 2048)
        tiles = extra[phase] + ([] if a.only_extra else DECODE_SWEEP if phase == "decode" else PREFILL_SWEEP)
        per_phase[phase] = plan(phase, tokens, tiles, parse_variants(a.variants))
    if a.dry_run:
        return dry_run(per_phase)
    import torch

    import sparsecc

    if not torch.cuda.is_available():
        print("no GPU: bench/moe.py --check checks the kernel on the CPU", file=sys.stderr)
        return 2
    t_start = time.time()
    w = moe.make_weights(moe.EXPERTS, moe.N_FF, moe.D_MODEL, "cuda")
    w_sparse = sparsecc.compress(w)
    kernels = {"triton": pk.triton_kernel(moe.moe_gemm_kernel), "sparsecc": pk.sparsecc_kernel(moe.moe_gemm_kernel)}
    weights = {"triton": w, "sparsecc": w_sparse}
    print(f"{torch.cuda.get_device_name()}, setup {time.time() - t_start:.0f} s; budget {a.budget:.0f} s", flush=True)
    # both phases' configs interleaved by priority, so that a tight budget still sees each phase
    inputs: dict[str, tuple[Any, Any, Any, int]] = {}
    for phase in phases:
        tokens = per_phase[phase][0].tokens
        x, offs, _ = moe.route(tokens, moe.EXPERTS, moe.TOP_K, moe.D_MODEL, "cuda", seed=tokens)
        inputs[phase] = (x, offs, moe.reference(w, x, offs, moe.N_FF), tokens)
    order = [r for group in zip(*[per_phase[ph] + [None] * (max(map(len, per_phase.values())) - len(per_phase[ph]))
                                  for ph in phases]) for r in group if r is not None]
    timed_ptx: dict[tuple[str, str], Result] = {}  # (phase, PTX digest) -> the config that ran it
    for r in order:
        if time.time() - t_start > a.budget:
            r.note = "skipped (budget)"
            print(r.line(), flush=True)
            continue
        x, offs, ref, _ = inputs[r.phase]
        t0 = time.time()
        digest = sparsecc_ptx_hash(r) if r.side == "sparsecc" else None
        same = timed_ptx.get((r.phase, digest)) if digest else None
        if same is not None:
            r.note = f"same PTX as {moe._tile_name(same.tile)} {switch_label(same.switches)}: not re-timed"
            print(r.line(), flush=True)
            continue
        run_config(kernels[r.side], weights[r.side], x, offs, ref, r, a.rep)
        if digest and r.ms is not None:
            timed_ptx[(r.phase, digest)] = r
        print(f"{r.line()}  [{time.time() - t0:.1f} s]", flush=True)
    print()
    for phase in phases:
        print(summary(phase, inputs[phase][3], per_phase[phase]))
    print(f"total {time.time() - t_start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
