"""Decode tiles of `sparse_linear`: split-K (`LinearConfig(split_k=S)`: S programs per output tile,
the last to take a ticket sums the partial tiles and runs the epilogue) and 8-token tiles
(BLOCK_M = 8: W, on the left after the swap, meets an n = 8 mma). Against torch on the (dequantized)
weight, on the interpreter and the GPU: plain and quantized weights, bias and activations, ragged
M, N and K (a split with no K step at all), outputs poisoned with NaN, the ticket counters left at
repeated launches and a CUDA graph replay; and the PTX of the ticket
(an acq_rel atomic after a CTA barrier, its old value broadcast through shared memory)."""

from __future__ import annotations

import pytest
import torch
from ptx_lines import stripped

import sparsecc
import sparsecc.language as tl
from sparsecc.ops import LinearConfig, sparse_linear
from sparsecc.ops.sparse_linear import reference_linear, sparse_linear_splitk_kernel

gpu = pytest.mark.gpu


def _weight(n: int, k: int, quant: str | None, device: str, seed: int):
    g = torch.Generator().manual_seed(seed)
    dense = sparsecc.prune_2to4(torch.randn(n, k, generator=g).half()).to(device)
    return sparsecc.compress(dense, quant=quant) if quant else sparsecc.compress(dense)


def _check(device: str, m: int, n: int, k: int, quant: str | None, cfg: LinearConfig, activation: str = "none",
           bias: bool = True, seed: int = 0) -> None:
    w = _weight(n, k, quant, device, seed)
    g = torch.Generator().manual_seed(seed + 1)
    x = torch.randn(m, k, generator=g).half().to(device)
    b = torch.randn(n, generator=g).half().to(device) if bias else None
    ref = reference_linear(x, w, b, activation).float()
    for _ in range(2):
        y = sparse_linear(x, w, b, activation, config=cfg)
        assert not y.isnan().any(), "an output element was not written"
        torch.testing.assert_close(y.float(), ref, rtol=1e-2, atol=1e-2 * max(ref.abs().max().item(), 1.0))


@pytest.mark.parametrize("quant, m, n, k, split, activation", [
    (None, 3, 40, 384, 3, "silu"),
    ("w4g128", 5, 24, 512, 2, "none"),
    ("w8g64z", 1, 33, 640, 4, "relu"),
    ("w4g64", 17, 16, 320, 4, "gelu_tanh"),  # 5 K steps over 4 splits of 2: the last has none
    ("w4g128", 11, 40, 256, 1, "none"),  # BLOCK_M = 8: two token tiles, the second ragged
])
def test_split_k_on_the_interpreter(poisoned, quant, m, n, k, split, activation):
    block_k = 64 if quant == "w4g64" else 128
    block_m = 8 if split == 1 else 16
    _check("cpu", m, n, k, quant, LinearConfig(block_m, 16, block_k, num_stages=1, split_k=split), activation)


def test_eight_token_tiles_only_with_a_sparse_right_operand():
    @sparsecc.jit
    def dot8(A, B, C, BM: tl.constexpr):
        r = tl.arange(0, BM)
        k = tl.arange(0, 32)
        a = tl.load(A + r[:, None] * 32 + k[None, :])
        b = tl.load(B + k[:, None] * 16 + tl.arange(0, 16)[None, :])
        tl.store(C + r[:, None] * 16 + tl.arange(0, 16)[None, :], tl.dot(a, b))

    base = {"A": "*fp16", "C": "*fp32"}
    ck = sparsecc.compile(dot8, base | {"B": "*fp16:NV24"}, {"BM": 8}, target="sm_80")
    assert "mma.sp" in ck.asm["ptx"] and "m16n8k32" in ck.asm["ptx"]
    with pytest.raises(sparsecc.CompilationError, match="at least 16"):
        sparsecc.compile(dot8, base | {"B": "*fp16"}, {"BM": 8}, target="sm_80")


