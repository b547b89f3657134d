"""The dispatcher's weight conversion (`sparsecc.ops.densify`) and SparseLinear's forced paths
under torch.compile on the CPU: what made the GPU run's compiled tests fail.

- The conversion compiled with dynamic shapes (as the eager path once was; a compiled caller can
  be): after a recompile (a new scheme), dynamo makes the int arguments symbolic (automatic
  dynamic), and torch 2.11 cannot run the symmetric zero point's `1 << (bits - 1)` on one
  ("Dynamo failed to run FX node with fake tensors: lshift(1, s45 - 1)"). The zero point is now
  a comparison (a guard).
- Compiling SparseLinear in all 12 (scheme, forced mode) forms in one process (as
  test_gpu_dispatch.py's compiled tests do) makes 12 entries for `SparseLinear.forward`, past
  dynamo's recompile limit (8), where fullgraph=True fails hard (FailOnRecompileLimitHit) from
  the 9th form on: the GPU test now starts each case from a fresh dynamo.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

import sparsecc
from sparsecc.nn import SparseLinear
from sparsecc.ops import densify


def _arrays(scheme: str, n: int, k: int, seed: int = 0) -> tuple:
    """(values, meta, scales, zeros, weight_scale, bits, k, dtype) of a random 2:4 weight."""
    g = torch.Generator().manual_seed(seed)
    w = sparsecc.prune_2to4(torch.randn(n, k, generator=g)).half()
    if scheme == "fp16":
        s = sparsecc.compress(w)
        return s.values, s.meta, None, None, None, 16, k, torch.float16
    if scheme == "fp8":
        layer = SparseLinear.from_linear(nn.Linear(k, n).half(), weight_dtype=torch.float8_e4m3fn)
        return layer.values, layer.meta, None, None, layer.weight_scale, 16, k, torch.float16
    q = sparsecc.compress(w, quant=scheme)
    return q.values, q.meta, q.scales, q.zeros, None, 4 if scheme.startswith("w4") else 8, k, torch.float16


def test_the_fused_conversion_compiles_as_its_ints_turn_symbolic():
    """A sequence of schemes (bits 16, 4, 8: the third compile sees `bits` as a symbolic int) and
    of shapes, through `torch.compile(_weight16, dynamic=True)`, equals the torch ops bit for bit."""
    torch._dynamo.reset()
    fused = torch.compile(densify._weight16, dynamic=True, fullgraph=True, backend="eager")
    # (6 forms: one code object holds at most 8, dynamo's recompile limit)
    for scheme, n, k in (("fp16", 64, 256), ("w4g128", 64, 256), ("w8g128", 64, 256), ("w8g128", 96, 512),
                         ("w4g128", 160, 384)):
        args = _arrays(scheme, n, k, seed=n + k)
        for dense in (False, True):
            out = fused(*args, dense)
            ref = densify._weight16(*args, dense)
            assert out.dtype == ref.dtype and torch.equal(out, ref), (scheme, n, k, dense)
    torch._dynamo.reset()


class _SymbolicBits(int):
    """An int as a symbolic `bits` behaves where torch 2.11 fails: compares, but no shifts."""

    def __sub__(self, other: object) -> _SymbolicBits:
        return _SymbolicBits(int(self) - int(other))  # type: ignore[call-overload]

    def __rlshift__(self, other: object) -> int:
        raise TypeError("no '<<' on a symbolic int here")

    __lshift__ = __rlshift__


@pytest.mark.parametrize("bits", [4, 8])
def test_the_symmetric_zero_point_needs_no_shift_of_bits(bits):
    values, meta, scales, _, _, _, k, _ = _arrays(f"w{bits}g128", 32, 256)
    kept = densify.dequantize_kept(values, scales, None, _SymbolicBits(bits), torch.float16)
    assert torch.equal(kept, densify.dequantize_kept(values, scales, None, bits, torch.float16))
    q = sparsecc.compress(sparsecc.prune_2to4(torch.randn(32, 256, generator=torch.Generator().manual_seed(0))).half(),
                          quant=f"w{bits}g128")
    assert torch.equal(densify.dense_weight(kept, meta, k), q.to_dense())


def _layer(scheme: str) -> SparseLinear:
    torch.manual_seed(0)
    linear = nn.Linear(256, 64).half()
    with torch.no_grad():
        linear.bias.normal_()
    if scheme == "fp8":
        return SparseLinear.from_linear(linear, weight_dtype=torch.float8_e4m3fn)
    return SparseLinear.from_linear(linear, activation="silu", quant=None if scheme == "fp16" else scheme)


def test_every_scheme_and_forced_path_compiles_with_fresh_dynamo():
    """test_gpu_dispatch.py's compiled cases in its order (12 forms of one forward), each from a
    fresh dynamo as that test now starts: all compile with fullgraph=True and agree with eager.
    Without the resets the 9th form (dense, fp16) hits the recompile limit."""
    x = torch.randn(3, 11, 256, generator=torch.Generator().manual_seed(1)).half()
    try:
        for mode in ("sparse", "sparse16", "dense"):
            for scheme in ("fp16", "w4g128", "w8g128", "fp8"):
                torch._dynamo.reset()
                layer = _layer(scheme)
                layer.dispatch = mode
                compiled = torch.compile(layer, fullgraph=True, dynamic=False, backend="eager")
                with torch.no_grad():
                    got, ref = compiled(x), layer(x)
                assert got.isfinite().all(), (scheme, mode)
                err = (got.float() - ref.float()).abs().max().item()
                assert err <= 2e-2 * max(ref.float().abs().max().item(), 1.0), (scheme, mode, err)
    finally:
        torch._dynamo.reset()

