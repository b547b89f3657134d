"""The CPU interpreter (sparsecc.runtime.interpreter) on random data.

Sparse GEMMs run twice: through the real frontend + decompose-sparse-tensors (`kernel[grid]`
with CPU tensors) and from hand-written decomposed IR (values + metadata block pointers and a
`tt.dot ..., sparseIndex = 0`), so a wrong decomposition and a wrong interpreter are told apart.
Dense kernels cover masks/other, reductions, where/cmp, integer wraparound and program ids.
"""

from __future__ import annotations

import pytest
import torch
from kernels import masked_add_kernel
from xdsl.parser import Parser

import sparsecc
import sparsecc.language as tl
from sparsecc.dialects import make_context
from sparsecc.runtime import interpreter
from sparsecc.runtime.interpreter import InterpreterError

SHAPES = [(64, 48, 128), (33, 17, 64), (16, 40, 96)]
DTYPES = [torch.float16, torch.bfloat16]
BM = BN = BK = 32


@pytest.fixture
def interpret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")


def _sparse_operands(m: int, n: int, k: int, dtype: torch.dtype, seed: int):
    g = torch.Generator().manual_seed(seed)
    dense = torch.randn(m, k, generator=g).to(dtype)
    a = sparsecc.compress(sparsecc.prune_2to4(dense))
    b = torch.randn(k, n, generator=g).to(dtype)
    d = torch.full((m, n), float("nan"), dtype=dtype)
    ref = torch.mm(a.to_dense().float(), b.float())
    return a, b, d, ref


def _assert_close(d: torch.Tensor, ref: torch.Tensor) -> None:
    assert not torch.isnan(d).any(), "some outputs were never written"
    assert ref.abs().max() > 1  # real data, not zeros
    torch.testing.assert_close(d.float(), ref.to(d.dtype).float(), atol=1e-2, rtol=1e-2)


# --------------------------------------------------------------------------------------
# Sparse GEMM through the frontend
# --------------------------------------------------------------------------------------


@sparsecc.jit
def gemm_kernel(D, A, B, M, N, K, stride_am, stride_bk, stride_dm,
                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    a_ptr = tl.make_block_ptr(A, shape=(M, K), strides=(stride_am, 1), offsets=(pid_m * BLOCK_M, 0),
                              block_shape=(BLOCK_M, BLOCK_K), order=(1, 0))
    b_ptr = tl.make_block_ptr(B, shape=(K, N), strides=(stride_bk, 1), offsets=(0, pid_n * BLOCK_N),
                              block_shape=(BLOCK_K, BLOCK_N), order=(1, 0))
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for _ in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptr, boundary_check=(0, 1), padding_option="zero")
        b = tl.load(b_ptr, boundary_check=(0, 1), padding_option="zero")
        acc = tl.dot(a, b, acc)
        a_ptr = tl.advance(a_ptr, (0, BLOCK_K))
        b_ptr = tl.advance(b_ptr, (BLOCK_K, 0))
    d_ptr = tl.make_block_ptr(D, shape=(M, N), strides=(stride_dm, 1),
                              offsets=(pid_m * BLOCK_M, pid_n * BLOCK_N),
                              block_shape=(BLOCK_M, BLOCK_N), order=(1, 0))
    tl.store(d_ptr, acc.to(D.dtype.element_ty), boundary_check=(0, 1))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("m,n,k", SHAPES)
