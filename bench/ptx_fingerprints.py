"""Fingerprints of the PTX of every reference kernel, to prove a refactor changes no code.

    python bench/ptx_fingerprints.py                 # print `name  sha256[:16]  lines` per kernel
    python bench/ptx_fingerprints.py --save F        # write them to F
    python bench/ptx_fingerprints.py --check F       # compare with F; exit 1 naming each change
    python bench/ptx_fingerprints.py --check F -k linear -k mm8   # only kernels whose name has one

The reference set: sparse_mm's default tiles and autotuner candidates (sm_90a and sm_80, aligned
and ragged specializations, column-major B, persistent, CTA pairs), the test and demo kernels,
and the wgmma tiles under every code-changing compiler switch (one subprocess per switch set,
since switches are read from the environment). Runs on the CPU (with the disk cache off): PTX
needs no GPU.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

SWITCH_SETS: dict[str, dict[str, str]] = {
    "": {},
    "no-tma": {"SPARSECC_TMA": "0"},
    "no-ws": {"SPARSECC_WARP_SPECIALIZE": "0"},
    "mbarriers": {"SPARSECC_TMA": "0", "SPARSECC_MBARRIERS": "1"},
    "unroll": {"SPARSECC_WGMMA_UNROLL": "1"},
    "a-smem": {"SPARSECC_TMA": "0", "SPARSECC_WGMMA_A_SMEM": "1"},
}

MM_ALIGNED = {"M": "i32:16", "N": "i32:16", "K": "i32:16", "stride_am": "i32:16", "stride_bk": "i32:16",
              "stride_bn": "i32:1", "stride_dm": "i32:16", "stride_dn": "i32:1"}
MM_RAGGED = {"M": "i32", "N": "i32", "K": "i32:16", "stride_am": "i32:16", "stride_bk": "i32",
             "stride_bn": "i32:1", "stride_dm": "i32", "stride_dn": "i32:1"}


def _ptrs(dtype: str) -> dict[str, str]:
    return {"D": f"*{dtype}", "A": f"*{dtype}:NV24", "B": f"*{dtype}"}


def _cases(switches: str) -> list[tuple[str, object, dict, dict, dict]]:
    """(name, kernel, signature, constexprs, options) of every reference kernel."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "test" / "python"))
    from sparsecc.demo import sparse_gemm_kernel
    from sparsecc.ops.sparse_mm import sparse_mm_kernel

    cases = []

    def mm(name, cfg, target, sig=MM_ALIGNED, dtype="fp16", **extra):
        consts = {"BLOCK_M": cfg[0], "BLOCK_N": cfg[1], "BLOCK_K": cfg[2], "GROUP_M": cfg[3]} | extra
        opts = {"num_warps": cfg[4], "num_stages": cfg[5], "target": target}
        if extra.get("CLUSTER_M", 1) == 2:
            opts["num_ctas"] = 2
        cases.append((f"mm-{name}-{dtype}-{target}", sparse_mm_kernel, _ptrs(dtype) | sig, consts, opts))

    hopper = [(256, 128, 128, 16, 8, 3), (256, 128, 128, 8, 8, 3), (256, 128, 64, 16, 8, 5),
              (64, 64, 128, 8, 4, 4), (64, 32, 128, 8, 4, 4), (64, 128, 128, 8, 4, 3),
              (32, 16, 256, 8, 4, 4), (32, 16, 128, 8, 4, 8), (64, 16, 256, 8, 4, 4),
              (128, 256, 64, 16, 8, 4)]
    ampere = [(128, 128, 64, 8, 4, 3), (128, 128, 64, 8, 4, 4), (256, 128, 64, 8, 8, 3),
              (64, 64, 64, 8, 4, 2), (64, 32, 64, 8, 4, 3)]
    if switches:  # the switches act on wgmma K loops: the sm_90a tiles only
        for cfg in hopper[:4] + hopper[-1:]:
            mm("x".join(map(str, cfg)), cfg, "sm_90a")
            mm("x".join(map(str, cfg)) + "-ragged", cfg, "sm_90a", MM_RAGGED)
        return cases
    for cfg in hopper:
        for dtype in ("fp16", "bf16"):
            mm("x".join(map(str, cfg)), cfg, "sm_90a", dtype=dtype)
        mm("x".join(map(str, cfg)) + "-ragged", cfg, "sm_90a", MM_RAGGED)
    for cfg in ampere:
        mm("x".join(map(str, cfg)), cfg, "sm_80")
        mm("x".join(map(str, cfg)) + "-ragged", cfg, "sm_80", MM_RAGGED)
    kmajor = MM_ALIGNED | {"stride_bk": "i32:1", "stride_bn": "i32:16"}
    for target in ("sm_80", "sm_90a"):
        mm("kmajor", (64, 16, 256, 8, 4, 4), target, kmajor, B_KMAJOR=True)
        mm("kmajor-n1", (32, 16, 256, 8, 4, 4), target, kmajor | {"N": "i32:1"}, B_KMAJOR=True)
    for cfg in [(256, 128, 128, 16, 8, 3), (128, 128, 64, 8, 4, 3)]:
        mm("persistent-" + "x".join(map(str, cfg)), cfg, "sm_90a" if cfg[4] == 8 else "sm_80", PERSISTENT=True)
        mm("persistent-ragged-" + "x".join(map(str, cfg)), cfg, "sm_90a", MM_RAGGED, PERSISTENT=True)
    for cfg in [(256, 128, 128, 16, 8, 3), (128, 256, 64, 16, 8, 4), (256, 128, 64, 16, 8, 5)]:
        mm("pair-" + "x".join(map(str, cfg)), cfg, "sm_90a", CLUSTER_M=2)

    from kernels import SEED_BLOCKS, SEED_SIG, dot_kernel, masked_add_kernel

    gemm_sig = {"M": "i32", "N": "i32", "K": "i32", "stride_am": "i32", "stride_bk": "i32", "stride_dm": "i32"}
    for target in ("sm_80", "sm_90", "sm_90a"):
        cases.append((f"seed-{target}", dot_kernel, SEED_SIG, SEED_BLOCKS, {"target": target, "num_warps": 4,
                                                                            "num_stages": 1}))
        cases.append((f"demo-{target}", sparse_gemm_kernel, _ptrs("fp16") | gemm_sig,
                      {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 64}, {"target": target, "num_warps": 4,
                                                                       "num_stages": 3}))
        cases.append((f"masked-add-{target}", masked_add_kernel,
                      {"X": "*fp32", "Y": "*fp32", "Z": "*fp32", "n": "i32"}, {"BLOCK": 256},
                      {"target": target, "num_warps": 4, "num_stages": 1}))
    cases += _low_precision_cases() + _linear_cases()
    return cases


