"""Where the Python time of one cold compile goes: sparse_mm's default sm_90a tile, compiled once
in this (fresh) process with an empty disk cache, timed per stage step and per pass.

    python bench/cold_compile.py            # the table: passes, verify, print_ir, emit-ptx, ptxas
    python bench/cold_compile.py --twice    # and a second compile in the same process (no imports)
    python bench/cold_compile.py --profile  # a cProfile of the compile instead (by cumulative time)

Run it several times and compare the minimum (the machine is noisy). Every row is wall time;
nested calls (module.verify recursing into ops) are counted once. `parse_spec` is mostly the
first-use imports of the passes and the lowering; `python` is the whole compile less starting
ptxas and waiting for it (the ttir texts are printed while it runs).
PYTHONDONTWRITEBYTECODE=1 (as this workspace sets it) also charges every lazily imported module's
byte-compilation to the compile: `PYTHONDONTWRITEBYTECODE= python ...` to see it with .pyc files.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.getcwd())
os.environ["SPARSECC_CACHE_DIR"] = tempfile.mkdtemp(prefix="sparsecc-cold-")

import torch  # noqa: E402
from xdsl.ir import Operation  # noqa: E402
from xdsl.passes import PassPipeline  # noqa: E402

import sparsecc  # noqa: E402
from sparsecc import compiler  # noqa: E402
from sparsecc.ops.sparse_mm import default_config, sparse_mm_kernel  # noqa: E402

SIGNATURE = {"D": "*fp16", "A": "*fp16:NV24", "B": "*fp16",
             **{n: "i32:16" for n in ("M", "N", "K", "stride_am", "stride_bk", "stride_dm")},
             "stride_bn": "i32:1", "stride_dn": "i32:1"}
TIMES: dict[str, float] = {}


def timed(owner: Any, name: str, key: str) -> None:
    """Replace `owner.name` by a wrapper adding its wall time to TIMES[key] (outermost call only)."""
    inner: Callable[..., Any] = getattr(owner, name)
    depth = [0]

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        depth[0] += 1
        start = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            depth[0] -= 1
            if depth[0] == 0:
                TIMES[key] = TIMES.get(key, 0.0) + time.perf_counter() - start

    setattr(owner, name, wrapper)


def instrument() -> None:
    timed(Operation, "verify", "verify")
    for name in ("print_ir", "_emit_ptx", "_ptxas", "inherit_locations"):
        timed(compiler, name, name.lstrip("_"))
    timed(compiler.StageResult, "finish", "ptxas (wait)")
    compiler._FINAL_STEPS[compiler.EMIT_PTX] = compiler._emit_ptx  # noqa: SLF001
    compiler._FINAL_STEPS[compiler.PTXAS] = compiler._ptxas  # noqa: SLF001
    parse_spec = PassPipeline.parse_spec

    def timed_parse_spec(*args: Any, **kwargs: Any) -> PassPipeline:
        start = time.perf_counter()
        try:
            return parse_spec(*args, **kwargs)
        finally:
            TIMES["parse_spec (+ imports)"] = TIMES.get("parse_spec (+ imports)", 0.0) + time.perf_counter() - start

    PassPipeline.parse_spec = staticmethod(timed_parse_spec)  # type: ignore[method-assign]

    def apply(self: PassPipeline, ctx: Any, op: Any) -> None:
        for p in self.passes:
            start = time.perf_counter()
            p.apply(ctx, op)
            TIMES["pass " + p.name] = TIMES.get("pass " + p.name, 0.0) + time.perf_counter() - start

    PassPipeline.apply = apply  # type: ignore[method-assign]


def compile_once(group_m_times: int = 1) -> float:
    cfg = default_config(8192, 8192, 8192, torch.float16, "cuda", "sm_90a")
    consts = {"BLOCK_M": cfg.block_m, "BLOCK_N": cfg.block_n, "BLOCK_K": cfg.block_k,
              "GROUP_M": cfg.group_m * group_m_times}
    start = time.perf_counter()
    sparsecc.compile(sparse_mm_kernel, signature=SIGNATURE, constexprs=consts, target="sm_90a",
                     num_warps=cfg.num_warps, num_stages=cfg.num_stages)
    return time.perf_counter() - start


def report(title: str, total: float) -> None:
    print(f"== {title}")
    for key, seconds in sorted(TIMES.items(), key=lambda kv: -kv[1]):
        if seconds >= 0.0005:
            print(f"  {key:42s} {seconds * 1000:7.1f} ms")
    ptxas = TIMES.get("ptxas", 0.0) + TIMES.get("ptxas (wait)", 0.0)
    print(f"  total {total:.3f} s   ptxas (start + wait) {ptxas:.3f} s   python {total - ptxas:.3f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--twice", action="store_true", help="also time a second compile")
    parser.add_argument("--profile", action="store_true", help="print a cProfile instead")
    args = parser.parse_args()
    if args.profile:
        import cProfile
        import pstats

        profile = cProfile.Profile()
        profile.enable()
        compile_once()
        profile.disable()
        pstats.Stats(profile).sort_stats("cumulative").print_stats(50)
        return
    instrument()
    report("cold compile", compile_once())
    if args.twice:
        TIMES.clear()
        report("second compile (twice the GROUP_M)", compile_once(group_m_times=2))


if __name__ == "__main__":
    main()
