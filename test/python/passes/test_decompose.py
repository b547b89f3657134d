"""decompose-sparse-tensors on frontend output: the seed's before/after pair and a K loop."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from kernels import POINTER_SIG, SEED_BLOCKS, SEED_SIG, dot_kernel, pointer_gemm
from xdsl.parser import Parser

import sparsecc
from sparsecc.compiler import print_ir, run_passes
from sparsecc.dialects import make_context, tt
from sparsecc.passes.decompose_sparse_tensors import SparseDecompositionError

ROOT = Path(__file__).resolve().parents[3]


def _constants(text: str) -> dict[str, int]:
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"%(\w+) = arith\.constant (-?\d+) : i\d+", text)}


def test_seed_kernel_decomposes_like_the_seed():
    ck = sparsecc.compile(dot_kernel, signature=SEED_SIG, constexprs=SEED_BLOCKS)
    text = ck.asm["ttir-decomposed"]
    assert "tt.sparse" not in text
    # 4 arguments: D, A's values, A's metadata, B.
    assert re.search(r"@dot_kernel\(%D: !tt\.ptr<f16>, %A_values: !tt\.ptr<f16>, "
                     r"%A_meta: !tt\.ptr<i16>, %B: !tt\.ptr<f16>\)", text)
    consts = _constants(text)
    values = re.search(r"tt\.make_tensor_ptr %A_values, shape=\[%(\w+), %(\w+)\], strides=\[%(\w+), %(\w+)\].*"
                       r"!tt\.ptr<tensor<32x32xf16>>", text)
    meta = re.search(r"tt\.make_tensor_ptr %A_meta, shape=\[%(\w+), %(\w+)\], strides=\[%(\w+), %(\w+)\].*"
                     r"!tt\.ptr<tensor<2x64xi16>>", text)
    assert values and meta
    assert [consts[g] for g in values.groups()] == [32, 32, 32, 1]  # shape=[32, 32], strides=[32, 1]
    assert [consts[g] for g in meta.groups()] == [2, 64, 64, 1]  # shape=[2, 64], strides=[64, 1]
    assert "tt.load %a_ptrs_values : !tt.ptr<tensor<32x32xf16>>" in text
    assert "tt.load %a_ptrs_meta : !tt.ptr<tensor<2x64xi16>>" in text
    assert re.search(r"tt\.dot %a_values, %b, %a_meta, %\w+, sparseIndex = 0 : tensor<32x32xf16>, "
                     r"tensor<2x64xi16> \* tensor<64x16xf16> -> tensor<32x16xf32>", text)


def test_pass_on_ttir_gives_ttir_decomposed():
    """`sparsecc-opt -p decompose-sparse-tensors` on asm["ttir"] == asm["ttir-decomposed"]."""
    ck = sparsecc.compile(dot_kernel, signature=SEED_SIG, constexprs=SEED_BLOCKS)
    module = Parser(make_context(), ck.asm["ttir"]).parse_module()
    run_passes(module, ["decompose-sparse-tensors"])
    assert str(module) + "\n" == ck.asm["ttir-decomposed"]


def test_cli_on_ttir_gives_ttir_decomposed(tmp_path):
    ck = sparsecc.compile(dot_kernel, signature=SEED_SIG, constexprs=SEED_BLOCKS)
    src = tmp_path / "seed.mlir"
    src.write_text(ck.asm["ttir"])
    out = subprocess.run([sys.executable, "-m", "sparsecc.tools.sparsecc_opt", str(src), "-p",
                          "decompose-sparse-tensors"], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ck.asm["ttir-decomposed"].strip()


def test_k_loop_gemm_splits_iter_args():
    from sparsecc.ops.sparse_mm import sparse_mm_kernel

    sig = {"D": "*bf16", "A": "*bf16:NV24", "B": "*bf16", "M": "i32", "N": "i32", "K": "i32",
           "stride_am": "i32", "stride_bk": "i32", "stride_bn": "i32", "stride_dm": "i32", "stride_dn": "i32"}
    ck = sparsecc.compile(sparse_mm_kernel, signature=sig,
                          constexprs={"BLOCK_M": 64, "BLOCK_N": 32, "BLOCK_K": 64, "GROUP_M": 4})
    text = ck.asm["ttir-decomposed"]
    assert "tt.sparse" not in text
    module = Parser(make_context(), text).parse_module()
    module.verify()
    func = next(op for op in module.walk() if isinstance(op, tt.FuncOp))
    kinds = [str(t) for t in func.function_type.inputs.data]
    assert kinds[:4] == ["!tt.ptr<bf16>", "!tt.ptr<bf16>", "!tt.ptr<i16>", "!tt.ptr<bf16>"]
    loop = re.search(r"scf\.for .* -> \((.*)\) : i32", text)
    assert loop and "!tt.ptr<tensor<64x32xbf16>>, !tt.ptr<tensor<4x64xi16>>" in loop.group(1)
    dots = [op for op in module.walk() if isinstance(op, tt.DotOp)]
    assert len(dots) == 1 and dots[0].meta is not None and dots[0].sparseIndex.value.data == 0


@pytest.mark.parametrize(
    "body, message",
    [
        ("tt.store %pa, %a : !tt.ptr<tensor<16x16xf16, #tt.sparse<\"NV24\">>>", "cannot store a sparse"),
        ("%b = arith.negf %a : tensor<16x16xf16, #tt.sparse<\"NV24\">>", "cannot use a sparse"),
    ],
)
def test_undecomposable_uses_name_the_op(body, message):
    text = f"""builtin.module {{
  tt.func public @k(%A: !tt.ptr<f16, #tt.sparse<"NV24">>) {{
    %c16 = arith.constant 16 : i64
    %c1 = arith.constant 1 : i64
    %c0 = arith.constant 0 : i32
    %pa = tt.make_tensor_ptr %A, shape=[%c16, %c16], strides=[%c16, %c1], offsets=[%c0, %c0] {{order = array<i32: 1, 0>}} : !tt.ptr<tensor<16x16xf16, #tt.sparse<"NV24">>>
    %a = tt.load %pa : !tt.ptr<tensor<16x16xf16, #tt.sparse<"NV24">>>
    {body}
    tt.return
  }}
}}"""
    module = Parser(make_context(), text).parse_module()
    with pytest.raises(SparseDecompositionError, match=message) as info:
        run_passes(module, ["decompose-sparse-tensors"])
    assert info.value.op is not None


def test_a_sparse_operand_b_moves_to_the_left():
    """A K-major sparse B (the tile of W.T): the dot is computed transposed, W on the left."""
    text = """builtin.module {
  tt.func public @k(%A: !tt.ptr<f16, #tt.sparse<"NV24">>, %B: !tt.ptr<f16>) {
    %c16 = arith.constant 16 : i64
    %c1 = arith.constant 1 : i64
    %c0 = arith.constant 0 : i32
    %pa = tt.make_tensor_ptr %A, shape=[%c16, %c16], strides=[%c1, %c16], offsets=[%c0, %c0] {order = array<i32: 0, 1>} : !tt.ptr<tensor<16x16xf16, #tt.sparse<"NV24">>>
    %pb = tt.make_tensor_ptr %B, shape=[%c16, %c16], strides=[%c16, %c1], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<16x16xf16>>
    %a = tt.load %pa : !tt.ptr<tensor<16x16xf16, #tt.sparse<"NV24">>>
    %b = tt.load %pb : !tt.ptr<tensor<16x16xf16>>
    %z = arith.constant dense<0.000000e+00> : tensor<16x16xf32>
    %d = tt.dot %b, %a, %z : tensor<16x16xf16> * tensor<16x16xf16, #tt.sparse<"NV24">> -> tensor<16x16xf32>
    tt.return
  }
}"""
    # decompose-sparse-tensors alone refuses it; sparse-operand-to-lhs first puts it on the left
    with pytest.raises(SparseDecompositionError, match=r"needs order = \[1, 0\]"):
        run_passes(Parser(make_context(), text).parse_module(), ["decompose-sparse-tensors"])
    module = run_passes(Parser(make_context(), text).parse_module(),
                        ["sparse-operand-to-lhs", "decompose-sparse-tensors"])
    module.verify()
    dots = [op for op in module.walk() if isinstance(op, tt.DotOp)]
    assert len(dots) == 1 and dots[0].meta is not None and dots[0].a.name_hint == "a_values"


def test_pointer_tensors_decompose():
    # decompose-sparse-tensors alone (the compile pipeline raises this loop to block pointers first)
    ck = sparsecc.compile(pointer_gemm, signature=POINTER_SIG, constexprs={"BM": 32, "BN": 32, "BK": 32})
    module = Parser(make_context(), ck.asm["ttir"]).parse_module()
    text = print_ir(run_passes(module, ["decompose-sparse-tensors"]))
    assert "tt.sparse" not in text
    assert re.search(r"%a_ptrs_values = tt\.addptr %\w+, %\w+ : tensor<32x16x!tt\.ptr<f16>>, tensor<32x16xi32>", text)
    assert re.search(r"%a_ptrs_meta = tt\.addptr %\w+, %\w+ : tensor<2x32x!tt\.ptr<i16>>, tensor<2x32xi32>", text)
    assert re.search(r"%a_values = tt\.load %\w+, %\w+, %\w+ : tensor<32x16x!tt\.ptr<f16>>", text)
    assert re.search(r"%a_meta = tt\.load %\w+, %\w+, %\w+ : tensor<2x32x!tt\.ptr<i16>>", text)
    # every index term is a function of one tl.arange: taken at group starts, no reductions
    assert "tt.reduce" not in text and "tt.reshape" not in text
    loop = re.search(r"scf\.for .* -> \((.*)\) : i32", text)
    assert loop and "tensor<32x16x!tt.ptr<f16>>, tensor<2x32x!tt.ptr<i16>>" in loop.group(1)
    Parser(make_context(), text).parse_module().verify()


def test_pointer_tensor_ttir_round_trips_through_text_and_the_cli(tmp_path):
    """The frontend's masked sparse load (dense `other`) parses back; the CLI gives the same IR."""
    ck = sparsecc.compile(pointer_gemm, signature=POINTER_SIG, constexprs={"BM": 32, "BN": 32, "BK": 32})
    module = Parser(make_context(), ck.asm["ttir"]).parse_module()
    assert str(module) + "\n" == ck.asm["ttir"]
    src = tmp_path / "ptrs.mlir"
    src.write_text(ck.asm["ttir"])
    out = subprocess.run([sys.executable, "-m", "sparsecc.tools.sparsecc_opt", str(src), "-p",
                          "raise-pointer-tensors,decompose-sparse-tensors"], capture_output=True,
                         text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout == ck.asm["ttir-decomposed"]
    assert "tt.make_tensor_ptr" in out.stdout and "tt.advance" in out.stdout  # the K loop was raised


SCF_IF = """builtin.module {
  tt.func public @k(%A: !tt.ptr<f16, #tt.sparse<"NV24">>, %c: i1, %B: !tt.ptr<f16>) {
    %c64 = arith.constant 64 : i64
    %c1 = arith.constant 1 : i64
    %c0 = arith.constant 0 : i32
    %c32 = arith.constant 32 : i32
    %pa = tt.make_tensor_ptr %A, shape=[%c64, %c64], strides=[%c64, %c1], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<32x32xf16, #tt.sparse<"NV24">>>
    %pb = tt.make_tensor_ptr %B, shape=[%c64, %c64], strides=[%c64, %c1], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<32x16xf16>>
    %n, %p = scf.if %c -> (i32, !tt.ptr<tensor<32x32xf16, #tt.sparse<"NV24">>>) {
      %q = tt.advance %pa, [%c32, %c32] : !tt.ptr<tensor<32x32xf16, #tt.sparse<"NV24">>>
      scf.yield %c32, %q : i32, !tt.ptr<tensor<32x32xf16, #tt.sparse<"NV24">>>
    } else {
      scf.yield %c0, %pa : i32, !tt.ptr<tensor<32x32xf16, #tt.sparse<"NV24">>>
    }
    %a = tt.load %p {boundaryCheck = array<i32: 0, 1>, padding = 1 : i32} : !tt.ptr<tensor<32x32xf16, #tt.sparse<"NV24">>>
    %b = tt.load %pb : !tt.ptr<tensor<32x16xf16>>
    %z = arith.constant dense<0.000000e+00> : tensor<32x16xf32>
    %d = tt.dot %a, %b, %z : tensor<32x32xf16, #tt.sparse<"NV24">> * tensor<32x16xf16> -> tensor<32x16xf32>
    tt.return
  }
}"""


def test_scf_if_results_split_into_values_and_meta():
    from xdsl.dialects import scf

    module = Parser(make_context(), SCF_IF).parse_module()
    run_passes(module, ["decompose-sparse-tensors"])
    module.verify()
    assert not any(tt.is_sparse(r.type) for op in module.walk() for r in op.results)
    (if_op,) = [op for op in module.walk() if isinstance(op, scf.IfOp)]
    assert [str(r.type) for r in if_op.results] == [
        "i32", "!tt.ptr<tensor<32x16xf16>>", "!tt.ptr<tensor<2x32xi16>>"]
    assert [r.name_hint for r in if_op.results] == ["n", "p_values", "p_meta"]
    # The advance in the then-branch moves values by [32, 16] and metadata by [2, 32].
    advances = [op for op in module.walk() if isinstance(op, tt.AdvanceOp)]
    consts = [[o.owner.value.value.data for o in adv.offsets] for adv in advances]
    assert consts == [[32, 16], [2, 32]]
    loads = [op for op in module.walk() if isinstance(op, tt.LoadOp) and op.boundaryCheck is not None]
    assert [load.ptr for load in loads] == list(if_op.results[1:])
    (dot,) = [op for op in module.walk() if isinstance(op, tt.DotOp)]
    assert dot.a is loads[0].result and dot.meta is loads[1].result
