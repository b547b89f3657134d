"""Quantized 2:4 weights in the torch integration (`NV24.w4g128` and kin): `sparse_linear` with a
QuantizedSparseTensor on the CPU interpreter against F.linear on the dequantized weight;
`SparseLinear` / `sparsify_(quant=...)` against the dense model holding the dequantized weights;
torch.compile(fullgraph=True), torch.export and state_dict round trips on the CPU; the errors for
another scheme's checkpoint, a bad scheme and a BLOCK_K that splits a quantization group."""

from __future__ import annotations

import io

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch_checks import assert_compiles_and_exports

import sparsecc
from sparsecc.nn import SparseLinear, sparsify_
from sparsecc.ops import LinearConfig, quantized_linear_config, sparse_linear
from sparsecc.ops.sparse_linear import reference_linear

ACT = {"none": lambda y: y, "relu": torch.relu, "silu": F.silu,
       "gelu_tanh": lambda y: F.gelu(y, approximate="tanh")}


def _close(a: torch.Tensor, b: torch.Tensor) -> None:
    assert not a.isnan().any(), "NaN in the output: an element was not written"
    torch.testing.assert_close(a.float(), b.float(), rtol=1e-2, atol=1e-2 * max(b.abs().max().item(), 1.0))


def _quantized(n: int, k: int, dtype: torch.dtype, scheme: str, seed: int) -> sparsecc.QuantizedSparseTensor:
    g = torch.Generator().manual_seed(seed)
    return sparsecc.compress(sparsecc.prune_2to4(torch.randn(n, k, generator=g).to(dtype)), quant=scheme)


CASES = [  # scheme, M, activation, bias: every scheme meets every M; activations and bias vary
    ("w4g128", 1, "none", False), ("w4g128", 5, "relu", True), ("w4g128", 33, "silu", True),
    ("w8c", 1, "gelu_tanh", True), ("w8c", 5, "none", True), ("w8c", 33, "relu", False),
    ("w4g64z", 1, "silu", True), ("w4g64z", 5, "gelu_tanh", False), ("w4g64z", 33, "none", True),
]


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("scheme, m, activation, has_bias", CASES)
def test_sparse_linear_with_a_quantized_weight_on_the_interpreter(scheme, m, activation, has_bias, dtype,
                                                                  poisoned):
    n, k = 40, 256  # N ragged against BLOCK_N; K = 2 groups of 128, 4 of 64
    w = _quantized(n, k, dtype, scheme, seed=m)
    g = torch.Generator().manual_seed(100 + m)
    x = torch.randn(m, k, generator=g).to(dtype)
    bias = torch.randn(n, generator=g).to(dtype) if has_bias else None
    y = sparse_linear(x, w, bias, activation)
    assert y.dtype == dtype and y.shape == (m, n)
    ref = ACT[activation](F.linear(x.float(), w.to_dense().float(), None if bias is None else bias.float()))
    _close(y, ref)
    _close(reference_linear(x, w, bias, activation), ref)


def test_leading_dims_and_an_explicit_config(poisoned):
    w = _quantized(24, 256, torch.float16, "w4g64", seed=7)
    x = torch.randn(2, 3, 256, generator=torch.Generator().manual_seed(8)).half()
    y = sparse_linear(x, w, config=LinearConfig(16, 16, 128, num_stages=1))  # 2 groups of 64 a step
    assert y.shape == (2, 3, 24)
    _close(y, F.linear(x.float(), w.to_dense().float()))


def test_the_default_tile_covers_whole_groups():
    w128 = _quantized(16, 384, torch.float16, "w4g128", seed=0)
    assert quantized_linear_config(LinearConfig(16, 32, 32), w128).block_k == 128
    assert quantized_linear_config(LinearConfig(16, 32, 200), w128).block_k == 256  # rounded up to G
    assert quantized_linear_config(LinearConfig(16, 32, 1024), w128).block_k == 512  # K's power of two
    w64 = _quantized(16, 128, torch.float16, "w4g64", seed=0)
    assert quantized_linear_config(LinearConfig(16, 32, 1024), w64).block_k == 128
    w8c = _quantized(16, 384, torch.float16, "w8c", seed=0)
    assert quantized_linear_config(LinearConfig(16, 32, 32), w8c).block_k == 32  # any tile for per-row


def test_a_block_k_that_splits_a_group_is_an_error():
    w = _quantized(16, 256, torch.float16, "w4g128", seed=1)
    x = torch.randn(2, 256).half()
    with pytest.raises(ValueError, match=r"block_k=64 .*NV24\.w4g128.*multiple of 128"):
        sparse_linear(x, w, config=LinearConfig(16, 32, 64))


def test_a_group_no_tile_covers_is_refused_up_front():
    with pytest.raises(ValueError, match="power of two >= 16"):
        _quantized(16, 96, torch.float16, "w4g48", seed=3)


def test_x_must_have_the_weights_logical_dtype():
    w = _quantized(16, 128, torch.bfloat16, "w8c", seed=2)
    with pytest.raises(TypeError, match="x is torch.float16 but the weight is torch.bfloat16"):
        sparse_linear(torch.randn(2, 128).half(), w)


