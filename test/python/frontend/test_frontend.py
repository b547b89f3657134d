"""The frontend: Python kernels -> tt IR (`ttir`), one test per construct, plus the errors."""

from __future__ import annotations

import importlib.util
import inspect
import re

import pytest
from kernels import SEED_BLOCKS, SEED_SIG, dot_kernel
from xdsl.context import Context
from xdsl.dialects.builtin import Builtin
from xdsl.dialects.math import Math
from xdsl.dialects.scf import Scf
from xdsl.parser import Parser

import sparsecc
import sparsecc.language as tl
from sparsecc.compiler import print_ir
from sparsecc.dialects import make_context
from sparsecc.dialects.arith import ARITH_WITH_TENSORS
from sparsecc.dialects.tt import TT
from sparsecc.frontend import CompilationError, to_ttir

HAVE_DECOMPOSE = importlib.util.find_spec("sparsecc.passes.decompose_sparse_tensors") is not None
DOT_SIG = SEED_SIG
DOT_BLOCKS = SEED_BLOCKS


def ttir(kernel, signature, constexprs=None) -> str:
    return print_ir(to_ttir(kernel, signature, constexprs or {}))


def reparse(text: str, ctx: Context | None = None) -> None:
    """The printed IR parses back and verifies (with tensor-capable arith ops by default)."""
    Parser(ctx or tensor_ctx(), text).parse_module().verify()


def tensor_ctx() -> Context:
    """make_context() with arith ops that accept tensors (casts, select) — see arith_ext."""
    ctx = Context()
    for d in (Builtin, ARITH_WITH_TENSORS, Math, Scf, TT):
        ctx.load_dialect(d)
    return ctx


def line_of(fn, text: str) -> int:
    """The file line number of the first source line of `fn` containing `text`."""
    lines, start = inspect.getsourcelines(getattr(fn, "fn", fn))
    for i, line in enumerate(lines):
        if text in line:
            return start + i
    raise AssertionError(f"{text!r} not in {fn}")


# --------------------------------------------------------------------------------------
# Seed 001: the sparse dot kernel
# --------------------------------------------------------------------------------------


def check_seed_ttir(text: str) -> None:
    assert re.search(r'tt\.func public @dot_kernel\(%(D|arg0): !tt\.ptr<f16>, '
                     r'%(A|arg1): !tt\.ptr<f16, #tt\.sparse<"NV24">>, %(B|arg2): !tt\.ptr<f16>\)', text)
    assert re.search(r'tt\.make_tensor_ptr %A, .* : !tt\.ptr<tensor<32x64xf16, #tt\.sparse<"NV24">>>', text)
    assert re.search(r'%a = tt\.load %a_ptrs : !tt\.ptr<tensor<32x64xf16, #tt\.sparse<"NV24">>>', text)
    assert re.search(r'tt\.dot %a, %b, %\w+ : tensor<32x64xf16, #tt\.sparse<"NV24">> \* '
                     r'tensor<64x16xf16> -> tensor<32x16xf32>', text)
    assert "arith.constant dense<0.000000e+00> : tensor<32x16xf32>" in text
    assert re.search(r"%d = arith\.truncf %\w+ : tensor<32x16xf32> to tensor<32x16xf16>", text)
    assert "tt.store %d_ptrs, %d : !tt.ptr<tensor<32x16xf16>>" in text
    assert text.rstrip().endswith("tt.return\n  }\n}")


def test_seed_dot_kernel_ttir_parses_back():
    text = ttir(dot_kernel, DOT_SIG, DOT_BLOCKS)
    check_seed_ttir(text)
    reparse(text, make_context())


@pytest.fixture
def decompose_available(monkeypatch):
    """Until decompose-sparse-tensors lands, stand in a no-op pass so compile() runs."""
    if HAVE_DECOMPOSE:
        return True
    from xdsl.passes import ModulePass

    from sparsecc import passes

    class NoOp(ModulePass):
        name = "decompose-sparse-tensors"

        def apply(self, ctx, op):  # noqa: ARG002
            return None

    monkeypatch.setitem(passes.PASSES, "decompose-sparse-tensors", lambda: NoOp)
    return False


