"""Tensor parallelism for SparseLinear (`sparsecc.nn.parallel`): each shard is the exact slice of
the full compressed weight (every format, ragged row counts), the pieces recompose the layer's
output, splits that break a 2:4 metadata word or a quantization group are refused naming the
layer, `sparse_plan` keeps the layouts; and a 2-process gloo run of `parallelize_module` on a
tiny MLP and a Llama-like block against the unsharded sparse model (fp16 and w4g128)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from sparsecc.nn import SparseLinear

dist = pytest.importorskip("torch.distributed")
if not dist.is_available():
    pytest.skip("this torch has no torch.distributed", allow_module_level=True)

from torch.distributed.tensor import Replicate, Shard  # noqa: E402
from torch.distributed.tensor.parallel import ColwiseParallel, PrepareModuleInput, RowwiseParallel  # noqa: E402

from sparsecc.nn.parallel import (  # noqa: E402
    FusedColwiseParallel,
    SparseColwiseParallel,
    SparseRowwiseParallel,
    fuse_linears,
    fused_rows,
    shard_fused_sparse_linear,
    shard_sparse_linear,
    sparse_plan,
)

FORMATS = {  # name -> SparseLinear.from_linear keyword arguments
    "fp16": {}, "w4g128": {"quant": "w4g128"}, "w8c": {"quant": "w8c"}, "w4g64z": {"quant": "w4g64z"},
    "int8": {"weight_dtype": torch.int8}, "fp8": {"weight_dtype": torch.float8_e4m3fn}, "w4g32": {"quant": "w4g32"},
}
ACT = {"none": lambda y: y, "relu": torch.relu, "silu": F.silu, "gelu_tanh": lambda y: F.gelu(y, approximate="tanh")}


def _layer(n: int, k: int, fmt: str, activation: str = "none", bias: bool = True,
           dtype: torch.dtype = torch.float16, seed: int = 0) -> SparseLinear:
    torch.manual_seed(seed)
    linear = nn.Linear(k, n, bias=bias).to(dtype)
    with torch.no_grad():  # biases of the weights' size, so that a bias added twice shows
        linear.weight.normal_()
        if bias:
            linear.bias.normal_()
    return SparseLinear.from_linear(linear, activation=activation, **FORMATS[fmt])


def _dense(layer: SparseLinear) -> torch.Tensor:
    return layer.weight().to_dense()


@pytest.mark.parametrize("fmt", list(FORMATS))
@pytest.mark.parametrize("world", [2, 4])
def test_shards_are_the_slices_of_the_compressed_weight(fmt, world):
    """Every piece's weight (codes, scales, metadata decoded) equals the full weight's rows / K
    columns bit for bit; 70 rows over 4 ranks is ragged (18, 18, 18, 16), like torch.chunk."""
    full = _layer(70, 512, fmt, dtype=torch.bfloat16 if fmt == "w8c" else torch.float16)
    dense = _dense(full)
    rows = torch.arange(70).chunk(world)
    for rank in range(world):
        col = shard_sparse_linear(full, 0, rank, world)
        r = rows[rank]
        assert (col.out_features, col.in_features) == (len(r), 512)
        assert torch.equal(_dense(col), dense[r[0]:r[-1] + 1])
        assert torch.equal(col.bias, full.bias[r[0]:r[-1] + 1])
        row = shard_sparse_linear(full, 1, rank, world)
        k0 = rank * 512 // world
        assert (row.out_features, row.in_features, row.tp_shard.offset) == (70, 512 // world, k0)
        assert torch.equal(_dense(row), dense[:, k0:k0 + 512 // world])
        assert (row.bias is not None) == (rank == 0)  # the partial sums add the bias once
        if full.weight_dtype is not None:  # per-channel 8-bit scales: every K piece keeps them all
            assert torch.equal(row.weight_scale, full.weight_scale)
            assert torch.equal(col.weight_scale, full.weight_scale[r[0]:r[-1] + 1])


@pytest.mark.parametrize("fmt", ["fp16", "w4g128", "w4g64z", "int8"])
@pytest.mark.parametrize("activation", ["relu", "silu", "gelu_tanh"])
def test_pieces_recompose_the_layer(fmt, activation):
    """Column pieces concatenate to layer(x) exactly (activation fused in each piece); row pieces
    sum, then the activation, to layer(x) within fp16 rounding."""
    full = _layer(72, 512, fmt, activation)
    x = torch.randn(2, 3, 512, dtype=torch.float16)
    want = full(x).float()
    cols = torch.cat([shard_sparse_linear(full, 0, r, 2)(x) for r in range(2)], -1).float()
    assert torch.equal(cols, want)  # int8 too: each piece quantizes the same tokens of x alike
    pieces = [shard_sparse_linear(full, 1, r, 2) for r in range(2)]
    assert all(p.activation == "none" for p in pieces)
    summed = sum(p(x[..., p.tp_shard.offset:p.tp_shard.offset + p.in_features]).float() for p in pieces)
    got = ACT[activation](summed)
    tol = 3e-2 if fmt == "int8" else 1e-2  # int8: each piece quantizes its own slice of x
    torch.testing.assert_close(got, want, rtol=tol, atol=tol * want.abs().max().item())
    assert want.abs().max() > 1  # not a trivially small output


@pytest.mark.parametrize("n, k, fmt, dim, world, words", [
    (64, 384, "w4g128", 1, 2, ["'mlp.down_proj'", "384", "[192, 192]", "quantization group 128", "w4g128"]),
    (64, 48, "fp16", 1, 2, ["'mlp.down_proj'", "in_features = 48", "[24, 24]", "multiple of 16"]),
    (64, 512, "w4g128", 1, 8, ["[64, 64, 64, 64, 64, 64, 64, 64]", "quantization group 128"]),
    (3, 64, "fp16", 0, 4, ["out_features = 3", "leaves a rank no rows", "[1, 1, 1, 0]"]),
    (64, 32, "int8", 1, 4, ["in_features = 32", "[8, 8, 8, 8]", "metadata word covers 16 columns", "torch.int8"]),
    (64, 96, "w4g32", 1, 2, ["[48, 48]", "quantization group 32 (w4g32)", "NV24.w4g32"]),
])
def test_a_split_that_breaks_a_group_is_refused_naming_the_layer(n, k, fmt, dim, world, words):
    layer = _layer(n, k, fmt)
    layer.fqn = "mlp.down_proj"
    with pytest.raises(ValueError) as e:
        shard_sparse_linear(layer, dim, 0, world)
    for word in words:
        assert word in str(e.value), str(e.value)


def test_w4g128_on_group_boundaries_is_accepted():
    """11008 (Llama-7B's intermediate size) over 2 ranks: 5504 = 43 groups of 128 each."""
    layer = _layer(16, 11008, "w4g128", bias=False)
    pieces = [shard_sparse_linear(layer, 1, r, 2) for r in range(2)]
    assert [p.in_features for p in pieces] == [5504, 5504]
    assert [tuple(p.scales.shape) for p in pieces] == [(16, 43), (16, 43)]


@pytest.mark.parametrize("fmt", ["fp16", "w4g128", "w4g64z", "int8", "fp8"])
def test_fuse_linears_concatenates_the_compressed_rows(fmt):
    """q, k, v of 70, 34, 34 rows (not multiples of the metadata's 16-row blocks) fused: the
    weight is their rows concatenated bit for bit (codes, scales, metadata decoded), and the
    fused output splits into theirs exactly."""
    layers = [_layer(n, 256, fmt, "silu", seed=s) for s, n in enumerate((70, 34, 34))]
    for name, layer in zip("qkv", layers):
        layer.fqn = f"attn.{name}_proj"
    fused = fuse_linears(layers)
    assert (fused.out_features, fused.in_features, fused.activation) == (138, 256, "silu")
    assert fused.fqn == "attn.q_proj+attn.k_proj+attn.v_proj"
    assert torch.equal(_dense(fused), torch.cat([_dense(m) for m in layers]))
    assert torch.equal(fused.bias, torch.cat([m.bias for m in layers]))
    if fused.quant is not None:
        assert torch.equal(fused.scales, torch.cat([m.scales for m in layers]))
    if fused.weight_dtype is not None:
        assert torch.equal(fused.weight_scale, torch.cat([m.weight_scale for m in layers]))
    if fmt == "fp8":
        return  # fp8 forward needs CUDA; the arrays above are what it would read
    x = torch.randn(2, 3, 256, dtype=torch.float16)
    for got, layer in zip(fused(x).split([70, 34, 34], -1), layers, strict=True):
        want = layer(x)
        assert want.abs().max() > 0.5
        assert torch.equal(got, want)


def test_fuse_linears_of_dense_layers_and_its_errors():
    torch.manual_seed(0)
    q, k = nn.Linear(64, 48).half(), nn.Linear(64, 16).half()
    fused = fuse_linears([q, k])
    x = torch.randn(5, 64, dtype=torch.float16)
    a, b = fused(x).split([48, 16], -1)
    assert torch.equal(a, q(x)) and torch.equal(b, k(x))
    with pytest.raises(ValueError, match="takes 32 input features"):
        fuse_linears([q, nn.Linear(32, 16).half()])
    with pytest.raises(ValueError, match="differ in having a bias"):
        fuse_linears([q, nn.Linear(64, 16, bias=False).half()])
    with pytest.raises(TypeError, match="not a mix"):
        fuse_linears([q, _layer(16, 64, "fp16")])
    with pytest.raises(ValueError, match="must match"):
        fuse_linears([_layer(16, 128, "fp16"), _layer(16, 128, "w4g128")])
    with pytest.raises(ValueError, match="no layers"):
        fuse_linears([])


@pytest.mark.parametrize("fmt", ["fp16", "w4g128", "int8"])
@pytest.mark.parametrize("world", [2, 4])
def test_fused_shards_hold_each_ranks_rows_of_every_part(fmt, world):
    """Rank r's piece of a fused q/k/v (GQA: 128, 64, 64 rows) is its q rows, then its k rows,
    then its v rows, cut from the compressed arrays; its output is those columns of the
    unfused layers' outputs (w4g128: scale rows follow their code rows)."""
    parts = (128, 64, 64)
    layers = [_layer(n, 256, fmt, seed=s) for s, n in enumerate(parts)]
    fused = fuse_linears(layers)
    x = torch.randn(3, 256, dtype=torch.float16)
    outs = [m(x) for m in layers]
    for rank in range(world):
        piece = shard_fused_sparse_linear(fused, parts, rank, world)
        mine = [slice(rank * n // world, (rank + 1) * n // world) for n in parts]
        assert piece.out_features == 256 // world and piece.tp_shard.parts == parts
        assert torch.equal(_dense(piece), torch.cat([_dense(m)[s] for m, s in zip(layers, mine)]))
        assert torch.equal(piece.bias, torch.cat([m.bias[s] for m, s in zip(layers, mine)]))
        if fmt == "w4g128":
            assert torch.equal(piece.scales, torch.cat([m.scales[s] for m, s in zip(layers, mine)]))
        assert torch.equal(piece(x), torch.cat([o[:, s] for o, s in zip(outs, mine)], -1))
    assert fused_rows(parts, 1, 2).tolist() == [*range(64, 128), *range(160, 192), *range(224, 256)]


def test_fused_splits_that_do_not_fit_are_refused_naming_the_layer():
    fused = fuse_linears([_layer(n, 64, "fp16", seed=s) for s, n in enumerate((64, 32, 32))])
    fused.fqn = "attn.qkv_proj"
    with pytest.raises(ValueError, match=r"'attn.qkv_proj' \(64 -> 128\).*part of 32 rows .* over 64 ranks"):
        shard_fused_sparse_linear(fused, (64, 32, 32), 0, 64)
    with pytest.raises(ValueError, match="does not split evenly over 3 ranks"):
        shard_fused_sparse_linear(fused, (64, 32, 32), 0, 3)
    with pytest.raises(ValueError, match=r"add up to 96 rows, the layer has 128"):
        shard_fused_sparse_linear(fused, (64, 32), 0, 2)
    with pytest.raises(ValueError, match="positive ints"):
        shard_fused_sparse_linear(fused, (64, 64, 0), 0, 2)
    with pytest.raises(ValueError, match="already a tensor-parallel shard"):
        shard_fused_sparse_linear(shard_fused_sparse_linear(fused, (64, 32, 32), 0, 2), (32, 16, 16), 0, 2)
    assert type(sparse_plan(FusedColwiseParallel((64, 64)))) is FusedColwiseParallel  # kept as it is


def test_bad_arguments_and_a_second_split_are_refused():
    layer = _layer(32, 64, "fp16")
    with pytest.raises(ValueError, match="dim must be 0"):
        shard_sparse_linear(layer, 2, 0, 2)
    with pytest.raises(ValueError, match="0 <= rank < world_size"):
        shard_sparse_linear(layer, 0, 2, 2)
    with pytest.raises(TypeError, match="expects a SparseLinear"):
        shard_sparse_linear(nn.Linear(64, 32), 0, 0, 2)
    piece = shard_sparse_linear(layer, 0, 0, 2)
    with pytest.raises(ValueError, match="already a tensor-parallel shard"):
        shard_sparse_linear(piece, 0, 0, 2)


def test_sparse_plan_keeps_the_layouts_and_other_styles():
    prepare = PrepareModuleInput(input_layouts=(Shard(1),), desired_input_layouts=(Replicate(),))
    mine = SparseRowwiseParallel()
    plan = sparse_plan({"a": ColwiseParallel(output_layouts=Replicate(), use_local_output=False),
                        "b": RowwiseParallel(input_layouts=Replicate()), "c": prepare, "d": mine})
    assert type(plan["a"]) is SparseColwiseParallel and type(plan["b"]) is SparseRowwiseParallel
    assert plan["a"].output_layouts == (Replicate(),) and plan["a"].use_local_output is False
    assert plan["a"].input_layouts == (Replicate(),)
    assert plan["b"].input_layouts == (Replicate(),) and plan["b"].output_layouts == (Replicate(),)
    assert plan["c"] is prepare and plan["d"] is mine
    assert type(sparse_plan(ColwiseParallel())) is SparseColwiseParallel


def _run_two_ranks(tmp_path, device: str) -> None:
    """tp_worker.py on 2 ranks (gloo on the CPU, or NCCL on 2 GPUs): parallelize_module with the
    Sparse styles (MLP: fused activations and biases on both sides, a ragged gathered output, a
    DTensor output and a layer that takes it, a dense Linear in the plan) and with sparse_plan(torch's plan) (Llama-like
    block), fp16 and w4g128, against the unsharded sparse model on the same input; rank 1 built
    its model from another seed, so a match also shows the shards came from rank 0's weights."""
    worker = os.path.join(os.path.dirname(__file__), "tp_worker.py")
    root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
    env = dict(os.environ, WORLD_SIZE="2", TP_INIT_FILE=str(tmp_path / "rendezvous"),
               PYTHONPATH=os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]), OMP_NUM_THREADS="1",
               TP_DEVICE=device)
    procs = [subprocess.Popen([sys.executable, worker, str(tmp_path / f"rank{r}.json")], env=dict(env, RANK=str(r)),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for r in range(2)]
    logs = []
    try:
        for p in procs:
            logs.append(p.communicate(timeout=120)[0])
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    for rank, (p, log) in enumerate(zip(procs, logs)):
        assert p.returncode == 0, f"rank {rank} exited with {p.returncode}:\n{log[-3000:]}"
    results = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(2)]
    for rank, res in enumerate(results):
        assert "error" not in res, res.get("error")
        for name in ("fp16", "w4g128"):
            for case in (f"mlp-{name}-fc3", f"mlp-{name}-fc4", f"mlp-{name}-fc5", f"mlp-{name}-dense",
                         f"block-{name}"):
                d = res[case]
                assert d["finite"] and d["ref"] > 0.05, (rank, case, d)  # not an all-zero output
                assert d["err"] <= 1e-2 * max(d["ref"], 1.0), (rank, case, d)
            assert res[f"mlp-{name}-fc3"]["shape"] == [3, 5, 71]  # gathered from 36 + 35 rows
            shards = res[f"mlp-{name}-shards"]
            assert shards["fc1_out"] == 256 and shards["fc2_in"] == 256 and shards["fc1_bias"] == [256]
            assert shards["fc3_out"] == (36, 35)[rank]
            assert shards["fc2_bias"] == (rank == 0)
            assert res[f"block-{name}-local"] == {"q_out": 128, "down_in": 256}
        for name in ("fp16", "w4g128", "dense", "swiglu-w4g128"):  # fused q/k/v and gate/up, FusedColwiseParallel
            d = res[f"fused-{name}"]
            assert d["finite"] and d["ref"] > 0.05, (rank, name, d)
            assert d["err"] <= 1e-2 * max(d["ref"], 1.0), (rank, name, d)
            local = res[f"fused-{name}-local"]
            assert (local["qkv_out"], local["gate_up_out"]) == (256, 512), local  # (256+128+128)/2, 2*512/2
            assert local["parts"] == ([256, 128, 128] if name != "dense" else None)
            assert local["gate_up_activation"] == {"dense": None, "swiglu-w4g128": "swiglu"}.get(name, "none")
        error = res["bad-split"]["error"]
        assert error and "'mlp.down'" in error and "[192, 192]" in error and "quantization group 128" in error


@pytest.mark.skipif(not dist.is_gloo_available(), reason="needs torch.distributed with gloo")
def test_two_gloo_processes_match_the_unsharded_model(tmp_path):
    _run_two_ranks(tmp_path, "cpu")


@pytest.mark.gpu
def test_two_nccl_gpus_match_the_unsharded_model(tmp_path):
    """The same on 2 GPUs with NCCL: the sparsecc kernels run on the shards' shapes."""
    if torch.cuda.device_count() < 2 or not dist.is_nccl_available():
        pytest.skip("needs 2 GPUs and NCCL")
    _run_two_ranks(tmp_path, "cuda")


@pytest.mark.gpu
@pytest.mark.parametrize("fmt", ["fp16", "w4g128"])
@pytest.mark.parametrize("tokens", [1, 16])
def test_shards_run_on_cuda(fmt, tokens):
    """The pieces of a Llama-7B down_proj-shaped layer (K = 11008: 5504 a piece, not a multiple of
    the kernels' K tiles) and a 3-way row split (96 -> 32 rows) on the GPU's kernels, against the
    whole layer's output on the GPU."""
    full = _layer(96, 11008, fmt).cuda()
    x = torch.randn(tokens, 11008, dtype=torch.float16, device="cuda")
    want = full(x).float()
    cols = torch.cat([shard_sparse_linear(full, 0, r, 3)(x) for r in range(3)], -1).float()
    torch.testing.assert_close(cols, want, rtol=1e-2, atol=1e-2 * want.abs().max().item())
    pieces = [shard_sparse_linear(full, 1, r, 2) for r in range(2)]
    assert [p.in_features for p in pieces] == [5504, 5504]
    got = sum(p(x[:, p.tp_shard.offset:p.tp_shard.offset + 5504].contiguous()).float() for p in pieces)
    torch.testing.assert_close(got, want, rtol=1e-2, atol=1e-2 * want.abs().max().item())