def _low_precision_cases() -> list[tuple[str, object, dict, dict, dict]]:
    """sparse_mm's 8-bit (int8, fp8) and tf32 (NV12) kernels: the default tiles per target."""
    from sparsecc.ops.sparse_mm_8bit import scaled_sparse_mm_kernel

    cases = []
    tiles = {"sm_90a": [(256, 128, 256, 8, 8, 3), (128, 64, 256, 8, 4, 4), (64, 16, 512, 8, 4, 3)],
             "sm_80": [(128, 128, 128, 8, 4, 3), (64, 16, 512, 8, 4, 3)]}
    tf32_tiles = {"sm_90a": [(256, 128, 64, 8, 8, 3), (64, 64, 32, 8, 4, 4), (32, 16, 128, 8, 4, 4)],
                  "sm_80": [(128, 128, 32, 8, 4, 3)]}
    kinds = [("i8", "i32", False), ("fp8e4nv", "bf16", True), ("fp8e5", "bf16", True), ("fp32", "fp32", False)]
    for elt, out, scaled in kinds:
        enc = "NV12" if elt == "fp32" else "NV24"
        sig = {"D": f"*{out}", "A": f"*{elt}:{enc}", "B": f"*{elt}", "SCALE_A": "*fp32", "SCALE_B": "*fp32",
               "M": "i32", "N": "i32", "K": "i32", "stride_am": "i32:16", "stride_bk": "i32:1",
               "stride_bn": "i32:16", "stride_dm": "i32:16", "stride_dn": "i32:1"}
        for target, cfgs in (tf32_tiles if elt == "fp32" else tiles).items():
            if elt.startswith("fp8") and target == "sm_80":
                continue  # fp8 tensor cores start at sm_89
            for bm, bn, bk, gm, nw, ns in cfgs:
                consts = {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": gm, "B_KMAJOR": True,
                          "ACC_INT": elt == "i8", "ROW_SCALE": scaled, "COL_SCALE": scaled,
                          "K_32": elt != "fp32"}
                cases.append((f"mm8-{elt}-{bm}x{bn}x{bk}-{target}", scaled_sparse_mm_kernel, sig, consts,
                              {"target": target, "num_warps": nw, "num_stages": ns}))
    return cases


