"""The ttg dialect (round trips, verifiers) and the passes that produce ttgir:
convert-tt-to-ttg, sparse-gpu-encoding, tritongpu-pipeline."""

from __future__ import annotations

import io
import random
import re

import pytest
from xdsl.dialects import scf
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import DiagnosticException, ParseError, VerifyException

from sparsecc import compiler
from sparsecc.dialects import make_context, tt
from sparsecc.dialects.ttg import (
    AsyncCommitGroupOp,
    AsyncCopyGlobalToLocalOp,
    AsyncWaitOp,
    BlockedEncodingAttr,
    ConvertLayoutOp,
    DotOperandEncodingAttr,
    LocalAllocOp,
    LocalLoadOp,
    MemDescSubviewOp,
    MmaEncodingAttr,
    SharedEncodingAttr,
    SliceEncodingAttr,
)
from sparsecc.passes.sparse_gpu_encoding import mma_swizzle

BLOCKED = "#ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>"
MMA = "#ttg.mma<{versionMajor = 2, warpsPerCTA = [2, 2], instrShape = [16, 8]}>"
SHARED = "#ttg.shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [1, 0]}>"

ALL_OPS = f"""
#blocked = {BLOCKED}
#mma = {MMA}
#shared = {SHARED}
builtin.module attributes {{"ttg.num-warps" = 4 : i32}} {{
  tt.func public @k(%p: !tt.ptr<f16>, %x: tensor<64x32xf16, #blocked>, %i: i32) {{
    %c0 = arith.constant 0 : i32
    %y = ttg.convert_layout %x : tensor<64x32xf16, #blocked> -> tensor<64x32xf16, #ttg.dot_op<{{opIdx = 0, parent = #mma, kWidth = 2, meta = 0}}>>
    %m = ttg.local_alloc %x : (tensor<64x32xf16, #blocked>) -> !ttg.memdesc<64x32xf16, #shared>
    %r = ttg.local_alloc : () -> !ttg.memdesc<3x64x32xf16, #shared, mutable>
    %t = ttg.local_load %m : !ttg.memdesc<64x32xf16, #shared> -> tensor<64x32xf16, #ttg.dot_op<{{opIdx = 1, parent = #mma, kWidth = 2}}>>
    %s = ttg.memdesc_subview %r[%i, %c0, %c0] : !ttg.memdesc<3x64x32xf16, #shared, mutable> -> !ttg.memdesc<64x32xf16, #shared, mutable>
    ttg.local_store %x, %s : tensor<64x32xf16, #blocked> -> !ttg.memdesc<64x32xf16, #shared, mutable>
    %c64 = arith.constant 64 : i64
    %c1 = arith.constant 1 : i64
    %bp = tt.make_tensor_ptr %p, shape=[%c64, %c64], strides=[%c64, %c1], offsets=[%c0, %c0] {{order = array<i32: 1, 0>}} : !tt.ptr<tensor<64x32xf16, #blocked>>
    %tok = ttg.async_copy_global_to_local %bp, %s {{boundaryCheck = array<i32: 0, 1>, padding = 1 : i32}} : !tt.ptr<tensor<64x32xf16, #blocked>> -> !ttg.memdesc<64x32xf16, #shared, mutable>
    %g = ttg.async_commit_group %tok
    %e = ttg.async_commit_group
    ttg.async_wait %g, %e {{num = 1 : i32}}
    ttg.async_wait {{num = 0 : i32}}
    %z = arith.constant dense<0> : tensor<2x64xi16, #ttg.dot_op<{{opIdx = 0, parent = #mma, kWidth = 2, meta = 1}}>>
    %mp = arith.constant dense<0> : tensor<4x64xi16, #ttg.blocked<{{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}}>>
    %ma = ttg.local_alloc %mp : (tensor<4x64xi16, #blocked>) -> !ttg.memdesc<4x64xi16, #ttg.shared<{{vec = 1, perPhase = 1, maxPhase = 1, order = [1, 0], metaPack = 1}}>>
    %sl = tt.make_range {{end = 64 : i32, start = 0 : i32}} : tensor<64xi32, #ttg.slice<{{dim = 1, parent = #blocked}}>>
    tt.return
  }}
}}
"""


def parse(text: str) -> ModuleOp:
    return Parser(make_context(), text).parse_module()


def show(op, generic: bool = False) -> str:
    out = io.StringIO()
    Printer(stream=out, print_generic_format=generic).print_op(op)
    return out.getvalue()


# --------------------------------------------------------------------------------------
# Dialect
# --------------------------------------------------------------------------------------