def _model(seed: int = 0, dtype: torch.dtype = torch.float16) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 64)).to(dtype)


def _dequantized_copy(model: nn.Module) -> nn.Module:
    """The dense model holding each SparseLinear's dequantized weight."""
    dense = _model()
    for i, m in enumerate(model):
        if isinstance(m, SparseLinear):
            dense[i].weight.data = m.weight().to_dense()
            dense[i].bias.data = m.bias.detach().clone()
    return dense


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_sparsify_quantized_matches_the_dequantized_dense_model(dtype):
    model = sparsify_(_model(dtype=dtype), quant="w4g128")
    assert [type(m).__name__ for m in model] == ["SparseLinear", "ReLU", "SparseLinear"]
    assert "format=NV24.w4g128" in repr(model)
    w = model[0].weight()
    assert isinstance(w, sparsecc.QuantizedSparseTensor) and w.encoding == "NV24.w4g128"
    dense = _dequantized_copy(model).to(dtype)
    # the dequantized weight is the pruned one, up to 4-bit rounding
    pruned = sparsecc.prune_2to4(_model(dtype=dtype)[0].weight.detach()).float()
    assert (w.to_dense().float() - pruned).norm() / pruned.norm() < 0.15
    x = torch.randn(2, 5, 256, generator=torch.Generator().manual_seed(4)).to(dtype)
    with torch.no_grad():
        _close(model(x), dense(x))


def test_compile_fullgraph_export_and_state_dict_round_trip():
    model = sparsify_(_model(), quant="w4g128")
    x = torch.randn(3, 256, generator=torch.Generator().manual_seed(5)).half()
    eager = assert_compiles_and_exports(model, x, "sparsecc.sparse_linear_q", _close)
    state = model.state_dict()
    assert "0.weight" not in state and "0.zeros" not in state
    assert state["0.values"].dtype == torch.int8 and tuple(state["0.values"].shape) == (128, 64)  # 4 bits
    assert tuple(state["0.scales"].shape) == (128, 2) and state["0.scales"].dtype == torch.float16
    buf = io.BytesIO()
    torch.save(state, buf)
    buf.seek(0)
    fresh = sparsify_(_model(seed=1), quant="w4g128")
    fresh.load_state_dict(torch.load(buf))
    with torch.no_grad():
        assert torch.equal(fresh(x), eager)


def test_zero_points_export_and_round_trip():
    layer = SparseLinear.from_linear(nn.Linear(128, 48).half(), quant="w4g64z", activation="relu")
    assert tuple(layer.zeros.shape) == (48, 2)
    x = torch.randn(4, 128, generator=torch.Generator().manual_seed(6)).half()
    ref = torch.relu(F.linear(x.float(), layer.weight().to_dense().float(), layer.bias.float()))
    with torch.no_grad():
        _close(layer(x), ref)
        # exported inside a container: a root module's buffer `meta` would clash with GraphModule.meta
        _close(torch.export.export(nn.Sequential(layer), (x,)).module()(x), ref)
    fresh = SparseLinear(128, 48, quant="w4g64z", activation="relu")
    fresh.load_state_dict(layer.state_dict())
    with torch.no_grad():
        assert torch.equal(fresh(x), layer(x))


@pytest.mark.parametrize("other, theirs", [
    ("w4g64", r"NV24\.w4g64 weights"),
    ("w8g128", r"NV24\.w8g128 weights"),
    ("w4g128z", r"NV24\.w4g128z weights"),
    (None, r"unquantized NV24 weights"),
])
def test_a_checkpoint_of_another_scheme_is_refused(other, theirs):
    ours = SparseLinear(256, 32, quant="w4g128")
    checkpoint = SparseLinear.from_linear(nn.Linear(256, 32).half(), quant=other).state_dict()
    with pytest.raises(RuntimeError, match=theirs + r".*this layer stores NV24\.w4g128 weights"):
        ours.load_state_dict(checkpoint)


def test_a_quantized_checkpoint_into_another_layer_is_refused():
    w8c = SparseLinear.from_linear(nn.Linear(128, 32).half(), quant="w8c").state_dict()
    with pytest.raises(RuntimeError, match=r"NV24\.w8c weights .*this layer stores unquantized"):
        SparseLinear(128, 32).load_state_dict(w8c)
    with pytest.raises(RuntimeError, match=r"NV24\.w8c weights .*this layer stores 8-bit NV24"):
        SparseLinear(128, 32, weight_dtype=torch.int8).load_state_dict(w8c)
    with pytest.raises(RuntimeError, match=r"NV24\.w8c weights \(32 x 128.*NV24\.w8c weights \(48 x 128"):
        SparseLinear(128, 48, quant="w8c").load_state_dict(w8c)


@pytest.mark.parametrize("bad, why", [("w3g128", "bits must be 4 or 8"), ("q4", "unknown quantization scheme"),
                                      ("w4g100", "power of two")])
