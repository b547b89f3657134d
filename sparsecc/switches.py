"""The compiler's code-changing switches: one table, and the one function that reads their
environment overrides.

Each switch is a `CompileOptions` field, so it is part of every cache key, and it can be set
from `sparsecc.compile(..., tma=False)`, `kernel[grid](..., tma=False)` and as an option of
the pass it drives (`tritongpu-pipeline{tma=false}`). Its environment variable replaces the
built-in default, for A/B runs of whole benchmarks without editing them:

    SPARSECC_TMA=0 python bench/quick_mm.py      # every kernel compiled with tma=False

An option passed explicitly wins over both. The environment is read when a launch takes a
kernel's full path (its first launch of a specialization); later launches of that
specialization take the fast path with the kernel compiled then, so an A/B run inside one
process calls `sparsecc.frontend.jit.drop_fast_paths()` after changing a variable.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Switch:
    """One code-changing switch: its environment variable, its built-in default, and why."""

    env: str
    default: bool
    doc: str


SWITCHES: dict[str, Switch] = {
    "tma": Switch("SPARSECC_TMA", True,
                  "copy the tiles of wgmma K loops with the tensor memory accelerator, synchronised "
                  "through mbarriers, where every stream of the loop allows it "
                  "(tritongpu-pipeline{tma=true}; +13-27% at large shapes on the H100)"),
    "warp_specialize": Switch("SPARSECC_WARP_SPECIALIZE", True,
                              "give a TMA kernel's copies a producer warp of their own "
                              "(+0.5-2.6% at large shapes on the H100)"),
    "producer_warpgroup": Switch("SPARSECC_PRODUCER_WARPGROUP", False,
                                 "with warp_specialize, a kernel of two or more compute warpgroups gets a "
                                 "producer warpgroup instead of one producer warp, and setmaxnreg moves its "
                                 "registers to the compute warps (232 a thread instead of 168 at 8 warps; "
                                 "tritongpu-warp-specialize{warpgroup=true})"),
    "pingpong": Switch("SPARSECC_PINGPONG", False,
                       "with warp_specialize, a 4-warp kernel whose TMA K loop runs inside a `while` "
                       "over work items gets two compute warpgroups that take its trips in turn, one's "
                       "epilogue under the other's K loop, and a producer warpgroup "
                       "(tritongpu-warp-specialize{pingpong=true}; CUTLASS's ping-pong kernels)"),
    "mbarriers": Switch("SPARSECC_MBARRIERS", False,
                        "pipeline cp.async wgmma K loops with per-slot mbarriers instead of CTA "
                        "barriers (tritongpu-pipeline{mbarriers=true}; correct, measured no faster)"),
    "wgmma_unroll": Switch("SPARSECC_WGMMA_UNROLL", False,
                           "unroll every wgmma K loop by two, so each copy of the body has its own "
                           "fragment registers (+0.5-2.3% in TMA loops, ~0.35 s more compile time)"),
    "wgmma_in_flight": Switch("SPARSECC_WGMMA_IN_FLIGHT", False,
                              "in CTA-barrier wgmma K loops, keep the last wgmma group running through "
                              "the barrier (copies run S-2 steps ahead instead of S-1; "
                              "tritongpu-pipeline{wgmma-in-flight=true}; pays off with wgmma_unroll, "
                              "whose two register copies keep the fragment reloads from draining it); "
                              "also a dot whose result only goes to the next iteration through the "
                              "yield, as attention's P @ V (analysis.kloops.carried_in_flight); loops of "
                              "two or more dense wgmma dots take this form without the switch"),
    "wgmma_ring_in_flight": Switch("SPARSECC_WGMMA_RING_IN_FLIGHT", False,
                                   "in mbarrier-ring wgmma K loops whose wgmma groups read shared "
                                   "memory only from the ring's guarded slots, the CTA barriers and "
                                   "scratch stores of the body (bf16 quantized weights: the dequantized "
                                   "tile's layout convert) keep the wgmma group committed last in "
                                   "flight instead of draining it (tritongpu-pipeline{ring-in-flight}, "
                                   "analysis.kloops.ring_in_flight; fp16 quant_wgmma loops have no such "
                                   "barrier and are unchanged)"),
    "wgmma_a_smem": Switch("SPARSECC_WGMMA_A_SMEM", False,
                           "wgmma reads A through a shared-memory descriptor also outside TMA "
                           "kernels (TMA kernels always do; no gain in barrier-synchronised loops)"),
    "dequant_warps_m": Switch("SPARSECC_DEQUANT_WARPS_M", True,
                              "put all warps of a dot whose A is a tt.dequantize along M, so that no "
                              "two warps dequantize the same rows (convert-tt-to-ttg{dequant-warps-m}; "
                              "off: the usual M x N warp grid, whose warps along N share the dot's B)"),
    "dense_wgmma": Switch("SPARSECC_DENSE_WGMMA", True,
                          "on sm_90a, dense 16-bit dots of loaded tiles run as wgmma.mma_async with A and "
                          "B read from shared memory, pipelined like the sparse GEMMs (TMA where the "
                          "tiles allow it), as Triton's Hopper GEMMs do (convert-tt-to-ttg{dense-wgmma}; "
                          "off: mma.sync)"),
    "quant_wgmma": Switch("SPARSECC_QUANT_WGMMA", False,
                          "on sm_90a, a 2:4 dot whose A is an fp16/bf16 tt.dequantize and whose B rows "
                          "(K-major 16-bit) span whole 128-byte column blocks (a quantized weight's "
                          "BLOCK_K >= 128 covers its groups) runs as wgmma.mma_async.sp: each warp "
                          "dequantizes its register-A fragments from the codes the pipeline streams "
                          "into shared memory, B comes through a descriptor (convert-tt-to-ttg"
                          "{quant-wgmma}; off: mma.sp; sparse_linear turns it on for its quantized "
                          "prefill tiles, `LinearConfig.quant_wgmma`)"),
    "register_scales": Switch("SPARSECC_REGISTER_SCALES", True,
                              "a quant_wgmma dot's scales (and zero points) are loaded in its accumulator "
                              "layout, each thread the ones of its own fragment rows, one K step ahead, "
                              "instead of streaming through shared memory; the loop's other tiles can then "
                              "be TMA copies (convert-tt-to-ttg{register-scales}; off: staged in shared memory)"),
    "scale_after_dot": Switch("SPARSECC_SCALE_AFTER_DOT", True,
                              "a quantized weight's scales applied to each group's fp32 MMA sums instead "
                              "of to every dequantized value (mma.sp dots: tritongpu-scale-after-dot; "
                              "4 FMAs a thread a w4g128 group instead of 32 f16x2 multiplies; results "
                              "differ by rounding only; with narrow_copies, a layer's batch-1 GEMMs "
                              "13% faster on the H100)"),
    "narrow_copies": Switch("SPARSECC_NARROW_COPIES", True,
                            "async copies of tiles whose rows hold only 4 or 8 contiguous bytes (a "
                            "quantized weight's scales) as cp.async.ca chunks of that size instead of "
                            "a synchronous ld.global + st.shared every K step (convert-ttg-to-ptx"
                            "{narrow-copies})"),
    "coalesce_mma_stores": Switch("SPARSECC_COALESCE_MMA_STORES", True,
                                  "store an MMA tile whose memory runs along its rows (a transposed "
                                  "product: MoE and sparse_linear's W x^T into y) as 16-byte vectors "
                                  "through a shared scratch (tritongpu-coalesce-mma-stores; off: one "
                                  "st.global.b16 per element)"),
    "tma_store_boxes": Switch("SPARSECC_TMA_STORE_BOXES", False,
                              "with tma_stores, a stored one-warpgroup wgmma tile is staged one box at a "
                              "time through a one-box shared buffer (write a box, store it, wait until "
                              "the TMA has read it, the next box), so the epilogue needs a box of shared "
                              "memory instead of the tile: a deeper ring fits; a box holds as many rows "
                              "as fit, halved down to 16 (for ping-pong's two groups too) "
                              "(tritongpu-coalesce-mma-stores{box-staging}; the ping-pong default "
                              "config turns it on)"),
    "tma_stores": Switch("SPARSECC_TMA_STORES", False,
                         "with coalesce_mma_stores on sm_90+: a 16-bit transposed MMA tile whose block "
                         "pointer a tensor map describes goes out by TMA stores from its shared tile, one "
                         "thread issuing them while the others go on (tritongpu-coalesce-mma-stores"
                         "{tma-stores=true})"),
    "strength_reduce": Switch("SPARSECC_STRENGTH_REDUCE", True,
                              "loops carry the 64-bit addresses of their copies, advanced by a "
                              "loop-invariant step, instead of rebuilding them from i32 offsets every "
                              "iteration (ptx-strength-reduce; attention's loop: 16% fewer SASS "
                              "instructions; some sparse GEMM tiles take more registers)"),
    "tma_extents": Switch("SPARSECC_TMA_EXTENTS", False,
                          "with tma: a block pointer whose extent the kernel never states (an unmasked "
                          "tensor-of-pointers tile, as a grouped GEMM's weights) or states only on the "
                          "device (a token bound loaded from memory, past which the dot's result is never "
                          "stored) gets a TMA plan from what its allocation holds at launch; a launch whose "
                          "K loop would read past a row is refused (sparsecc.analysis.tma_extents; "
                          "tritongpu-pipeline{tma-extents=true}); with warp_specialize, a K loop inside an outer "
                          "loop (a grouped GEMM's token tiles) keeps one ring for all trips and gets a producer "
                          "warp (tritongpu-pipeline{continue-rings=true})"),
}
"""CompileOptions field -> its switch."""

_OFF = ("0", "false", "off", "no")


def parse_flag(raw: str | None) -> bool | None:
    """An environment value as a flag: None when unset or empty, else off for 0/false/off/no."""
    if raw is None or not raw.strip():
        return None
    return raw.strip().lower() not in _OFF


def env_overrides() -> dict[str, bool]:
    """Field -> value of every switch whose environment variable is set: the one place that
    reads them.

    >>> env_overrides()  # run with SPARSECC_TMA=0 in the environment
    {'tma': False}
    """
    out = {}
    for field, switch in SWITCHES.items():
        value = parse_flag(os.environ.get(switch.env))
        if value is not None:
            out[field] = value
    return out


def resolve(given: Mapping[str, bool | None]) -> dict[str, bool]:
    """Every switch's value: the one in `given` when not None, else its environment override,
    else its default. A name that is not a switch is a TypeError naming the switches."""
    unknown = sorted(set(given) - set(SWITCHES))
    if unknown:
        raise TypeError(f"unknown compile option{'s' if len(unknown) > 1 else ''} "
                        f"{', '.join(map(repr, unknown))} (options: num_warps, num_stages, num_ctas, "
                        f"{', '.join(SWITCHES)})")
    env = env_overrides()
    out = {}
    for field, switch in SWITCHES.items():
        value = given.get(field)
        if value is None:
            value = env.get(field, switch.default)
        elif not isinstance(value, bool | int):
            raise TypeError(f"compile option {field}={value!r}: expected True or False")
        out[field] = bool(value)
    return out