def test_round_trip_custom_and_generic():
    module = parse(ALL_OPS)
    module.verify()
    text = show(module)
    assert "kWidth = 2, meta = 0}>" in text and "kWidth = 2, meta = 1}>" in text
    assert "#ttg.dot_op<{opIdx = 1, parent = " + MMA + ", kWidth = 2}>" in text  # meta -1 not printed
    assert "metaPack = 1}>" in text and SHARED in text
    assert "ttg.async_wait %g, %e {num = 1 : i32}" in text
    assert "%e = ttg.async_commit_group\n" in text
    again = parse(text)
    again.verify()
    assert show(again) == text
    generic = show(module, generic=True)
    assert '"ttg.local_alloc"() : () -> !ttg.memdesc<3x64x32xf16' in generic
    from_generic = parse(generic)
    from_generic.verify()
    assert show(from_generic) == text


def test_attribute_helpers():
    module = parse(ALL_OPS)
    ops = {type(o): o for o in module.walk()}
    b = ops[ConvertLayoutOp].src.type.encoding
    assert isinstance(b, BlockedEncodingAttr)
    assert (b.size_per_thread, b.threads_per_warp, b.warps_per_cta, b.order) == ((1, 8), (4, 8), (4, 1), (1, 0))
    assert b.shape_per_cta_tile() == (16, 64) and b.num_warps == 4
    d = ops[ConvertLayoutOp].result.type.encoding
    assert isinstance(d, DotOperandEncodingAttr)
    assert (d.op_idx, d.k_width, d.meta, d.is_sparse_values) == (0, 2, 0, True)
    assert d.parent == MmaEncodingAttr((2, 2)) and d.parent.instr_shape == (16, 8)
    sub = ops[MemDescSubviewOp]
    assert sub.src.type.get_shape() == (3, 64, 32) and sub.src.type.is_mutable
    assert isinstance(ops[AsyncCopyGlobalToLocalOp], AsyncCopyGlobalToLocalOp) and ops[AsyncCopyGlobalToLocalOp].is_block_pointer
    sl = next(o for o in module.walk() if isinstance(o, tt.MakeRangeOp)).result.type.encoding
    assert isinstance(sl, SliceEncodingAttr) and sl.dim == 1 and sl.rank == 1


def _module_with(body: str, args: str = "") -> str:
    return f"builtin.module {{\n  tt.func public @k({args}) {{\n{body}\n    tt.return\n  }}\n}}\n"


INVALID = [
    ("#ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 4], warpsPerCTA = [4, 1], order = [1, 0]}>", "product of threadsPerWarp must be 32"),
    ("#ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 1]}>", "not a permutation"),
    ("#ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4], order = [1, 0]}>", "warpsPerCTA has rank 1"),
    ("#ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], order = [1, 0]}>", "missing parameter(s): warpsPerCTA"),
    ("#ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0], foo = 1}>", "unknown #ttg.blocked parameter 'foo'"),
    (f"#ttg.dot_op<{{opIdx = 1, parent = {MMA}, kWidth = 2, meta = 1}}>", "needs opIdx = 0"),
    (f"#ttg.dot_op<{{opIdx = 0, parent = {MMA}, kWidth = 2, meta = 2}}>", "meta must be -1, 0 or 1"),
    (f"#ttg.dot_op<{{opIdx = 2, parent = {MMA}, kWidth = 2}}>", "opIdx must be 0 or 1"),
    (f"#ttg.dot_op<{{opIdx = 0, parent = {BLOCKED}, kWidth = 2}}>", "parent must be a #ttg.mma"),
    ("#ttg.mma<{versionMajor = 2, warpsPerCTA = [2, 2], instrShape = [16, 16]}>", "instrShape must be [16, 8]"),
    ("#ttg.mma<{versionMajor = 4, warpsPerCTA = [2, 2], instrShape = [16, 8]}>", "versionMajor must be 2"),
    ("#ttg.mma<{versionMajor = 3, warpsPerCTA = [2, 2], instrShape = [64, 64]}>", "warpsPerCTA must be [4k, 1]"),
    ("#ttg.mma<{versionMajor = 3, warpsPerCTA = [4, 1], instrShape = [16, 8]}>", "instrShape [64, N]"),
    ("#ttg.mma<{versionMajor = 3, warpsPerCTA = [4, 1], instrShape = [64, 264]}>", "instrShape [64, N]"),
    ("#ttg.shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [1, 0], colBlock = 12}>", "colBlock must be 0 or a multiple of vec"),
    (f"#ttg.slice<{{dim = 2, parent = {BLOCKED}}}>", "dim 2 out of range"),
    ("#ttg.shared<{vec = 0, perPhase = 1, maxPhase = 8, order = [1, 0]}>", "vec must be >= 1"),
    ("#ttg.shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [1, 0], metaPack = 1}>", "marks an unswizzled metadata tile"),
]


