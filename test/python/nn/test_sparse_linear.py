"""sparsecc.nn: sparsify a small model, compile it with fullgraph=True (no graph break), export it,
save and reload its compressed state, match the dense-pruned model; the kernel path on the CPU
interpreter and on the GPU (CUDA graphs)."""

from __future__ import annotations

import copy
import importlib
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


# ---- checkpoints whose arrays are not the layer's ----------------------------------------------


def _layer(kind: str) -> SparseLinear:
    torch.manual_seed(3)
    linear = nn.Linear(64, 24).half()
    if kind == "int8":
        return SparseLinear.from_linear(linear, weight_dtype=torch.int8)
    if kind == "w4g32z":
        return SparseLinear.from_linear(linear, quant="w4g32z")
    return SparseLinear.from_linear(linear)


@pytest.mark.parametrize(("kind", "key", "change", "message"), [
    ("fp16", "meta", torch.float16, r"dtype mismatch for 'meta': the checkpoint holds torch.float16 of shape "
                                    r"\(2, 64\), this layer expects torch.int16 of shape \(2, 64\)"),
    ("fp16", "meta", torch.int32, r"dtype mismatch for 'meta'.*torch.int32.*expects torch.int16"),
    ("fp16", "meta", (1, 64), r"size mismatch for 'meta'.*shape \(1, 64\).*expects torch.int16 of shape \(2, 64\)"),
    ("fp16", "values", (24, 16), r"size mismatch for 'values'.*\(24, 16\).*\(24, 32\)"),
    ("fp16", "values", torch.bfloat16, r"checkpoint's values are torch.bfloat16"),
    ("int8", "meta", torch.float16, r"dtype mismatch for 'meta'"),
    ("int8", "weight_scale", torch.float16, r"dtype mismatch for 'weight_scale'.*expects torch.float32"),
    ("int8", "weight_scale", (12,), r"size mismatch for 'weight_scale'"),
    ("w4g32z", "meta", torch.float16, r"dtype mismatch for 'meta'"),
    ("w4g32z", "zeros", torch.float32, r"dtype mismatch for 'zeros'.*torch.float32.*expects torch.float16"),
    ("w4g32z", "values", torch.uint8, r"dtype mismatch for 'values'.*torch.uint8.*expects torch.int8"),
    ("w4g32z", "scales", (24, 4), r"NV24.w4g16z weights .*this layer stores NV24.w4g32z"),
])
def test_a_checkpoint_array_of_another_dtype_or_shape_is_refused(kind, key, change, message):
    """An fp16 `meta` used to load (cast to int16: another weight) and give wrong outputs."""
    layer, source = _layer(kind), _layer(kind)
    before = {k: v.clone() for k, v in layer.state_dict().items()}
    checkpoint = dict(source.state_dict())
    t = checkpoint[key]
    checkpoint[key] = t.to(change) if isinstance(change, torch.dtype) else torch.zeros(change, dtype=t.dtype)
    with pytest.raises(RuntimeError, match=message):
        layer.load_state_dict(checkpoint)
    for k, v in layer.state_dict().items():  # nothing of the layer was overwritten
        assert torch.equal(v, before[k]), k


def test_the_custom_op_refuses_an_fp16_meta():
    layer = _layer("fp16")
    x = torch.randn(3, 64, dtype=torch.float16)
    with pytest.raises(TypeError, match="meta must be torch.int16, got torch.float16"):
        torch.ops.sparsecc.sparse_linear(x, layer.values, layer.meta.half(), 64, layer.bias, "none")


def test_the_checkpoint_check_names_the_full_key_in_a_model():
    model = sparsify_(_model(torch.float16))
    checkpoint = dict(model.state_dict())
    checkpoint["2.meta"] = checkpoint["2.meta"].half()
    with pytest.raises(RuntimeError, match=r"SparseLinear 2\.: dtype mismatch for '2\.meta'"):
        sparsify_(_model(torch.float16, seed=1)).load_state_dict(checkpoint)


