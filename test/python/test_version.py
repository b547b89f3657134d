"""sparsecc.__version__ is the packaged version."""

from __future__ import annotations

import re
from pathlib import Path

import sparsecc


def test_version_matches_pyproject():
    text = (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text()
    assert re.search(r'^version = "([^"]+)"', text, re.M).group(1) == sparsecc.__version__
    assert (Path(__file__).resolve().parents[2] / "CHANGELOG.md").read_text().count(f"## {sparsecc.__version__}") == 1