@pytest.mark.parametrize("attr,message", INVALID)
def test_invalid_attributes_report_location(attr: str, message: str):
    text = _module_with(f"    %x = arith.constant dense<0> : tensor<32x64xi16, {attr}>")
    with pytest.raises(ParseError) as err:
        parse(text)
    assert message in str(err.value)
    assert ":3:" in str(err.value)  # the line of the bad attribute


INVALID_OPS = [
    (
        f"    %y = ttg.convert_layout %x : tensor<64x32xf16, {BLOCKED}> -> tensor<64x32xf32, {MMA}>",
        "element types differ",
    ),
    (
        f"    %y = ttg.convert_layout %x : tensor<64x32xf16, {BLOCKED}> -> tensor<32x64xf16, {MMA}>",
        "shapes differ",
    ),
    (
        f"    %m = ttg.local_alloc %x : (tensor<64x32xf16, {BLOCKED}>) -> !ttg.memdesc<64x32xf16, {SHARED}>\n"
        f"    %t = ttg.local_load %m : !ttg.memdesc<64x32xf16, {SHARED}> -> tensor<64x16xf16, {BLOCKED}>",
        "ttg.local_load: shapes differ",
    ),
    (f"    %r = ttg.local_alloc : () -> !ttg.memdesc<3x64x32xf16, {SHARED}>", "must produce a mutable memdesc"),
    (
        f"    %m = ttg.local_alloc %x : (tensor<64x32xf16, {BLOCKED}>) -> !ttg.memdesc<64x32xf16, {SHARED}>\n"
        f"    ttg.local_store %x, %m : tensor<64x32xf16, {BLOCKED}> -> !ttg.memdesc<64x32xf16, {SHARED}>",
        "needs a mutable memdesc",
    ),
    (
        f"    %c0 = arith.constant 0 : i32\n    %r = ttg.local_alloc : () -> !ttg.memdesc<3x64x32xf16, {SHARED}, mutable>\n"
        f"    %s = ttg.memdesc_subview %r[%c0, %c0] : !ttg.memdesc<3x64x32xf16, {SHARED}, mutable> -> !ttg.memdesc<64x32xf16, {SHARED}, mutable>",
        "needs 3 offsets, got 2",
    ),
    (
        f"    %y = ttg.convert_layout %x : tensor<64x32xf16, {BLOCKED}> -> tensor<64x32xf16, #ttg.slice<{{dim = 0, parent = {BLOCKED}}}>>",
        "layout rank 1 does not match tensor rank 2",
    ),
    (
        f"    %c0 = arith.constant 0 : i32\n    %r = ttg.local_alloc : () -> !ttg.memdesc<3x2xi64, {SHARED}, mutable>\n"
        f"    ttg.wait_barrier %r[%c0], %c0 : !ttg.memdesc<3x2xi64, {SHARED}, mutable>",
        "ttg.wait_barrier: the barrier ring must be a rank-1 !ttg.memdesc of i64",
    ),
    (
        "    %c0 = arith.constant 0 : i32\n"
        "    %r = ttg.local_alloc : () -> !ttg.memdesc<3xi64, #ttg.shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [0]}>, mutable>\n"
        "    ttg.arrive_barrier %r[%c0] {kind = \"lanes\"} : !ttg.memdesc<3xi64, #ttg.shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [0]}>, mutable>",
        "kind must be one of copies, warps, threads, tma",
    ),
    (
        "    %r = ttg.local_alloc : () -> !ttg.memdesc<3xi32, #ttg.shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [0]}>, mutable>\n"
        "    ttg.init_barrier %r {count = 4 : i32} : !ttg.memdesc<3xi32, #ttg.shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [0]}>, mutable>",
        "ttg.init_barrier: the barrier ring must be",
    ),
]


@pytest.mark.parametrize("body,message", INVALID_OPS)
def test_invalid_ops(body: str, message: str):
    module = parse(_module_with(body, f"%x: tensor<64x32xf16, {BLOCKED}>"))
    with pytest.raises(VerifyException) as err:
        module.verify()
    assert message in str(err.value)


# --------------------------------------------------------------------------------------
# Passes on the decomposed seed kernel and on a K-loop GEMM
# --------------------------------------------------------------------------------------

