"""bench/llama_e2e.py's --tiny path on the CPU: a transformers Llama (random weights, nothing
downloaded) sparsified by sparsecc gives the dense-pruned model's logits within fp16 tolerance, and
the script's table comes out. Skipped where transformers is not installed."""

from __future__ import annotations

import importlib.util
import os

import pytest
import torch

pytest.importorskip("transformers")

_SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "..", "bench", "llama_e2e.py")


def _load():
    spec = importlib.util.spec_from_file_location("llama_e2e", _SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_tiny_llama_sparsecc_matches_the_dense_pruned_reference(tmp_path):
    out = tmp_path / "llama-e2e-tiny.md"
    run = _load().main(["--tiny", "--device", "cpu", "--variants",
                        "dense,sparsecc,sparsecc-w4,dense-w4,sparsecc-w8,torch-2:4,sparsecc-swiglu", "--batches", "2",
                        "--prompt", "4", "--steps", "1", "--prefill", "32", "--reps", "1", "--out", str(out)])
    by_name = {r["variant"]: r for r in run["results"]}
    dense, sparse = by_name["dense"], by_name["sparsecc"]
    assert set(dense["logits"]) == set(sparse["logits"]) == {"decode_b2", "prefill_32"}
    # q/k/v and gate/up fused by default: 2 layers x (qkv, o, gate_up, down) + lm_head
    assert sparse["notes"][0].startswith("q/k/v fused (qkv_proj) and gate/up fused (gate_up_proj) in 2 layers")
    assert "9/9 Linear layers SparseLinear (lm_head included)" in sparse["notes"][1]
    for key, ref in dense["logits"].items():
        got = sparse["logits"][key]
        assert got.shape == ref.shape and got.isfinite().all()
        tol = 2e-2 * max(ref.abs().max().item(), 1.0)
        assert (got - ref).abs().max().item() <= tol, key
    swiglu = by_name["sparsecc-swiglu"]  # the SwiGLU in the gate_up layer: the same numbers
    assert "SwiGLU in the gate_up kernel's epilogue (2 layers)" in swiglu["notes"]
    for key, ref in sparse["logits"].items():
        got = swiglu["logits"][key]
        assert got.isfinite().all() and (got - ref).abs().max().item() <= 2e-2 * max(ref.abs().max().item(), 1.0)
    w4 = by_name["sparsecc-w4"]
    assert "Linear layers SparseLinear with 4-bit weights (NV24.w4g128)" in w4["notes"][1]
    for key, ref in dense["logits"].items():  # 4-bit weights: the logits move, but not far
        got = w4["logits"][key]
        assert got.isfinite().all()
        assert (got - ref).norm() / ref.norm() < 0.25, key
    for key, ref in by_name["dense-w4"]["logits"].items():  # the same values: fp16 tolerance
        got = w4["logits"][key]
        assert (got - ref).abs().max().item() <= 2e-2 * max(ref.abs().max().item(), 1.0), key
    w8 = by_name["sparsecc-w8"]
    assert "Linear layers SparseLinear with 8-bit weights (NV24.w8g128)" in w8["notes"][1]
    for key, ref in dense["logits"].items():  # 8-bit codes: closer than 4-bit
        assert (w8["logits"][key] - ref).norm() / ref.norm() < 0.1, key
    assert "to_sparse_semi_structured needs CUDA" in by_name["torch-2:4"]["skipped"]
    table = out.read_text()
    assert table == run["table"] and "| sparsecc |" in table and "| dense |" in table
    assert "logits against dense-w4" in table


def test_fuse_off_runs_the_separate_projections_with_the_same_logits():
    """--fuse off: transformers' own q/k/v and gate/up layers (the tables before 2026-11-26); the
    fused model computes the same logits (its weights are theirs, concatenated)."""
    e2e = _load()
    args = ["--tiny", "--device", "cpu", "--variants", "dense,sparsecc", "--batches", "2", "--prompt", "4",
            "--steps", "1", "--prefill", "0", "--reps", "1"]
    fused = {r["variant"]: r for r in e2e.main(args)["results"]}
    run = e2e.main([*args, "--fuse", "off"])
    separate = {r["variant"]: r for r in run["results"]}
    assert "15/15 Linear layers SparseLinear (lm_head included)" in separate["sparsecc"]["notes"][0]
    assert "separate q/k/v, gate/up projections (`--fuse off`)" in run["table"]
    for variant in ("dense", "sparsecc"):
        ref = separate[variant]["logits"]["decode_b2"]
        got = fused[variant]["logits"]["decode_b2"]
        assert ref.abs().max() > 0.1
        torch.testing.assert_close(got, ref, rtol=1e-3, atol=1e-3 * ref.abs().max().item())
    with pytest.raises(SystemExit):  # the SwiGLU epilogue needs the fused gate_up layer
        e2e.parse_args(["--device", "cpu", "--fuse", "off", "--variants", "sparsecc-swiglu"])


def test_the_default_matrix_and_the_quick_subset():
    e2e = _load()
    full = e2e.parse_args(["--device", "cpu"])
    assert full.variants == ["dense", "sparsecc", "sparsecc-w4", "sparsecc-w8", "sparsecc-fp8"]
    assert full.batches == [1, 4, 16, 64, 256] and full.prefill == [512, 2048, 8192]
    assert e2e.positions(full) == 8192  # rotary positions for the longest prefill
    quick = e2e.parse_args(["--device", "cpu", "--quick", "--steps", "5"])
    assert quick.variants == ["dense", "sparsecc", "sparsecc-w4"] and quick.batches == [1, 16]
    assert quick.prefill == [2048] and quick.steps == 5 and quick.reps == 3
    assert e2e.parse_args(["--device", "cpu", "--variants", "all", "--prefill", "0"]).prefill == []
    assert e2e.parse_args(["--device", "cpu", "--variants", "all"]).variants == list(e2e.VARIANTS)
