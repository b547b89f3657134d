"""Compile options in one place: every code-changing switch is a CompileOptions field, set from
`sparsecc.compile`, `kernel[grid](...)` or its SPARSECC_* environment override, and it changes
the code."""

from __future__ import annotations

import pytest
import torch
from kernels import masked_add_kernel

import sparsecc
from sparsecc import switches
from sparsecc.compiler import CompileOptions, ttgir_passes
from sparsecc.ops.sparse_mm import sparse_mm_kernel

SIG = {"D": "*fp16", "A": "*fp16:NV24", "B": "*fp16", "M": "i32", "N": "i32", "K": "i32:16",
       "stride_am": "i32:16", "stride_bk": "i32:16", "stride_bn": "i32:1", "stride_dm": "i32:16",
       "stride_dn": "i32:1"}
TILE = {"BLOCK_M": 256, "BLOCK_N": 128, "BLOCK_K": 128, "GROUP_M": 8}


@pytest.fixture(autouse=True)
def no_overrides(tmp_path, monkeypatch):
    monkeypatch.setenv("SPARSECC_CACHE_DIR", str(tmp_path))
    for switch in switches.SWITCHES.values():
        monkeypatch.delenv(switch.env, raising=False)


def test_every_switch_is_a_field_with_its_default():
    opts = CompileOptions()
    for name, switch in switches.SWITCHES.items():
        assert getattr(opts, name) is switch.default
        assert switch.env.startswith("SPARSECC_") and switch.doc


def test_environment_overrides_the_default_and_an_explicit_option_wins(monkeypatch):
    monkeypatch.setenv("SPARSECC_TMA", "0")
    monkeypatch.setenv("SPARSECC_WGMMA_UNROLL", " yes ")
    assert switches.env_overrides() == {"tma": False, "wgmma_unroll": True}
    opts = CompileOptions.create(target="sm_90a")
    assert (opts.tma, opts.wgmma_unroll, opts.warp_specialize) == (False, True, True)
    assert CompileOptions.create(target="sm_90a", tma=True).tma is True
    monkeypatch.setenv("SPARSECC_TMA", "")
    assert CompileOptions.create().tma is True


@pytest.mark.parametrize("raw, want", [(None, None), ("", None), ("  ", None), ("0", False), ("off", False),
                                       ("NO", False), ("false", False), ("1", True), ("on", True)])
def test_flag_parsing(raw, want):
    assert switches.parse_flag(raw) is want


def test_bad_options_are_named():
    with pytest.raises(TypeError, match="unknown compile option 'tmaa'.*tma, warp_specialize"):
        CompileOptions.create(tmaa=False)
    with pytest.raises(TypeError, match="tma='no': expected True or False"):
        CompileOptions.create(tma="no")
    with pytest.raises(ValueError, match="num_stages must be a positive int"):
        CompileOptions.create(num_stages=0)
    with pytest.raises(ValueError, match="num_ctas must be 1 or 2"):
        CompileOptions.create(num_ctas=3)
    with pytest.raises(TypeError, match="unknown compile option 'tmaa'"):
        sparsecc.compile(sparse_mm_kernel, signature=SIG, constexprs=TILE, target="sm_90a", tmaa=False)
    with pytest.raises(TypeError, match="target must be a string such as 'sm_90a'.*got int 123"):
        sparsecc.compile(sparse_mm_kernel, signature=SIG, constexprs=TILE, target=123)
    with pytest.raises(TypeError, match="signature must map parameter names to type strings"):
        sparsecc.compile(sparse_mm_kernel, signature=None, constexprs=TILE)
    with pytest.raises(sparsecc.CompilationError, match="parameter 'M': a signature type is a string"):
        sparsecc.compile(sparse_mm_kernel, signature=SIG | {"M": 32}, constexprs=TILE)


def test_pipeline_pass_options_follow_the_fields():
    spec = ttgir_passes(CompileOptions(target="sm_90a", tma=False, mbarriers=True))
    pipeline = next(p for p in spec if p.startswith("tritongpu-pipeline"))
    assert "mbarriers=true" in pipeline and "tma=true" not in pipeline
    pipeline = next(p for p in ttgir_passes(CompileOptions(target="sm_90a")) if p.startswith("tritongpu-pipeline"))
    assert "tma=true" in pipeline and "mbarriers" not in pipeline


def _compile(**switches_: bool):
    return sparsecc.compile(sparse_mm_kernel, signature=SIG, constexprs=TILE, target="sm_90a",
                            num_warps=8, num_stages=3, **switches_)


def test_each_switch_changes_the_code_and_the_options_record_it():
    base = _compile()
    assert "cp.async.bulk.tensor" in base.asm["ptx"] and base.options.tma
    no_tma = _compile(tma=False)
    assert "cp.async.bulk.tensor" not in no_tma.asm["ptx"] and "cp.async.cg" in no_tma.asm["ptx"]
    assert no_tma.options.tma is False
    no_ws = _compile(warp_specialize=False)
    assert no_ws.metadata["threads"] == 256 < base.metadata["threads"] == 288  # no producer warp
    unrolled = _compile(wgmma_unroll=True)
    assert unrolled.asm["ptx"] != base.asm["ptx"]
    a_smem = _compile(tma=False, wgmma_a_smem=True)
    assert a_smem.asm["ptx"] != no_tma.asm["ptx"]
    mbar = _compile(tma=False, mbarriers=True)
    assert "mbarrier.try_wait" in mbar.asm["ptx"] and "mbarrier.try_wait" not in no_tma.asm["ptx"]


def test_environment_override_reaches_sparsecc_compile(monkeypatch):
    monkeypatch.setenv("SPARSECC_TMA", "0")
    ck = _compile()
    assert ck.options.tma is False and "cp.async.bulk.tensor" not in ck.asm["ptx"]
    assert _compile(tma=True).options.tma is True


def test_launch_takes_switches_as_options_not_kernel_arguments():
    n = 300
    x, y = torch.randn(n), torch.randn(n)
    z = torch.full((n,), float("nan"))
    masked_add_kernel[(2,)](x, y, z, n, BLOCK=256, tma=False, warp_specialize=False, num_warps=4)
    torch.testing.assert_close(z, x + y)
    (compiled,) = [c for key, c in masked_add_kernel.cache.items() if key[-1].tma is False]
    assert compiled.options.warp_specialize is False
