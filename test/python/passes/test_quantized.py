"""Quantized 2:4 operands (`NV24.w4g128` and kin) through the passes: the decomposed IR, the
interpreter against torch, the expand-dequantize form against the op it replaces, and the
located errors."""

from __future__ import annotations

import re

import pytest
import torch
from kernels import POINTER_SIG, dot_kernel, pointer_gemm

import sparsecc
from sparsecc import formats
from sparsecc.compiler import CompileOptions, make_ttir, run_passes
from sparsecc.frontend.compile import to_ttir
from sparsecc.runtime import interpreter
from sparsecc.runtime.codec import compress_arrays, decode_meta_tile
from sparsecc.runtime.quant_codec import dequantize_tile, pack_codes, quantize_kept

SCHEMES = ["w4g64", "w4g128", "w4c", "w8g64", "w8c", "w4g64z", "w8g128z", "w4cz"]


def quantized_arrays(dense: torch.Tensor, name: str) -> tuple[list[torch.Tensor], torch.Tensor]:
    """The arrays of `dense` in format `name` and the dense matrix they dequantize to."""
    fmt = formats.lookup(name)
    assert fmt.quant is not None
    kept, meta = compress_arrays(dense, formats.NV24)
    codes, scales, zeros = quantize_kept(kept, fmt.quant, dense.dtype)
    values = pack_codes(codes, fmt.quant)
    kept_back = dequantize_tile(values, scales, zeros, fmt.quant.bits, dense.dtype)
    arrays = [values, meta, scales] + ([zeros] if zeros is not None else [])
    return arrays, decode_meta_tile(kept_back, meta, formats.NV24)


