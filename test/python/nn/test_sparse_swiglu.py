"""The SwiGLU epilogue (`sparsecc.ops.sparse_glu`, SparseLinear(activation="swiglu")): a [gate | up]
2:4 weight gives silu(gate) * up in one launch. Against torch on the (dequantized) weight, on the
interpreter (outputs poisoned with NaN, ragged M and half, bias, quantized weights) and on the GPU
(Llama shapes, a CUDA graph); the PTX assembles for sm_90a and sm_80; the layer against the
unfused gate and up layers, compiled; and the errors (odd rows, a plain TP split)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import sparsecc
from sparsecc.nn import SparseLinear
from sparsecc.nn.parallel import fuse_linears, shard_fused_sparse_linear, shard_sparse_linear
from sparsecc.ops import LinearConfig
from sparsecc.ops.sparse_glu import reference_swiglu, sparse_swiglu, sparse_swiglu_kernel

gpu = pytest.mark.gpu


def _weight(half: int, k: int, quant: str | None, device: str = "cpu", seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    dense = sparsecc.prune_2to4(torch.randn(2 * half, k, generator=g).half()).to(device)
    return sparsecc.compress(dense, quant=quant) if quant else sparsecc.compress(dense)


def _torch_swiglu(x: torch.Tensor, w, bias: torch.Tensor | None) -> torch.Tensor:
    """silu(gate) * up from the two halves of the dense weight, as separate products."""
    dense = w.to_dense().float()
    half = dense.shape[0] // 2
    b = bias.float() if bias is not None else torch.zeros(2 * half, device=x.device)
    gate = x.float() @ dense[:half].T + b[:half]
    up = x.float() @ dense[half:].T + b[half:]
    return F.silu(gate) * up


@pytest.mark.parametrize("quant, lead, half, k, bias, block_k", [
    (None, (3,), 48, 512, True, 128),        # half 48 over 32-row tiles: the second tile ragged
    ("w4g128", (2, 5), 32, 256, False, 128),
    ("w4g64z", (1,), 16, 384, True, 64),     # 16 rows a half: the up rows start on the second metadata block
    ("w8g128", (17,), 80, 256, True, 256),   # 17 tokens: two token tiles, the second ragged
])
def test_swiglu_on_the_interpreter(poisoned, quant, lead, half, k, bias, block_k):
    w = _weight(half, k, quant, seed=half)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(*lead, k, generator=g).half()
    b = torch.randn(2 * half, generator=g).half() if bias else None
    y = sparse_swiglu(x, w, b, config=LinearConfig(16, 32, block_k, num_stages=1))
    assert y.shape == (*lead, half)
    assert not y.isnan().any(), "an output element was not written"
    want = _torch_swiglu(x, w, b)
    assert want.abs().max() > 10  # not a trivially small output
    torch.testing.assert_close(y.float(), want, rtol=1e-2, atol=1e-2 * want.abs().max().item())
    # the up half alone changed: the gate half must not be read for it
    assert not torch.allclose(y.float(), F.silu(want), atol=1)


@pytest.mark.parametrize("target", ["sm_90a", "sm_80"])
@pytest.mark.parametrize("weight, block_m", [("*fp16:NV24", 16), ("*fp16:NV24.w4g128", 8), ("*bf16:NV24", 16)])
def test_swiglu_kernel_assembles(target, weight, block_m):
    dtype = weight[1:5]
    sig = {"Y": f"*{dtype}", "X": f"*{dtype}", "W": weight, "BIAS": f"*{dtype}", "M": "i32", "N": "i32", "K": "i32",
           "stride_xm": "i32", "stride_wn": "i32", "stride_ym": "i32"}
    ck = sparsecc.compile(sparse_swiglu_kernel, sig, {"BLOCK_M": block_m, "BLOCK_N": 32, "BLOCK_K": 512,
                                                      "HAS_BIAS": True}, target=target, num_warps=4, num_stages=2)
    assert isinstance(ck.asm["cubin"], bytes) and len(ck.asm["cubin"]) > 0
    assert ck.asm["ptx"].count("mma.sp") >= 2  # both products on the sparse tensor cores


SM_SMEM = {"sm_90a": 232448, "sm_80": 166912}  # a block's opt-in shared memory: H100, A100


@pytest.mark.parametrize("target", ["sm_90a", "sm_80"])
@pytest.mark.parametrize("quant, m, half, k, table", [
    (None, 1, 5504, 4096, None),        # Llama-7B gate/up over 2 ranks: 16 x 32 x 1024 would need 280 KiB
    (None, 16, 11008, 4096, None),      # the whole gate/up (64-row tiles by default)
    (None, 1, 7168, 8192, None),
    (None, 64, 5504, 4096, None),       # 64 x 128 medium tiles: two fp32 accumulators would spill
    ("w4g128", 1, 5504, 4096, None),
    ("w4g128", 16, 11008, 4096, (16, 64, 256, 4, 3, 2)),   # a table's config (split-K dropped)
    ("w8g128", 4, 5504, 4096, None),
    (None, 1, 5504, 4096, (16, 64, 1024, 4, 4, 1)),        # a large table config, fitted
])
def test_the_chosen_tiles_fit_shared_memory_and_registers(monkeypatch, target, quant, m, half, k, table):
    """What swiglu_config picks for the decode shapes compiles for the GPU: within a block's
    shared memory (the compiler refuses more) and with no register spills (ptxas)."""
    from sparsecc.ops import dispatch as ops_dispatch
    from sparsecc.ops.sparse_glu import swiglu_config

    monkeypatch.setattr(ops_dispatch, "table_config", lambda *args: table)
    w = _weight(half // 16, 256, quant)  # only its format counts here
    cfg = swiglu_config(m, half, k, w, torch.device("cuda"), smem_bytes=SM_SMEM[target])
    assert cfg.split_k == 1 and cfg.block_m * cfg.block_n <= 2048
    assert -(-m // cfg.block_m) * -(-half // cfg.block_n) >= 132 or cfg.block_n == 32  # a wave of programs
    dtype = "fp16"
    sig = {"Y": f"*{dtype}", "X": f"*{dtype}", "W": f"*{dtype}:NV24" + (f".{quant}" if quant else ""),
           "BIAS": f"*{dtype}", "M": "i32", "N": "i32", "K": "i32", "stride_xm": "i32", "stride_wn": "i32",
           "stride_ym": "i32"}
    ck = sparsecc.compile(sparse_swiglu_kernel, sig, {"BLOCK_M": cfg.block_m, "BLOCK_N": cfg.block_n,
                                                      "BLOCK_K": cfg.block_k, "HAS_BIAS": False},
                          target=target, num_warps=cfg.num_warps, num_stages=cfg.num_stages)
    assert ck.metadata["shared"] <= SM_SMEM[target]
    (resources,) = ck.metadata["ptxas"].values()
    assert resources.spill_stores == 0, (cfg, resources)


@pytest.mark.parametrize("quant", [None, "w4g128"])
@pytest.mark.parametrize("dispatch", ["auto", "dense"])
def test_swiglu_layer_matches_the_unfused_gate_and_up(quant, dispatch):
    """fuse_linears([gate, up]) with activation "swiglu" computes silu(gate(x)) * up(x) of the
    separate layers (the 2:4 op, or the dense path then torch), eager and compiled."""
    torch.manual_seed(0)
    gate, up = (SparseLinear.from_linear(nn.Linear(256, 96).half(), quant=quant) for _ in range(2))
    fused = fuse_linears([gate, up])
    fused.activation = "swiglu"
    fused.dispatch = dispatch
    x = torch.randn(2, 3, 256, dtype=torch.float16)
    want = (F.silu(gate(x).float()) * up(x).float())
    got = fused(x)
    assert got.shape == (2, 3, 96) and got.dtype == torch.float16
    torch.testing.assert_close(got.float(), want, rtol=1e-2, atol=1e-2 * want.abs().max().item())
    compiled = torch.compile(fused, fullgraph=True)
    torch.testing.assert_close(compiled(x).float(), want, rtol=1e-2, atol=1e-2 * want.abs().max().item())
    assert "activation='swiglu'" in repr(fused)


def test_swiglu_errors_name_the_problem():
    with pytest.raises(ValueError, match="out_features = 7 is odd"):
        SparseLinear(64, 7, activation="swiglu")
    with pytest.raises(ValueError, match=r"one of \(.*'swiglu'\)"):
        SparseLinear(64, 8, activation="geglu")
    layer = SparseLinear.from_linear(nn.Linear(64, 24).half())
    layer.activation = "swiglu"
    layer.out_features = 23  # set after construction: forward says so
    with pytest.raises(ValueError, match="out_features = 23 is odd"):
        layer(torch.randn(2, 64, dtype=torch.float16))
    w = _weight(8, 64, None)  # halves of 8 rows: the up rows would start inside a metadata block
    with pytest.raises(ValueError, match="two equal halves of a multiple of 16 rows"):
        sparse_swiglu(torch.randn(1, 64, dtype=torch.float16), w)
    w = _weight(16, 64, None)
    with pytest.raises(ValueError, match="x has 32 features, the weight expects 64"):
        sparse_swiglu(torch.randn(1, 32, dtype=torch.float16), w)
    with pytest.raises(ValueError, match=r"bias must be a tensor of shape \(32,\)"):
        sparse_swiglu(torch.randn(1, 64, dtype=torch.float16), w, torch.zeros(16, dtype=torch.float16))
    with pytest.raises(ValueError, match="split_k must be 1"):
        sparse_swiglu(torch.randn(1, 64, dtype=torch.float16), w, config=LinearConfig(16, 32, 64, split_k=2))


def test_swiglu_layers_shard_only_by_their_halves():
    torch.manual_seed(0)
    gate_up = fuse_linears([SparseLinear.from_linear(nn.Linear(128, 64).half()) for _ in range(2)])
    gate_up.activation = "swiglu"
    gate_up.fqn = "mlp.gate_up_proj"
    for dim in (0, 1):
        with pytest.raises(ValueError, match=r"'mlp.gate_up_proj' has activation 'swiglu'.*FusedColwiseParallel\(\(64, 64\)\)"):
            shard_sparse_linear(gate_up, dim, 0, 2)
    with pytest.raises(ValueError, match=r"parts \(32, 96\) are not its two halves \(64, 64\)"):
        shard_fused_sparse_linear(gate_up, (32, 96), 0, 2)
    with pytest.raises(ValueError, match="fused gate/up pair already"):
        fuse_linears([gate_up, gate_up])
    x = torch.randn(3, 128, dtype=torch.float16)
    want = gate_up(x).float()
    pieces = [shard_fused_sparse_linear(gate_up, (64, 64), r, 2) for r in range(2)]
    got = torch.cat([p(x) for p in pieces], -1).float()  # rank r: silu(gate_r) * up_r, its columns
    assert all(p.activation == "swiglu" for p in pieces)
    torch.testing.assert_close(got, want, rtol=1e-2, atol=1e-2 * want.abs().max().item())


@gpu
@pytest.mark.parametrize("quant", [None, "w4g128", "w8g128"])
@pytest.mark.parametrize("m, half, k", [(1, 5504, 4096), (16, 5504, 4096), (1, 11008, 4096), (5, 1000 - 8, 1024),
                                        (64, 2048, 4096)])
def test_swiglu_on_the_gpu(quant, m, half, k):
    """Llama-7B gate/up (whole: 11008 a half, TP over 2: 5504) and a ragged half, against torch on
    the dequantized weight; run twice (the second from the compiled kernel's cache)."""
    w = _weight(half, k, quant, "cuda", seed=m)
    x = torch.randn(m, k, device="cuda").half()
    want = _torch_swiglu(x, w, None)
    for _ in range(2):
        y = sparse_swiglu(x, w)
        assert not y.isnan().any()
        torch.testing.assert_close(y.float(), want, rtol=2e-2, atol=2e-2 * want.abs().max().item())


@gpu
def test_swiglu_layer_in_a_cuda_graph():
    torch.manual_seed(0)
    gate, up = (SparseLinear.from_linear(nn.Linear(4096, 5504).half().cuda(), quant="w4g128") for _ in range(2))
    fused = fuse_linears([gate, up])
    fused.activation = "swiglu"
    x = torch.randn(1, 4096, dtype=torch.float16, device="cuda")
    fused(x)  # warm-up: compiles
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y = fused(x)
    x.copy_(torch.randn_like(x))
    want = F.silu(gate(x).float()) * up(x).float()
    graph.replay()
    torch.testing.assert_close(y.float(), want, rtol=2e-2, atol=2e-2 * want.abs().max().item())
    torch.testing.assert_close(y.float(), reference_swiglu(x, fused.weight()).float(), rtol=2e-2,
                               atol=2e-2 * want.abs().max().item())