def _linear_cases() -> list[tuple[str, object, dict, dict, dict]]:
    """sparse_linear's kernels (fp16 2:4 and quantized weights, split-K) at their default tiles."""
    from sparsecc.ops.sparse_linear import sparse_linear_kernel, sparse_linear_splitk_kernel

    cases = []
    weights = [("fp16", "NV24"), ("bf16", "NV24"), ("fp16", "NV24.w4g128"), ("fp16", "NV24.w8g128"),
               ("fp16", "NV24.w4g64z"), ("bf16", "NV24.w4g128"), ("bf16", "NV24.w8g128z")]
    tiles = [(16, 64, 256, 4, 3), (8, 64, 512, 4, 3), (8, 128, 256, 4, 3), (64, 128, 128, 4, 3)]
    for dtype, enc in weights:
        sig = {"Y": f"*{dtype}", "X": f"*{dtype}", "W": f"*{dtype}:{enc}", "BIAS": f"*{dtype}", "M": "i32",
               "N": "i32", "K": "i32", "stride_xm": "i32", "stride_wn": "i32", "stride_ym": "i32"}
        for target in ("sm_90a", "sm_80"):
            for bm, bn, bk, nw, ns in tiles if target == "sm_90a" else tiles[:1]:
                consts = {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "HAS_BIAS": True, "ACTIVATION": "silu"}
                cases.append((f"linear-{dtype}-{enc}-{bm}x{bn}x{bk}-{target}", sparse_linear_kernel, sig, consts,
                              {"target": target, "num_warps": nw, "num_stages": ns}))
            ksig = sig | {"PARTIALS": "*fp32", "TICKETS": "*i32"}
            ksig = {k: ksig[k] for k in ("Y", "X", "W", "BIAS", "PARTIALS", "TICKETS", "M", "N", "K",
                                         "stride_xm", "stride_wn", "stride_ym")}
            consts = {"BLOCK_M": 8, "BLOCK_N": 64, "BLOCK_K": 256, "SPLIT_K": 4, "HAS_BIAS": False,
                      "ACTIVATION": "none"}
            cases.append((f"linear-splitk-{dtype}-{enc}-{target}", sparse_linear_splitk_kernel, ksig, consts,
                          {"target": target, "num_warps": 4, "num_stages": 3}))
    return cases


def fingerprints(switches: str, only: list[str]) -> dict[str, str]:
    """name -> 'sha256[:16] lines' of each reference kernel's PTX, under one switch set (only
    the kernels whose name contains one of `only`, when given)."""
    import sparsecc

    out = {}
    for name, kernel, sig, consts, opts in _cases(switches):
        key = f"{switches}:{name}" if switches else name
        if only and not any(k in key for k in only):
            continue
        try:
            ptx = sparsecc.compile(kernel, signature=sig, constexprs=consts, **opts).asm["ptx"]
            out[key] = f"{hashlib.sha256(ptx.encode()).hexdigest()[:16]} {ptx.count(chr(10))}"
        except Exception as e:  # a kernel that stops compiling is a change too
            out[key] = f"error {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--save", type=Path)
    ap.add_argument("--check", type=Path)
    ap.add_argument("-k", dest="only", action="append", default=[],
                    help="only the kernels whose name contains this (repeatable)")
    ap.add_argument("--switches", help=argparse.SUPPRESS)  # one subprocess's switch set
    args = ap.parse_args()
    if args.switches is not None:
        print(json.dumps(fingerprints(args.switches, args.only)))
        return 0
    allprints: dict[str, str] = {}
    for name, env in SWITCH_SETS.items():
        env = os.environ | env | {"SPARSECC_CACHE": "0"}
        only = [arg for k in args.only for arg in ("-k", k)]
        proc = subprocess.run([sys.executable, __file__, "--switches", name, *only], env=env,
                              capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            sys.stderr.write(proc.stderr)
            return 2
        allprints.update(json.loads(proc.stdout.splitlines()[-1]))
    text = "".join(f"{k}  {v}\n" for k, v in sorted(allprints.items()))
    if args.save:
        args.save.write_text(text)
    if args.check:
        want = dict(line.split("  ", 1) for line in args.check.read_text().splitlines() if line)
        if args.only:
            want = {k: v for k, v in want.items() if any(o in k for o in args.only)}
        changed = [k for k in sorted(set(want) | set(allprints)) if want.get(k) != allprints.get(k)]
        for k in changed:
            print(f"changed: {k}: {want.get(k, '(none)')} -> {allprints.get(k, '(none)')}")
        print(f"{len(allprints) - len(changed)} of {len(allprints)} kernels byte-identical")
        return 1 if changed else 0
    if not args.save:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