SEED = """
builtin.module {
  tt.func public @dot_kernel(%arg0: !tt.ptr<f16>, %arg1: !tt.ptr<f16>, %arg2: !tt.ptr<i16>, %arg3: !tt.ptr<f16>) {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i64
    %c2 = arith.constant 2 : i64
    %c16 = arith.constant 16 : i64
    %c32 = arith.constant 32 : i64
    %c64 = arith.constant 64 : i64
    %A = tt.make_tensor_ptr %arg1, shape=[%c32, %c32], strides=[%c32, %c1], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<32x32xf16>>
    %E = tt.make_tensor_ptr %arg2, shape=[%c2, %c64], strides=[%c64, %c1], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<2x64xi16>>
    %B = tt.make_tensor_ptr %arg3, shape=[%c64, %c16], strides=[%c16, %c1], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<64x16xf16>>
    %D = tt.make_tensor_ptr %arg0, shape=[%c32, %c16], strides=[%c16, %c1], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<32x16xf16>>
    %a = tt.load %A : !tt.ptr<tensor<32x32xf16>>
    %e = tt.load %E : !tt.ptr<tensor<2x64xi16>>
    %b = tt.load %B : !tt.ptr<tensor<64x16xf16>>
    %cst = arith.constant dense<0.000000e+00> : tensor<32x16xf32>
    %d = tt.dot %a, %b, %e, %cst, sparseIndex = 0 : tensor<32x32xf16>, tensor<2x64xi16> * tensor<64x16xf16> -> tensor<32x16xf32>
    %t = arith.truncf %d : tensor<32x16xf32> to tensor<32x16xf16>
    tt.store %D, %t : !tt.ptr<tensor<32x16xf16>>
    tt.return
  }
}
"""


def kloop(bm: int = 64, bn: int = 64, bk: int = 64) -> str:
    """A sparse GEMM K loop in decomposed tt IR (values, metadata and B block pointers advanced)."""
    mb, kh = bm // 16, bk // 2
    return f"""
builtin.module {{
  tt.func public @sparse_gemm(%vals: !tt.ptr<f16>, %meta: !tt.ptr<i16>, %b: !tt.ptr<f16>, %d: !tt.ptr<f16>, %M: i32, %N: i32, %K: i32) {{
    %c0 = arith.constant 0 : i32
    %ckh = arith.constant {kh} : i32
    %cbk = arith.constant {bk} : i32
    %one = arith.constant 1 : i64
    %M64 = arith.extsi %M : i32 to i64
    %N64 = arith.extsi %N : i32 to i64
    %K64 = arith.extsi %K : i32 to i64
    %two = arith.constant 2 : i64
    %sixteen = arith.constant 16 : i64
    %Kh = arith.divsi %K64, %two : i64
    %Mm = arith.divsi %M64, %sixteen : i64
    %pa = tt.make_tensor_ptr %vals, shape=[%M64, %Kh], strides=[%Kh, %one], offsets=[%c0, %c0] {{order = array<i32: 1, 0>}} : !tt.ptr<tensor<{bm}x{kh}xf16>>
    %pe = tt.make_tensor_ptr %meta, shape=[%Mm, %K64], strides=[%K64, %one], offsets=[%c0, %c0] {{order = array<i32: 1, 0>}} : !tt.ptr<tensor<{mb}x{bk}xi16>>
    %pb = tt.make_tensor_ptr %b, shape=[%K64, %N64], strides=[%N64, %one], offsets=[%c0, %c0] {{order = array<i32: 1, 0>}} : !tt.ptr<tensor<{bk}x{bn}xf16>>
    %pd = tt.make_tensor_ptr %d, shape=[%M64, %N64], strides=[%N64, %one], offsets=[%c0, %c0] {{order = array<i32: 1, 0>}} : !tt.ptr<tensor<{bm}x{bn}xf16>>
    %zero = arith.constant dense<0.000000e+00> : tensor<{bm}x{bn}xf32>
    %acc, %a_out, %e_out, %b_out = scf.for %k = %c0 to %K step %cbk iter_args(%acc_i = %zero, %pa_i = %pa, %pe_i = %pe, %pb_i = %pb) -> (tensor<{bm}x{bn}xf32>, !tt.ptr<tensor<{bm}x{kh}xf16>>, !tt.ptr<tensor<{mb}x{bk}xi16>>, !tt.ptr<tensor<{bk}x{bn}xf16>>) : i32 {{
      %a = tt.load %pa_i {{boundaryCheck = array<i32: 0, 1>, padding = 1 : i32}} : !tt.ptr<tensor<{bm}x{kh}xf16>>
      %e = tt.load %pe_i {{boundaryCheck = array<i32: 0, 1>, padding = 1 : i32}} : !tt.ptr<tensor<{mb}x{bk}xi16>>
      %bt = tt.load %pb_i {{boundaryCheck = array<i32: 0, 1>, padding = 1 : i32}} : !tt.ptr<tensor<{bk}x{bn}xf16>>
      %acc_n = tt.dot %a, %bt, %e, %acc_i, sparseIndex = 0 : tensor<{bm}x{kh}xf16>, tensor<{mb}x{bk}xi16> * tensor<{bk}x{bn}xf16> -> tensor<{bm}x{bn}xf32>
      %pa_n = tt.advance %pa_i, [%c0, %ckh] : !tt.ptr<tensor<{bm}x{kh}xf16>>
      %pe_n = tt.advance %pe_i, [%c0, %cbk] : !tt.ptr<tensor<{mb}x{bk}xi16>>
      %pb_n = tt.advance %pb_i, [%cbk, %c0] : !tt.ptr<tensor<{bk}x{bn}xf16>>
      scf.yield %acc_n, %pa_n, %pe_n, %pb_n : tensor<{bm}x{bn}xf32>, !tt.ptr<tensor<{bm}x{kh}xf16>>, !tt.ptr<tensor<{mb}x{bk}xi16>>, !tt.ptr<tensor<{bk}x{bn}xf16>>
    }}
    %out = arith.truncf %acc : tensor<{bm}x{bn}xf32> to tensor<{bm}x{bn}xf16>
    tt.store %pd, %out {{boundaryCheck = array<i32: 0, 1>}} : !tt.ptr<tensor<{bm}x{bn}xf16>>
    tt.return
  }}
}}
"""