def test_a_bad_scheme_is_a_clear_error(bad, why):
    with pytest.raises(ValueError, match=f"bad quant='{bad}'.*{why}"):
        SparseLinear(256, 32, quant=bad)
    with pytest.raises(ValueError, match=f"sparsify_: bad quant='{bad}'"):
        sparsify_(_model(), quant=bad)


def test_quant_argument_errors_and_skipped_layers():
    with pytest.raises(ValueError, match="exclusive"):
        sparsify_(_model(), quant="w4g128", weight_dtype=torch.int8)
    with pytest.raises(ValueError, match="in_features = 64 must be a multiple of the quantization group 128"):
        SparseLinear(64, 32, quant="w4g128")
    with pytest.raises(ValueError, match="2:4"):
        SparseLinear.from_linear(nn.Linear(128, 32).half(), prune=False, quant="w4g128")
    model = sparsify_(nn.Sequential(nn.Linear(128, 64), nn.Linear(64, 16)).half(), quant="w4g128")
    assert [type(m).__name__ for m in model] == ["SparseLinear", "Linear"]  # 64 is not a multiple of 128


def test_training_is_refused_clearly():
    layer = SparseLinear.from_linear(nn.Linear(128, 32).half(), quant="w8c")
    x = torch.randn(4, 128, dtype=torch.float16, requires_grad=True)
    with pytest.raises(RuntimeError, match="inference-only"):
        layer(x).float().sum().backward()


@pytest.mark.gpu
@pytest.mark.parametrize("scheme", ["w4g128", "w8c", "w4g64z"])
@pytest.mark.parametrize("m, n, k", [(1, 4096, 4096), (16, 1000, 512), (200, 512, 1024)])
def test_quantized_sparse_linear_on_the_gpu(scheme, m, n, k):
    w = _quantized(n, k, torch.float16, scheme, seed=m).cuda()
    g = torch.Generator(device="cuda").manual_seed(m)
    x = torch.randn(m, k, generator=g, device="cuda").half()
    b = torch.randn(n, generator=g, device="cuda").half()
    _close(sparse_linear(x, w, b, "silu"), reference_linear(x, w, b, "silu"))


@pytest.mark.gpu
@pytest.mark.parametrize("switches", ["SPARSECC_SCALE_AFTER_DOT=0,SPARSECC_NARROW_COPIES=0",
                                      "SPARSECC_SCALE_AFTER_DOT=1,SPARSECC_NARROW_COPIES=0",
                                      "SPARSECC_SCALE_AFTER_DOT=0,SPARSECC_NARROW_COPIES=1",
                                      "SPARSECC_SCALE_AFTER_DOT=1,SPARSECC_NARROW_COPIES=1"])
@pytest.mark.parametrize("scheme", ["w4g128", "w8g128", "w8c", "w4g64z"])
@pytest.mark.parametrize("m, n, k, split", [(1, 4096, 4096, 1), (5, 1000, 1536, 1), (16, 384, 2048, 2)])
def test_decode_switches_on_the_gpu(scheme, m, n, k, split, switches, monkeypatch):
    """The decode tiles (and their split-K form) with `scale_after_dot` (the scales applied to
    each group's fp32 sums) and `narrow_copies` (the scales by 8-byte cp.async) each on and
    off: the result matches the dequantized reference, NaN-poisoned output, ragged N and K."""
    from sparsecc.frontend.jit import drop_fast_paths
    from sparsecc.ops.sparse_linear import launch_linear

    w = _quantized(n, k, torch.float16, scheme, seed=m).cuda()
    g = torch.Generator(device="cuda").manual_seed(m)
    x = torch.randn(m, k, generator=g, device="cuda").half()
    b = torch.randn(n, generator=g, device="cuda").half()
    cfg = quantized_linear_config(LinearConfig(8, 64, 256, 4, 3, split_k=split), w)
    for setting in switches.split(","):
        monkeypatch.setenv(*setting.split("="))
    drop_fast_paths()
    try:
        y = torch.full((m, n), float("nan"), device="cuda", dtype=torch.float16)
        launch_linear(y, x, w, b, cfg, has_bias=True, activation="silu")
    finally:
        for setting in switches.split(","):
            monkeypatch.delenv(setting.split("=")[0])
        drop_fast_paths()
    _close(y, reference_linear(x, w, b, "silu"))


def test_safetensors_round_trip(tmp_path):
    safetensors_torch = pytest.importorskip("safetensors.torch")
    model = sparsify_(_model(dtype=torch.bfloat16), quant="w8g64z")
    path = tmp_path / "model-2to4-w8.safetensors"
    safetensors_torch.save_model(model, str(path))
    fresh = sparsify_(_model(seed=2, dtype=torch.bfloat16), quant="w8g64z")
    missing, unexpected = safetensors_torch.load_model(fresh, str(path))
    assert not missing and not unexpected
    x = torch.randn(4, 256, generator=torch.Generator().manual_seed(9)).bfloat16()
    with torch.no_grad():
        assert torch.equal(fresh(x), model(x))
