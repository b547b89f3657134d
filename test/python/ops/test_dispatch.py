"""The dispatcher's choice logic on the CPU (sparsecc.ops.dispatch): table lookup, interpolation
in M and across shapes, forcing (argument > context manager > environment), the default rule
without a table, bad table files; and that the sparse16 / dense paths of SparseLinear,
sparse_linear and sparse_mm compute what the 2:4 path computes, eagerly and under torch.compile
(fullgraph: no graph break)."""

from __future__ import annotations

import importlib
import json
import logging
from dataclasses import replace

import pytest
import torch
from torch import nn

import sparsecc
from sparsecc.nn import SparseLinear
from sparsecc.nn.tuning import tune
from sparsecc.ops import dispatch, dispatch_measure, sparse_linear, sparse_mm
from sparsecc.ops.densify import dense_weight, dequantize_kept, scale_kept, weight16
from sparsecc.ops.linear_config import LinearConfig
from sparsecc.ops.sparse_linear import reference_linear
from sparsecc.ops.stream_k import stream_k_plan

GPU = "Fake GPU 80GB"


def _row(sparse, mm, sparse16=None, config=None):
    return {"sparse": sparse, "mm": mm, "sparse16": sparse16, "config": config}


def _table(tmp_path, monkeypatch, entries, name=GPU):
    """Write `entries` as the shipped table of a fake GPU the dispatcher then reads."""
    folder = tmp_path / "tables"
    folder.mkdir(exist_ok=True)
    (folder / f"{dispatch.safe_name(name)}.json").write_text(json.dumps({"gpu": name, "entries": entries}))
    monkeypatch.setattr(dispatch, "TABLES", folder)
    monkeypatch.setenv("SPARSECC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(dispatch, "gpu_name", lambda index: name)
    dispatch._VERSION[0] += 1  # plans cached for earlier tables are stale


@pytest.fixture(autouse=True)
def _auto(monkeypatch):
    """The tests' conftest forces the kernels; these tests start from "auto"."""
    monkeypatch.delenv("SPARSECC_DISPATCH", raising=False)
    monkeypatch.delenv("SPARSECC_DISPATCH_TUNE", raising=False)


# A 4096 x 4096 w4g128 weight: the kernel wins at few tokens, the 16-bit kernel on dequantized
# values at many, the dense path (decompression + F.linear) nowhere unless the copy is kept.
W4 = {"scheme": "w4g128", "dtype": "float16", "n": 4096, "k": 4096, "densify_us": 40.0, "dequant_us": 10.0,
      "m": {"1": _row(8.0, 20.0, 14.0, [8, 64, 512, 4, 2, 1]), "64": _row(30.0, 22.0, 25.0, [8, 64, 512, 4, 2, 2]),
            "2048": _row(400.0, 260.0, 240.0)}}


def test_the_table_picks_the_cheapest_path_per_m(tmp_path, monkeypatch):
    _table(tmp_path, monkeypatch, [W4])
    pick = lambda m, cached=False: dispatch.choose(m, 4096, 4096, torch.float16, "w4g128", "cuda",  # noqa: E731
                                                   cached=cached)
    assert pick(1).mode == "sparse"                     # 8 < 14+10 < 20+40
    assert pick(2048).mode == "sparse16"                # 10+240 < 260+40 < 400
    assert pick(64).mode == "sparse"                    # 30 < 10+25 < 22+40
    assert pick(64, cached=True).mode == "dense"        # the kept copy: F.linear alone, 22 < 30
    assert pick(1, cached=True).mode == "sparse"
    assert "table Fake_GPU_80GB" in pick(2048).why and "at M=2048: dense 300.0 us, sparse 400.0 us, sparse16 250.0 us" in pick(2048).why
    assert dispatch.choose(2048, 4096, 4096, torch.bfloat16, "w4g128", "cuda").mode == "sparse16"  # bf16: fp16's


def test_interpolation_in_m_is_log_log_between_measurements():
    ms, ts = (1, 64, 2048), (8.0, 32.0, 400.0)
    assert dispatch._at(ms, ts, 64) == 32.0
    assert dispatch._at(ms, ts, 8) == pytest.approx(16.0)           # halfway in log M: the geometric mean
    assert dispatch._at(ms, ts, 4096) == pytest.approx(400.0 * (400 / 32) ** (1 / 5))  # the last segment extended
    assert dispatch._at(ms, (None, 32.0, None), 8) is None           # one point says nothing about another M
    assert dispatch._at(ms, (None, 32.0, None), 40) == 32.0          # ... but stands for its bucket (17-64)


def test_a_shape_not_in_the_table_takes_its_neighbours_scaled(tmp_path, monkeypatch):
    def times4(row):
        return {key: (v * 4 if isinstance(v, float) else v) for key, v in row.items()}

    # a 4x larger weight taking 4x the time: any shape between is the same per weight element
    near = {**W4, "n": 8192, "k": 8192, "densify_us": 160.0, "dequant_us": 40.0,
            "m": {m: times4(row) for m, row in W4["m"].items()}}
    _table(tmp_path, monkeypatch, [W4, near])
    est = dispatch.estimate(dispatch.load_table(GPU)[("w4g128", "float16")], 4096 * 2, 4096, 2048, False)
    assert est["sparse"] == pytest.approx(800.0)                  # 2x the weight of either: 2x the time
    assert est["sparse16"] == pytest.approx(500.0) and est["dense"] == pytest.approx(600.0)
    assert dispatch.choose(2048, 6000, 5000, torch.float16, "w4g128", "cuda").mode == "sparse16"
    assert dispatch.choose(1, 6000, 5000, torch.float16, "w4g128", "cuda").mode == "sparse"


def test_the_table_config_is_the_first_measured_m_at_or_above(tmp_path, monkeypatch):
    _table(tmp_path, monkeypatch, [W4])
    cfg = lambda m, n=4096: dispatch.table_config(m, n, 4096, torch.float16, "w4g128", torch.device("cuda"))  # noqa: E731
    assert cfg(1) == (8, 64, 512, 4, 2, 1)
    assert cfg(2) == cfg(64) == (8, 64, 512, 4, 2, 2)
    assert cfg(100) is None and cfg(9000) is None   # the default tiles won there
    assert cfg(1, n=1024) is None                    # configs do not carry over to other shapes
    assert dispatch.table_config(1, 4096, 4096, torch.float16, "w4g128", torch.device("cpu")) is None


def test_without_a_table_the_default_rule(tmp_path, monkeypatch):
    _table(tmp_path, monkeypatch, [W4], name="Another GPU")
    monkeypatch.setattr(dispatch, "gpu_name", lambda index: GPU)  # no table for this one
    for m in (1, 64, 256, 4096):
        c = dispatch.choose(m, 4096, 4096, torch.float16, "nv24", "cuda")
        assert (c.mode, c.why) == ("sparse", f"default rule (no table for {GPU} for nv24 float16)")
    assert [dispatch.choose(m, 4096, 4096, torch.float16, s, "cuda").mode
            for s in ("w4g128", "fp8") for m in (1, 256, 257)] == ["sparse", "sparse", "sparse16"] * 2
    assert dispatch.choose(16, 4096, 4096, torch.float16, "nv24", "cuda", cached=True).mode == "sparse"
    assert dispatch.choose(17, 4096, 4096, torch.float16, "nv24", "cuda", cached=True).mode == "dense"
    # a scheme the table does not hold takes the rule too, even where the GPU has a table
    monkeypatch.setattr(dispatch, "gpu_name", lambda index: "Another GPU")
    assert dispatch.choose(4096, 4096, 4096, torch.float16, "w8g128", "cuda").why.startswith("default rule")


def test_forcing_argument_then_context_then_environment(tmp_path, monkeypatch):
    _table(tmp_path, monkeypatch, [W4])
    choose = lambda setting=None: dispatch.choose(1, 4096, 4096, torch.float16, "w4g128", "cuda", setting).mode  # noqa: E731
    assert choose() == "sparse"
    monkeypatch.setenv("SPARSECC_DISPATCH", "dense")
    assert choose() == "dense"
    with dispatch.dispatch_mode("sparse16"):
        assert choose() == "sparse16"
        with dispatch.dispatch_mode("auto"):
            assert choose() == "sparse"
        assert choose("dense") == "dense"
    assert choose("sparse") == "sparse"
    # sparse16 of a 16-bit weight is its kernel
    assert dispatch.choose(1, 64, 64, torch.float16, "nv24", "cuda", "sparse16").mode == "sparse"
    # forcing holds on the CPU too; auto there is the 2:4 path
    assert dispatch.choose(4096, 64, 64, torch.float16, "w4g128", "cpu", "dense").mode == "dense"


@pytest.mark.parametrize("where", ["argument", "context", "environment", "layer"])
def test_a_bad_setting_is_one_clear_error(monkeypatch, where):
    with pytest.raises(ValueError, match=r"dispatch must be one of \('auto', 'sparse', 'sparse16', 'dense'\), got 'fast'"):
        if where == "argument":
            dispatch.resolve("fast")
        elif where == "context":
            with dispatch.dispatch_mode("fast"):
                pass
        elif where == "environment":
            monkeypatch.setenv("SPARSECC_DISPATCH", "fast")
            dispatch.resolve()
        else:
            SparseLinear(64, 32, dispatch="fast")


def test_a_bad_table_file_is_ignored_with_a_warning(tmp_path, monkeypatch):
    _table(tmp_path, monkeypatch, [{**W4, "m": {"1": _row(-3.0, 1.0)}}])
    with pytest.warns(dispatch.DispatchTableWarning, match=r"entry 0: a time must be a positive number"):
        c = dispatch.choose(1, 4096, 4096, torch.float16, "w4g128", "cuda")
    assert c.why.startswith("default rule")
    (dispatch.TABLES / f"{dispatch.safe_name(GPU)}.json").write_text("{not json")
    dispatch._VERSION[0] += 1
    with pytest.warns(dispatch.DispatchTableWarning, match="ignoring the table"):
        assert dispatch.choose(1, 4096, 4096, torch.float16, "w4g128", "cuda").mode == "sparse"


def test_a_config_flags_entry_round_trips_and_bad_flags_are_refused(tmp_path, monkeypatch):
    from sparsecc.ops.sparse_linear import LinearConfig, table_linear_config

    for cfg in (LinearConfig(128, 256, 64, 8, 4, stream_k=True), LinearConfig(128, 128, 128, 8, 3, quant_wgmma=True),
                LinearConfig(128, 128, 128, 8, 3, quant_wgmma=True, stream_k=True), LinearConfig(16, 32, 512, 4, 3, 2),
                LinearConfig(8, 64, 512, 4, 2, maxnreg=128), LinearConfig(128, 128, 128, 8, 3, quant_wgmma=True, maxnreg=168)):
        row = cfg.table_row()
        assert table_linear_config(tuple(row)) == cfg
        assert dispatch.parse_entries({"entries": [{**W4, "m": {"1": _row(8.0, 20.0, config=row)}}]})[0].configs == (
            tuple(row),)
    for bad in ([128, 256, 64, 8, 4, 1, 4], [8, 64, 512, 4, 2, 1, 0, 300], [8, 64, 512, 4, 2, 1, 0, 8],
                [8, 64, 512, 4, 0, 1], [8, 64, 512, 4, 2, 1, 0, 128, 1], [8, 64, 512, 4, 2, 1, 0]):
        with pytest.raises(ValueError, match=r"entry 0: config must be 6 positive ints \(a 7th of flags, 1 to 3"):
            dispatch.parse_entries({"entries": [{**W4, "m": {"1": _row(8.0, 20.0, config=bad)}}]})
    with pytest.raises(ValueError, match="stream_k splits the last wave itself; it takes split_k=1, not 2"):
        LinearConfig(128, 256, 64, 8, 4, split_k=2, stream_k=True)


def test_stream_k_is_timed_where_its_plan_splits_or_whole_tiles_leave_a_partial_wave():
    """From 256 tokens the persistent form of a tile is a candidate where its plan splits a thin
    last wave, or where its whole tiles make more than a wave with a partial last one (the
    programs load a tile during the last one's epilogue); never for tiles that fill whole waves."""
    w = sparsecc.compress(sparsecc.prune_2to4(torch.randn(11008, 256).half()))
    streamed = lambda m, n: [c for c in dispatch_measure._linear_candidates(m, n, 4096, w) if c.stream_k]  # noqa: E731
    assert streamed(128, 11008) == []                          # decode and mid-M: the split-K family's place
    assert any((c.block_m, c.block_n) == (128, 256) for c in streamed(512, 11008))  # 172 tiles: 40 split in 3
    assert all(c.split_k == 1 for c in streamed(512, 11008))
    thick = [c for c in streamed(2048, 4096) if (c.block_m, c.block_n) == (128, 256)]  # 256 tiles: 124 + a wave
    assert thick and all(stream_k_plan(2048, 4096, 4096, c)[2] == 1 for c in thick)  # whole tiles, no parts
    assert not any((c.block_m, c.block_n) == (128, 256) for c in streamed(1024, 8448))  # 264 tiles: two waves


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_the_256_token_quant_wgmma_tile_is_timed_from_256_tokens_in_fp16(dtype, monkeypatch):
    """On a GPU with the register-A wgmma kernel: 256 tokens a tile (each dequantized fragment
    feeds twice the MMA work) from M = 256, and in its persistent (stream-K) form where the plan
    splits or whole tiles leave a partial last wave; bf16 never (its convert scratch does not fit beside the tile's 3 stages)."""
    monkeypatch.setattr(importlib.import_module("sparsecc.ops.sparse_linear"), "has_quant_wgmma", lambda device: True)
    w = sparsecc.compress(sparsecc.prune_2to4(torch.randn(256, 512).to(dtype)), quant="w4g128")
    wide = lambda m, n: [c for c in dispatch_measure._linear_candidates(m, n, 4096, w)  # noqa: E731
                         if (c.block_m, c.block_n, c.quant_wgmma) == (256, 128, True)]
    assert wide(128, 11008) == []
    if dtype == torch.bfloat16:
        assert wide(512, 11008) == [] and wide(2048, 4096) == []
        return
    tile = LinearConfig(256, 128, 128, 8, 3, quant_wgmma=True)
    assert wide(2048, 4096) == [tile, replace(tile, stream_k=True)]  # 256 tiles: 124 + a wave, whole (no split)
    assert LinearConfig(256, 128, 128, 8, 3, quant_wgmma=True, stream_k=True) in wide(512, 11008)  # 172 tiles


def test_tuned_entries_override_the_shipped_ones(tmp_path, monkeypatch):
    _table(tmp_path, monkeypatch, [W4])
    tuned = dispatch.tuned_path(GPU)
    tuned.parent.mkdir(parents=True)
    tuned.write_text(json.dumps({"gpu": GPU, "entries": [{**W4, "m": {"2048": _row(100.0, 260.0, 240.0)}}]}))
    dispatch._VERSION[0] += 1
    entry = dispatch.load_table(GPU)[("w4g128", "float16")][0]
    assert entry.ms == (1, 64, 2048) and entry.sparse == (8.0, 30.0, 100.0)  # merged per M
    assert dispatch.choose(2048, 4096, 4096, torch.float16, "w4g128", "cuda").mode == "sparse"


def test_plan_bands_and_labels(tmp_path, monkeypatch):
    _table(tmp_path, monkeypatch, [W4])
    plan = dispatch.layer_plan(4096, 4096, "float16", "w4g128", "cuda", 0)
    modes = [mode for _, mode, _ in plan]
    assert modes[0] == "sparse" and modes[-1] == "sparse16" and plan[-1][0] == 1 << 62
    assert all(a[1] != b[1] for a, b in zip(plan, plan[1:]))  # neighbouring bands differ
    assert dispatch.pick(plan, 1) == ("sparse", f"M <= {plan[0][0]}")
    assert dispatch.pick(plan, 10**6)[1] == f"M > {plan[-2][0]}"


# ---------------------------------------------------------------------------------------------
# the paths compute the same thing


def _layer(scheme: str, n: int = 48, k: int = 256, seed: int = 0) -> SparseLinear:
    torch.manual_seed(seed)
    linear = nn.Linear(k, n).half()
    if scheme == "nv24":
        return SparseLinear.from_linear(linear, activation="silu")
    if scheme in ("fp8", "int8"):
        return SparseLinear.from_linear(linear, weight_dtype=torch.float8_e4m3fn if scheme == "fp8" else torch.int8)
    return SparseLinear.from_linear(linear, quant=scheme, activation="relu")


def _reference(layer: SparseLinear, x: torch.Tensor) -> torch.Tensor:
    """act(x @ W.T + b) with W the weight the layer's kernels multiply by (dequantized), fp32."""
    if layer.weight_dtype is not None:
        w = layer.weight().to_dense().float() * layer.weight_scale[:, None]
    else:
        w = layer.weight().to_dense().float()
    y = torch.nn.functional.linear(x.float(), w, layer.bias.float())
    return dispatch.activate(y, layer.activation)


@pytest.mark.parametrize("scheme", ["nv24", "w4g128", "w8g64z", "fp8"])
@pytest.mark.parametrize("mode", ["sparse16", "dense"])
def test_a_forced_path_of_the_layer_matches_the_weights_product(scheme, mode):
    layer = _layer(scheme)
    x = torch.randn(3, 5, layer.in_features).half()
    layer.dispatch = mode
    got = layer(x)
    assert got.shape == (3, 5, layer.out_features) and got.dtype == torch.float16
    ref = _reference(layer, x)
    assert (got.float() - ref).abs().max() <= 2e-2 * max(ref.abs().max().item(), 1.0)
    shown = "sparse" if scheme == "nv24" and mode == "sparse16" else mode  # 16-bit: sparse16 is the kernel
    assert f"dispatch={mode!r} (any M: {shown})" in repr(layer)


def test_the_kept_dense_copy_is_used_and_follows_loading():
    layer = _layer("w4g128")
    layer.keep_dense_weight()
    assert "_dense" not in layer.state_dict() and "dense copy kept" in repr(layer)
    assert torch.equal(layer._dense, layer.weight().to_dense())
    other = _layer("w4g128", seed=1)
    layer.load_state_dict(other.state_dict())
    assert torch.equal(layer._dense, other.weight().to_dense())
    x = torch.randn(7, layer.in_features).half()
    layer.dispatch = "dense"
    assert torch.allclose(layer(x).float(), _reference(other, x), atol=2e-2, rtol=2e-2)
    layer.keep_dense_weight(False)
    assert "_dense" not in dict(layer.named_buffers()) and not layer.keeps_dense


def test_a_choice_is_logged_once_per_shape_and_m(caplog):
    layer = _layer("nv24", n=32, k=128)
    layer.fqn = "mlp.up"
    x = torch.randn(9, 128).half()
    with caplog.at_level(logging.INFO, logger="sparsecc.dispatch"), dispatch.dispatch_mode("dense"):
        layer(x)
        layer(x)
    lines = [r.getMessage() for r in caplog.records if r.name == "sparsecc.dispatch"]
    assert lines == ["SparseLinear 'mlp.up' (128 -> 32, nv24 float16), M=9 (any M): dense"]


@pytest.mark.parametrize("mode", ["auto", "dense", "sparse16"])
def test_the_dispatch_traces_without_a_graph_break(mode, monkeypatch, caplog):
    layer = _layer("w4g128", n=32, k=256)
    layer.dispatch = mode
    if mode == "auto":  # a plan of three bands (the CPU's own is one: the 2:4 path)
        bands = ((4, "sparse", "a"), (64, "sparse16", "b"), (1 << 62, "dense", "c"))
        monkeypatch.setattr(dispatch, "layer_plan", torch.compiler.assume_constant_result(lambda *a, **k: bands))
    compiled = torch.compile(layer, fullgraph=True, backend="aot_eager")
    with caplog.at_level(logging.INFO, logger="sparsecc.dispatch"):
        for m in (1, 3, 40, 300, 500):  # the second call makes M dynamic: a band is a guard
            x = torch.randn(m, 256).half()
            ref = _reference(layer, x)
            assert (compiled(x).float() - ref).abs().max() <= 2e-2 * max(ref.abs().max().item(), 1.0)
    lines = {r.getMessage().split("), ", 1)[-1] for r in caplog.records if r.name == "sparsecc.dispatch"}
    if mode == "auto":
        assert {"M <= 4: sparse", "4 < M <= 64: sparse16", "M > 64: dense"} <= lines
    else:
        assert lines and all(line.endswith(f": {mode}") for line in lines)


def test_sparse_linear_and_sparse_mm_forced_paths_agree():
    w = sparsecc.compress(sparsecc.prune_2to4(torch.randn(40, 64)).half())
    x = torch.randn(2, 3, 64).half()
    ref = reference_linear(x, w, None, "gelu_tanh")
    for mode in ("dense", "sparse16"):
        assert torch.allclose(sparse_linear(x, w, None, "gelu_tanh", dispatch=mode).float(), ref.float(), atol=1e-2)
    b = torch.randn(64, 24).half()
    want = w.to_dense().float() @ b.float()
    assert sparse_mm(w, b, torch.float32, dispatch="dense").dtype == torch.float32
    assert torch.allclose(sparse_mm(w, b, torch.float32, dispatch="dense"), want, atol=1e-3, rtol=1e-3)
    out = torch.full((40, 24), float("nan"), dtype=torch.float16)
    assert sparse_mm(w, b, out=out, dispatch="dense") is out and torch.allclose(out.float(), want, atol=5e-2, rtol=1e-2)
    with pytest.raises(ValueError, match=r"dispatch='sparse16'.*one of|dispatch must be one of"):
        sparse_linear(x, w, dispatch="sparse32")
    w8 = sparsecc.compress(sparsecc.prune_2to4(torch.randint(-9, 9, (32, 64), dtype=torch.int8)))
    with pytest.raises(ValueError, match=r"sparse_mm: dispatch='dense': only fp16/bf16 2:4 A has a dense path"):
        sparse_mm(w8, torch.ones(64, 16, dtype=torch.int8), dispatch="dense")


@pytest.mark.parametrize("n, k", [(16, 16), (24, 64), (33, 256)])
def test_densify_matches_to_dense_bit_for_bit(n, k):
    g = torch.Generator().manual_seed(n + k)
    for dtype in (torch.float16, torch.bfloat16, torch.float8_e4m3fn, torch.int8):
        dense = sparsecc.prune_2to4(torch.randn(n, k, generator=g) * 5).to(dtype)
        s = sparsecc.compress(dense)
        got = dense_weight(s.values, s.meta, k)
        assert got.dtype == dtype and torch.equal(got.view(torch.uint8) if dtype.itemsize == 1 else got,
                                                  dense.view(torch.uint8) if dtype.itemsize == 1 else dense)
    for scheme in ("w4g16", "w8c", "w4c", "w8g16z"):
        q = sparsecc.compress(sparsecc.prune_2to4(torch.randn(n, k, generator=g)).bfloat16(), quant=scheme)
        kept = dequantize_kept(q.values, q.scales, q.zeros, q.scheme.bits, torch.bfloat16)
        assert torch.equal(dense_weight(kept, q.meta, k), q.to_dense())
    v = torch.randint(-127, 127, (n, k // 2), generator=g, dtype=torch.int8)
    s = torch.rand(n, generator=g)
    assert torch.equal(scale_kept(v, s, torch.float16), (v.float() * s[:, None]).half())


def test_weight16_gives_the_kept_values_and_the_dense_weight_of_each_form():
    g = torch.Generator().manual_seed(7)
    dense = sparsecc.prune_2to4(torch.randn(40, 256, generator=g)).half()
    s16 = sparsecc.compress(dense)
    assert torch.equal(weight16(s16.values, s16.meta, None, None, None, 16, 256, torch.float16, True), dense)
    assert weight16(s16.values, s16.meta, None, None, None, 16, 256, torch.float16, False) is s16.values
    for scheme in ("w4g128", "w8g128", "w4g64z"):
        q = sparsecc.compress(dense, quant=scheme)
        got = weight16(q.values, q.meta, q.scales, q.zeros, None, q.scheme.bits, 256, torch.float16, True)
        assert torch.equal(got, q.to_dense()), scheme
    layer = SparseLinear.from_linear(nn.Linear(256, 40).half(), weight_dtype=torch.float8_e4m3fn)
    got = weight16(layer.values, layer.meta, None, None, layer.weight_scale, 8, 256, torch.float16, True)
    assert torch.equal(got, (layer.weight().to_dense().float() * layer.weight_scale[:, None]).half())


def test_tuning_on_first_use_measures_once_and_the_plans_follow(tmp_path, monkeypatch):
    _table(tmp_path, monkeypatch, [])
    measured = []

    def fake_measure(scheme, dtype, n, k, ms, device):
        measured.append((scheme, n, k, tuple(ms)))
        return {"scheme": scheme, "dtype": "float16", "n": n, "k": k, "densify_us": 1.0, "dequant_us": 1.0,
                "m": {str(m): _row(50.0, 10.0, 40.0) for m in ms}}  # dense (1 + 10) beats the kernel (50)

    monkeypatch.setattr(dispatch_measure, "measure_entry", fake_measure)
    monkeypatch.setattr(torch.cuda, "is_current_stream_capturing", lambda: False)
    cuda = torch.device("cuda")
    dispatch_measure.maybe_tune(4096, 4096, torch.float16, "w4g128", 3, cuda)
    assert measured == []  # off unless asked for
    monkeypatch.setenv("SPARSECC_DISPATCH_TUNE", "1")
    assert dispatch.choose(3, 4096, 4096, torch.float16, "w4g128", cuda).mode == "sparse"  # the default rule
    dispatch_measure.maybe_tune(4096, 4096, torch.float16, "w4g128", 3, cuda)
    dispatch_measure.maybe_tune(4096, 4096, torch.float16, "w4g128", 4, cuda)  # the same bucket: measured already
    assert measured == [("w4g128", 4096, 4096, (4,))]
    assert dispatch.choose(3, 4096, 4096, torch.float16, "w4g128", cuda).mode == "dense"
    doc = json.loads(dispatch.tuned_path(GPU).read_text())
    assert doc["gpu"] == GPU and [e["m"].keys() for e in doc["entries"]] == [{"4": 0}.keys()]
    dispatch_measure.maybe_tune(4096, 4096, torch.float16, "w4g128", 100, cuda)  # a new bucket joins the entry
    assert measured[-1] == ("w4g128", 4096, 4096, (128,))
    assert sorted(json.loads(dispatch.tuned_path(GPU).read_text())["entries"][0]["m"]) == ["128", "4"]
    monkeypatch.setattr(torch.cuda, "is_current_stream_capturing", lambda: True)
    dispatch_measure.maybe_tune(4096, 4096, torch.float16, "w4g128", 5000, cuda)  # never while a graph captures
    assert len(measured) == 2


def test_tune_a_model_measures_each_cuda_shape_once(monkeypatch):
    shapes = []
    monkeypatch.setattr(dispatch_measure, "tune_shapes", lambda s, tokens, device: shapes.append((s, tokens)) or "path")
    model = nn.Sequential(_layer("w4g128", n=32, k=256), _layer("w4g128", n=32, k=256, seed=1), _layer("nv24"))
    assert tune(model) is None  # CPU layers: nothing to time
    for layer in model:  # stands in for CUDA layers (the measurement itself is patched out)
        monkeypatch.setattr(layer, "values", torch.empty(0).as_subclass(_FakeCuda), raising=False)
    assert tune(model, tokens=(1, 3, 5000)) == "path"
    assert shapes == [([("w4g128", torch.float16, 32, 256), ("nv24", torch.float16, 48, 256)], [1, 4, 8192])]


class _FakeCuda(torch.Tensor):
    @property
    def is_cuda(self):
        return True

    @property
    def device(self):
        return torch.device("cuda", 0)


def test_quantized_decode_candidates_include_the_register_cap():
    """At decode a quantized weight's candidates include the default tile and the 8x64x512 one
    capped at 128 registers a thread (4 CTAs an SM: one wave for 500 CTAs); larger M and 16-bit
    weights take none."""
    from sparsecc.ops.sparse_linear import LinearConfig

    q = sparsecc.compress(sparsecc.prune_2to4(torch.randn(256, 512).half()), quant="w4g128")
    capped = [c for c in dispatch_measure._linear_candidates(1, 32000, 4096, q) if c.maxnreg is not None]
    assert LinearConfig(8, 64, 512, 4, 2, maxnreg=128) in capped and all(c.maxnreg == 128 for c in capped)
    assert not any(c.maxnreg for c in dispatch_measure._linear_candidates(64, 32000, 4096, q))
    w16 = sparsecc.compress(sparsecc.prune_2to4(torch.randn(256, 512).half()))
    assert not any(c.maxnreg for c in dispatch_measure._linear_candidates(1, 32000, 4096, w16))