def test_sparse_gemm_through_frontend(m: int, n: int, k: int, dtype: torch.dtype) -> None:
    a, b, d, ref = _sparse_operands(m, n, k, dtype, seed=m + n + k)
    grid = (-(-m // BM), -(-n // BN))
    gemm_kernel[grid](d, a, b, m, n, k, a.stride(0), b.stride(0), d.stride(0),
                      BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK)
    _assert_close(d, ref)


# --------------------------------------------------------------------------------------
# Sparse GEMM from hand-written decomposed IR
# --------------------------------------------------------------------------------------

DECOMPOSED_GEMM = """
builtin.module {
  tt.func public @gemm(%D: !tt.ptr<DT>, %AV: !tt.ptr<DT>, %AM: !tt.ptr<i16>, %B: !tt.ptr<DT>,
                       %M: i32, %N: i32, %K: i32) {
    %pm = tt.get_program_id x : i32
    %pn = tt.get_program_id y : i32
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c16 = arith.constant 16 : i32
    %c32 = arith.constant 32 : i32
    %l1 = arith.constant 1 : i64
    %l2 = arith.constant 2 : i64
    %l15 = arith.constant 15 : i64
    %l16 = arith.constant 16 : i64
    %om = arith.muli %pm, %c32 : i32
    %on = arith.muli %pn, %c32 : i32
    %Ml = arith.extsi %M : i32 to i64
    %Nl = arith.extsi %N : i32 to i64
    %Kl = arith.extsi %K : i32 to i64
    %Kh = arith.divsi %Kl, %l2 : i64
    %Mp = arith.addi %Ml, %l15 : i64
    %Mm = arith.divsi %Mp, %l16 : i64
    %omm = arith.divsi %om, %c16 : i32
    %av0 = tt.make_tensor_ptr %AV, shape=[%Ml, %Kh], strides=[%Kh, %l1], offsets=[%om, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<32x16xDT>>
    %am0 = tt.make_tensor_ptr %AM, shape=[%Mm, %Kl], strides=[%Kl, %l1], offsets=[%omm, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<2x32xi16>>
    %b0 = tt.make_tensor_ptr %B, shape=[%Kl, %Nl], strides=[%Nl, %l1], offsets=[%c0, %on] {order = array<i32: 1, 0>} : !tt.ptr<tensor<32x32xDT>>
    %acc0 = arith.constant dense<0.000000e+00> : tensor<32x32xf32>
    %kp = arith.addi %K, %c32 : i32
    %kq = arith.subi %kp, %c1 : i32
    %nk = arith.divsi %kq, %c32 : i32
    %acc, %av, %am, %b = scf.for %i = %c0 to %nk step %c1 iter_args(%acc1 = %acc0, %av1 = %av0, %am1 = %am0, %b1 = %b0) -> (tensor<32x32xf32>, !tt.ptr<tensor<32x16xDT>>, !tt.ptr<tensor<2x32xi16>>, !tt.ptr<tensor<32x32xDT>>) : i32 {
      %va = tt.load %av1 {boundaryCheck = array<i32: 0, 1>, padding = 1 : i32} : !tt.ptr<tensor<32x16xDT>>
      %ma = tt.load %am1 {boundaryCheck = array<i32: 0, 1>, padding = 1 : i32} : !tt.ptr<tensor<2x32xi16>>
      %vb = tt.load %b1 {boundaryCheck = array<i32: 0, 1>, padding = 1 : i32} : !tt.ptr<tensor<32x32xDT>>
      %acc2 = tt.dot %va, %vb, %ma, %acc1, sparseIndex = 0 : tensor<32x16xDT>, tensor<2x32xi16> * tensor<32x32xDT> -> tensor<32x32xf32>
      %av2 = tt.advance %av1, [%c0, %c16] : !tt.ptr<tensor<32x16xDT>>
      %am2 = tt.advance %am1, [%c0, %c32] : !tt.ptr<tensor<2x32xi16>>
      %b2 = tt.advance %b1, [%c32, %c0] : !tt.ptr<tensor<32x32xDT>>
      scf.yield %acc2, %av2, %am2, %b2 : tensor<32x32xf32>, !tt.ptr<tensor<32x16xDT>>, !tt.ptr<tensor<2x32xi16>>, !tt.ptr<tensor<32x32xDT>>
    }
    %d0 = tt.make_tensor_ptr %D, shape=[%Ml, %Nl], strides=[%Nl, %l1], offsets=[%om, %on] {order = array<i32: 1, 0>} : !tt.ptr<tensor<32x32xDT>>
    %out = arith.truncf %acc : tensor<32x32xf32> to tensor<32x32xDT>
    tt.store %d0, %out {boundaryCheck = array<i32: 0, 1>} : !tt.ptr<tensor<32x32xDT>>
    tt.return
  }
}
"""

_IR_DTYPE = {torch.float16: "f16", torch.bfloat16: "bf16"}


def _parse(text: str):
    module = Parser(make_context(), text).parse_module()
    module.verify()
    return module


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("m,n,k", SHAPES)
def test_sparse_gemm_from_decomposed_ir(m: int, n: int, k: int, dtype: torch.dtype) -> None:
    module = _parse(DECOMPOSED_GEMM.replace("DT", _IR_DTYPE[dtype]))
    a, b, d, ref = _sparse_operands(m, n, k, dtype, seed=7 * m + n + k)
    interpreter.run(module, "gemm", (-(-m // BM), -(-n // BN), 1), [d, a.values, a.meta, b, m, n, k])
    _assert_close(d, ref)


def test_sparse_mm_op_on_cpu() -> None:
    from sparsecc.ops.sparse_mm import sparse_mm

    a, b, _, ref = _sparse_operands(40, 24, 64, torch.float16, seed=3)
    _assert_close(sparse_mm(a, b), ref)


# --------------------------------------------------------------------------------------
# Dense kernels via @sparsecc.jit + SPARSECC_INTERPRET=1
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32], ids=str)
def test_masked_vector_add_ragged(interpret: None, dtype: torch.dtype) -> None:
    n = 1000
    g = torch.Generator().manual_seed(1)
    x, y = torch.randn(n, generator=g).to(dtype), torch.randn(n, generator=g).to(dtype)
    z = torch.full((n + 5,), -7.0, dtype=dtype)  # elements past n must stay untouched
    masked_add_kernel[(-(-n // 128),)](x, y, z, n, BLOCK=128)
    torch.testing.assert_close(z[:n], x + y)  # f16 math in f16: exact
    assert (z[n:] == -7).all()


@sparsecc.jit
def load_other_kernel(X, Z, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs, mask=offs < n, other=-1.5)
    tl.store(Z + offs, x)


def test_masked_load_takes_other(interpret: None) -> None:
    x = torch.arange(1, 11, dtype=torch.float32)
    z = torch.zeros(16)
    load_other_kernel[(1,)](x, z, 10, BLOCK=16)
    assert z[:10].tolist() == x.tolist() and (z[10:] == -1.5).all()


@sparsecc.jit
def reduce_kernel(X, S, MX, MN, R: tl.constexpr, C: tl.constexpr):
    rows = tl.arange(0, R)
    cols = tl.arange(0, C)
    x = tl.load(X + rows[:, None] * C + cols[None, :])
    tl.store(S + rows, tl.sum(x, axis=1))
    tl.store(MX + cols, tl.max(x, axis=0))
    tl.store(MN + rows, tl.min(x, axis=1))


def test_reductions(interpret: None) -> None:
    g = torch.Generator().manual_seed(2)
    x = torch.randn(8, 16, generator=g)
    s, mx, mn = torch.empty(8), torch.empty(16), torch.empty(8)
    reduce_kernel[(1,)](x, s, mx, mn, R=8, C=16)
    torch.testing.assert_close(s, x.sum(1))
    assert torch.equal(mx, x.amax(0)) and torch.equal(mn, x.amin(1))


@sparsecc.jit
def relu_where_kernel(X, Z, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(X + offs, mask=m)
    y = tl.where(x > 0.5, x, tl.where(x <= -0.5, -x, 0.0))
    tl.store(Z + offs, y, mask=m)


def test_where_and_compare(interpret: None) -> None:
    g = torch.Generator().manual_seed(4)
    x = torch.randn(50, generator=g)
    z = torch.full((50,), float("nan"))
    relu_where_kernel[(1,)](x, z, 50, BLOCK=64)
    ref = torch.where(x > 0.5, x, torch.where(x <= -0.5, -x, torch.zeros(())))
    assert torch.equal(z, ref)


@sparsecc.jit
def int_kernel(X, Z, mul, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs)
    tl.store(Z + offs, x * mul + 7)


def test_int32_wraparound(interpret: None) -> None:
    x = torch.tensor([2**30, -(2**30), 123456789, 2**31 - 1, -5, 0, 77, 2**20], dtype=torch.int32)
    z = torch.zeros(8, dtype=torch.int32)
    int_kernel[(1,)](x, z, 1000003, BLOCK=8)
    ref = [((v * 1000003 + 7 + 2**31) % 2**32) - 2**31 for v in x.tolist()]
    assert z.tolist() == ref


@sparsecc.jit
def grid_kernel(Z, W: tl.constexpr):
    pid_x = tl.program_id(0)
    pid_y = tl.program_id(1)
    nx = tl.num_programs(0)
    ny = tl.num_programs(1)
    tl.store(Z + pid_y * W + pid_x, pid_x * 1000 + pid_y * 10 + nx * 100000 + ny * 10000000)


def test_program_ids_on_2d_grid(interpret: None) -> None:
    z = torch.full((3 * 5,), -1, dtype=torch.int32)
    grid_kernel[(5, 3)](z, W=5)
    ref = [x * 1000 + y * 10 + 5 * 100000 + 3 * 10000000 for y in range(3) for x in range(5)]
    assert z.tolist() == ref


# --------------------------------------------------------------------------------------
# Direct IR: integer semantics the frontend does not easily reach
# --------------------------------------------------------------------------------------

INT_OPS = """
builtin.module {
  tt.func public @ops(%Z: !tt.ptr<i32>, %a: i32, %b: i32) {
    %r = tt.make_range {end = 8 : i32, start = 0 : i32} : tensor<8xi32>
    %p = tt.splat %Z : !tt.ptr<i32> -> tensor<8x!tt.ptr<i32>>
    %ps = tt.addptr %p, %r : tensor<8x!tt.ptr<i32>>, tensor<8xi32>
    %v0 = arith.divsi %a, %b : i32
    %v1 = arith.remsi %a, %b : i32
    %v2 = arith.divui %a, %b : i32
    %v3 = arith.floordivsi %a, %b : i32
    %v4 = arith.ceildivsi %a, %b : i32
    %v5 = arith.shrui %a, %b : i32
    %v6 = arith.shrsi %a, %b : i32
    %c = arith.cmpi ult, %a, %b : i32
    %v7 = arith.extui %c : i1 to i32
    %t0 = tt.splat %v0 : i32 -> tensor<8xi32>
    %e0 = arith.constant 0 : i32
    %k0 = tt.splat %e0 : i32 -> tensor<8xi32>
    %m0 = arith.cmpi eq, %r, %k0 : tensor<8xi32>
    %o0 = arith.select %m0, %t0, %k0 : tensor<8xi1>, tensor<8xi32>
    tt.store %ps, %o0 : tensor<8x!tt.ptr<i32>>
    %q1 = tt.addptr %Z, %e0 : !tt.ptr<i32>, i32
    %i1 = arith.constant 1 : i32
    %i2 = arith.constant 2 : i32
    %i3 = arith.constant 3 : i32
    %i4 = arith.constant 4 : i32
    %i5 = arith.constant 5 : i32
    %i6 = arith.constant 6 : i32
    %i7 = arith.constant 7 : i32
    %p1 = tt.addptr %Z, %i1 : !tt.ptr<i32>, i32
    %p2 = tt.addptr %Z, %i2 : !tt.ptr<i32>, i32
    %p3 = tt.addptr %Z, %i3 : !tt.ptr<i32>, i32
    %p4 = tt.addptr %Z, %i4 : !tt.ptr<i32>, i32
    %p5 = tt.addptr %Z, %i5 : !tt.ptr<i32>, i32
    %p6 = tt.addptr %Z, %i6 : !tt.ptr<i32>, i32
    %p7 = tt.addptr %Z, %i7 : !tt.ptr<i32>, i32
    tt.store %p1, %v1 : !tt.ptr<i32>
    tt.store %p2, %v2 : !tt.ptr<i32>
    tt.store %p3, %v3 : !tt.ptr<i32>
    tt.store %p4, %v4 : !tt.ptr<i32>
    tt.store %p5, %v5 : !tt.ptr<i32>
    tt.store %p6, %v6 : !tt.ptr<i32>
    tt.store %p7, %v7 : !tt.ptr<i32>
    tt.return
  }
}
"""


def _s32(v: int) -> int:
    return ((v + 2**31) % 2**32) - 2**31


@pytest.mark.parametrize("a,b", [(-17, 5), (17, -5), (-2**31, 3), (1000, 7)])
def test_signed_and_unsigned_integer_ops(a: int, b: int) -> None:
    module = _parse(INT_OPS)
    z = torch.zeros(8, dtype=torch.int32)
    interpreter.run(module, "ops", (1, 1, 1), [z, a, b])
    ua, ub = a % 2**32, b % 2**32
    trunc = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)
    ref = [trunc, a - trunc * b, _s32(ua // ub), a // b, -(-a // b), _s32(ua >> ub if ub < 32 else 0),
           a >> b if 0 <= b < 32 else None, int(ua < ub)]
    got = z.tolist()
    for i, want in enumerate(ref):
        if want is not None:
            assert got[i] == want, (i, got, ref)


# --------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------


def test_pointer_dtype_mismatch_names_parameter() -> None:
    module = _parse(DECOMPOSED_GEMM.replace("DT", "f16"))
    d = torch.zeros(32, 32, dtype=torch.float16)
    b = torch.zeros(32, 32, dtype=torch.float32)  # wrong: B is !tt.ptr<f16>
    vals, meta = torch.zeros(32, 16, dtype=torch.float16), torch.zeros(2, 32, dtype=torch.int16)
    with pytest.raises(InterpreterError, match=r"parameter 'B'.*f16.*torch\.float32"):
        interpreter.run(module, "gemm", (1, 1, 1), [d, vals, meta, b, 32, 32, 32])


@sparsecc.jit
def unmasked_kernel(X, Z, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(Z + offs, tl.load(X + offs))


def test_unmasked_out_of_bounds_load_raises(interpret: None) -> None:
    x, z = torch.randn(10), torch.zeros(16)
    with pytest.raises(InterpreterError, match=r"tt\.load.*out-of-bounds load.*parameter 'X' \(10 elements"):
        unmasked_kernel[(1,)](x, z, BLOCK=16)
    assert (z == 0).all()


def test_unmasked_out_of_bounds_store_raises(interpret: None) -> None:
    x, z = torch.randn(16), torch.zeros(12)
    with pytest.raises(InterpreterError, match=r"tt\.store.*out-of-bounds store.*parameter 'Z'"):
        unmasked_kernel[(1,)](x, z, BLOCK=16)


BLOCK_NO_CHECK = """
builtin.module {
  tt.func public @k(%X: !tt.ptr<f32>, %Z: !tt.ptr<f32>) {
    %c0 = arith.constant 0 : i32
    %l1 = arith.constant 1 : i64
    %l8 = arith.constant 8 : i64
    %l6 = arith.constant 6 : i64
    %x = tt.make_tensor_ptr %X, shape=[%l6, %l8], strides=[%l8, %l1], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<8x8xf32>>
    %z = tt.make_tensor_ptr %Z, shape=[%l6, %l8], strides=[%l8, %l1], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<8x8xf32>>
    %v = tt.load %x BOUNDARY : !tt.ptr<tensor<8x8xf32>>
    tt.store %z, %v {boundaryCheck = array<i32: 0>} : !tt.ptr<tensor<8x8xf32>>
    tt.return
  }
}
"""


def test_block_pointer_padding_and_unchecked_dim() -> None:
    x = torch.randn(6, 8, generator=torch.Generator().manual_seed(5))
    z = torch.full((6, 8), 3.0)
    padded = _parse(BLOCK_NO_CHECK.replace("BOUNDARY", "{boundaryCheck = array<i32: 0>, padding = 2 : i32}"))
    interpreter.run(padded, "k", (1, 1, 1), [x, z])
    assert torch.equal(z, x)
    unchecked = _parse(BLOCK_NO_CHECK.replace("BOUNDARY", "{boundaryCheck = array<i32: 1>}"))
    with pytest.raises(InterpreterError, match=r"tt\.load.*dim 0.*not in boundaryCheck"):
        interpreter.run(unchecked, "k", (1, 1, 1), [x, z])


def test_unsupported_op_is_named() -> None:
    module = _parse("""
builtin.module {
  tt.func public @k(%X: !tt.ptr<f32>, %a: f32) {
    %y = math.tan %a : f32
    tt.store %X, %y : !tt.ptr<f32>
    tt.return
  }
}
""")
    with pytest.raises(InterpreterError, match="does not support op 'math.tan'"):
        interpreter.run(module, "k", (1, 1, 1), [torch.zeros(1), 1.0])


IF_AND_INT8_DOT = """
builtin.module {
  tt.func public @k(%A: !tt.ptr<i8>, %B: !tt.ptr<i8>, %Z: !tt.ptr<i32>, %F: !tt.ptr<f32>, %flag: i1, %x: f32) {
    %c0 = arith.constant 0 : i32
    %l1 = arith.constant 1 : i64
    %l16 = arith.constant 16 : i64
    %a = tt.make_tensor_ptr %A, shape=[%l16, %l16], strides=[%l16, %l1], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<16x16xi8>>
    %b = tt.make_tensor_ptr %B, shape=[%l16, %l16], strides=[%l16, %l1], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<16x16xi8>>
    %z = tt.make_tensor_ptr %Z, shape=[%l16, %l16], strides=[%l16, %l1], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<16x16xi32>>
    %va = tt.load %a : !tt.ptr<tensor<16x16xi8>>
    %vb = tt.load %b : !tt.ptr<tensor<16x16xi8>>
    %acc = arith.constant dense<5> : tensor<16x16xi32>
    %d = tt.dot %va, %vb, %acc : tensor<16x16xi8> * tensor<16x16xi8> -> tensor<16x16xi32>
    tt.store %z, %d : !tt.ptr<tensor<16x16xi32>>
    %r = scf.if %flag -> (f32) {
      %e = math.exp %x : f32
      scf.yield %e : f32
    } else {
      %s = math.sqrt %x : f32
      scf.yield %s : f32
    }
    tt.store %F, %r : !tt.ptr<f32>
    tt.return
  }
}
"""


@pytest.mark.parametrize("flag", [True, False])
def test_int8_dot_and_scf_if(flag: bool) -> None:
    module = _parse(IF_AND_INT8_DOT)
    g = torch.Generator().manual_seed(6)
    a = torch.randint(-128, 128, (16, 16), generator=g, dtype=torch.int8)
    b = torch.randint(-128, 128, (16, 16), generator=g, dtype=torch.int8)
    z, f = torch.zeros(16, 16, dtype=torch.int32), torch.zeros(1)
    interpreter.run(module, "k", (1, 1, 1), [a, b, z, f, flag, 2.25])
    assert torch.equal(z, a.long().mm(b.long()).int() + 5)
    assert f.item() == pytest.approx(torch.exp(torch.tensor(2.25)).item() if flag else 1.5)


# --------------------------------------------------------------------------------------
# Seed 001's decomposed dot_kernel (its second listing, with real constants)
# --------------------------------------------------------------------------------------

SEED_DECOMPOSED = """
builtin.module {
  tt.func public @dot_kernel(%arg0: !tt.ptr<f16>, %arg1: !tt.ptr<f16>, %arg2: !tt.ptr<i16>, %arg3: !tt.ptr<f16>) {
    %c0 = arith.constant 0 : i32
    %l1 = arith.constant 1 : i64
    %l2 = arith.constant 2 : i64
    %l16 = arith.constant 16 : i64
    %l32 = arith.constant 32 : i64
    %l64 = arith.constant 64 : i64
    %A_ptrs = tt.make_tensor_ptr %arg1, shape=[%l32, %l32], strides=[%l32, %l1], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<32x32xf16>>
    %E_ptrs = tt.make_tensor_ptr %arg2, shape=[%l2, %l64], strides=[%l64, %l1], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<2x64xi16>>
    %B_ptrs = tt.make_tensor_ptr %arg3, shape=[%l64, %l16], strides=[%l16, %l1], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<64x16xf16>>
    %D_ptrs = tt.make_tensor_ptr %arg0, shape=[%l32, %l16], strides=[%l16, %l1], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<32x16xf16>>
    %A = tt.load %A_ptrs : !tt.ptr<tensor<32x32xf16>>
    %E = tt.load %E_ptrs : !tt.ptr<tensor<2x64xi16>>
    %B = tt.load %B_ptrs : !tt.ptr<tensor<64x16xf16>>
    %cst = arith.constant dense<0.000000e+00> : tensor<32x16xf32>
    %D = tt.dot %A, %B, %E, %cst, sparseIndex = 0 : tensor<32x32xf16>, tensor<2x64xi16> * tensor<64x16xf16> -> tensor<32x16xf32>
    %D_trunc = arith.truncf %D : tensor<32x16xf32> to tensor<32x16xf16>
    tt.store %D_ptrs, %D_trunc : !tt.ptr<tensor<32x16xf16>>
    tt.return
  }
}
"""


def test_seed_decomposed_dot_kernel() -> None:
    a, b, d, ref = _sparse_operands(32, 16, 64, torch.float16, seed=11)
    assert tuple(a.values.shape) == (32, 32) and tuple(a.meta.shape) == (2, 64)
    interpreter.run(_parse(SEED_DECOMPOSED), "dot_kernel", (1, 1, 1), [d, a.values, a.meta, b])
    _assert_close(d, ref)


NAN_PADDING = """
builtin.module {
  tt.func public @k(%X: !tt.ptr<f32>, %Z: !tt.ptr<f32>) {
    %c0 = arith.constant 0 : i32
    %c2 = arith.constant 2 : i32
    %l1 = arith.constant 1 : i64
    %l3 = arith.constant 3 : i64
    %l5 = arith.constant 5 : i64
    %l8 = arith.constant 8 : i64
    %x = tt.make_tensor_ptr %X, shape=[%l3, %l5], strides=[%l5, %l1], offsets=[%c2, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<2x8xf32>>
    %z = tt.make_tensor_ptr %Z, shape=[%l3, %l8], strides=[%l8, %l1], offsets=[%c0, %c0] {order = array<i32: 1, 0>} : !tt.ptr<tensor<2x8xf32>>
    %v = tt.load %x {boundaryCheck = array<i32: 0, 1>, padding = 2 : i32} : !tt.ptr<tensor<2x8xf32>>
    tt.store %z, %v {boundaryCheck = array<i32: 0, 1>} : !tt.ptr<tensor<2x8xf32>>
    tt.return
  }
}
"""


def test_nan_padding_is_loaded_and_stored() -> None:
    x = torch.randn(15, generator=torch.Generator().manual_seed(8))
    z = torch.full((3, 8), 7.0)
    interpreter.run(_parse(NAN_PADDING), "k", (1, 1, 1), [x, z])
    assert torch.equal(z[0, :5], x[10:15])  # row 2 of the 3x5 source
    assert z[0, 5:].isnan().all() and z[1].isnan().all()  # padding=2: out-of-bounds reads are nan
    assert (z[2] == 7).all()  # a row outside the loaded tile stays untouched


def test_module_rewritten_in_place_runs_its_new_ops() -> None:
    from xdsl.dialects import arith
    from xdsl.dialects.builtin import IntegerAttr, i32
    from xdsl.rewriter import Rewriter

    module = _parse("""
builtin.module {
  tt.func public @k(%Z: !tt.ptr<i32>) {
    %c = arith.constant 5 : i32
    tt.store %Z, %c : !tt.ptr<i32>
    tt.return
  }
}
""")
    z = torch.zeros(1, dtype=torch.int32)
    interpreter.run(module, "k", (1, 1, 1), [z])
    assert z.item() == 5
    const = next(op for op in module.walk() if isinstance(op, arith.ConstantOp))
    Rewriter.replace_op(const, arith.ConstantOp(IntegerAttr(9, i32)))
    interpreter.run(module, "k", (1, 1, 1), [z])
    assert z.item() == 9


def test_torch_thread_count_is_restored() -> None:
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        z = torch.zeros(8, dtype=torch.int32)
        with pytest.raises(InterpreterError, match="division by zero"):  # restored on errors too
            interpreter.run(_parse(INT_OPS), "ops", (1, 1, 1), [z, 1, 0])
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


# --------------------------------------------------------------------------------------
# Bounds follow the tensor passed (a view), loads copy, grids within CUDA's limits
# --------------------------------------------------------------------------------------


@sparsecc.jit
def strided_copy_kernel(X, Z, stride_x, R: tl.constexpr, C: tl.constexpr):
    rows = tl.arange(0, R)[:, None]
    cols = tl.arange(0, C)[None, :]
    tl.store(Z + rows * C + cols, tl.load(X + rows * stride_x + cols) * 2.0)


def test_unmasked_store_past_a_view_is_refused_and_its_base_kept(interpret: None) -> None:
    """A view base[:16] (or base[4:20]) ends where the view ends: 32 elements written through it
    would corrupt base[16:] on the GPU, so the interpreter refuses before writing anything."""
    g = torch.Generator().manual_seed(11)
    x = torch.randn(32, generator=g)
    for lo in (0, 4):
        base = torch.full((40,), -3.0)
        with pytest.raises(InterpreterError, match=r"out-of-bounds store.*parameter 'Z' \(16 elements"):
            unmasked_kernel[(1,)](x, base[lo:lo + 16], BLOCK=32)
        assert (base == -3.0).all()  # nothing written, inside the view or past it
    z = torch.full((16,), float("nan"))
    with pytest.raises(InterpreterError, match=r"out-of-bounds load.*parameter 'X' \(16 elements"):
        unmasked_kernel[(1,)](x[4:20], torch.zeros(40)[:32], BLOCK=32)
    unmasked_kernel[(1,)](x[4:20], z, BLOCK=16)  # in bounds: reads the view's own elements
    assert torch.equal(z, x[4:20])


def test_strided_views_are_bounded_by_their_storage(interpret: None) -> None:
    """A column slice x[:, 2:10] of an 8 x 12 matrix is passed by its raw pointer, as Triton
    passes it: its rows through stride 12 are its elements, and the kernel may read any element
    of the storage through it (columns 10, 11 and the next rows, as on the GPU), but not past
    the storage's ends."""
    g = torch.Generator().manual_seed(12)
    x = torch.randn(8, 12, generator=g)
    z = torch.full((8, 8), float("nan"))
    strided_copy_kernel[(1,)](x[:, 2:10], z, 12, R=8, C=8)
    assert torch.equal(z, x[:, 2:10] * 2)
    wide = torch.full((4, 16), float("nan"))  # 16 columns through row stride 12: inside the storage
    strided_copy_kernel[(1,)](x[:, 2:10], wide, 12, R=4, C=16)
    assert torch.equal(wide, x.flatten().as_strided((4, 16), (12, 1), 2) * 2)
    past = torch.full((8, 16), float("nan"))
    with pytest.raises(InterpreterError, match=r"out-of-bounds load.*element offset 94 .*outside the storage of "
                                               r"parameter 'X', a strided view \(element offsets -2\.\.93"):
        strided_copy_kernel[(1,)](x[:, 2:10], past, 12, R=8, C=16)
    assert torch.isnan(past).all()
    b = torch.randn(8, 8, generator=g)  # a transposed view fills its span: all 64 elements are its own
    flat = torch.full((64,), float("nan"))
    unmasked_kernel[(1,)](b.t(), flat, BLOCK=64)
    assert torch.equal(flat, b.flatten())


@sparsecc.jit
def load_then_overwrite_kernel(X, Z):
    v = tl.load(X)
    tl.store(X, v * 10.0)
    tl.store(Z, v + 1.0)


def test_scalar_load_is_a_copy_not_a_view_of_memory(interpret: None) -> None:
    """`v = tl.load(X)` then a store to X: v keeps the value loaded (was: a view, so v changed)."""
    x = torch.tensor([1.25, 7.0])
    z = torch.full((1,), float("nan"))
    load_then_overwrite_kernel[(1,)](x, z)
    assert z.item() == 2.25 and x.tolist() == [12.5, 7.0]


def test_grids_past_cuda_limits_are_refused_before_running(interpret: None) -> None:
    z = torch.full((15,), -1, dtype=torch.int32)
    for grid, axis in [((1, 2**20), "y"), ((1, 1, 65536), "z"), ((2**31,), "x")]:
        with pytest.raises(ValueError, match=rf"grid_kernel\[grid\]: grid extent {axis} = \d+ exceeds CUDA's limit"):
            grid_kernel[grid](z, W=5)
    module = _parse(INT_OPS)
    with pytest.raises(ValueError, match=r"ops: grid extent y = 65536 exceeds CUDA's limit of 65535"):
        interpreter.run(module, "ops", (1, 65536, 1), [z, 1, 1])
    for bad in [(1.9,), (True,), (2, 1.0)]:
        with pytest.raises(TypeError, match=r"grid extent [xy] must be an int, got (float|bool)"):
            grid_kernel[bad](z, W=5)
    with pytest.raises(ValueError, match=r"grid extent x must be non-negative, got -1"):
        grid_kernel[(-1,)](z, W=5)
    assert (z == -1).all()
    grid_kernel[(5, 3)](z, W=5)  # and a good grid still runs (and an empty one does nothing)
    grid_kernel[(0, 3)](torch.empty(0, dtype=torch.int32), W=5)
    assert z.tolist() == [x * 1000 + y * 10 + 5 * 100000 + 3 * 10000000 for y in range(3) for x in range(5)]
