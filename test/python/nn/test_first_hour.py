"""What a first user of sparsecc.nn meets: `sparsify_` on a model it cannot convert says so,
a wrong input width names the layer and both widths, a CUDA layer without CUDA is one clear
error."""

from __future__ import annotations

import warnings

import pytest
import torch
from torch import nn

import sparsecc
from sparsecc.nn import LAYER_DTYPES, SparseLinear, SparsifySkipWarning, sparsify_


def _mlp(dtype: torch.dtype, seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(64, 96), nn.ReLU(), nn.Linear(96, 48), nn.ReLU(), nn.Linear(48, 10)).to(dtype)


def _close(a: torch.Tensor, b: torch.Tensor) -> None:
    torch.testing.assert_close(a.float(), b.float(), rtol=2e-2, atol=2e-2 * max(b.abs().max().item(), 1.0))


def test_an_fp32_model_is_left_dense_with_one_warning_saying_why():
    model = _mlp(torch.float32)
    x = torch.randn(5, 64)
    before = model(x).detach()
    with pytest.warns(SparsifySkipWarning) as record:
        out = sparsify_(model)
    assert len(record) == 1
    text = str(record[0].message)
    assert "3 of 3 nn.Linear layers left dense: 3 with torch.float32 weights (0, 2, 4)" in text, text
    assert "torch.float16 or torch.bfloat16" in text and "model.half()" in text, text
    assert record[0].filename == __file__  # points at the caller's sparsify_ line
    assert out is model and not any(isinstance(m, SparseLinear) for m in model.modules())
    torch.testing.assert_close(model(x), before, rtol=0, atol=0)  # nothing was pruned either


def test_a_half_model_converts_what_fits_and_names_what_does_not():
    model = nn.Sequential(nn.Linear(64, 96), nn.ReLU(), nn.Linear(96, 40), nn.ReLU(), nn.Linear(40, 8)).half()
    dense = [m.weight.detach().clone() for m in model if isinstance(m, nn.Linear)]
    with pytest.warns(SparsifySkipWarning, match=r"1 of 3 nn.Linear layers left dense: 1 with in_features "
                                                 r"not a multiple of 16 \(4\)") as record:
        sparsify_(model)
    assert "model.half()" not in str(record[0].message)  # the dtype was fine
    assert [type(m).__name__ for m in model] == ["SparseLinear", "ReLU", "SparseLinear", "ReLU", "Linear"]
    x = torch.randn(3, 64, dtype=torch.float16)
    h = torch.relu(x.float() @ sparsecc.prune_2to4(dense[0]).float().T + model[0].bias.float())
    h = torch.relu(h.half().float() @ sparsecc.prune_2to4(dense[1]).float().T + model[2].bias.float())
    ref = h.half().float() @ dense[2].float().T + model[4].bias.float()
    with torch.no_grad():
        _close(model(x), ref)


def test_quant_names_the_group_when_in_features_misses_it():
    model = nn.Sequential(nn.Linear(128, 32), nn.Linear(32, 16)).half()
    with pytest.warns(SparsifySkipWarning, match="in_features not a multiple of the quantization group 128"):
        sparsify_(model, quant="w4g128")
    assert isinstance(model[0], SparseLinear) and isinstance(model[1], nn.Linear)


def test_no_warning_when_everything_converts_or_filter_fn_leaves_it_out():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sparsify_(_mlp(torch.float16))
        mixed = nn.Sequential(nn.Linear(64, 32).half(), nn.Linear(32, 16))  # the second fp32
        sparsify_(mixed, filter_fn=lambda m, name: m.weight.dtype in LAYER_DTYPES)
        assert isinstance(mixed[0], SparseLinear) and isinstance(mixed[1], nn.Linear)


@pytest.mark.parametrize("kind", [{}, {"quant": "w4g64"}, {"weight_dtype": torch.int8}], ids=["fp16", "w4g64", "int8"])
def test_a_wrong_input_width_names_the_layer_and_both_widths(kind):
    model = nn.Sequential(nn.Sequential(nn.Linear(128, 64)), nn.Linear(64, 32)).half()
    sparsify_(model, **kind)
    with pytest.raises(ValueError) as info:
        model(torch.randn(2, 3, 100, dtype=torch.float16))
    assert str(info.value) == ("SparseLinear '0.0' (in_features=128, out_features=64): the input's last dimension "
                               "is 100, the layer takes 128 (input shape (2, 3, 100))")
    y = model(torch.randn(2, 3, 128, dtype=torch.float16))  # the right width still runs
    assert y.shape == (2, 3, 32) and torch.isfinite(y).all()


def test_a_layer_made_directly_is_named_by_its_class():
    layer = SparseLinear(64, 16)
    with pytest.raises(ValueError, match=r"^SparseLinear \(in_features=64, out_features=16\): the input's last "
                                         r"dimension is 63, the layer takes 64 \(input shape \(63,\)\)$"):
        layer(torch.randn(63, dtype=torch.float16))


def test_a_cuda_layer_without_cuda_is_one_clear_error(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(RuntimeError, match=r"^SparseLinear: device='cuda:0' but CUDA is not available \(") as info:
        SparseLinear(64, 16, device="cuda:0")
    assert "device='cpu'" in str(info.value)
    why = "this torch is a CPU-only build" if torch.version.cuda is None else "finds no CUDA device or driver"
    assert why in str(info.value)
    SparseLinear(64, 16, device=torch.device("cpu"))  # the CPU is always fine
