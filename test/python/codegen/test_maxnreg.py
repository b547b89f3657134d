"""`maxnreg` (Triton's option): the registers a thread may use, as the kernel's `.maxnreg`. It
travels from `sparsecc.compile`, `kernel[grid](..., maxnreg=N)`, an autotune `Config` and a
`LinearConfig` to the PTX; ptxas keeps under it (spilling if it must); bad values are refused
by name; kernels without it are unchanged. The GPU run that measured it is NOTES stop 30."""

from __future__ import annotations

import pytest
import torch
from ptxas_tools import needs_ptxas

import sparsecc
import sparsecc.language as tl
from sparsecc.compiler import CompileOptions
from sparsecc.ops.linear_config import LinearConfig, launch_constants
from sparsecc.ops.sparse_linear import sparse_linear_kernel
from sparsecc.runtime.autotune import Config

SIG = {"Y": "*fp16", "X": "*fp16", "W": "*fp16:NV24.w4g128", "BIAS": "*fp16", "M": "i32",
       "N": "i32:16", "K": "i32:16", "stride_xm": "i32:16", "stride_wn": "i32:16", "stride_ym": "i32:16"}
CONSTS = {"BLOCK_M": 8, "BLOCK_N": 64, "BLOCK_K": 512, "HAS_BIAS": False, "ACTIVATION": "none",
          "ROWS_16B": True, "ROWS_64": True}


def _decode_kernel(**options):
    return sparsecc.compile(sparse_linear_kernel, signature=SIG, constexprs=CONSTS, target="sm_90a", num_warps=4,
                            num_stages=2, **options)


@needs_ptxas
def test_the_cap_reaches_the_ptx_and_ptxas_keeps_under_it():
    """The 4-bit decode kernel takes 168 registers; capped at 128 it fits without spills (4 CTAs
    an SM), and its PTX differs from the uncapped one by the directive alone."""
    free, capped = _decode_kernel(), _decode_kernel(maxnreg=128)
    assert ".maxnreg" not in free.asm["ptx"]
    assert capped.asm["ptx"] == free.asm["ptx"].replace(".maxntid 128, 1, 1\n", ".maxntid 128, 1, 1\n.maxnreg 128\n")
    (free_res,), (capped_res,) = free.metadata["ptxas"].values(), capped.metadata["ptxas"].values()
    assert free_res.registers > 128
    assert capped_res.registers <= 128 and capped_res.spill_stores == 0


@pytest.mark.parametrize("bad", [0, 8, 256, 128.0, True, "128"])
def test_bad_caps_are_refused_by_name(bad):
    with pytest.raises(ValueError, match=r"maxnreg must be None or an int from 24 to 255"):
        CompileOptions.create(target="sm_90a", maxnreg=bad)


def test_the_cap_is_part_of_the_cache_key():
    assert CompileOptions.create(target="sm_90a", maxnreg=128).cache_key() != CompileOptions.create(
        target="sm_90a").cache_key()


def test_launch_options_carry_it():
    """A LinearConfig's cap becomes a launch option of the linear kernels; an autotune Config's
    joins its launch keywords and its JSON round trip."""
    x = torch.zeros(4, 64).half()
    w = sparsecc.compress(torch.zeros(8, 64).half())
    assert launch_constants(x, w, LinearConfig(16, 32, 64, maxnreg=96), False, "none")["maxnreg"] == 96
    assert "maxnreg" not in launch_constants(x, w, LinearConfig(16, 32, 64), False, "none")
    cfg = Config({"BLOCK": 64}, num_warps=8, maxnreg=128)
    assert cfg.all_kwargs()["maxnreg"] == 128
    assert Config.from_json(cfg.to_json()) == cfg
    assert "maxnreg" not in Config({"BLOCK": 64}).all_kwargs()


@sparsecc.jit
def _scale_kernel(X, Y, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(Y + offs, tl.load(X + offs, mask=offs < N) * 3.0, mask=offs < N)


def test_a_launch_takes_it_and_a_bad_one_names_the_kernel(recwarn):
    """`kernel[grid](..., maxnreg=N)` as in Triton (the interpreter runs the same kernel); a bad
    cap is a ValueError naming the launch."""
    x = torch.randn(100)
    y = torch.full((100,), float("nan"))
    _scale_kernel[(2,)](x, y, 100, BLOCK=64, maxnreg=64)
    torch.testing.assert_close(y, x * 3.0)
    with pytest.raises(ValueError, match=r"_scale_kernel\[grid\]\(\.\.\.\): maxnreg must be None or an int"):
        _scale_kernel[(2,)](x, y, 100, BLOCK=64, maxnreg=300)


@pytest.mark.gpu
@pytest.mark.parametrize("cap", [128, 64])
@pytest.mark.parametrize("m, n, k", [(1, 32000, 4096), (5, 1000, 4224)])
def test_capped_kernels_on_the_gpu(cap, m, n, k):
    """The 4-bit decode kernel capped at 128 registers (no spills) and at 64 (ptxas spills)
    computes what the uncapped one does; the output is poisoned first."""
    from sparsecc.ops.sparse_linear import reference_linear, sparse_linear

    g = torch.Generator(device="cuda").manual_seed(m * n)
    w = sparsecc.compress(sparsecc.prune_2to4(torch.randn(n, k, device="cuda", generator=g) * 0.05).half(),
                          quant="w4g128")
    x = torch.randn(m, k, device="cuda", generator=g).half()
    ref = reference_linear(x, w).float()
    y = sparse_linear(x, w, config=LinearConfig(8, 64, 512, 4, 2, maxnreg=cap))
    assert y.isfinite().all()
    assert (y.float() - ref).abs().max().item() <= 1e-2 * ref.abs().max().item()
