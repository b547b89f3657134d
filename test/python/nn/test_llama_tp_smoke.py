"""bench/llama_tp.py --cpu-check: the tensor-parallel bench's whole path (2 gloo processes, a tiny
transformers Llama, dense TP with torch's styles and sparse TP with sparse_plan, StaticCache
decode) runs on the CPU, writes its table, and its sparse TP logits match the unsharded sparse
model's (the script exits non-zero otherwise). Skipped where transformers is not installed."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytest.importorskip("transformers")

_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


def test_cpu_check_runs_and_the_tp_logits_match_the_unsharded_model(tmp_path):
    out = tmp_path / "llama-tp.md"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([_ROOT, os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, os.path.join(_ROOT, "bench", "llama_tp.py"), "--cpu-check",
                           "--variants", "dense,sparse,sparse-w4,sparse-w4-swiglu", "--batches", "2", "--out", str(out)],
                          capture_output=True, text=True, timeout=400, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "check passed" in proc.stdout
    table = out.read_text()
    for row in ("| dense-tp |", "| sparse-tp |", "| sparse-w4-tp |", "| sparse-1gpu |", "| sparse-tp ÷ dense-tp |",
                "| sparse-w4-swiglu-tp |", "| sparse-w4-swiglu-tp ÷ dense-tp |"):
        assert row in table, row
    assert "vs sparse-1gpu: b=2: max" in table
    # fused q/k/v (256 + 256 + 256 rows, half a rank) and gate/up for dense and sparse alike (--fuse on)
    assert table.count("qkv_proj 384 rows a rank") == 4 and "4 weight launches a layer (`--fuse on`)" in table
    assert "SwiGLU in the gate_up kernel's epilogue (2 layers)" in table
    assert "| failed" not in table and "Notes on cells" not in table  # no cell failed or fell back


def test_fuse_off_shards_the_separate_projections(tmp_path):
    """--fuse off: torch's ColwiseParallel on q/k/v, gate/up as before 2026-11-26, same check."""
    out = tmp_path / "llama-tp.md"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([_ROOT, os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, os.path.join(_ROOT, "bench", "llama_tp.py"), "--cpu-check", "--fuse", "off",
                           "--variants", "dense,sparse", "--batches", "2", "--out", str(out)],
                          capture_output=True, text=True, timeout=400, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "check passed" in proc.stdout
    table = out.read_text()
    assert table.count("q_proj 128 rows a rank") == 2 and "7 weight launches a layer (`--fuse off`)" in table
