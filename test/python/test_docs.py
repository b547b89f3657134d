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
    for page in ("index", "getting-started", "kernels", "formats", "compiler", "seed", "torch", "language",
                 "performance"):
        assert (tmp_path / f"{page}.html").is_file(), page


def test_every_page_is_in_the_toctree():
    index = (DOCS / "index.md").read_text()
    for page in DOCS.glob("*.md"):
        if page.stem != "index":
            assert f"\n{page.stem}\n" in index, f"{page.name} is not in index.md's toctree"


def test_the_seed_pages_ir_is_what_the_compiler_prints():
    """docs/seed.md includes the seed kernel's stages from docs/seed/; they must be today's."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("seed_kernel", DOCS / "seed_kernel.py")
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    for name, text in module.stages().items():
        assert (DOCS / "seed" / name).read_text() == text, (
            f"docs/seed/{name} is stale: run `python docs/seed_kernel.py --write`")
