"""sparsecc.nn: sparsify a small model, compile it with fullgraph=True (no graph break), export it,
save and reload its compressed state, match the dense-pruned model; the kernel path on the CPU
interpreter and on the GPU (CUDA graphs)."""

from __future__ import annotations

import io

import pytest
import torch
from torch import nn
from torch_checks import assert_compiles_and_exports

import sparsecc
from sparsecc.nn import SparseLinear, sparsify_
from sparsecc.ops import sparse_linear
from sparsecc.ops.sparse_linear import reference_linear


def _model(dtype: torch.dtype, device: str = "cpu", seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(64, 96), nn.ReLU(), nn.Linear(96, 40), nn.GELU(approximate="tanh"),
                         nn.Linear(40, 8)).to(dtype).to(device)  # the last: in_features not a multiple of 16


def _pruned_copy(model: nn.Module) -> nn.Module:
    dense = _model(next(model.parameters()).dtype, next(model.parameters()).device.type)
    dense.load_state_dict(model.state_dict())
    for m in dense.modules():
        if isinstance(m, nn.Linear) and m.in_features % 16 == 0:
            m.weight.data = sparsecc.prune_2to4(m.weight.data)
    return dense


def _close(a: torch.Tensor, b: torch.Tensor) -> None:
    torch.testing.assert_close(a.float(), b.float(), rtol=2e-2, atol=2e-2 * max(b.abs().max().item(), 1.0))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_sparsify_matches_the_dense_pruned_model(dtype):
    model = _model(dtype)
    reference = _pruned_copy(model)
    sparsify_(model)
    assert [type(m).__name__ for m in model] == ["SparseLinear", "ReLU", "SparseLinear", "GELU", "Linear"]
    x = torch.randn(5, 64, dtype=dtype)
    with torch.no_grad():
        _close(model(x), reference(x))


def test_compile_fullgraph_export_and_state_dict_round_trip():
    model = sparsify_(_model(torch.float16))
    x = torch.randn(3, 7, 64, dtype=torch.float16)
    eager = assert_compiles_and_exports(model, x, "sparsecc.sparse_linear", _close)
    buf = io.BytesIO()
    torch.save(model.state_dict(), buf)
    assert "0.values" in model.state_dict() and "0.weight" not in model.state_dict()
    fresh = sparsify_(_model(torch.float16, seed=1))
    buf.seek(0)
    fresh.load_state_dict(torch.load(buf))
    with torch.no_grad():
        _close(fresh(x), eager)


def test_a_checkpoint_of_the_wrong_shape_is_an_error():
    model = sparsify_(_model(torch.float16))
    other = sparsify_(nn.Sequential(nn.Linear(64, 48), nn.ReLU(), nn.Linear(48, 40), nn.GELU(),
                                    nn.Linear(40, 8)).half())
    with pytest.raises(RuntimeError, match="size mismatch"):
        other.load_state_dict(model.state_dict())


def test_training_is_refused_clearly():
    layer = SparseLinear.from_linear(nn.Linear(64, 32).half())
    x = torch.randn(4, 64, dtype=torch.float16, requires_grad=True)
    with pytest.raises(RuntimeError, match="inference-only"):
        layer(x).float().sum().backward()


def test_prune_false_checks_the_pattern():
    with pytest.raises(ValueError, match="2:4"):
        SparseLinear.from_linear(nn.Linear(64, 32).half(), prune=False)


@pytest.mark.parametrize("activation", ["none", "relu", "gelu_tanh", "silu"])
def test_the_kernel_path_on_the_interpreter(activation, monkeypatch):
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    g = torch.Generator().manual_seed(3)
    w = sparsecc.compress(sparsecc.prune_2to4(torch.randn(48, 64, generator=g).half()))
    x = torch.randn(2, 5, 64, generator=g).half()
    b = torch.randn(48, generator=g).half()
    _close(sparse_linear(x, w, b, activation), reference_linear(x, w, b, activation))


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_sparse_model_on_the_gpu_in_a_cuda_graph(dtype):
    model = _model(dtype, "cuda")
    reference = _pruned_copy(model)
    sparsify_(model)
    x = torch.randn(16, 64, dtype=dtype, device="cuda")
    with torch.no_grad():
        _close(model(x), reference(x))
        model(x)  # compile outside the capture
        graph = torch.cuda.CUDAGraph()
        static_out = None
        with torch.cuda.graph(graph):
            static_out = model(x)
        x.copy_(torch.randn_like(x))
        graph.replay()
        torch.cuda.synchronize()
        _close(static_out, reference(x))


@pytest.mark.gpu
@pytest.mark.parametrize("m, n, k", [(1, 4096, 4096), (16, 1000, 528), (200, 512, 1024)])
def test_sparse_linear_on_the_gpu(m, n, k):
    torch.manual_seed(m + n)
    w = sparsecc.compress(sparsecc.prune_2to4(torch.randn(n, k, dtype=torch.float16, device="cuda")))
    x = torch.randn(m, k, dtype=torch.float16, device="cuda")
    b = torch.randn(n, dtype=torch.float16, device="cuda")
    for act in ("none", "silu", "gelu_tanh"):
        _close(sparse_linear(x, w, b, act), reference_linear(x, w, b, act))


def test_safetensors_round_trip(tmp_path):
    safetensors_torch = pytest.importorskip("safetensors.torch")
    model = sparsify_(_model(torch.bfloat16))
    path = tmp_path / "model-2to4.safetensors"
    safetensors_torch.save_model(model, str(path))
    fresh = sparsify_(_model(torch.bfloat16, seed=2))
    missing, unexpected = safetensors_torch.load_model(fresh, str(path))
    assert not missing and not unexpected
    x = torch.randn(4, 64, dtype=torch.bfloat16)
    with torch.no_grad():
        _close(fresh(x), model(x))
    saved = safetensors_torch.load_file(str(path))
    assert saved["0.meta"].dtype == torch.int16 and tuple(saved["0.values"].shape) == (96, 32)


def _mm_module():
    from sparsecc.nn.torch_ops import sparse_mm_op

    class SparseMM(nn.Module):
        def __init__(self, a):
            super().__init__()
            self.register_buffer("a_values", a.values)
            self.register_buffer("a_meta", a.meta)
            self.k = a.shape[1]

        def forward(self, b):
            return sparse_mm_op(self.a_values, self.a_meta, self.k, b) * 2

    return SparseMM


def test_the_sparse_mm_op_compiles_and_exports():
    dense = sparsecc.prune_2to4(torch.randn(48, 64).half())
    module = _mm_module()(sparsecc.compress(dense))
    b = torch.randn(64, 24).half()
    ref = (dense.float() @ b.float() * 2).half()
    with torch.no_grad():
        _close(torch.compile(module, fullgraph=True, backend="aot_eager")(b), ref)
        exported = torch.export.export(module, (b,))
        assert any("sparsecc.sparse_mm" in str(n.target) for n in exported.graph.nodes)
        _close(exported.module()(b), ref)


@pytest.mark.gpu
def test_the_sparse_mm_op_on_the_gpu():
    dense = sparsecc.prune_2to4(torch.randn(300, 256, device="cuda").half())
    module = _mm_module()(sparsecc.compress(dense))
    b = torch.randn(256, 72, device="cuda").half()
    with torch.no_grad():
        _close(module(b), (dense.float() @ b.float() * 2).half())
