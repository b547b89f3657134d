"""A user error at a launch prints the user's frames and the located diagnostic, not 45 lines of
compiler frames; SPARSECC_DEBUG=1 prints them all; an internal error keeps its traceback."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import traceback
from pathlib import Path

import pytest
import torch

import sparsecc
import sparsecc.language as tl

REPO = Path(__file__).resolve().parents[3]

_BAD_NAME = """
    import torch, sparsecc
    import sparsecc.language as tl


    @sparsecc.jit
    def k(X, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        x = tl.load(X + offs)
        tl.store(X + offs, x + undefined_name)


    def launch():
        k[(1,)](torch.randn(16), BLOCK=16)


    launch()
"""

_OUT_OF_BOUNDS = """
    import torch, sparsecc
    import sparsecc.language as tl


    @sparsecc.jit
    def k(X, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(X + offs, tl.load(X + offs) + 1)


    x = torch.randn(8)
    k[(1,)](x, BLOCK=16)
"""

_GPU_ONLY = """
    import sparsecc
    import sparsecc.language as tl


    @sparsecc.jit
    def k(X, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        x = tl.load(X + offs)
        tl.store(X + offs, tl.exp(x))


    sparsecc.compile(k, {"X": "*fp64"}, {"BLOCK": 16}, target="sm_90a")
"""


def _run(tmp_path: Path, source: str, **env: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "user_kernel.py"
    script.write_text(textwrap.dedent(source))
    environ = {k: v for k, v in os.environ.items() if k != "SPARSECC_DEBUG"}
    environ.update(PYTHONPATH=str(REPO), SPARSECC_CACHE_DIR=str(tmp_path / "cache"), SPARSECC_INTERPRET="1", **env)
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300,
                          cwd=tmp_path, env=environ)


def test_a_frontend_error_at_launch_is_the_diagnostic_and_the_users_frames(tmp_path):
    proc = _run(tmp_path, _BAD_NAME)
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    script = tmp_path / "user_kernel.py"
    assert lines[-3] == f"sparsecc.frontend.errors.CompilationError: {script}:10:28: error: name 'undefined_name' " \
                        "is not defined", proc.stderr
    assert lines[-2:] == ["    tl.store(X + offs, x + undefined_name)", " " * 27 + "^"], proc.stderr
    # Traceback header, the two user frames (module level -> launch()), each with its line
    assert len(lines) == 1 + 2 * 2 + 3, proc.stderr
    assert "in launch" in proc.stderr and "in <module>" in proc.stderr
    assert "sparsecc" + os.sep not in proc.stderr.replace(str(script), ""), proc.stderr


def test_sparsecc_debug_keeps_the_compiler_frames(tmp_path):
    proc = _run(tmp_path, _BAD_NAME, SPARSECC_DEBUG="1")
    assert proc.returncode == 1
    assert "ast_to_ttir.py" in proc.stderr and "jit.py" in proc.stderr
    assert len(proc.stderr.splitlines()) > 30
    assert proc.stderr.strip().endswith("^")


def test_an_interpreter_error_at_launch_is_short(tmp_path):
    proc = _run(tmp_path, _OUT_OF_BOUNDS)
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 4, proc.stderr
    assert lines[-1].startswith("sparsecc.runtime.interp_values.InterpreterError: k (program id (0, 0, 0)): ")
    assert "out-of-bounds load" in lines[-1] and "parameter 'X'" in lines[-1]


def test_a_pass_error_from_sparsecc_compile_is_short(tmp_path):
    """A later stage's refusal (a cause chained to the located error) prints once, located."""
    proc = _run(tmp_path, _GPU_ONLY)
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 6, proc.stderr
    assert f"{tmp_path / 'user_kernel.py'}:10:24: error: math.exp on f64: the GPU (PTX) lowering computes" in lines[-3]
    assert "The above exception" not in proc.stderr


@sparsecc.jit
def _copy(X, Y, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(Y + offs, tl.load(X + offs))


def test_an_internal_error_keeps_its_traceback(monkeypatch):
    """Only user errors lose the compiler's frames: a bug in sparsecc must stay debuggable."""
    jit_module = sys.modules["sparsecc.frontend.jit"]

    def broken(*args, **kwargs):
        raise RuntimeError("internal: boom")

    monkeypatch.setattr(jit_module, "compile_with_options", broken)
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    with pytest.raises(RuntimeError, match="boom") as info:
        _copy[(1,)](torch.randn(16), torch.empty(16), BLOCK=16)
    files = [frame.filename for frame in traceback.extract_tb(info.value.__traceback__)]
    assert any(f.endswith(os.path.join("frontend", "jit.py")) for f in files), files
    assert files[-1] == __file__  # raised by `broken` above, its frame kept


def test_the_traceback_filter_leaves_non_user_errors_alone():
    from sparsecc.frontend.tracebacks import hide_compiler_frames

    try:
        raise ValueError("not a kernel error")
    except ValueError as e:
        before = e.__traceback__
        hide_compiler_frames(e)
        assert e.__traceback__ is before