def test_compile_seed_dot_kernel(decompose_available):
    ck = sparsecc.compile(dot_kernel, signature=DOT_SIG, constexprs=DOT_BLOCKS)
    check_seed_ttir(ck.asm["ttir"])
    assert ck.name == "dot_kernel" and ck.signature == DOT_SIG and ck.constexprs == DOT_BLOCKS
    assert ck.flat_arg_names == ["D", "A.values", "A.meta", "B"]
    assert "ttir-decomposed" in ck.asm and ck.module is not None
    if decompose_available:
        assert ck.flat_signature == ["*fp16", "*fp16", "*i16", "*fp16"]
        assert "#tt.sparse" not in ck.asm["ttir-decomposed"]


# --------------------------------------------------------------------------------------
# One construct per test
# --------------------------------------------------------------------------------------


@sparsecc.jit
def copy_kernel(X, Y, N, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < N
    x = tl.load(X + offs, mask=mask, other=0.0)
    tl.store(Y + offs, x * 2 + 1, mask=mask)


def test_program_id_arange_mask_load_store():
    text = ttir(copy_kernel, {"X": "*fp32", "Y": "*fp16", "N": "i32"}, {"BLOCK": 64})
    assert "%pid = tt.get_program_id x : i32" in text
    assert "tt.make_range {start = 0 : i32, end = 64 : i32} : tensor<64xi32>" in text
    assert re.search(r"%offs = arith\.addi %\w+, %\w+ : tensor<64xi32>", text)
    assert re.search(r"%mask = arith\.cmpi slt, %offs, %\w+ : tensor<64xi32>", text)
    assert "tt.splat %X : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>>" in text
    assert re.search(r"tt\.addptr %\w+, %offs : tensor<64x!tt\.ptr<f32>>, tensor<64xi32>", text)
    assert re.search(r"%x = tt\.load %\w+, %mask, %\w+ : tensor<64x!tt\.ptr<f32>>", text)
    assert "arith.constant dense<0.000000e+00> : tensor<64xf32>" in text  # other, splat
    assert "arith.truncf" in text  # fp32 value stored through an fp16 pointer
    assert re.search(r"tt\.store %\w+, %\w+, %mask : tensor<64x!tt\.ptr<f16>>", text)
    reparse(text)


@sparsecc.jit
def tile2d_kernel(X, Y, M, N, stride, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    ptrs = X + rm[:, None] * stride + rn[None, :]
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(ptrs, mask=mask, other=0)
    tl.store(Y + rm[:, None] * stride + rn[None, :], x, mask=mask)


def test_broadcasting_pointer_arithmetic_2d():
    text = ttir(tile2d_kernel, {"X": "*i32", "Y": "*i32", "M": "i32", "N": "i32", "stride": "i32"},
                {"BM": 16, "BN": 8})
    assert "tt.expand_dims %rm {axis = 1 : i32} : tensor<16xi32> -> tensor<16x1xi32>" in text
    assert "tt.expand_dims %rn {axis = 0 : i32} : tensor<8xi32> -> tensor<1x8xi32>" in text
    assert "tt.broadcast" in text and "-> tensor<16x8xi32>" in text
    assert "tt.splat %X : !tt.ptr<i32> -> tensor<16x1x!tt.ptr<i32>>" in text
    assert re.search(r"tt\.broadcast %\w+ : tensor<16x1x!tt\.ptr<i32>> -> tensor<16x8x!tt\.ptr<i32>>", text)
    assert re.search(r"%ptrs = tt\.addptr .* : tensor<16x8x!tt\.ptr<i32>>, tensor<16x8xi32>", text)
    assert re.search(r"%mask = arith\.andi %\w+, %\w+ : tensor<16x8xi1>", text)
    reparse(text)


@sparsecc.jit
def sparse_ptr_kernel(A, Out, BM: tl.constexpr, BK: tl.constexpr):
    rm = tl.arange(0, BM)
    rk = tl.arange(0, BK)
    a_ptrs = A + rm[:, None] * BK + rk[None, :]
    a = tl.load(a_ptrs)
    b = tl.load(Out + rk[:, None] * BM + rm[None, :])
    c = tl.dot(a, b)
    tl.store(Out + rm[:, None] * BM + rm[None, :], c)


def test_sparse_encoding_propagates_through_pointer_tensors():
    text = ttir(sparse_ptr_kernel, {"A": "*fp16:NV24", "Out": "*fp16"}, {"BM": 16, "BK": 32})
    sp = '#tt.sparse<"NV24">'
    assert f'tt.splat %A : !tt.ptr<f16, {sp}> -> tensor<16x1x!tt.ptr<f16, {sp}>, {sp}>' in text
    assert re.search(rf"tt\.broadcast %\w+ : tensor<16x1x!tt\.ptr<f16, {re.escape(sp)}>, {re.escape(sp)}> -> "
                     rf"tensor<16x32x!tt\.ptr<f16, {re.escape(sp)}>, {re.escape(sp)}>", text)
    assert f"%a = tt.load %a_ptrs : tensor<16x32x!tt.ptr<f16, {sp}>, {sp}>" in text
    assert re.search(rf"%a_ptrs = tt\.addptr .* : tensor<16x32x!tt\.ptr<f16, {re.escape(sp)}>, "
                     rf"{re.escape(sp)}>, tensor<16x32xi32>", text)
    assert f"tensor<16x32xf16, {sp}> * tensor<32x16xf16> -> tensor<16x16xf32>" in text
    reparse(text)


@sparsecc.jit
def loop_kernel(A, B, D, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    a_ptr = tl.make_block_ptr(A, shape=(BM, K), strides=(K, 1), offsets=(0, 0),
                              block_shape=(BM, BK), order=(1, 0))
    b_ptr = tl.make_block_ptr(B, shape=(K, BN), strides=(BN, 1), offsets=(0, 0),
                              block_shape=(BK, BN), order=(1, 0))
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    steps = 0
    for k in range(0, tl.cdiv(K, BK)):  # noqa: B007 - the IR names the induction variable %k
        a = tl.load(a_ptr, boundary_check=(0, 1), padding_option="zero")
        b = tl.load(b_ptr, boundary_check=(1,))
        acc += tl.dot(a, b)
        a_ptr = tl.advance(a_ptr, (0, BK))
        b_ptr = tl.advance(b_ptr, [BK, 0])
        steps += 1
    d_ptr = tl.make_block_ptr(D, shape=(BM, BN), strides=(BN, 1), offsets=(0, 0),
                              block_shape=(BM, BN), order=(1, 0))
    tl.store(d_ptr, (acc / steps).to(tl.float16), boundary_check=(0, 1))


def test_for_loop_carries_accumulator_and_advanced_pointers():
    text = ttir(loop_kernel, {"A": "*fp16:NV24", "B": "*fp16", "D": "*fp16", "K": "i32"},
                {"BM": 32, "BN": 16, "BK": 64})
    sp = '#tt.sparse<"NV24">'
    m = re.search(r"%acc_\d+, %a_ptr_\d+, %b_ptr_\d+, %steps_\d+ = scf\.for %k = %\w+ to %\w+ step %\w+ "
                  r"iter_args\(%acc_\d+ = %acc, %a_ptr_\d+ = %a_ptr, %b_ptr_\d+ = %b_ptr, %steps_\d+ = %\w+\)"
                  rf" -> \(tensor<32x16xf32>, !tt\.ptr<tensor<32x64xf16, {re.escape(sp)}>>, "
                  r"!tt\.ptr<tensor<64x16xf16>>, i32\) : i32", text)
    assert m, text
    assert "{boundaryCheck = array<i32: 0, 1>, padding = 1 : i32}" in text
    assert "{boundaryCheck = array<i32: 1>}" in text
    assert re.search(rf"tt\.advance %a_ptr_\d+, \[%\w+, %\w+\] : !tt\.ptr<tensor<32x64xf16, {re.escape(sp)}>>", text)
    assert re.search(r"scf\.yield %acc_\d+, %a_ptr_\d+, %b_ptr_\d+, %steps_\d+ :", text)
    assert "arith.divsi" in text  # tl.cdiv
    assert "arith.sitofp" in text and "arith.divf" in text  # acc / steps promotes steps to f32
    reparse(text)


@sparsecc.jit
def if_kernel(X, flag, USE_BIAS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs)
    if USE_BIAS:
        x = x + 1.0
    else:
        x = x - 1.0
    scale = 2.0
    if flag > 0:
        x = x * 3.0
        scale = 4.0
    tl.store(X + offs, x * scale)


def test_if_static_and_dynamic():
    text = ttir(if_kernel, {"X": "*fp32", "flag": "i32"}, {"USE_BIAS": True, "BLOCK": 32})
    assert "arith.addf" in text and "arith.subf" not in text  # static: only the taken branch
    m = re.search(r"%x_\d+, %scale = scf\.if %\w+ -> \(tensor<32xf32>, f32\) \{", text)
    assert m, text
    assert re.search(r"arith\.cmpi sgt, %flag, %\w+ : i32", text)
    assert text.count("scf.yield") == 2
    reparse(text)
    text2 = ttir(if_kernel, {"X": "*fp32", "flag": "i32"}, {"USE_BIAS": False, "BLOCK": 32})
    assert "arith.subf" in text2 and "arith.addf" not in text2


@sparsecc.jit
def unrolled_kernel(X, BLOCK: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), tl.int32)
    for i in tl.static_range(N):
        acc = acc + tl.load(X + offs + i * BLOCK)
    tl.store(X + offs, acc)


def test_static_range_unrolls():
    text = ttir(unrolled_kernel, {"X": "*i32"}, {"BLOCK": 16, "N": 3})
    assert "scf.for" not in text
    assert text.count("tt.load") == 3 and text.count("arith.addi %acc") == 3
    reparse(text)


@sparsecc.jit
def static_range_bounds_kernel(X, N: tl.constexpr, STEP: tl.constexpr):
    for i in tl.static_range(2, N, step=STEP):
        tl.store(X + i, i)


@pytest.mark.parametrize("n, step, col_of, message", [
    (1e6, 1, "N,", "bounds must be compile-time integers, got float 1000000.0"),
    (4.0, 1, "N,", "got float 4.0"),
    (True, 1, "N,", "got bool True"),
    (8, 1.5, "STEP", "got float 1.5"),
    (8, 0, "STEP", "step must not be zero"),
    (10**6, 1, "tl.static_range", "unrolls 999998 iterations, more than 4096: use range()"),
])
def test_static_range_refuses_non_int_bounds_and_huge_unrolls_at_the_argument(n, step, col_of, message):
    """Floats are refused (never truncated), and 10**6 iterations are refused rather than
    unrolled for minutes; the error points at the offending argument (else the call)."""
    err = compile_error(static_range_bounds_kernel, {"X": "*i32"}, {"N": n, "STEP": step})
    assert_at(err, static_range_bounds_kernel, "tl.static_range(2, N, step=STEP)", message)
    line = str(err).splitlines()[1]
    assert err.col == line.index(col_of) + 1, str(err)


@sparsecc.jit
def helper_offsets(pid, BLOCK: tl.constexpr):
    base = pid * BLOCK
    return base + tl.arange(0, BLOCK), base


@sparsecc.jit
def helper_scale(x, factor=2):
    if factor == 1:
        return x
    return x * factor


@sparsecc.jit
def inline_kernel(X, BLOCK: tl.constexpr):
    offs, base = helper_offsets(tl.program_id(0), BLOCK)
    x = tl.load(X + offs)
    tl.store(X + offs, helper_scale(x) + helper_scale(x, factor=1) + base)


def test_inlined_jit_call_with_return_values():
    text = ttir(inline_kernel, {"X": "*i32"}, {"BLOCK": 16})
    assert "tt.call" not in text and text.count("tt.func") == 1
    assert re.search(r"%base = arith\.muli %\w+, %\w+ : i32", text)
    assert text.count("arith.muli") == 2  # factor=1 returned early, statically
    assert "tt.splat %base" in text
    reparse(text)


@sparsecc.jit
def reduce_kernel(X, Y, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    x = tl.load(X + rm[:, None] * BN + rn[None, :])
    s = tl.sum(x, axis=1)
    m = tl.max(x, 0)
    lo = tl.min(x, axis=-1, keep_dims=True)
    total = tl.sum(x)
    tl.store(Y + rm, s)
    tl.store(Y + rm[:, None], lo)
    tl.store(Y + rn, m + total)


def test_reductions():
    text = ttir(reduce_kernel, {"X": "*fp32", "Y": "*fp32"}, {"BM": 8, "BN": 4})
    assert "%s = tt.reduce sum %x {axis = 1 : i32} : tensor<8x4xf32> -> tensor<8xf32>" in text
    assert "%m = tt.reduce max %x {axis = 0 : i32} : tensor<8x4xf32> -> tensor<4xf32>" in text
    assert "tt.reduce min %x {axis = 1 : i32}" in text
    assert re.search(r"%lo = tt\.expand_dims %\w+ {axis = 1 : i32} : tensor<8xf32> -> tensor<8x1xf32>", text)
    assert re.search(r"%total = tt\.reduce sum %\w+ {axis = 0 : i32} : tensor<4xf32> -> f32", text)
    reparse(text)


@sparsecc.jit
def where_kernel(X, Y, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs)
    y = tl.load(Y + offs)
    z = tl.where(x > 0, x, 0.0)
    w = tl.maximum(z, y)
    v = tl.minimum(offs, 7)
    u = tl.maximum(offs, v)
    tl.store(X + offs, w + tl.where(u > 3, 1.0, y))


def test_where_maximum_minimum():
    text = ttir(where_kernel, {"X": "*fp32", "Y": "*fp32"}, {"BLOCK": 16})
    assert re.search(r"%z = arith\.select %\w+, %x, %\w+ : tensor<16xi1>, tensor<16xf32>", text)
    assert "%w = arith.maxnumf %z, %y : tensor<16xf32>" in text  # Triton's default PropagateNan.NONE
    assert re.search(r"%v = arith\.minsi %offs, %\w+ : tensor<16xi32>", text)
    assert "%u = arith.maxsi %offs, %v : tensor<16xi32>" in text
    reparse(text)


CASTS = [
    ("fp32", tl.float16, "arith.truncf", "f16"),
    ("fp16", tl.float32, "arith.extf", "f32"),
    ("i32", tl.float32, "arith.sitofp", "f32"),
    ("fp32", tl.int32, "arith.fptosi", "i32"),
    ("i32", tl.int8, "arith.trunci", "i8"),
    ("i8", tl.int64, "arith.extsi", "i64"),
    ("i16", tl.int16, None, "i16"),
    ("bf16", tl.float16, "arith.truncf", "f16"),  # through fp32
    ("fp32", tl.bfloat16, "arith.truncf", "bf16"),
    ("fp16", tl.float8e4nv, "arith.truncf", "f8E4M3FN"),
    ("i32", tl.int1, "arith.cmpi ne", "i1"),
]


@pytest.mark.parametrize(("src", "dst", "op", "ir"), CASTS)
def test_to_casts(src, dst, op, ir):
    @sparsecc.jit
    def cast_kernel(X, Y, DST: tl.constexpr):
        offs = tl.arange(0, 16)
        y = tl.load(X + offs).to(DST)
        tl.store(Y + offs, tl.where(y == y, 1, 0) if DST == tl.int1 else y)

    ysig = "*i8" if ir == "i1" else f"*{dst.name}"
    text = ttir(cast_kernel, {"X": f"*{src}", "Y": ysig}, {"DST": dst})
    if op is None:
        assert not re.search(r"%y = arith\.", text)
    else:
        assert re.search(rf"%y = {op}.* : tensor<16x\w+>( to tensor<16x{ir}>)?", text), text
        assert f"tensor<16x{ir}>" in text
    reparse(text)


@pytest.mark.parametrize("name", ["fp16", "bf16", "fp32", "i8", "i16", "i32", "i64", "fp8e4nv"])
def test_every_dtype_as_pointer_and_zeros(name):
    dt = tl.DTYPES[name]

    @sparsecc.jit
    def zero_kernel(X, DT: tl.constexpr):
        tl.store(X + tl.arange(0, 8), tl.zeros((8,), DT))
        tl.store(X, tl.load(X).to(X.dtype.element_ty))

    text = ttir(zero_kernel, {"X": f"*{name}"}, {"DT": dt})
    ir = {"fp16": "f16", "bf16": "bf16", "fp32": "f32", "fp8e4nv": "f8E4M3FN"}.get(name, name)
    assert f"%X: !tt.ptr<{ir}>" in text and f"tensor<8x{ir}>" in text
    reparse(text)


def test_scalar_signature_types_and_promotion():
    @sparsecc.jit
    def scalars(X, a, b, c, d):
        x = a + b  # i32 + i64 -> i64
        y = c * a  # fp32 * i32 -> fp32
        z = d & (a > 0)
        tl.store(X, (x.to(tl.float32) + y) * z.to(tl.float32))

    text = ttir(scalars, {"X": "*fp32", "a": "i32", "b": "i64", "c": "fp32", "d": "i1"})
    assert "%a: i32, %b: i64, %c: f32, %d: i1" in text
    assert re.search(r"%x = arith\.addi %\w+, %b : i64", text)
    assert re.search(r"%y = arith\.mulf %c, %\w+ : f32", text)
    assert re.search(r"%z = arith\.andi %d, %\w+ : i1", text)
    reparse(text)


def test_fp16_times_fp32_promotes_and_literals_are_weak():
    @sparsecc.jit
    def promo(X, Y, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        h = tl.load(X + offs)
        f = tl.load(Y + offs)
        h2 = h * 2.0  # the literal takes fp16
        m = h2 * f  # fp16 * fp32 -> fp32
        tl.store(Y + offs, m - offs)  # fp32 - i32 -> fp32

    text = ttir(promo, {"X": "*fp16", "Y": "*fp32"}, {"BLOCK": 8})
    assert re.search(r"%h2 = arith\.mulf %h, %\w+ : tensor<8xf16>", text)
    assert re.search(r"%m = arith\.mulf %\w+, %f : tensor<8xf32>", text)
    assert "arith.extf %h2 : tensor<8xf16> to tensor<8xf32>" in text
    reparse(text)


GLOBAL_BLOCK = 16
GLOBAL_C = tl.constexpr(3)


def test_globals_min_max_and_num_programs():
    @sparsecc.jit
    def glob(X):
        n = tl.num_programs(1)
        offs = tl.arange(0, min(GLOBAL_BLOCK, 64) * max(1, GLOBAL_C // 3))
        tl.store(X + offs, offs + n)

    text = ttir(glob, {"X": "*i32"})
    assert "tensor<16xi32>" in text and "tt.get_num_programs y : i32" in text
    reparse(text)


def test_dot_int8_accumulates_in_i32():
    @sparsecc.jit
    def idot(A, B, C):
        r = tl.arange(0, 16)
        a = tl.load(A + r[:, None] * 32 + tl.arange(0, 32)[None, :])
        b = tl.load(B + tl.arange(0, 32)[:, None] * 16 + r[None, :])
        tl.store(C + r[:, None] * 16 + r[None, :], tl.dot(a, b))

    text = ttir(idot, {"A": "*i8:NV24", "B": "*i8", "C": "*i32"})
    assert 'tensor<16x32xi8, #tt.sparse<"NV24">> * tensor<32x16xi8> -> tensor<16x16xi32>' in text
    reparse(text)


# --------------------------------------------------------------------------------------
# Errors: CompilationError at file:line:col of the offending source
# --------------------------------------------------------------------------------------


def compile_error(kernel, signature, constexprs=None) -> CompilationError:
    with pytest.raises(CompilationError) as info:
        to_ttir(kernel, signature, constexprs or {})
    return info.value


def assert_at(err: CompilationError, kernel, text: str, message: str) -> None:
    assert err.line == line_of(kernel, text), str(err)
    assert err.file == __file__
    assert message in err.message, str(err)
    first = str(err).splitlines()[0]
    assert first.startswith(f"{__file__}:{err.line}:{err.col}: error: ")
    assert text in str(err).splitlines()[1]


def test_error_sparse_tensor_stored():
    @sparsecc.jit
    def bad(D, A):
        p = tl.make_block_ptr(A, shape=(16, 32), strides=(32, 1), offsets=(0, 0),
                              block_shape=(16, 32), order=(1, 0))
        a = tl.load(p)
        q = tl.make_block_ptr(D, shape=(16, 32), strides=(32, 1), offsets=(0, 0),
                              block_shape=(16, 32), order=(1, 0))
        tl.store(q, a)

    err = compile_error(bad, {"D": "*fp16", "A": "*fp16:NV24"})
    assert_at(err, bad, "tl.store(q, a)", "sparse tensor 'a' (#tt.sparse<\"NV24\">) cannot be used in tl.store")


def test_error_sparse_plus_one():
    @sparsecc.jit
    def bad(A):
        p = tl.make_block_ptr(A, shape=(16, 32), strides=(32, 1), offsets=(0, 0),
                              block_shape=(16, 32), order=(1, 0))
        a = tl.load(p)
        b = a + 1
        tl.store(A, b)

    err = compile_error(bad, {"A": "*fp16:NV24"})
    assert_at(err, bad, "b = a + 1", "sparse tensor 'a' (#tt.sparse<\"NV24\">) cannot be used in '+': only "
              "tl.load, tl.advance, pointer arithmetic and tl.dot operand A accept it")
    assert err.col == line_of_col(bad, "a + 1")


def line_of_col(fn, text: str) -> int:
    lines, _ = inspect.getsourcelines(fn.fn)
    for line in lines:
        if text in line:
            return line.index(text) + 1
    raise AssertionError(text)


def test_error_sparse_as_dot_operand_b_and_reduce_and_to():
    @sparsecc.jit
    def bad(A, WHICH: tl.constexpr):
        r = tl.arange(0, 16)
        a = tl.load(A + r[:, None] * 16 + r[None, :])
        if WHICH == 0:
            tl.dot(a, a)
        elif WHICH == 1:
            tl.sum(a, axis=0)
        else:
            a.to(tl.float32)

    err = compile_error(bad, {"A": "*fp16:NV24"}, {"WHICH": 0})
    assert_at(err, bad, "tl.dot(a, a)", "tl.dot: at most one operand may be 2:4 sparse")
    for which, text, msg in ((1, "tl.sum(a, axis=0)", "tl.sum"), (2, "a.to(tl.float32)", "'.to()'")):
        err = compile_error(bad, {"A": "*fp16:NV24"}, {"WHICH": which})
        assert_at(err, bad, text, f"sparse tensor 'a' (#tt.sparse<\"NV24\">) cannot be used in {msg}")


def test_error_undefined_name():
    @sparsecc.jit
    def bad(X):
        tl.store(X, undefined_thing + 1)  # noqa: F821

    assert_at(compile_error(bad, {"X": "*i32"}), bad, "undefined_thing", "name 'undefined_thing' is not defined")


def test_error_unsupported_syntax():
    @sparsecc.jit
    def bad(X):
        try:
            pass
        finally:
            pass

    assert_at(compile_error(bad, {"X": "*i32"}), bad, "try:", "unsupported Python syntax in a kernel: Try")


def test_error_shape_mismatch():
    @sparsecc.jit
    def bad(X):
        a = tl.arange(0, 16)
        b = tl.arange(0, 8)
        tl.store(X + a, a + b)

    assert_at(compile_error(bad, {"X": "*i32"}), bad, "a + b", "shapes [16] and [8] cannot be broadcast")


def test_error_shapes_that_are_not_powers_of_two():
    # Triton's rule; the GPU layouts tile by powers of two, so the interpreter must refuse them too
    @sparsecc.jit
    def bad_range(X):
        tl.store(X + tl.arange(0, 10), 1)

    assert_at(compile_error(bad_range, {"X": "*i32"}), bad_range, "tl.arange(0, 10)",
              "tl.arange's range must be a power of two, got 10")

    @sparsecc.jit
    def bad_zeros(X):
        tl.store(X + tl.arange(0, 8), tl.zeros((6,), tl.int32))

    assert_at(compile_error(bad_zeros, {"X": "*i32"}), bad_zeros, "tl.zeros((6,), tl.int32)",
              "shape dimensions must be powers of two, got [6]")

    @sparsecc.jit
    def bad_tile(A, BLOCK_M: tl.constexpr):
        p = tl.make_block_ptr(A, shape=(BLOCK_M, 64), strides=(64, 1), offsets=(0, 0),
                              block_shape=(BLOCK_M, 64), order=(1, 0))
        tl.store(p, tl.load(p))

    assert_at(compile_error(bad_tile, {"A": "*fp16"}, {"BLOCK_M": 48}), bad_tile, "tl.make_block_ptr(",
              "block_shape dimensions must be powers of two, got [48, 64]")


def test_error_tensors_past_the_element_limit():
    @sparsecc.jit
    def huge(X, BLOCK: tl.constexpr):
        tl.store(X + tl.arange(0, 16), tl.sum(tl.zeros((BLOCK, BLOCK), tl.float32), axis=0))

    assert_at(compile_error(huge, {"X": "*fp32"}, {"BLOCK": 16384}), huge, "tl.zeros((BLOCK, BLOCK), tl.float32)",
              "shape [16384, 16384] has 268435456 elements; a tensor holds at most 1048576")


def test_error_wrong_arg_count_in_jit_call():
    @sparsecc.jit
    def bad(X):
        helper_scale(X, 2, 3)

    assert_at(compile_error(bad, {"X": "*i32"}), bad, "helper_scale(X, 2, 3)", "helper_scale(): too many")


def test_error_builtin_bad_keyword_and_dot_shapes():
    @sparsecc.jit
    def bad(X, WHICH: tl.constexpr):
        a = tl.zeros((16, 16), tl.float16)
        if WHICH:
            tl.load(X, bogus=1)
        else:
            tl.dot(a, tl.zeros((8, 16), tl.float16))

    assert_at(compile_error(bad, {"X": "*fp16"}, {"WHICH": True}), bad, "tl.load(X, bogus=1)",
              "tl.load(): got an unexpected keyword argument 'bogus'")
    assert_at(compile_error(bad, {"X": "*fp16"}, {"WHICH": False}), bad, "tl.dot(a, tl.zeros",
              "tl.dot shapes do not agree: [16, 16] x [8, 16]")


def test_error_loop_carried_type_change_and_return_in_loop():
    @sparsecc.jit
    def bad(X, N, WHICH: tl.constexpr):
        acc = tl.zeros((16,), tl.int32)
        for _i in range(N):
            if WHICH:
                acc = acc + 0.5
            else:
                return

    assert_at(compile_error(bad, {"X": "*i32", "N": "i32"}, {"WHICH": True}), bad, "for _i in range(N)",
              "loop-carried 'acc' is tensor<16xi32> before the loop but tensor<16xf32>")
    assert_at(compile_error(bad, {"X": "*i32", "N": "i32"}, {"WHICH": False}), bad, "return",
              "'return' inside a runtime 'for' or 'while' loop")


def test_error_bad_signature_and_constexprs():
    base = {"D": "*fp16", "A": "*fp16:NV24", "B": "*fp16"}
    cases = [
        ({"D": "*fp16", "A": "*fp16:NV24"}, DOT_BLOCKS, "signature is missing parameter 'B'"),
        ({**base, "E": "i32"}, DOT_BLOCKS, "signature names 'E', which is not a parameter"),
        ({**base, "B": "*fp17"}, DOT_BLOCKS, "parameter 'B': unknown pointer type '*fp17'"),
        ({**base, "A": "*fp16:NV42"}, DOT_BLOCKS, 'unknown sparse format "NV42"'),
        (base, {"BLOCK_M": 32, "BLOCK_N": 16}, "missing constexpr 'BLOCK_K'"),
        (base, {**DOT_BLOCKS, "BLOCK_Q": 1}, "constexpr 'BLOCK_Q' is not a parameter"),
    ]
    for sig, consts, msg in cases:
        err = compile_error(dot_kernel, sig, consts)
        assert msg in err.message, err.message
        assert err.line == line_of(dot_kernel, "def dot_kernel")


def test_error_no_internal_traceback_for_bad_dtype_arg():
    @sparsecc.jit
    def bad(X):
        tl.store(X, tl.zeros((4,), "float16"))

    assert_at(compile_error(bad, {"X": "*fp16"}), bad, "tl.zeros", "dtype must be a tl dtype")


def test_builtins_outside_kernel_raise_clearly():
    with pytest.raises(tl.OutsideKernelError, match=r"tl\.program_id\(\) can only be called inside"):
        tl.program_id(0)
    with pytest.raises(RuntimeError, match=r"launch it with dot_kernel\[grid\]"):
        dot_kernel(1, 2, 3)
