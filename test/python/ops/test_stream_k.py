"""`sparsecc.ops.stream_k`: the stream-K linear kernel against torch, on the interpreter (few
programs, so that tiles split into two or three pieces, a program's range lies inside one tile,
or covers whole tiles between two pieces) and on the GPU (the shapes bench/stream_k.py times),
into NaN-poisoned outputs, with bias and an activation; and how the programs are counted."""

from __future__ import annotations

import pytest
import torch

import sparsecc
from sparsecc.ops.sparse_linear import LinearConfig, reference_linear
from sparsecc.ops.stream_k import launch_linear_stream_k, stream_k_programs


def _check(device: str, m: int, n: int, k: int, cfg: LinearConfig, sms: int | None, seed: int = 0) -> None:
    g = torch.Generator().manual_seed(seed)
    w = sparsecc.compress(sparsecc.prune_2to4(torch.randn(n, k, generator=g).half()).to(device))
    x = torch.randn(m, k, generator=g).half().to(device)
    bias = torch.randn(n, generator=g).half().to(device)
    y = torch.full((m, n), float("nan"), dtype=torch.float16, device=device)
    launch_linear_stream_k(y, x, w, bias, cfg, has_bias=True, activation="silu", sms=sms)
    assert not y.isnan().any(), "an output element was not written"
    want = reference_linear(x, w, bias, "silu").float()
    torch.testing.assert_close(y.float(), want, rtol=1e-2, atol=1e-2 * max(want.abs().max().item(), 1.0))


@pytest.mark.filterwarnings("ignore::sparsecc.frontend.jit.InterpreterFallbackWarning")
@pytest.mark.parametrize("m, n, k, sms", [
    (37, 48, 96, 3),    # 6 tiles x 3 steps over 3 programs of 6 steps: whole tiles only
    (40, 64, 160, 7),   # 6 tiles x 5 steps over 7 programs of 5: tiles split in two
    (33, 70, 64, 7),    # ragged M and N, 2 steps a tile
    (16, 32, 256, 3),   # one tile of 8 steps over 3 programs: a range inside a tile, three pieces
])
def test_stream_k_matches_torch_on_the_interpreter(m, n, k, sms):
    _check("cpu", m, n, k, LinearConfig(16, 32, 32, 4, 1), sms)


def test_programs_share_the_steps_evenly():
    cfg = LinearConfig(128, 256, 64, 8, 4)
    assert stream_k_programs(512, 11008, 4096, cfg) == (132, 84, 2)  # 172 tiles x 64 steps over 132 SMs
    assert stream_k_programs(1, 32, 64, cfg) == (1, 2, 1)  # at least two steps a program
    programs, per, pieces = stream_k_programs(2048, 4096, 4096, cfg, sms=100)
    assert (programs - 1) * per < 256 * 64 <= programs * per and pieces == 2
    assert stream_k_programs(16, 32, 256, LinearConfig(16, 32, 32, 4, 1), sms=3)[2] == 3  # 8 steps over 3 + 3 + 2


@pytest.mark.gpu
@pytest.mark.parametrize("m, n, k", [(512, 4096, 4096), (517, 11008, 4096), (300, 392, 704)])
def test_stream_k_matches_torch_on_the_gpu(m, n, k):
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    _check("cuda", m, n, k, LinearConfig(128, 256, 64, 8, 4), None)
    _check("cuda", m, n, k, LinearConfig(128, 128, 64, 4, 4), 7)