def run(text: str, passes: list[str]) -> ModuleOp:
    module = parse(text)
    module.verify()
    compiler.run_passes(module, passes)
    module.verify()
    reparsed = parse(compiler.print_ir(module))  # the output is valid ttgir text
    reparsed.verify()
    return module


def to_ttg(warps: int = 4) -> str:
    return f"convert-tt-to-ttg{{num-warps={warps} target=sm_90}}"


def ops_of(module: ModuleOp, cls) -> list:
    return [o for o in module.walk() if isinstance(o, cls)]


def test_convert_seed_kernel_layouts():
    module = run(SEED, [to_ttg()])
    assert module.attributes["ttg.num-warps"].value.data == 4
    assert module.attributes["ttg.threads-per-warp"].value.data == 32
    assert module.attributes["ttg.target"].data == "sm_90"
    (dot,) = ops_of(module, tt.DotOp)
    mma = dot.result.type.encoding
    assert mma == MmaEncodingAttr((2, 2))
    assert dot.c.type.encoding == mma and isinstance(dot.c.owner.value.type, TensorType)
    a, b, meta = (v.type.encoding for v in (dot.a, dot.b, dot.meta))
    assert a == DotOperandEncodingAttr(0, mma, 2, 0)
    assert b == DotOperandEncodingAttr(1, mma, 2, -1)
    assert meta == DotOperandEncodingAttr(0, mma, 2, 1)
    for v in (dot.a, dot.b, dot.meta):
        assert isinstance(v.owner, ConvertLayoutOp) and isinstance(v.owner.src.owner, tt.LoadOp)
        assert isinstance(v.owner.src.type.encoding, BlockedEncodingAttr)
    # 16-byte vectors along the contiguous dim; lanes fill it first; warps along dim 0.
    va = dot.a.owner.src.type.encoding
    assert (va.size_per_thread, va.threads_per_warp, va.warps_per_cta, va.order) == ((1, 8), (8, 4), (4, 1), (1, 0))
    # The epilogue stays in #mma; the stored block pointer's tile type carries it.
    (store,) = ops_of(module, tt.StoreOp)
    assert store.value.type.encoding == mma and store.ptr.type.pointee.encoding == mma
    assert isinstance(store.ptr.owner, tt.MakeTensorPtrOp)
    assert len(ops_of(module, ConvertLayoutOp)) == 3  # only the three dot operands
    (func,) = ops_of(module, tt.FuncOp)
    assert [str(t) for t in func.function_type.inputs.data] == ["!tt.ptr<f16>", "!tt.ptr<f16>", "!tt.ptr<i16>", "!tt.ptr<f16>"]


@pytest.mark.parametrize("warps,expected", [(1, (1, 1)), (2, (2, 1)), (4, (2, 2)), (8, (4, 2))])
def test_mma_warps(warps: int, expected: tuple[int, int]):
    module = run(kloop(128, 64, 64), [to_ttg(warps)])
    (dot,) = ops_of(module, tt.DotOp)
    assert dot.result.type.encoding.warps_per_cta == expected
    blocked = dot.a.owner.src.type.encoding
    assert blocked.warps_per_cta == (warps, 1)