def test_a_safetensors_file_with_an_fp16_meta_is_refused(tmp_path):
    safetensors_torch = pytest.importorskip("safetensors.torch")
    model = sparsify_(_model(torch.float16))
    tensors = {k: v.contiguous() for k, v in model.state_dict().items()}
    tensors["0.meta"] = tensors["0.meta"].half()
    path = tmp_path / "bad-meta.safetensors"
    safetensors_torch.save_file(tensors, str(path))
    with pytest.raises(RuntimeError, match=r"dtype mismatch for '0\.meta': the checkpoint holds torch.float16"):
        safetensors_torch.load_model(sparsify_(_model(torch.float16, seed=1)), str(path))
    tensors["0.meta"] = tensors["0.meta"].to(torch.int16)[:, :32].contiguous()
    safetensors_torch.save_file(tensors, str(path))
    with pytest.raises(RuntimeError, match=r"size mismatch for '0\.meta'"):
        safetensors_torch.load_model(sparsify_(_model(torch.float16, seed=1)), str(path))


# ---- sparsify_ on odd models ------------------------------------------------------------------------


def _dense_pruned(model: nn.Module) -> nn.Module:
    """A deep copy of `model` (sharing kept) with every fitting Linear's weight pruned to 2:4."""
    dense = copy.deepcopy(model)
    for m in dense.modules():
        if isinstance(m, nn.Linear) and m.in_features % 16 == 0 and m.weight.dtype in (torch.float16, torch.bfloat16):
            m.weight.data = sparsecc.prune_2to4(m.weight.data)
    return dense


def test_sparsify_replaces_a_shared_module_under_every_name():
    """Sequential(lin, ReLU(), lin) used to become [SparseLinear, ReLU, Linear]."""
    torch.manual_seed(0)
    lin = nn.Linear(32, 32).half()
    model = nn.Sequential(lin, nn.ReLU(), lin)
    reference = _dense_pruned(model)
    sparsify_(model)
    assert [type(m).__name__ for m in model] == ["SparseLinear", "ReLU", "SparseLinear"]
    assert model[0] is model[2]  # still one layer: the weight stays shared
    x = torch.randn(5, 32, dtype=torch.float16)
    with torch.no_grad():
        _close(model(x), reference(x))
    fresh = nn.Sequential(*(nn.Linear(32, 32).half() for _ in range(1)))
    fresh = sparsify_(nn.Sequential(fresh[0], nn.ReLU(), fresh[0]))
    fresh.load_state_dict(model.state_dict())  # both names' keys land in the one layer
    with torch.no_grad():
        torch.testing.assert_close(fresh(x), model(x))


class _Odd(nn.Module):
    """Nested containers, a shared block, a bias-free Linear, and shapes sparsify_ must skip."""

    def __init__(self) -> None:
        super().__init__()
        block = nn.Sequential(nn.Linear(48, 48, bias=False), nn.SiLU())
        self.heads = nn.ModuleDict({"a": nn.Linear(48, 7), "b": nn.Linear(48, 48)})
        self.stack = nn.ModuleList([block, nn.Sequential(nn.Linear(48, 48)), block])
        self.ragged = nn.Linear(40, 48)  # in_features not a multiple of 16: stays dense
        self.proj = nn.Linear(48, 40)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.stack:
            x = layer(x)
        x = self.ragged(self.proj(x)) + self.heads["b"](x)
        return self.heads["a"](x)


