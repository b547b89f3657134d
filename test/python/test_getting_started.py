"""docs/getting-started.md runs as written on a machine without a GPU, and says how to install
there; what a person trying sparsecc from a fresh clone reads first."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "getting-started.md"


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", PAGE.read_text(), flags=re.S)


def test_the_pages_python_runs_on_the_cpu_in_seconds(tmp_path):
    """Every python block, in order, with CUDA hidden: the page picks the CPU and a size the
    interpreter runs (4096³ took hours there); the timeout is the guard."""
    blocks = _blocks("python")
    assert blocks, "getting-started.md has no python example"
    script = tmp_path / "getting_started.py"
    script.write_text("\n".join(blocks))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CUDA_VISIBLE_DEVICES": "",
           "SPARSECC_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("SPARSECC_INTERPRET", None)
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "sparse_mm on cpu: 256x256 @ 256x256 matches torch" in proc.stdout, proc.stdout


def test_the_page_picks_the_device_before_any_tensor():
    first = _blocks("python")[0]
    device_line = first.index('device = "cuda" if torch.cuda.is_available() else "cpu"')
    assert device_line < first.index("torch.randn"), "pick the device and size at the top"
    assert 'device="cuda"' not in first, "a hard-coded CUDA device fails on a CPU machine"


def test_the_page_says_what_the_interpreter_is_for_and_how_to_install_cpu_only():
    text = PAGE.read_text()
    assert "**What the interpreter is for.**" in text and "not for speed" in text
    shell = "\n".join(_blocks("sh"))
    cpu_torch = shell.index("pip install torch --index-url https://download.pytorch.org/whl/cpu")
    assert cpu_torch < shell.index("pip install sparsecc"), "torch from the CPU index first, then sparsecc"
    assert "An existing torch environment" in text
    for extra in ("gpu", "safetensors", "ptx", "test", "docs", "bench"):
        assert f"| `{extra}` |" in text, f"the extras table lacks {extra}"


def test_the_extras_table_lists_every_extra_of_pyproject():
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import pytest

        tomllib = pytest.importorskip("tomli")
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    listed = re.findall(r"^\| `(\w+)` \|", PAGE.read_text(), flags=re.M)
    assert sorted(listed) == sorted(extras), (listed, sorted(extras))