def test_convert_kloop_carries_mma_accumulator():
    module = run(kloop(), [to_ttg()])
    (loop,) = ops_of(module, scf.ForOp)
    (dot,) = ops_of(module, tt.DotOp)
    mma = dot.result.type.encoding
    acc_arg = loop.body.block.args[1]
    assert acc_arg.type.encoding == mma and loop.results[0].type.encoding == mma
    assert loop.iter_args[0].owner.result.type.encoding == mma  # zeros made directly in #mma
    assert dot.c is acc_arg  # no convert on the accumulator
    # Block pointer chains keep one tile layout through the loop.
    for i in (1, 2, 3):
        arg = loop.body.block.args[1 + i]
        assert isinstance(arg.type.pointee.encoding, BlockedEncodingAttr)
        assert loop.iter_args[i].type == arg.type == loop.results[i].type


def test_convert_rejects_sparse_input():
    text = _module_with(
        "    %c0 = arith.constant 0 : i32\n    %c1 = arith.constant 1 : i64\n    %c64 = arith.constant 64 : i64\n"
        "    %A = tt.make_tensor_ptr %p, shape=[%c64, %c64], strides=[%c64, %c1], offsets=[%c0, %c0] "
        '{order = array<i32: 1, 0>} : !tt.ptr<tensor<32x64xf16, #tt.sparse<"NV24">>>\n'
        '    %a = tt.load %A : !tt.ptr<tensor<32x64xf16, #tt.sparse<"NV24">>>',
        '%p: !tt.ptr<f16, #tt.sparse<"NV24">>',
    )
    module = parse(text)
    module.verify()
    with pytest.raises(DiagnosticException, match="run decompose-sparse-tensors first"):
        compiler.run_passes(module, [to_ttg()])


POINTER_KERNEL = """
builtin.module {
  tt.func public @copy(%src: !tt.ptr<f16>, %dst: !tt.ptr<f16>) {
    %r = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32>
    %c = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>
    %r2 = tt.expand_dims %r {axis = 1 : i32} : tensor<32xi32> -> tensor<32x1xi32>
    %c2 = tt.expand_dims %c {axis = 0 : i32} : tensor<64xi32> -> tensor<1x64xi32>
    %s = arith.constant dense<64> : tensor<32x1xi32>
    %ro = arith.muli %r2, %s : tensor<32x1xi32>
    %rb = tt.broadcast %ro : tensor<32x1xi32> -> tensor<32x64xi32>
    %cb = tt.broadcast %c2 : tensor<1x64xi32> -> tensor<32x64xi32>
    %off = arith.addi %rb, %cb : tensor<32x64xi32>
    %ps = tt.splat %src : !tt.ptr<f16> -> tensor<32x64x!tt.ptr<f16>>
    %p = tt.addptr %ps, %off : tensor<32x64x!tt.ptr<f16>>, tensor<32x64xi32>
    %x = tt.load %p : tensor<32x64x!tt.ptr<f16>>
    %pd = tt.splat %dst : !tt.ptr<f16> -> tensor<32x64x!tt.ptr<f16>>
    %q = tt.addptr %pd, %off : tensor<32x64x!tt.ptr<f16>>, tensor<32x64xi32>
    tt.store %q, %x : tensor<32x64x!tt.ptr<f16>>
    tt.return
  }
}
"""


def test_ranges_get_slices_of_their_expanded_layout():
    module = run(POINTER_KERNEL, [to_ttg()])
    (load,) = ops_of(module, tt.LoadOp)
    layout = load.result.type.encoding
    assert isinstance(layout, BlockedEncodingAttr)
    assert layout.size_per_thread == (1, 8)  # f16 pointees: 16-byte vectors
    for ex in ops_of(module, tt.ExpandDimsOp):
        assert ex.result.type.encoding == layout
        assert ex.src.type.encoding == SliceEncodingAttr(ex.axis.value.data, layout)
        assert isinstance(ex.src.owner, tt.MakeRangeOp)  # no convert needed
    assert not ops_of(module, ConvertLayoutOp)


def test_one_range_expanded_on_both_axes_gets_a_convert():
    text = POINTER_KERNEL.replace("%c2 = tt.expand_dims %c {axis = 0", "%c2 = tt.expand_dims %r2x {axis = 0")
    text = text.replace(
        "%c = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32>",
        "%r2x = arith.addi %r, %r : tensor<32xi32>",
    ).replace("tensor<64xi32> -> tensor<1x64xi32>", "tensor<32xi32> -> tensor<1x32xi32>")
    text = text.replace("tensor<1x64xi32>", "tensor<1x32xi32>").replace("%cb = tt.broadcast %c2 : tensor<1x32xi32> -> tensor<32x64xi32>", "%cb0 = tt.broadcast %c2 : tensor<1x32xi32> -> tensor<32x32xi32>\n    %cb = arith.constant dense<1> : tensor<32x64xi32>")
    module = run(text, [to_ttg()])
    cvts = ops_of(module, ConvertLayoutOp)
    assert len(cvts) == 1
    (cvt,) = cvts
    assert isinstance(cvt.result.type.encoding, SliceEncodingAttr) and isinstance(cvt.src.type.encoding, SliceEncodingAttr)
    assert cvt.result.type.encoding.dim != cvt.src.type.encoding.dim


