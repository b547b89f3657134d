"""sparsecc.__version__ is the packaged version, and it agrees with CHANGELOG.md's top entry: a
`X.Y.Z.devN` while that entry is "X.Y.Z (unreleased)", `X.Y.Z` once it is released."""

from __future__ import annotations

import re
from pathlib import Path

from packaging.version import Version

import sparsecc

ROOT = Path(__file__).resolve().parents[2]


def _top_entry() -> str:
    """The first `## ...` heading of CHANGELOG.md, without the `## `."""
    return re.search(r"^## (.+)$", (ROOT / "CHANGELOG.md").read_text(), flags=re.M).group(1)


def test_version_matches_pyproject():
    text = (ROOT / "pyproject.toml").read_text()
    assert re.search(r'^version = "([^"]+)"', text, re.M).group(1) == sparsecc.__version__


def test_version_is_the_changelogs_top_entry():
    version = Version(sparsecc.__version__)
    top = _top_entry()
    if version.is_devrelease or version.is_prerelease:
        assert top.startswith(f"{version.base_version} (unreleased)"), (
            f"__version__ {version} is on the way to {version.base_version}; CHANGELOG's top entry is {top!r}")
    else:
        assert top.split()[0] == str(version) and "unreleased" not in top, (
            f"__version__ {version} is a release; CHANGELOG's top entry is {top!r}")


def test_the_development_version_sorts_between_the_releases():
    """What pip and `packaging` make of it: newer than every entry below the top, older than the
    release it leads to."""
    version = Version(sparsecc.__version__)
    released = [Version(m) for m in re.findall(r"^## (\d+\.\d+\.\d+)(?! \(unreleased\))",
                                               (ROOT / "CHANGELOG.md").read_text(), flags=re.M)]
    assert released and all(version > r for r in released if r != version), (version, released)
    assert version <= Version(version.base_version)