@pytest.mark.parametrize("quant", [None, "w8g16z"])
def test_sparsify_nested_containers_matches_the_dense_pruned_model(quant):
    torch.manual_seed(1)
    model = _Odd().half()
    x = torch.randn(2, 3, 48, dtype=torch.float16)
    sparse = sparsify_(copy.deepcopy(model), quant=quant)
    assert sparse.stack[0] is sparse.stack[2] and isinstance(sparse.stack[0][0], SparseLinear)
    assert sparse.stack[0][0].bias is None and isinstance(sparse.heads["a"], SparseLinear)
    assert isinstance(sparse.stack[1][0], SparseLinear) and isinstance(sparse.proj, SparseLinear)
    assert type(sparse.ragged) is nn.Linear
    reference = _dense_pruned(model)
    if quant is not None:  # the reference multiplies by the dequantized weights
        for name, m in reference.named_modules():
            if isinstance(m, nn.Linear) and isinstance(sparse.get_submodule(name), SparseLinear):
                m.weight.data = sparse.get_submodule(name).weight().to_dense()
    with torch.no_grad():
        _close(sparse(x), reference(x))


def test_sparsify_a_bare_linear_returns_the_sparse_layer():
    lin = nn.Linear(32, 16).half()
    sparse = sparsify_(lin)
    assert isinstance(sparse, SparseLinear)
    x = torch.randn(3, 32, dtype=torch.float16)
    with torch.no_grad():
        _close(sparse(x), _dense_pruned(lin)(x))


def test_filter_fn_sees_every_name_of_a_shared_module():
    lin = nn.Linear(32, 32).half()
    seen = []
    model = sparsify_(nn.Sequential(lin, nn.ReLU(), lin), filter_fn=lambda m, name: seen.append(name) or name == "2")
    assert seen == ["0", "2"] and model[0] is model[2] and isinstance(model[0], SparseLinear)
    kept = sparsify_(nn.Sequential(lin, nn.ReLU(), lin), filter_fn=lambda m, name: False)
    assert kept[0] is lin and kept[2] is lin


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


@pytest.mark.parametrize("split_k", [1, 2])
def test_16_byte_rows_take_the_tma_hint_and_nothing_else_does(split_k, monkeypatch):
    """`launch_linear` passes ROWS_16B (stride hints that let the K loop stream by TMA) exactly
    when X's row stride is a multiple of 8 elements (W's, a multiple of 16, compress ensures),
    in both the plain and the split-K kernel; a quantized weight also needs its dense rows a
    multiple of 64 elements and then gets ROWS_64 too (its codes' rows start 16 bytes apart);
    other strides compile as before."""
    sl = importlib.import_module("sparsecc.ops.sparse_linear")
    seen: list[dict] = []

    class Recorder:
        def __getitem__(self, grid):
            return lambda *args, **kwargs: seen.append(kwargs)

    monkeypatch.setattr(sl, "sparse_linear_kernel", Recorder())
    monkeypatch.setattr(sl, "sparse_linear_splitk_kernel", Recorder())
    cfg = sl.LinearConfig(16, 32, 64, 4, 1, split_k)

    def hint(k: int, x_cols: int, quant: str | None = None) -> bool:
        dense = sparsecc.prune_2to4(torch.randn(32, k).half())
        w = sparsecc.compress(dense, quant=quant) if quant else sparsecc.compress(dense)
        x = torch.randn(8, x_cols).half()[:, :k]
        y = torch.empty(8, 32, dtype=torch.float16)
        sl.launch_linear(y, x, w, y, cfg, has_bias=False, activation="none")
        consts = seen.pop()
        assert consts.get("ROWS_64", False) == (quant is not None and consts.get("ROWS_16B", False))
        return consts.get("ROWS_16B", False)

    assert hint(128, 128)
    assert hint(128, 136)  # a view: X's rows 136 elements apart
    assert not hint(128, 132)  # 132 * 2 bytes: rows not 16 bytes apart
    assert hint(144, 144)  # compress keeps K a multiple of 16, so W's kept values rows are 16-byte multiples
    assert hint(128, 128, "w4g128") and hint(192, 192, "w8g64z")
    assert not hint(160, 160, "w8c")  # 160: W's rows not a multiple of 64
    assert not hint(128, 132, "w4g128")