def test_dense_dot_operands_have_no_meta():
    text = SEED.replace("%d = tt.dot %a, %b, %e, %cst, sparseIndex = 0 : tensor<32x32xf16>, tensor<2x64xi16> *", "%d = tt.dot %a2, %b, %cst : tensor<32x64xf16> *")
    text = text.replace("%a = tt.load %A : !tt.ptr<tensor<32x32xf16>>", "%A2 = tt.make_tensor_ptr %arg1, shape=[%c32, %c64], strides=[%c64, %c1], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<32x64xf16>>\n    %a2 = tt.load %A2 : !tt.ptr<tensor<32x64xf16>>")
    module = run(text, [to_ttg(), "sparse-gpu-encoding"])
    (dot,) = ops_of(module, tt.DotOp)
    assert dot.a.type.encoding.meta == -1 and dot.a.type.encoding.op_idx == 0
    assert "meta" not in compiler.print_ir(module).split("tt.dot")[1].split("tt.return")[0].replace("sparseIndex", "")


def test_sparse_gpu_encoding_shared_layouts_per_meta_class():
    module = run(SEED, [to_ttg(), "sparse-gpu-encoding"])
    assert not ops_of(module, ConvertLayoutOp)
    (dot,) = ops_of(module, tt.DotOp)
    got = {}
    for v in (dot.a, dot.b, dot.meta):
        ll = v.owner
        assert isinstance(ll, LocalLoadOp)
        alloc = ll.src.owner
        assert isinstance(alloc, LocalAllocOp) and isinstance(alloc.src.owner, tt.LoadOp)
        got[v.type.encoding.meta, v.type.encoding.op_idx] = alloc.result.type.encoding
    # values 32x32 f16: 64-byte rows -> 2 rows per 128-byte line, 4 phases of 16-byte vectors
    assert got[0, 0] == SharedEncodingAttr(8, 2, 4, (1, 0))
    # B 64x16 f16: 32-byte rows -> 4 rows per line, 2 phases (= the 2 vectors a row has)
    assert got[-1, 1] == SharedEncodingAttr(8, 4, 2, (1, 0))
    # metadata 2x64 i16: the ldmatrix pairing permutation, no XOR swizzle
    assert got[1, 0] == SharedEncodingAttr(1, 1, 1, (1, 0), meta_pack=1)


