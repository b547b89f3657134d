"""The fp16/bf16 2:4 linear kernel's wide token tiles on wgmma: with BLOCK_K = 128 each row of
x^T (K-major B) spans two 128-byte column blocks, which wgmma reads through its descriptor once
the tile is at least 64 tokens wide (`convert_tt_to_ttg.WIDE_KMAJOR16_MIN_N`); narrower tiles
(decode) and dequantized weights keep mma.sp. On the CPU: which MMA each tile compiles to, and
the kernel on the interpreter; on the GPU: against torch, ragged M, N and K, poisoned outputs,
both dtypes, bias and activation, split-K."""

from __future__ import annotations

import pytest
import torch

import sparsecc
from sparsecc.ops import LinearConfig, sparse_linear
from sparsecc.ops.sparse_linear import (
    reference_linear,
    sparse_linear_kernel,
    sparse_linear_splitk_kernel,
)

gpu = pytest.mark.gpu


def _sig(dtype: str, enc: str = "NV24", split: bool = False) -> dict[str, str]:
    sig = {"Y": f"*{dtype}", "X": f"*{dtype}", "W": f"*{dtype}:{enc}", "BIAS": f"*{dtype}"}
    if split:
        sig |= {"PARTIALS": "*fp32", "TICKETS": "*i32"}
    return sig | {"M": "i32", "N": "i32", "K": "i32", "stride_xm": "i32", "stride_wn": "i32", "stride_ym": "i32"}


def _ptx(block_m: int, block_k: int, dtype: str = "fp16", enc: str = "NV24", split_k: int = 1,
         warps: int = 4) -> str:
    consts = {"BLOCK_M": block_m, "BLOCK_N": 128, "BLOCK_K": block_k, "HAS_BIAS": True, "ACTIVATION": "none"}
    kernel = sparse_linear_splitk_kernel if split_k > 1 else sparse_linear_kernel
    if split_k > 1:
        consts["SPLIT_K"] = split_k
    ck = sparsecc.compile(kernel, _sig(dtype, enc, split_k > 1), consts, target="sm_90a", num_warps=warps,
                          num_stages=3)
    return str(ck.asm["ptx"])


@pytest.mark.parametrize("block_m, block_k, dtype, enc, split_k, wgmma", [
    (64, 128, "fp16", "NV24", 1, True),        # 64 tokens, rows of two 128-byte blocks
    (128, 128, "bf16", "NV24", 1, True),
    (64, 128, "fp16", "NV24", 2, True),        # the split-K kernel alike
    (64, 64, "fp16", "NV24", 1, True),         # one 128-byte atom: wgmma as before
    (32, 128, "fp16", "NV24", 1, False),       # narrow: stays on mma.sp
    (8, 256, "fp16", "NV24", 4, False),        # decode's split-K tile
    (64, 128, "fp16", "NV24.w4g128", 1, False),  # a dequantized A: quant-wgmma's, off here
])
def test_which_tiles_take_wgmma(block_m, block_k, dtype, enc, split_k, wgmma):
    ptx = _ptx(block_m, block_k, dtype, enc, split_k)
    assert ("wgmma.mma_async.sp" in ptx) == wgmma
    assert ("mma.sp::ordered_metadata" in ptx or "mma.sp." in ptx) != wgmma


def test_a_wide_tile_on_the_interpreter(poisoned):
    g = torch.Generator().manual_seed(5)
    w = sparsecc.compress(sparsecc.prune_2to4(torch.randn(40, 256, generator=g).half()))
    x = torch.randn(70, 256, generator=g).half()
    y = sparse_linear(x, w, config=LinearConfig(64, 128, 128, 4, 4))
    torch.testing.assert_close(y.float(), reference_linear(x, w).float(), rtol=1e-2, atol=2e-2)


@gpu
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("m, n, k, cfg", [
    (200, 1000, 1536, LinearConfig(64, 128, 128, 4, 4)),          # ragged M and N
    (77, 4096, 4096, LinearConfig(128, 128, 128, 8, 4, split_k=2)),
    (512, 2048, 1024, LinearConfig(128, 128, 128, 8, 4)),
    (130, 520, 1040, LinearConfig(128, 128, 128, 8, 3)),          # ragged K: a partial last step
    (300, 768, 2048, LinearConfig(64, 128, 128, 4, 4, split_k=2)),
])
def test_wide_tiles_on_the_gpu(monkeypatch, dtype, m, n, k, cfg):
    if not torch.cuda.is_available():
        pytest.skip("no GPU")
    empty = torch.empty

    def nan_empty(*args, **kwargs):  # outputs and split-K partials start as NaN
        t = empty(*args, **kwargs)
        if t.is_floating_point():
            t.fill_(float("nan"))
        return t

    monkeypatch.setattr(torch, "empty", nan_empty)
    g = torch.Generator().manual_seed(m + n + k)
    w = sparsecc.compress(sparsecc.prune_2to4(torch.randn(n, k, generator=g).to(dtype)).cuda())
    x = torch.randn(m, k, generator=g).to(dtype).cuda()
    b = torch.randn(n, generator=g).to(dtype).cuda()
    ref = reference_linear(x, w, b, "silu").float()
    for _ in range(2):  # the second launch: the split-K tickets as the first left them
        y = sparse_linear(x, w, b, "silu", config=cfg)
        assert not y.isnan().any(), "an output element was not written"
        tol = 2e-2 if dtype == torch.bfloat16 else 1e-2
        torch.testing.assert_close(y.float(), ref, rtol=tol, atol=tol * max(ref.abs().max().item(), 1.0))