def test_ticket_is_acq_rel_after_a_barrier_and_broadcast():
    sig = {"Y": "*fp16", "X": "*fp16", "W": "*fp16:NV24.w4g128", "BIAS": "*fp16", "PARTIALS": "*fp32",
           "TICKETS": "*i32", "M": "i32", "N": "i32", "K": "i32", "stride_xm": "i32", "stride_wn": "i32",
           "stride_ym": "i32"}
    ck = sparsecc.compile(sparse_linear_splitk_kernel, sig, {"BLOCK_M": 16, "BLOCK_N": 32, "BLOCK_K": 256,
                          "SPLIT_K": 4, "HAS_BIAS": True, "ACTIVATION": "silu"}, target="sm_90a",
                          num_warps=4, num_stages=3)
    lines = stripped(ck.asm["ptx"])
    at = next(i for i, ln in enumerate(lines) if "atom.acq_rel.gpu.global.add.s32" in ln)
    assert lines[at - 1] == "bar.sync 0;", "the ticket must follow a barrier (every thread's partial is published)"
    assert lines[at + 1].split()[1].startswith("st.shared.b32") and lines[at + 2] == "bar.sync 0;"
    assert isinstance(ck.asm["cubin"], bytes)


@gpu
@pytest.mark.parametrize("quant", [None, "w4g128", "w8g128", "w4g64z"])
@pytest.mark.parametrize("m, n, k, cfg", [
    (1, 4096, 4096, LinearConfig(16, 32, 512, 4, 2, split_k=4)),
    (13, 1000, 1536, LinearConfig(16, 64, 256, 4, 3, split_k=2)),
    (7, 333, 2560, LinearConfig(16, 32, 256, 4, 3, split_k=8)),  # 10 K steps over 8 splits
    (64, 520, 1024, LinearConfig(64, 64, 128, 4, 3, split_k=4)),
    (1, 4096, 4096, LinearConfig(8, 64, 256, 4, 3)),
    (11, 1000, 1536, LinearConfig(8, 32, 512, 4, 2, split_k=2)),  # two token tiles, the second ragged
])
def test_split_k_on_the_gpu(quant, m, n, k, cfg):
    if not torch.cuda.is_available():
        pytest.skip("no GPU")
    _check("cuda", m, n, k, quant, cfg, activation="silu", seed=m + n)


@gpu
def test_split_k_in_a_cuda_graph():
    if not torch.cuda.is_available():
        pytest.skip("no GPU")
    w = _weight(2048, 4096, "w4g128", "cuda", 3)
    x = torch.randn(4, 4096, device="cuda").half()
    cfg = LinearConfig(16, 32, 512, 4, 2, split_k=4)
    sparse_linear(x, w, config=cfg)  # warm-up: compiles
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y = sparse_linear(x, w, config=cfg)
    for _ in range(3):
        x.copy_(torch.randn(4, 4096, device="cuda").half())
        graph.replay()
        torch.cuda.synchronize()
        ref = reference_linear(x, w).float()
        torch.testing.assert_close(y.float(), ref, rtol=1e-2, atol=1e-2 * ref.abs().max().item())


def test_quantized_decode_defaults():
    from sparsecc.ops.sparse_linear import quantized_decode_config

    one_token = quantized_decode_config(1, 8192, 28672)
    assert (one_token.block_m, one_token.block_n, one_token.split_k) == (8, 64, 2)
    assert quantized_decode_config(1, 28672, 8192) == LinearConfig(8, 128, 256, 4, 3)  # enough programs
    assert quantized_decode_config(16, 4096, 14336).split_k == 4 and quantized_decode_config(16, 4096, 14336).block_m == 16
    assert quantized_decode_config(1, 4096, 4096) == LinearConfig(8, 64, 512, 4, 2)
    assert quantized_decode_config(1, 11008, 4096) == LinearConfig(8, 64, 512, 4, 2)
    assert quantized_decode_config(64, 28672, 8192).block_m == 64


@pytest.mark.parametrize("bad", [0, -2, 1.5, True])
def test_bad_split_k_is_a_value_error(bad):
    w = _weight(32, 128, None, "cpu", 0)
    with pytest.raises(ValueError, match="split_k must be a positive int"):
        sparse_linear(torch.randn(2, 128).half(), w, config=LinearConfig(16, 16, 64, split_k=bad))


def test_split_k_partials_too_large_for_32_bit_offsets():
    from sparsecc.ops.sparse_linear import launch_linear

    w = _weight(512, 128, None, "cpu", 0)
    x = torch.zeros(1, 128, dtype=torch.float16).expand(2**20, 128)  # views: no memory
    y = torch.zeros(1, 1, dtype=torch.float16).expand(2**20, 512)  # 4 x 2**20 x 512 partials = 2**31
    with pytest.raises(ValueError, match="exceed 2\\*\\*31 elements"):
        launch_linear(y, x, w, y, LinearConfig(16, 16, 64, split_k=4), has_bias=False, activation="none")
