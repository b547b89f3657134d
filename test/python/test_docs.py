"""The user guide (docs/) builds with Sphinx, warnings as errors, and covers what it promises."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_docs_build_without_warnings(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "sphinx", "-W", "-q", "-b", "html", str(DOCS), str(tmp_path)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for page in ("index", "getting-started", "kernels", "formats", "compiler", "torch", "language", "performance"):
        assert (tmp_path / f"{page}.html").is_file(), page


def test_every_page_is_in_the_toctree():
    index = (DOCS / "index.md").read_text()
    for page in DOCS.glob("*.md"):
        if page.stem != "index":
            assert f"\n{page.stem}\n" in index, f"{page.name} is not in index.md's toctree"
