"""Run the lit suite (test/lit) under pytest, so one `pytest` covers every .mlir test."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent


def _tool(name: str) -> str | None:
    path = os.pathsep.join([str(BIN), os.environ.get("PATH", "")])
    return shutil.which(name, path=path)


def test_lit_suite_passes() -> None:
    lit = _tool("lit")
    if lit is None:
        pytest.skip("lit is not installed (pip install 'sparsecc[test]')")
    if _tool("filecheck") is None:
        pytest.skip("filecheck is not installed (pip install 'sparsecc[test]')")
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(BIN), env.get("PATH", "")])
    res = subprocess.run(
        [lit, "-q", str(REPO / "test" / "lit")],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=600,
    )
    assert res.returncode == 0, res.stdout + res.stderr
