"""`sparsecc-opt` starts without the parts of sparsecc it does not use.

The lit suite starts `sparsecc-opt` about 180 times; each start paid ~0.34 s of CPU, most of it
imports: `sparsecc/__init__` pulled in the whole front end (ast_to_ttir, jit, the language,
builtins) and the pipeline passes numpy, none of which a pass over IR text needs. A fresh
process checks which modules a run loads (not a timing: timings on a shared machine are noise).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
LIT = REPO / "test" / "lit"

_PROBE = """
import json, sys
from sparsecc.tools.sparsecc_opt import main
sys.stdout = open({out!r}, "w")
code = main({argv!r})
sys.stdout.close()
sys.stdout = sys.__stdout__
print(json.dumps({{"code": code, "modules": sorted(sys.modules)}}))
"""


def _modules_after(tmp_path: Path, argv: list[str]) -> set[str]:
    """The modules a fresh process has loaded after `sparsecc-opt argv` (which must succeed)."""
    probe = _PROBE.format(out=str(tmp_path / "out.mlir"), argv=argv)
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120,
                          cwd=REPO, env={"PYTHONPATH": str(REPO), "PATH": ""})
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["code"] == 0, (tmp_path / "out.mlir").read_text()
    return set(result["modules"])


NEVER = ("torch", "numpy", "sparsecc.frontend", "sparsecc.runtime", "sparsecc.language", "sparsecc.ops")


@pytest.mark.parametrize("argv", [
    [str(LIT / "tt" / "atomic-sem.mlir")],
    [str(LIT / "tt" / "atomic-sem.mlir"), "--print-op-generic"],
    [str(LIT / "decompose-sparse-tensors" / "k-loop.mlir"), "-p", "decompose-sparse-tensors"],
], ids=["print", "generic", "decompose"])
def test_sparsecc_opt_loads_no_front_end_torch_or_numpy(tmp_path, argv):
    if not Path(argv[0]).is_file():
        pytest.fail(f"{argv[0]} is gone: pick another lit input")
    loaded = _modules_after(tmp_path, argv)
    heavy = sorted(m for m in loaded if m.split(".")[0] in NEVER or m.startswith(NEVER[2:]))
    assert not heavy, f"sparsecc-opt {' '.join(argv[1:])} imported {heavy[:8]}"
    assert "xdsl.dialects.math" not in loaded, "math is registered lazily: no math op in the input"


def test_the_lazy_dialects_still_parse(tmp_path):
    """math (and ttg/ptx) load on first use: IR that uses them parses and prints back."""
    src = tmp_path / "m.mlir"
    src.write_text("tt.func @f(%a: f32) -> f32 {\n  %b = math.sqrt %a : f32\n  tt.return %b : f32\n}\n")
    loaded = _modules_after(tmp_path, [str(src)])
    assert "xdsl.dialects.math" in loaded
    assert "math.sqrt %a : f32" in (tmp_path / "out.mlir").read_text()


def test_import_sparsecc_loads_no_compiler():
    """`import sparsecc` is the package root only: `sparsecc.jit` & co load on first use."""
    probe = ("import sys, sparsecc; before = set(sys.modules); jit = sparsecc.jit; "
             "print(sorted(m for m in before if m.startswith(('sparsecc.frontend', 'sparsecc.compiler', 'torch')))); "
             "print(jit.__module__, 'sparsecc.frontend.jit' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120,
                          cwd=REPO, env={"PYTHONPATH": str(REPO), "PATH": ""})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["[]", "sparsecc.frontend.jit True"], proc.stdout
