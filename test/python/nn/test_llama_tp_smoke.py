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
    """One run for the variants' logits and for `--breakdown` (each run starts two gloo ranks
    and builds every model: the suite's longest subprocess)."""
    out = tmp_path / "llama-tp.md"
    proc = _run(tmp_path, "--cpu-check", "--breakdown", "--variants", "dense,sparse,sparse-w4,sparse-w4-swiglu",
                "--batches", "2", "--out", str(out))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "check passed" in proc.stdout
    table = out.read_text()
    _check_breakdown(table)
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


def _run(tmp_path, *argv: str, timeout: int = 400) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([_ROOT, os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, os.path.join(_ROOT, "bench", "llama_tp.py"), *argv],
                          capture_output=True, text=True, timeout=timeout, env=env, cwd=tmp_path)


def _rows(table: str, first: str, key: int = 2) -> dict[tuple[str, ...], list[str]]:
    """The rows of the markdown table whose header starts with `first`, by their first `key` cells."""
    lines = table.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"| {first} |"))
    rows = {}
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[tuple(cells[:key])] = cells
    return rows


def test_allreduce_symm_on_the_cpu_is_one_clear_error(tmp_path):
    """Symmetric memory is CUDA-only: with --cpu-check (gloo) `--allreduce symm` is refused before
    anything runs, with one line that says why, no traceback and no table."""
    out = tmp_path / "llama-tp.md"
    proc = _run(tmp_path, "--cpu-check", "--allreduce", "nccl,symm", "--out", str(out), timeout=120)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "--allreduce symm: torch's symmetric memory is CUDA-only" in proc.stderr
    assert "Traceback" not in proc.stderr and not out.exists()
    proc = _run(tmp_path, "--cpu-check", "--allreduce", "nccl,nvls", timeout=120)
    assert proc.returncode == 2 and "--allreduce: unknown ['nvls']; choose from nccl,symm" in proc.stderr


def _check_breakdown(table: str) -> None:
    """--breakdown: every measured row gets its weight GEMMs alone (the tiny model's 2 layers x 4
    weight layers + lm_head = 9), its row-parallel all-reduces alone (2 a layer, TP rows only) and
    the rest, which adds up to the step; the cap line is computed from those same numbers."""
    parts = _rows(table, "row")
    steps = {}
    for row in ("dense-tp", "sparse-tp", "dense-1gpu", "sparse-1gpu"):
        _, batch, mode, step, gemm, ar, rest, what = parts[(row, "2")]
        assert mode == "eager"
        step, gemm, rest = float(step), float(gemm), float(rest)
        if row.endswith("-tp"):
            assert what == "9 GEMMs, 4 all-reduces" and float(ar) > 0
            assert abs(step - gemm - float(ar) - rest) <= 2e-3
        else:
            assert what == "9 GEMMs" and ar == "—" and abs(step - gemm - rest) <= 2e-3
        assert gemm > 0 and step > 0  # (gloo on 2 shared cores is too noisy to order them)
        steps[row] = (step, gemm)
    caps = _rows(table, "sparse ÷ dense")
    for num, den in (("sparse-tp", "dense-tp"), ("sparse-1gpu", "dense-1gpu")):
        _, batch, measured, cap, zero, gemms = caps[(f"{num} ÷ {den}", "2")]
        (ss, sg), (ds, dg) = steps[num], steps[den]
        assert abs(float(measured.rstrip("×")) - ds / ss) <= 0.011
        assert abs(float(cap.rstrip("×")) - ds / (ds - dg + sg)) <= 0.011
        assert abs(float(zero.rstrip("×")) - ds / (ds - dg)) <= 0.011
        assert abs(float(gemms.rstrip("×")) - dg / sg) <= 0.011


@pytest.mark.gpu
def test_symm_allreduce_on_two_gpus_matches_nccl_compiled_in_a_graph(tmp_path):
    """--allreduce nccl,symm on 2 GPUs (2 layers of the 7B shape): the symmetric-memory all-reduce
    gives NCCL's sums (checked before the run, and the logits of each +symm row against its NCCL
    row), runs compiled in the CUDA graph like the NCCL rows (no fallback), and --breakdown times
    its all-reduces."""
    import torch

    if torch.cuda.device_count() < 2:
        pytest.skip("needs 2 GPUs")
    out = tmp_path / "llama-tp.md"
    proc = _run(tmp_path, "--layers", "2", "--variants", "dense,sparse", "--batches", "1", "--allreduce", "nccl,symm",
                "--breakdown", "--steps", "16", "--reps", "2", "--budget", "420", "--out", str(out), timeout=560)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "symm all-reduce checked against NCCL on 1 x 4096 fp16: max difference 0" in proc.stdout
    table = out.read_text()
    assert "Notes on cells" not in table, table  # every cell compiled and in the graph
    rows = _rows(table, "variant", key=1)
    for variant in ("dense", "sparse"):
        _, tok_s, logits, notes = rows[(f"{variant}-tp+symm",)]
        assert float(tok_s.replace(",", "")) > 0 and "one_shot_all_reduce" in notes
        rel = float(logits.split(f"vs {variant}-tp: b=1: max ")[1].split("rel ")[1].split(",")[0])
        assert rel <= 1e-2, logits
    parts = _rows(table, "row")
    for row in ("dense-tp", "sparse-tp", "dense-tp+symm", "sparse-tp+symm"):
        _, _, mode, step, gemm, ar, rest, what = parts[(row, "1")]
        assert mode == "compile+graph" and what == "9 GEMMs, 4 all-reduces"
        assert 0 < float(gemm) < float(step) and 0 < float(ar) < float(step)
