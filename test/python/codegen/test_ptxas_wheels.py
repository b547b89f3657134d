"""ptxas and cuobjdump from NVIDIA's wheels of the tools alone (the `ptx` extra, ~40 MB), so that
`make test` on a CPU machine no longer installs triton (1 GB) only for its ptxas."""

from __future__ import annotations

import importlib.metadata
import os
import re
import subprocess
from pathlib import Path

import pytest

from sparsecc.codegen import ptxas

ROOT = Path(__file__).resolve().parents[3]


def _no_toolkit(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Nothing found before the wheels: no override, no toolkit, an empty PATH, no triton."""
    for var in ("SPARSECC_PTXAS", "SPARSECC_CUOBJDUMP", "CUDA_PATH"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "no-cuda"))
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))
    monkeypatch.setattr(ptxas, "_triton_bin", lambda tool: None)


def _default_toolkit_has(tool: str) -> bool:
    """/usr/local/cuda is always searched before the wheels (this machine's image has a ptxas there)."""
    return os.path.exists(f"/usr/local/cuda/bin/{tool}")


def _fake_tool(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(0o755)
    return path


def test_the_tools_are_found_in_nvidias_wheel_layout(monkeypatch, tmp_path):
    _no_toolkit(monkeypatch, tmp_path)
    site = tmp_path / "site"
    fake_ptxas = _fake_tool(site / "nvidia" / "cuda_nvcc" / "bin" / "ptxas")      # nvidia-cuda-nvcc-cu12
    fake_cuobjdump = _fake_tool(site / "nvidia" / "cu13" / "bin" / "cuobjdump")   # nvidia-cuda-cuobjdump
    (site / "nvidia" / "cuda_runtime" / "lib").mkdir(parents=True)  # another nvidia wheel, no tools
    monkeypatch.syspath_prepend(str(site))
    assert ptxas._nvidia_wheel_bin("ptxas") == fake_ptxas
    assert ptxas._nvidia_wheel_bin("cuobjdump") == fake_cuobjdump
    for tool, find, fake in (("ptxas", ptxas.find_ptxas, fake_ptxas),
                             ("cuobjdump", ptxas.find_cuobjdump, fake_cuobjdump)):
        if not _default_toolkit_has(tool):
            assert Path(find()) == fake


def test_a_non_executable_file_in_the_wheel_layout_is_not_a_tool(monkeypatch, tmp_path):
    site = tmp_path / "site"
    plain = site / "nvidia" / "cuda_nvcc" / "bin" / "ptxas"
    plain.parent.mkdir(parents=True)
    plain.write_text("not a program")
    monkeypatch.syspath_prepend(str(site))
    assert ptxas._nvidia_wheel_bin("ptxas") != plain
    _fake_tool(plain)
    assert ptxas._nvidia_wheel_bin("ptxas") == plain


def test_the_ptx_extra_is_the_tools_not_triton():
    text = (ROOT / "pyproject.toml").read_text()
    ptx = re.search(r"^ptx = \[(.*)\]$", text, flags=re.M).group(1)
    assert "triton" not in ptx
    for dist in ("nvidia-cuda-nvcc-cu12", "nvidia-cuda-cuobjdump", "nvidia-cuda-nvdisasm"):
        assert f'"{dist}==' in ptx, dist


def _installed(dist: str) -> importlib.metadata.Distribution | None:
    try:
        return importlib.metadata.distribution(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


@pytest.mark.parametrize("tool, dist", [("ptxas", "nvidia-cuda-nvcc-cu12"), ("cuobjdump", "nvidia-cuda-cuobjdump"),
                                        ("nvdisasm", "nvidia-cuda-nvdisasm")])
def test_the_installed_wheels_tool_is_found_and_runs(monkeypatch, tmp_path, tool, dist):
    """Where the `ptx` extra is installed (CI, `make test`), its binary is what sparsecc finds
    without a toolkit or triton, and it runs."""
    installed = _installed(dist)
    if installed is None:
        pytest.skip(f"{dist} is not installed (pip install -e '.[ptx]')")
    _no_toolkit(monkeypatch, tmp_path)
    found = ptxas._nvidia_wheel_bin(tool)
    assert found is not None, f"{dist} is installed but its {tool} is not found"
    find = {"ptxas": ptxas.find_ptxas, "cuobjdump": ptxas.find_cuobjdump}.get(tool)
    if find is not None and not _default_toolkit_has(tool):
        assert Path(find()) == found
    assert found.resolve() in {Path(installed.locate_file(f)).resolve() for f in installed.files or []}
    proc = subprocess.run([str(found), "--version"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "Cuda compilation tools" in proc.stdout, proc.stdout + proc.stderr


def test_ci_finds_ptxas_and_cuobjdump():
    """In CI (CI=true) the tools must be there: without them every assembly and SASS test would
    skip and CI pass on less than it claims."""
    if os.environ.get("CI", "").lower() not in ("true", "1"):
        pytest.skip("not CI")
    assert Path(ptxas.find_ptxas()).is_file()
    assert Path(ptxas.find_cuobjdump()).is_file()
    cubin = ptxas.assemble(_TINY_PTX, "sm_80").data  # and cuobjdump -sass runs (it needs nvdisasm)
    assert "EXIT" in ptxas.dump_sass(cubin)


_TINY_PTX = """.version 8.0
.target sm_80
.address_size 64
.visible .entry tiny()
{
  ret;
}
"""
