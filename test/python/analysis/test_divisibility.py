"""Integer specialization hints ("i32:16", "i32:1") and the divisibility analysis that turns
them into vector-only global accesses (sparsecc/analysis/divisibility.py)."""

from __future__ import annotations

import pytest
from xdsl.parser import Parser

import sparsecc
from sparsecc.analysis.divisibility import CAP, Divisibility
from sparsecc.dialects import make_context, tt
from sparsecc.frontend.jit import specialize
from sparsecc.frontend.types import parse_signature_type
from sparsecc.ops.sparse_mm import sparse_mm_kernel


def test_ints_specialize_on_multiples_of_16_and_one():
    assert specialize(4096, "K", "k") == "i32:16"
    assert specialize(0, "K", "k") == "i32:16"
    assert specialize(1, "s", "k") == "i32:1"
    assert specialize(72, "K", "k") == "i32"
    assert specialize(2**40 + 8, "K", "k") == "i64"
    assert specialize(True, "f", "k") == "i1"


@pytest.mark.parametrize("bad", ["fp32:16", "i32:8", "i1:1", "i32:"])
def test_only_integers_take_the_two_hints(bad):
    if bad == "i32:":
        assert parse_signature_type(bad) == parse_signature_type("i32")
        return
    with pytest.raises(ValueError, match="':16'"):
        parse_signature_type(bad)


MM = {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8}


def _sig(hinted: bool) -> dict[str, str]:
    i = "i32:16" if hinted else "i32"
    one = "i32:1" if hinted else "i32"
    return {"D": "*fp16", "A": "*fp16:NV24", "B": "*fp16", "M": i, "N": i, "K": i, "stride_am": i,
            "stride_bk": i, "stride_bn": one, "stride_dm": i, "stride_dn": one}


def _func(module) -> tt.FuncOp:
    return next(op for op in module.walk() if isinstance(op, tt.FuncOp))


def test_hints_reach_the_ir_and_survive_decomposition(tmp_path, monkeypatch):
    monkeypatch.setenv("SPARSECC_CACHE_DIR", str(tmp_path))
    ck = sparsecc.compile(sparse_mm_kernel, signature=_sig(True), constexprs=MM)
    assert "%K: i32 {tt.divisibility = 16 : i32}" in ck.asm["ttir"]
    assert "%stride_bn: i32," in ck.asm["ttir"] and "%stride_bn: i32 {" not in ck.asm["ttir"]
    dec = ck.asm["ttir-decomposed"]
    # A split into values + metadata: the attributes still line up with their arguments
    assert "%A_values: !tt.ptr<f16>, %A_meta: !tt.ptr<i16>, %B: !tt.ptr<f16>, %M: i32 {tt.divisibility = 16 : i32}" in dec


@pytest.mark.parametrize("hinted", [True, False])
def test_analysis_proves_every_gemm_tile_aligned_only_with_hints(hinted, tmp_path, monkeypatch):
    monkeypatch.setenv("SPARSECC_CACHE_DIR", str(tmp_path))
    ck = sparsecc.compile(sparse_mm_kernel, signature=_sig(hinted), constexprs=MM, target="sm_90a",
                          num_warps=8, num_stages=3, tma=False)  # the cp.async copies (TMA: test_tma.py)
    module = Parser(make_context(), ck.asm["ttgir"]).parse_module()
    func = _func(module)
    an = Divisibility(func)
    assert an.converged
    copies = [op for op in func.walk() if op.name == "ttg.async_copy_global_to_local"]
    stores = [op for op in func.walk() if isinstance(op, tt.StoreOp)]
    assert copies and stores
    for op in copies:
        known = an.ptr(op.src)
        assert known is not None
        assert known.vectors_aligned(1, 8, [0, 1]) is hinted, op
    assert an.ptr(stores[0].ptr).vectors_aligned(1, 2, [0, 1]) is hinted
    ptx = ck.asm["ptx"]
    # without the proof every access keeps its per-element fallback: several times the PTX
    assert (len(ptx.splitlines()) < 5000) is hinted


LOOP = """
builtin.module {
  tt.func public @f(%p: !tt.ptr<f16>, %n: i32 {tt.divisibility = 16 : i32}, %s: i32) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c64 = arith.constant 64 : i32
    %c128 = arith.constant 128 : i32
    %one = arith.constant 1 : i64
    %pid = tt.get_program_id x : i32
    %off = arith.muli %pid, %c128 : i32
    %n64 = arith.extsi %n : i32 to i64
    %half = arith.divsi %n, %c64 : i32
    %q = tt.make_tensor_ptr %p, shape=[%n64, %n64], strides=[%n64, %one], offsets=[%off, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<16x16xf16>>
    %r:3 = scf.for %i = %c0 to %n step %c1 iter_args(%a = %q, %b = %q, %k = %c0) -> (!tt.ptr<tensor<16x16xf16>>, !tt.ptr<tensor<16x16xf16>>, i32) : i32 {
      %a2 = tt.advance %a, [%c0, %c64] : !tt.ptr<tensor<16x16xf16>>
      %b2 = tt.advance %b, [%c0, %s] : !tt.ptr<tensor<16x16xf16>>
      %k2 = arith.addi %k, %c128 : i32
      scf.yield %a2, %b2, %k2 : !tt.ptr<tensor<16x16xf16>>, !tt.ptr<tensor<16x16xf16>>, i32
    }
    tt.return
  }
}
"""


def test_loop_carried_facts_meet_init_and_every_iteration():
    func = _func(Parser(make_context(), LOOP).parse_module())
    an = Divisibility(func)
    names = {v.name_hint: v for op in func.walk() for v in op.results}
    loop = next(op for op in func.walk() if op.name == "scf.for")
    a, b, k = loop.results
    assert an.of(names["off"]) == 128 and an.of(names["half"]) == 1 and an.of(names["n64"]) == 16
    assert an.ptr(a).offsets == (128, 64)  # pid*128 rows; 0 then +64 per iteration
    assert an.ptr(b).offsets == (128, 1)  # advanced by an unknown amount
    assert an.of(k) == 128 and an.of(loop.body.block.args[0]) == 1
    assert an.ptr(a).unit == (False, True) and an.ptr(a).shape == (16, 16)
    assert an.of(names["c0"]) == CAP  # zero: divisible by anything
