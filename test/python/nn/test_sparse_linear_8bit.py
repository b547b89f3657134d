"""8-bit SparseLinear (int8, fp8 e4m3): per-channel weight scales, per-token activation scales,
the 8-bit sparse tensor cores through `torch.ops.sparsecc.sparse_linear_8bit`. Checked against the same
quantization computed in float64 (tight) and against the fp16 dense-pruned layer (the
quantization error, loose); compile, export and state_dict on the CPU; the same on the H100."""

from __future__ import annotations

import io

import pytest
import torch
from torch import nn
from torch_checks import assert_compiles_and_exports

import sparsecc
from sparsecc.nn import SparseLinear, sparsify_
from sparsecc.nn.quantize import quantize_rows

EIGHT_BIT = [torch.int8, torch.float8_e4m3fn]


def _linear(n: int, k: int, dtype: torch.dtype, device: str, seed: int = 0) -> nn.Linear:
    torch.manual_seed(seed)
    return nn.Linear(k, n).to(dtype).to(device)


def _reference(layer: SparseLinear, x: torch.Tensor) -> torch.Tensor:
    """The layer's arithmetic in float64: dequantized weight, dequantized activations."""
    w = layer.weight().to_dense().double() * layer.weight_scale.double()[:, None]
    xq, xs = quantize_rows(x.reshape(-1, layer.in_features), layer.weight_dtype)
    y = (xq.double() * xs.double()[:, None]) @ w.T
    if layer.bias is not None:
        y = y + layer.bias.double()
    return y.reshape(*x.shape[:-1], layer.out_features)


def _check(layer: SparseLinear, linear: nn.Linear, x: torch.Tensor) -> None:
    with torch.no_grad():
        y = layer(x)
        assert y.dtype == x.dtype and y.shape == (*x.shape[:-1], linear.out_features)
        ref = _reference(layer, x)
        # fp32 sums, scales and bias in the epilogue, one rounding to the layer's dtype
        torch.testing.assert_close(y.double(), ref, rtol=1e-2, atol=4e-3 * ref.abs().max().item())
        pruned = nn.functional.linear(x.float(), sparsecc.prune_2to4(linear.weight).float(), linear.bias.float())
        rel = (y.float() - pruned).norm() / pruned.norm()
        assert rel < 0.06, f"relative error to the fp16 pruned layer {rel:.3f}"  # 8-bit quantization


@pytest.mark.parametrize("wdt", EIGHT_BIT, ids=str)
@pytest.mark.parametrize("tokens", [1, 7, 33])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_matches_the_quantized_arithmetic_and_the_pruned_layer(wdt, tokens, dtype):
    linear = _linear(48, 96, dtype, "cpu", seed=tokens)
    layer = SparseLinear.from_linear(linear, weight_dtype=wdt)
    assert layer.values.dtype == wdt and layer.weight_scale.dtype == torch.float32
    x = torch.randn(tokens, 96, dtype=dtype, generator=torch.Generator().manual_seed(tokens))
    _check(layer, linear, x)


def test_leading_dims_bias_free_and_activation():
    linear = nn.Linear(64, 32, bias=False).half()
    layer = SparseLinear.from_linear(linear, weight_dtype=torch.int8, activation="silu")
    x = torch.randn(2, 3, 64).half()
    with torch.no_grad():
        y = layer(x)
        torch.testing.assert_close(y.double(), nn.functional.silu(_reference(layer, x)), rtol=2e-2, atol=2e-2)


def test_a_zero_token_row_gives_the_bias():
    linear = nn.Linear(64, 16).half()
    layer = SparseLinear.from_linear(linear, weight_dtype=torch.float8_e4m3fn)
    x = torch.randn(3, 64).half()
    x[1] = 0
    with torch.no_grad():
        y = layer(x)
    assert torch.isfinite(y).all()
    torch.testing.assert_close(y[1], linear.bias.detach())


def test_sparsify_compile_export_and_state_dict():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 96), nn.ReLU(), nn.Linear(96, 32)).half()
    sparsify_(model, weight_dtype=torch.float8_e4m3fn)
    assert "float8_e4m3fn" in repr(model)
    x = torch.randn(5, 64).half()
    eager = assert_compiles_and_exports(model, x, "sparsecc.sparse_linear_8bit", torch.testing.assert_close)
    state = model.state_dict()
    assert state["0.values"].dtype == torch.float8_e4m3fn and "0.weight_scale" in state
    buf = io.BytesIO()
    torch.save(state, buf)
    buf.seek(0)
    fresh = sparsify_(nn.Sequential(nn.Linear(64, 96), nn.ReLU(), nn.Linear(96, 32)).half(),
                      weight_dtype=torch.float8_e4m3fn)
    fresh.load_state_dict(torch.load(buf))
    with torch.no_grad():
        torch.testing.assert_close(fresh(x), eager)


def test_a_checkpoint_of_another_format_is_an_error():
    fp16 = sparsify_(nn.Sequential(nn.Linear(64, 32)).half())
    int8 = sparsify_(nn.Sequential(nn.Linear(64, 32)).half(), weight_dtype=torch.int8)
    with pytest.raises(RuntimeError, match="checkpoint's values are torch.float16"):
        int8.load_state_dict(fp16.state_dict())
    with pytest.raises(RuntimeError, match="checkpoint's values are torch.int8"):
        fp16.load_state_dict(int8.state_dict())


def test_bad_weight_dtype_and_prune_false():
    with pytest.raises(ValueError, match="weight_dtype must be one of"):
        SparseLinear.from_linear(nn.Linear(64, 32).half(), weight_dtype=torch.float8_e5m2)
    with pytest.raises(ValueError, match="2:4"):
        SparseLinear.from_linear(nn.Linear(64, 32).half(), prune=False, weight_dtype=torch.int8)


@pytest.mark.gpu
@pytest.mark.parametrize("wdt", EIGHT_BIT, ids=str)
@pytest.mark.parametrize("tokens, n, k", [(1, 4096, 4096), (16, 1000, 512), (200, 512, 1024)])
def test_8bit_sparse_linear_on_the_gpu_in_a_cuda_graph(wdt, tokens, n, k):
    linear = _linear(n, k, torch.float16, "cuda", seed=tokens)
    layer = SparseLinear.from_linear(linear, weight_dtype=wdt)
    x = torch.randn(tokens, k, dtype=torch.float16, device="cuda")
    _check(layer, linear, x)
    with torch.no_grad():
        layer(x)  # compile outside the capture
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            static_out = layer(x)
        x.copy_(torch.randn_like(x))
        graph.replay()
        torch.cuda.synchronize()
        torch.testing.assert_close(static_out.double(), _reference(layer, x), rtol=1.6e-2,
                                   atol=1.6e-2 * static_out.abs().max().item())