def _run_pointer_gemm(name: str, dtype: torch.dtype, m: int, n: int, k: int, bk: int,
                      expand: bool = False) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    torch.manual_seed(m * 1000 + n + k)
    a = sparsecc.prune_2to4(torch.randn(m, k, dtype=dtype))
    b = torch.randn(k, n, dtype=dtype)
    arrays, deq = quantized_arrays(a, name)
    elt = "fp16" if dtype == torch.float16 else "bf16"
    sig = {**POINTER_SIG, "A": f"*{elt}:{name}", "B": f"*{elt}"}
    blocks = {"BM": 32, "BN": 16, "BK": bk}
    if expand:
        module = to_ttir(pointer_gemm, sig, blocks)
        run_passes(module, [*make_ttir(CompileOptions()), "expand-dequantize"])
        fn = "pointer_gemm"
    else:
        ck = sparsecc.compile(pointer_gemm, signature=sig, constexprs=blocks)
        module, fn = ck.module, ck.name
    d = torch.full((m, n), float("nan"), dtype=torch.float16)
    grid = (-(-m // 32), -(-n // 16), 1)
    interpreter.run(module, fn, grid, [d, *arrays, b, m, n, k, k, n, n])
    return d, deq, b


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_interpreter_matches_dequantized_matmul(scheme, dtype):
    name = f"NV24.{scheme}"
    d, deq, b = _run_pointer_gemm(name, dtype, m=45, n=19, k=256, bk=128)
    ref = (deq.float() @ b.float()).half()
    assert not d.isnan().any()
    torch.testing.assert_close(d, ref, rtol=1e-2, atol=2e-2)


@pytest.mark.parametrize("scheme", ["w4g64", "w8c", "w4g64z"])
def test_expanded_dequantize_equals_the_op(scheme):
    """expand-dequantize's shifts and reshapes compute tt.dequantize bit for bit."""
    name = f"NV24.{scheme}"
    d_op, _, _ = _run_pointer_gemm(name, torch.float16, m=33, n=16, k=128, bk=64)
    d_expanded, _, _ = _run_pointer_gemm(name, torch.float16, m=33, n=16, k=128, bk=64, expand=True)
    assert torch.equal(d_op, d_expanded)


def test_decomposed_ir_has_scales_and_dequantize():
    sig = {"D": "*fp16", "A": "*fp16:NV24.w4g64z", "B": "*fp16"}
    ck = sparsecc.compile(dot_kernel, signature=sig, constexprs={"BLOCK_M": 32, "BLOCK_N": 16, "BLOCK_K": 64})
    text = ck.asm["ttir"]
    assert '!tt.ptr<f16, #tt.sparse<"NV24.w4g64z">>' in text
    text = ck.asm["ttir-decomposed"]
    assert ("%A_values: !tt.ptr<i8>, %A_meta: !tt.ptr<i16>, %A_scales: !tt.ptr<f16>, "
            "%A_zeros: !tt.ptr<f16>") in text
    assert "!tt.ptr<tensor<32x16xi8>>" in text  # 64 columns, 32 kept, two 4-bit codes a byte
    assert ("tt.dequantize %a_values, %a_scales, %a_zeros {bits = 4 : i32} : tensor<32x16xi8>, "
            "tensor<32x1xf16>, tensor<32x1xf16> -> tensor<32x32xf16>") in text
    assert "tt.dot %a_dequant, %b, %a_meta" in text
    assert "tt.sparse" not in text


def test_seed_kernel_runs_quantized_on_the_interpreter():
    torch.manual_seed(3)
    a = sparsecc.prune_2to4(torch.randn(32, 128, dtype=torch.float16))
    b = torch.randn(128, 16, dtype=torch.float16)
    arrays, deq = quantized_arrays(a, "NV24.w8g128")
    sig = {"D": "*fp16", "A": "*fp16:NV24.w8g128", "B": "*fp16"}
    ck = sparsecc.compile(dot_kernel, signature=sig, constexprs={"BLOCK_M": 32, "BLOCK_N": 16, "BLOCK_K": 128})
    d = torch.full((32, 16), float("nan"), dtype=torch.float16)
    interpreter.run(ck.module, ck.name, (1, 1, 1), [d, *arrays, b])
    torch.testing.assert_close(d, (deq.float() @ b.float()).half(), rtol=1e-2, atol=2e-2)
    # 8-bit codes are close to the unquantized matrix too
    torch.testing.assert_close(deq, a, rtol=0.02, atol=0.03)


def test_tile_narrower_than_a_group_is_a_located_error():
    sig = {**POINTER_SIG, "A": "*fp16:NV24.w4g128"}
    with pytest.raises(sparsecc.CompilationError) as err:
        sparsecc.compile(pointer_gemm, signature=sig, constexprs={"BM": 32, "BN": 16, "BK": 64})
    msg = str(err.value)
    assert "kernels.py:" in msg and "multiple of 128" in msg and "w4g128" in msg


@pytest.mark.parametrize("bad, why", [
    ("NV24.w3g128", "bits must be 4 or 8"),
    ("NV24.w4g100", "power of two"),
    ("NV12.w4g128", "cannot be quantized"),
    ("NV24.q4", "unknown quantization scheme"),
])
def test_bad_quantized_format_names(bad, why):
    with pytest.raises(Exception) as err:
        sparsecc.compile(dot_kernel, signature={"D": "*fp16", "A": f"*fp16:{bad}", "B": "*fp16"},
                         constexprs={"BLOCK_M": 32, "BLOCK_N": 16, "BLOCK_K": 128})
    assert why in str(err.value)


def test_quantized_format_needs_a_16_bit_float():
    with pytest.raises(Exception) as err:
        sparsecc.compile(dot_kernel, signature={"D": "*fp16", "A": "*i8:NV24.w4g128", "B": "*i8"},
                         constexprs={"BLOCK_M": 32, "BLOCK_N": 16, "BLOCK_K": 128})
    assert "16-bit floating-point" in str(err.value)


def _needs_ptxas() -> None:
    """Skip where no ptxas is found (the compile to a cubin runs it)."""
    from sparsecc.codegen import ptxas

    try:
        ptxas.find_ptxas()
    except ptxas.ToolNotFoundError as e:
        pytest.skip(str(e))


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("scheme", ["w4g64", "w8c", "w4g64z"])
def test_quantized_kernels_assemble(target, scheme):
    """The GPU stages stream the codes and scales through shared memory with the dot's tiles
    (async copies into rings) and dequantize from there; ptxas accepts the PTX (no GPU needed)."""
    _needs_ptxas()
    sig = {**POINTER_SIG, "A": f"*fp16:NV24.{scheme}"}
    ck = sparsecc.compile(pointer_gemm, signature=sig, constexprs={"BM": 64, "BN": 64, "BK": 64}, target=target)
    ttgir = ck.asm["ttgir"]
    codes = re.search(r"(%\w+) = ttg\.local_load (%\w+) : !ttg\.memdesc<64x\d+xi8, [^\n]*", ttgir)
    assert codes, "the codes tile is read from a shared ring"
    assert re.search(rf"tt\.dequantize {codes.group(1)}, %\w+", ttgir)
    assert re.search(r"ttg\.(async_copy_global_to_local|async_tma_copy) %\w+, %\w+ [^\n]*memdesc<64x\d+xi8", ttgir)
    assert ck.asm.get("cubin")


@pytest.mark.parametrize("scheme, dtype, direct", [
    ("w4g128", "fp16", True), ("w8g128", "fp16", True), ("w4g64z", "fp16", True), ("w4g128", "bf16", False),
])
def test_dequantize_builds_the_dot_fragments(scheme, dtype, direct):
    """An fp16 tt.dequantize feeding the dot is the dot's meta = 0 operand itself (no convert, no
    shared-memory round trip of the values): the PTX picks fragment bytes from 16-byte code
    chunks with prmt; bf16 keeps the convert. The warps of a dequantized dot go along M."""
    _needs_ptxas()
    from sparsecc.ops.sparse_linear import sparse_linear_kernel

    sig = {"Y": f"*{dtype}", "X": f"*{dtype}", "W": f"*{dtype}:NV24.{scheme}", "BIAS": f"*{dtype}", "M": "i32",
           "N": "i32", "K": "i32", "stride_xm": "i32", "stride_wn": "i32", "stride_ym": "i32"}
    ck = sparsecc.compile(sparse_linear_kernel, sig, {"BLOCK_M": 16, "BLOCK_N": 64, "BLOCK_K": 256,
                          "HAS_BIAS": False, "ACTIVATION": "none"}, target="sm_90a", num_warps=4, num_stages=3)
    ttgir, ptx = ck.asm["ttgir"], ck.asm["ptx"]
    dq = re.search(r"(%\w+) = tt\.dequantize [^\n]*-> tensor<64x128x\w+, (#ttg\.\w+)", ttgir)
    assert dq is not None
    assert (dq.group(2) == "#ttg.dot_op") == direct
    assert (f"ttg.convert_layout {dq.group(1)} " in ttgir) != direct
    assert ("prmt.b32 %fq0" in ptx) == direct
    assert "warpsPerCTA = [4, 1]" in ttgir
    assert isinstance(ck.asm["cubin"], bytes)