def _ldmatrix_phase_banks(enc: SharedEncodingAttr, row_len: int, elem_bytes: int, row0: int, col0: int) -> list[int]:
    """16-byte bank groups (0..7 of a 128-byte line) hit by one ldmatrix phase: 8 rows x 16 B."""
    groups = []
    for r in range(row0, row0 + 8):
        off = enc.swizzled_offset(r, col0, row_len) * elem_bytes
        assert off % 16 == 0  # the 16-byte row of the matrix stays contiguous
        groups.append((off // 16) % 8)
    return groups


@pytest.mark.parametrize("row_len", [8, 16, 32, 64, 128, 256])
def test_mma_swizzle_is_bank_conflict_free(row_len: int):
    enc = mma_swizzle(row_len, 2)
    rng = random.Random(row_len)
    for _ in range(50):
        row0 = rng.randrange(0, 64, 8)
        col0 = rng.randrange(0, row_len, 8)
        assert sorted(_ldmatrix_phase_banks(enc, row_len, 2, row0, col0)) == list(range(8))
        # The vec-group stays contiguous and all elements keep distinct offsets.
    offsets = {enc.swizzled_offset(r, c, row_len) for r in range(16) for c in range(row_len)}
    assert offsets == set(range(16 * row_len))
    unswizzled = SharedEncodingAttr(8, 1, 1, (1, 0))
    if row_len >= 64:  # rows >= 128 B: without the swizzle all 8 rows collide
        assert len(set(_ldmatrix_phase_banks(unswizzled, row_len, 2, 0, 0))) == 1


def test_meta_layout_feeds_both_selector_pairs_from_one_ldmatrix():
    """ldmatrix.trans of a 64-word metadata group gives lane 4g+t {M[2t][g], M[2t+1][g]}."""
    bk, rows = 128, 3
    enc = SharedEncodingAttr(1, 1, 1, (1, 0), meta_pack=1)
    rng = random.Random(7)
    # NV24 tile: word (r, 16c + m) holds a random 16-bit pattern; remember who it belongs to.
    owner = {}
    smem = {}
    for r in range(rows):
        for j in range(bk):
            word = rng.randrange(1 << 16)
            smem[enc.swizzled_offset(r, j, bk)] = word
            owner[word, r, j] = (16 * r + j % 16, j // 16)  # (A row, 16-column chunk)
    assert sorted(smem) == list(range(rows * bk))  # plain row-major, nothing overlaps
    for r in range(rows):
        for q in range(bk // 64):
            base = r * bk + 64 * q
            matrix_rows = [base + 8 * row for row in range(8)]
            assert sorted(a * 2 // 16 % 8 for a in matrix_rows) == list(range(8))  # one phase, 8 bank groups
            for g in range(8):
                for t in range(4):
                    got = [(smem[matrix_rows[2 * t + h] + g], (2 * t + h) * 8 + g) for h in (0, 1)]
                    who = [owner[w, r, 64 * q + j] for w, j in got]
                    step, sel = 2 * q + t // 2, t // 2
                    chunk = 2 * step + (t % 2)  # selector `sel`'s thread t%2 holds chunk 2s + t%2
                    assert who == [(16 * r + g, chunk), (16 * r + g + 8, chunk)], (sel, g, t)


def test_meta_without_two_ksteps_stays_row_major():
    module = run(kloop(64, 64, 32), [to_ttg(), "sparse-gpu-encoding"])
    (dot,) = ops_of(module, tt.DotOp)
    assert dot.meta.owner.src.type.encoding == SharedEncodingAttr(1, 1, 1, (1, 0))


@pytest.mark.parametrize("stages", [2, 3, 4])
def test_pipeline_rings_prologue_and_loop(stages: int):
    module = run(kloop(), [to_ttg(), "sparse-gpu-encoding", f"tritongpu-pipeline{{num-stages={stages}}}"])
    (loop,) = ops_of(module, scf.ForOp)
    func_block = loop.parent_block()
    before = []
    for o in func_block.ops:
        if o is loop:
            break
        before.append(o)
    rings = [o for o in before if isinstance(o, LocalAllocOp)]
    assert sorted(r.result.type.get_shape() for r in rings) == sorted([(stages, 64, 32), (stages, 1 * 4, 64), (stages, 64, 64)])
    assert all(r.src is None and r.result.type.is_mutable for r in rings)
    assert sum(isinstance(o, AsyncCommitGroupOp) for o in before) == stages - 1
    prologue_ifs = [o for o in before if isinstance(o, scf.IfOp)]
    assert len(prologue_ifs) == 3 * (stages - 1)
    body = list(loop.body.block.ops)
    assert isinstance(body[0], AsyncWaitOp) and body[0].num.value.data == stages - 2
    loads = [o for o in body if isinstance(o, LocalLoadOp)]
    assert len(loads) == 3 and all(isinstance(ll.src.owner, MemDescSubviewOp) for ll in loads)
    assert not [o for o in body if isinstance(o, tt.LoadOp | LocalAllocOp)]
    dot_at = next(i for i, o in enumerate(body) if isinstance(o, tt.DotOp))
    copies = [o for o in loop.walk() if isinstance(o, AsyncCopyGlobalToLocalOp)]
    assert len(copies) == 3 and all(c.boundaryCheck.get_values() == (0, 1) for c in copies)
    ifs = [i for i, o in enumerate(body) if isinstance(o, scf.IfOp)]
    assert len(ifs) == 3 and max(ifs) < dot_at  # the prefetch is issued before the mma
    assert sum(isinstance(o, AsyncCommitGroupOp) for o in body) == 1
    slots = loop.body.block.args[-2:]
    assert [str(a.type) for a in slots] == ["i32", "i32"]
    assert [o.value.value.data for o in (loop.iter_args[-2].owner, loop.iter_args[-1].owner)] == [0, stages - 1]
    after = loop.next_op
    assert isinstance(after, AsyncWaitOp) and after.num.value.data == 0
    text = compiler.print_ir(module)
    assert re.search(rf"ttg.local_alloc : \(\) -> !ttg.memdesc<{stages}x64x32xf16, #ttg.shared<{{vec = 8, perPhase = 2, maxPhase = 4, order = \[1, 0\]}}>, mutable>", text)


def test_pipeline_one_stage_leaves_ir_unchanged():
    ref = run(kloop(), [to_ttg(), "sparse-gpu-encoding"])
    piped = run(kloop(), [to_ttg(), "sparse-gpu-encoding", "tritongpu-pipeline{num-stages=1}"])
    assert compiler.print_ir(ref) == compiler.print_ir(piped)


def test_full_ttgir_stage_list():
    for text in (SEED, kloop(), kloop(32, 16, 64)):
        module = parse(text)
        compiler.run_passes(module, compiler.ttgir_passes(compiler.CompileOptions(target="sm_90")))
        module.verify()
        parse(compiler.print_ir(module)).verify()
