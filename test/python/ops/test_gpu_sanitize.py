"""compute-sanitizer over small ragged sparse_mm launches (bench/sanitize_small.py: cp.async
rings of 1-3 stages, mma.sp and wgmma/TMA tiles, K-major B): no memory error, no shared-memory
race, no barrier misuse. Each tool runs the script in a child process under the sanitizer."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]


@pytest.mark.gpu
@pytest.mark.parametrize("tool", ["memcheck", "racecheck", "synccheck"])
def test_sanitizer_is_clean_on_small_ragged_gemms(tool, tmp_path):
    sanitizer = shutil.which("compute-sanitizer")
    if sanitizer is None:
        pytest.skip("compute-sanitizer is not on PATH")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
               SPARSECC_CACHE_DIR=str(tmp_path))
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
