"""The package metadata: an SPDX license expression (PEP 639) rather than the deprecated license
table, which put the whole Apache license text into `pip show`'s License field."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _pyproject() -> dict:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        tomllib = pytest.importorskip("tomli")
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_the_license_is_an_spdx_expression_with_its_file():
    project = _pyproject()["project"]
    assert project["license"] == "Apache-2.0"
    assert project["license-files"] == ["LICENSE"]
    assert (ROOT / "LICENSE").read_text().lstrip().startswith("Apache License")
    assert not any(c.startswith("License ::") for c in project.get("classifiers", [])), \
        "PEP 639: no License classifier next to a license expression"


def test_the_build_requirement_knows_license_expressions():
    """setuptools reads `license = "..."` as an expression from 77.0 on."""
    requires = _pyproject()["build-system"]["requires"]
    setuptools = next(r for r in requires if r.startswith("setuptools"))
    m = re.fullmatch(r"setuptools>=(\d+)(?:\.\d+)*", setuptools)
    assert m and int(m.group(1)) >= 77, setuptools


def test_the_wheel_metadata_names_the_license_in_one_line(tmp_path):
    """What `pip show sparsecc` prints: `License-Expression: Apache-2.0`, no license text."""
    setuptools = pytest.importorskip("setuptools")
    if int(setuptools.__version__.split(".")[0]) < 77:
        pytest.skip(f"setuptools {setuptools.__version__} is older than the build requirement")
    for name in ("pyproject.toml", "setup.py", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, tmp_path / name)
    (tmp_path / "out").mkdir()
    proc = subprocess.run([sys.executable, "-c", "import setuptools.build_meta as b; "
                           "print(b.prepare_metadata_for_build_wheel('out'))"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    info = proc.stdout.strip().splitlines()[-1]
    metadata = (tmp_path / "out" / info / "METADATA").read_text()
    headers = metadata.split("\n\n", 1)[0].splitlines()
    assert "License-Expression: Apache-2.0" in headers
    assert "License-File: LICENSE" in headers
    assert not any(h.startswith("License:") for h in headers), "the full license text is back in License:"
    import sparsecc

    assert f"Version: {sparsecc.__version__}" in headers
