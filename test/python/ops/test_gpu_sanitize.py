"""compute-sanitizer over small ragged launches (bench/sanitize_small.py: sparse_mm with cp.async
rings of 1-4 stages, mma.sp and wgmma/TMA tiles, CTA pairs, K-major B, and user kernels with
tensors of pointers and a sparse right operand; on Hopper, sparse_linear's quantized quant_wgmma
tile, the wide K-major 16-bit wgmma tiles, the 8-bit rings 8-10 stages deep, the 8-bit stream-K
kernel and the grouped GEMM's TMA form), under each pipeline form (TMA off, warp
specialization off, mbarriers, a producer warpgroup): no memory error, no shared-memory race, no
barrier misuse. Each
tool runs the script in a child process under the sanitizer."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]


VARIANTS = {
    "default": {},
    "no-tma": {"SPARSECC_TMA": "0"},
    "no-warp-specialization": {"SPARSECC_WARP_SPECIALIZE": "0"},
    "mbarriers": {"SPARSECC_MBARRIERS": "1", "SPARSECC_TMA": "0"},
    "wgmma-in-flight": {"SPARSECC_WGMMA_IN_FLIGHT": "1", "SPARSECC_WGMMA_UNROLL": "1", "SPARSECC_TMA": "0"},
    "producer-warpgroup": {"SPARSECC_PRODUCER_WARPGROUP": "1"},
}
"""Pipeline forms (the CompileOptions switches' environment overrides); the script itself covers
1-4 stages, mma.sp and wgmma tiles, CTA pairs, K-major B, and user kernels (tensors of
pointers, a sparse right operand)."""


KNOWN_RACES: dict[tuple[str, str], str] = {}
"""(tool, variant) pairs expected to fail, with the reason (a strict xfail); none today. (The
mbarrier form's empty-slot release by lane 0 of each warp raced with the next fill for
racecheck; every thread releases its own reads now.)"""


def _case(tool: str, variant: str):
    reason = KNOWN_RACES.get((tool, variant))
    return pytest.param(tool, variant, marks=pytest.mark.xfail(strict=True, reason=reason)) if reason else (tool, variant)


@pytest.mark.gpu
@pytest.mark.parametrize("tool, variant", [("memcheck", "default"), ("racecheck", "default"), ("synccheck", "default"),
                                           *[_case(t, v) for v in list(VARIANTS)[1:]
                                             for t in ("memcheck", "racecheck", "synccheck")]])
def test_sanitizer_is_clean_on_small_ragged_gemms(tool, variant, tmp_path):
    sanitizer = shutil.which("compute-sanitizer")
    if sanitizer is None:
        pytest.skip("compute-sanitizer is not on PATH")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
               SPARSECC_CACHE_DIR=str(tmp_path), **VARIANTS[variant])
    # (cuda-python probes driver entry points this driver may lack: host API errors, not ours)
    proc = subprocess.run([sanitizer, "--tool", tool, "--report-api-errors", "no", sys.executable,
                           str(REPO / "bench" / "sanitize_small.py")], capture_output=True, text=True,
                          env=env, timeout=900, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    summary = re.search(r"(ERROR|RACECHECK) SUMMARY: (\d+) (errors|hazards displayed \((\d+) errors)", out)
    assert summary is not None, out[-4000:]
    errors = int(summary.group(4) or summary.group(2))
    assert errors == 0, out[-4000:]


LANGUAGE_KERNEL_RUNS = [("memcheck", None), ("synccheck", None),
                        ("racecheck", "test_row_kernels or test_dot_result_reductions or masked_attention and 200")]
"""(tool, -k selection) over bench/sanitize_kernels.py; racecheck runs these kernels ~100x
slower, so it takes the cross-warp exchanges and one attention ring (NOTES stop 21 run 4)."""


@pytest.mark.gpu
@pytest.mark.parametrize("tool, select", LANGUAGE_KERNEL_RUNS, ids=[t for t, _ in LANGUAGE_KERNEL_RUNS])
def test_sanitizer_is_clean_on_the_language_kernels(tool, select, tmp_path):
    """Reductions, scans, attention, the MoE GEMM's nested K loop under each pipeline switch,
    coalesced stores, tutorials and control flow (bench/sanitize_kernels.py runs their GPU
    tests, which still check every result against torch) under a compute-sanitizer tool."""
    sanitizer = shutil.which("compute-sanitizer")
    if sanitizer is None:
        pytest.skip("compute-sanitizer is not on PATH")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
               SPARSECC_CACHE_DIR=str(tmp_path))
    args = ["-k", select] if select else []
    proc = subprocess.run([sanitizer, "--tool", tool, "--report-api-errors", "no", sys.executable,
                           str(REPO / "bench" / "sanitize_kernels.py"), *args], capture_output=True, text=True,
                          env=env, timeout=1800, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    summary = re.search(r"(ERROR|RACECHECK) SUMMARY: (\d+) (errors|hazards displayed \((\d+) errors)", out)
    assert summary is not None, out[-4000:]
    assert int(summary.group(4) or summary.group(2)) == 0, out[-4000:]
