"""GPU (`gpu`, sm_90a): sparse_linear's quantized prefill kernel (`quant_wgmma` tiles) in the
mbarrier-ring form (`linear_config.QUANT_WGMMA_RING`, set through the environment: launch_linear
compiles the plain loop by default) with `SPARSECC_WGMMA_RING_IN_FLIGHT=1`, against torch and
against the same launch with the switch off.

The switch changes the K loop where a layout convert's CTA barrier sits in an mbarrier ring
(bf16 weights: their dequantized tile reaches the register-A fragments through shared memory):
that barrier keeps the wgmma group committed last running instead of draining it. The wgmmas,
their order and their operands are the same, so the outputs must be equal bit for bit; fp16
kernels compile to the same PTX either way (codegen/test_wgmma_ring_in_flight.py) and are run
as a control. Token counts end inside a tile (300, 1000); 4- and 8-bit codes, with and without
zero points; outputs poisoned with NaN before each launch.
"""

from __future__ import annotations

import importlib
import math

import pytest
import torch

import sparsecc
from sparsecc.ops import linear_config
from sparsecc.ops.sparse_linear import LinearConfig, launch_linear, reference_linear

sl = importlib.import_module("sparsecc.ops.sparse_linear")

SWITCH = "SPARSECC_WGMMA_RING_IN_FLIGHT"


def _on_hopper() -> None:
    if not torch.cuda.is_available() or torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("the quant_wgmma kernel is sm_90a's")


def _launch(x, w, bias, cfg: LinearConfig) -> torch.Tensor:
    y = torch.full((x.shape[0], w.shape[0]), math.nan, dtype=x.dtype, device="cuda")
    launch_linear(y, x, w, bias, cfg, has_bias=True, activation="silu")
    torch.cuda.synchronize()
    return y


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize("scheme", ["w4g128", "w8g128", "w4g128z", "w8g128z"])
@pytest.mark.parametrize("m, n, k", [(300, 384, 1024), (1000, 640, 2048)])
def test_ring_in_flight_matches_torch_and_the_switch_off(m, n, k, scheme, dtype, monkeypatch):
    _on_hopper()
    g = torch.Generator().manual_seed(m + k)
    w = sparsecc.compress(sparsecc.prune_2to4(torch.randn(n, k, generator=g).to(dtype)), quant=scheme).cuda()
    x = torch.randn(m, k, generator=g).to(dtype).cuda()
    bias = torch.randn(n, generator=g).to(dtype).cuda()
    cfg = sl.quantized_linear_config(sl.quantized_prefill_config(m, n, k), w)
    assert cfg.quant_wgmma
    for name, on in linear_config.QUANT_WGMMA_RING.items():
        monkeypatch.setenv(f"SPARSECC_{name.upper()}", "1" if on else "0")
    monkeypatch.setenv(SWITCH, "0")
    off = _launch(x, w, bias, cfg)
    monkeypatch.setenv(SWITCH, "1")
    on = _launch(x, w, bias, cfg)
    assert not on.isnan().any(), "NaN in the output: an element was not written"
    want = reference_linear(x, w, bias, "silu")
    torch.testing.assert_close(on.float(), want.float(), rtol=1e-2, atol=1e-2 * max(want.abs().max().item(), 1.0))
    assert torch.equal(on, off), "the switch changed the result: it must only change when the kernel waits"
