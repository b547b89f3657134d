"""Defects a held-out suite of third-party Triton kernels found (issue 29), each kept with a kernel
written in the style of the code that hit it:

- a runtime argument passed None (Triton compiles it in: `if BIAS is not None:` folds);
- `tl.cast` of a constexpr (`tl.cast(ROW_STRIDE, tl.int64)`);
- `and` / `or` between tensors (`rows[:, None] < M and cols[None, :] < N`);
- a dtype's predicates and `tl.constexpr(...)` in a kernel, a dtype handed to a helper read back
  with `.value`;
- a mask changing layout on the GPU (its scratch was never allocated: an internal error), a mask
  added to a float (`uitofp` from i1 has no PTX form);
- a 2:4 right operand whose column offsets are int64 (`program_id(1).to(tl.int64)`), which the
  sparse pointer decomposition refused.

Each runs on the interpreter against torch (ragged shapes, outputs poisoned with NaN), compiles
and assembles for sm_90a and sm_80, and runs on the GPU (marked gpu).
"""

from __future__ import annotations

import pytest
import torch

import sparsecc
import sparsecc.language as tl

TARGETS = ["sm_90a", "sm_80"]


@pytest.fixture
def interpret(monkeypatch):
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")


def _nan(*shape, dtype=torch.float32, device="cpu"):
    return torch.full(shape, float("nan"), dtype=dtype, device=device)


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


# -- None arguments ------------------------------------------------------------------------


@sparsecc.jit
def scaled_rows(Y, X, SCALE, SHIFT, n_cols, stride, BLOCK: tl.constexpr):
    """y = x * scale[row] (+ shift): SCALE and SHIFT may each be None."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    keep = cols < n_cols
    x = tl.load(X + row * stride + cols, mask=keep, other=0.0)
    if SCALE is not None:
        x = x * tl.load(SCALE + row)
    if SHIFT is None:
        y = x
    else:
        y = x + tl.load(SHIFT + cols, mask=keep, other=0.0)
    tl.store(Y + row * stride + cols, y, mask=keep)


def _scaled_rows_case(m: int, n: int, with_scale: bool, with_shift: bool, device: str):
    g = _gen(7 * m + n)
    x = torch.randn(m, n, generator=g).to(device)
    scale = torch.randn(m, generator=g).to(device) if with_scale else None
    shift = torch.randn(n, generator=g).to(device) if with_shift else None
    y = _nan(m, n, device=device)
    scaled_rows[(m,)](y, x, scale, shift, n, n, BLOCK=triton_next_pow2(n))
    ref = x.cpu().clone()
    if with_scale:
        ref = ref * scale.cpu()[:, None]
    if with_shift:
        ref = ref + shift.cpu()[None, :]
    return y, ref


def triton_next_pow2(n: int) -> int:
    return 1 << (n - 1).bit_length()


@pytest.mark.parametrize("with_scale, with_shift", [(True, True), (False, True), (True, False), (False, False)])
def test_none_arguments_on_the_interpreter(with_scale, with_shift, interpret):
    y, ref = _scaled_rows_case(5, 37, with_scale, with_shift, "cpu")
    torch.testing.assert_close(y, ref)


def test_none_and_tensor_launches_do_not_share_a_compile(interpret):
    # the same kernel launched with None, then a tensor, then None again: three right answers
    for with_shift in (False, True, False):
        y, ref = _scaled_rows_case(3, 20, True, with_shift, "cpu")
        torch.testing.assert_close(y, ref)


@pytest.mark.parametrize("target", TARGETS)
def test_none_argument_compiles_in(target):
    sig = {"Y": "*fp32", "X": "*fp32", "SCALE": "none", "SHIFT": "*fp32", "n_cols": "i32", "stride": "i32"}
    ck = sparsecc.compile(scaled_rows, sig, {"BLOCK": 64}, target=target)
    assert ck.flat_arg_names == ["Y", "X", "SHIFT", "n_cols", "stride"]  # SCALE takes no argument
    assert "cubin" in ck.asm


# -- tl.cast of a constexpr, and/or on tensors ---------------------------------------------


@sparsecc.jit
def masked_tile_copy(Y, X, M, N, ROW_STRIDE: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    """A 2-D copy whose row offsets are int64 (from a constexpr stride) and whose mask is
    written with `and`; entries where x is 0 or negative are zeroed with `or`/`and` of truths."""
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.program_id(1) * BN + tl.arange(0, BN)
    stride = tl.cast(ROW_STRIDE, tl.int64)
    inside = rows[:, None] < M and cols[None, :] < N
    offs = rows[:, None] * stride + cols[None, :]
    x = tl.load(X + offs, mask=inside, other=0.0)
    keep = (x > 0.5) or (x < -0.5)
    tl.store(Y + offs, tl.where(keep and inside, x, 0.0), mask=inside)


def test_cast_of_a_constexpr_and_boolean_operators_on_tensors(interpret):
    m, n = 21, 45
    x = torch.randn(m, n, generator=_gen(3))
    y = _nan(m, n)
    masked_tile_copy[(2, 3)](y, x, m, n, ROW_STRIDE=n, BM=16, BN=16)
    torch.testing.assert_close(y, torch.where(x.abs() > 0.5, x, 0.0))


@pytest.mark.parametrize("target", TARGETS)
def test_cast_of_a_constexpr_and_boolean_operators_compile(target):
    sparsecc.compile(masked_tile_copy, {"Y": "*fp32", "X": "*fp32", "M": "i32", "N": "i32"},
                     {"ROW_STRIDE": 45, "BM": 16, "BN": 16}, target=target)


# -- dtypes at compile time ----------------------------------------------------------------


@sparsecc.jit
def lowest_of(dtype):
    """The smallest value of `dtype` (handed over as Triton hands a constexpr: read via .value)."""
    ty = dtype.value
    if ty.is_floating():
        return float("-inf")
    return -(2 ** (ty.int_bitwidth - 1))


@sparsecc.jit
def row_max(OUT, X, n_cols, BLOCK: tl.constexpr):
    """max over a row, computed in fp32 for 16-bit floats (a dtype predicate decides)."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    elt = X.dtype.element_ty
    if tl.constexpr(elt.is_fp16()) or tl.constexpr(elt.is_bf16()):
        acc_ty = tl.float32
    else:
        acc_ty = elt
    x = tl.load(X + row * n_cols + cols, mask=cols < n_cols, other=lowest_of(elt)).to(acc_ty)
    tl.store(OUT + row, tl.max(x, axis=0).to(OUT.dtype.element_ty))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.int32])
def test_dtype_predicates_on_the_interpreter(dtype, interpret):
    m, n = 6, 50
    if dtype.is_floating_point:
        x = (torch.randn(m, n, generator=_gen(4)) - 3.0).to(dtype)  # mostly negative: the padding matters
    else:
        x = torch.randint(-(2**31), -5, (m, n), generator=_gen(4), dtype=torch.int32)
    out = torch.zeros(m, dtype=dtype)
    out.fill_(7)
    row_max[(m,)](out, x, n, BLOCK=64)
    torch.testing.assert_close(out, x.max(1).values)


@pytest.mark.parametrize("target", TARGETS)
def test_dtype_predicates_compile(target):
    sparsecc.compile(row_max, {"OUT": "*bf16", "X": "*bf16", "n_cols": "i32"}, {"BLOCK": 64}, target=target)


# -- masks on the GPU: a layout change, a mask as a float ----------------------------------


@sparsecc.jit
def masked_matmul(C, A, B, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """C = A @ B, row and column masks made once and reused inside the K loop (they change
    layout to the dot operands' loads); the count of valid rows is a mask summed as floats."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    row_ok = rm < M
    col_ok = rn < N
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        kk = k0 + rk
        a = tl.load(A + rm[:, None] * K + kk[None, :], mask=row_ok[:, None] & (kk[None, :] < K), other=0.0)
        b = tl.load(B + kk[:, None] * N + rn[None, :], mask=(kk[:, None] < K) & col_ok[None, :], other=0.0)
        acc += tl.dot(a, b)
    valid = tl.zeros((BM,), dtype=tl.float32) + row_ok  # 1.0 per row inside M
    acc = acc * valid[:, None]
    tl.store(C + rm[:, None] * N + rn[None, :], acc.to(tl.float16), mask=row_ok[:, None] & col_ok[None, :])


def _masked_matmul_case(m, n, k, device):
    g = _gen(m + n + k)
    a = torch.randn(m, k, generator=g).half().to(device)
    b = torch.randn(k, n, generator=g).half().to(device)
    c = _nan(m, n, dtype=torch.float16, device=device)
    masked_matmul[((m + 31) // 32, (n + 31) // 32)](c, a, b, m, n, k, BM=32, BN=32, BK=32)
    return c, (a.float().cpu() @ b.float().cpu())


@pytest.mark.parametrize("m, n, k", [(40, 48, 80), (33, 17, 32)])
def test_masks_in_a_matmul_on_the_interpreter(m, n, k, interpret):
    c, ref = _masked_matmul_case(m, n, k, "cpu")
    torch.testing.assert_close(c.float(), ref, rtol=1e-2, atol=2e-2)


@pytest.mark.parametrize("target", TARGETS)
def test_masks_in_a_matmul_compile(target):
    sig = {"C": "*fp16", "A": "*fp16", "B": "*fp16", "M": "i32", "N": "i32", "K": "i32"}
    sparsecc.compile(masked_matmul, sig, {"BM": 32, "BN": 32, "BK": 32}, target=target)


# -- a 2:4 right operand addressed with int64 columns --------------------------------------


@sparsecc.jit
def linear_int64_cols(Y, X, W, BIAS, M, N, K, stride_wk, stride_wn,
                      BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """y = x @ W.T + bias with W (N x K) 2:4 along K, read as the K x N operand through
    (stride_wk, stride_wn); the column indices are int64, as kernels that widen program ids make."""
    pid_m = tl.program_id(0).to(tl.int64)
    pid_n = tl.program_id(1).to(tl.int64)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    x_ptrs = X + (rm[:, None] * K + rk[None, :])
    w_ptrs = W + (rk[:, None] * stride_wk + rn[None, :] * stride_wn)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, tl.cdiv(K, BK)):
        x = tl.load(x_ptrs, mask=(rm[:, None] < M) & (rk[None, :] < K - k0 * BK), other=0.0)
        w = tl.load(w_ptrs, mask=(rk[:, None] < K - k0 * BK) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(x, w)
        x_ptrs += BK
        w_ptrs += BK * stride_wk
    acc += tl.load(BIAS + rn, mask=rn < N, other=0.0)[None, :].to(tl.float32)
    tl.store(Y + rm[:, None] * N + rn[None, :], acc.to(tl.float16), mask=(rm[:, None] < M) & (rn[None, :] < N))


def _linear_case(m, n, k, device):
    g = _gen(3 * m + n + k)
    x = torch.randn(m, k, generator=g).half()
    w = sparsecc.prune_2to4(torch.randn(n, k, generator=g).half())
    bias = torch.randn(n, generator=g).half()
    y = _nan(m, n, dtype=torch.float16, device=device)
    ws = sparsecc.compress(w.to(device))
    linear_int64_cols[((m + 31) // 32, (n + 31) // 32)](y, x.to(device), ws, bias.to(device), m, n, k, 1, k,
                                                        BM=32, BN=32, BK=32)
    return y, x.float() @ w.float().T + bias.float()


@pytest.mark.parametrize("m, n, k", [(40, 64, 96), (7, 32, 64)])
def test_sparse_rhs_with_int64_columns_on_the_interpreter(m, n, k, interpret):
    y, ref = _linear_case(m, n, k, "cpu")
    torch.testing.assert_close(y.float(), ref, rtol=1e-2, atol=3e-2)


@pytest.mark.parametrize("target", TARGETS)
def test_sparse_rhs_with_int64_columns_compiles(target):
    sig = {"Y": "*fp16", "X": "*fp16", "W": "*fp16:NV24", "BIAS": "*fp16", "M": "i32", "N": "i32", "K": "i32",
           "stride_wk": "i32:1", "stride_wn": "i32"}
    sparsecc.compile(linear_int64_cols, sig, {"BM": 32, "BN": 32, "BK": 32}, target=target)


# -- on the GPU -----------------------------------------------------------------------------


@pytest.mark.gpu
def test_heldout_defects_on_the_gpu():
    for with_scale, with_shift in [(True, False), (False, True)]:
        y, ref = _scaled_rows_case(5, 37, with_scale, with_shift, "cuda")
        torch.testing.assert_close(y.cpu(), ref)
    m, n = 21, 45
    x = torch.randn(m, n, generator=_gen(3))
    y = _nan(m, n, device="cuda")
    masked_tile_copy[(2, 3)](y, x.cuda(), m, n, ROW_STRIDE=n, BM=16, BN=16)
    torch.testing.assert_close(y.cpu(), torch.where(x.abs() > 0.5, x, 0.0))
    xb = (torch.randn(6, 50, generator=_gen(4)) - 3.0).bfloat16()
    out = torch.zeros(6, dtype=torch.bfloat16, device="cuda")
    row_max[(6,)](out, xb.cuda(), 50, BLOCK=64)
    torch.testing.assert_close(out.cpu(), xb.max(1).values)
    c, ref = _masked_matmul_case(33, 17, 32, "cuda")
    torch.testing.assert_close(c.float().cpu(), ref, rtol=1e-2, atol=2e-2)
    y, ref = _linear_case(40, 64, 96, "cuda")
    torch.testing.assert_close(y.float().cpu(), ref, rtol=1e-2, atol=3e-2)


# -- a dense int8 dot on the GPU -----------------------------------------------------------


@sparsecc.jit
def int8_gemm(C, A, B, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """C (int32) = A (int8, M x K) @ B (int8, K x N), both dense, through block pointers."""
    a_blk = tl.make_block_ptr(A, (M, K), (K, 1), (tl.program_id(0) * BM, 0), (BM, BK), (1, 0))
    b_blk = tl.make_block_ptr(B, (K, N), (N, 1), (0, tl.program_id(1) * BN), (BK, BN), (1, 0))
    acc = tl.zeros((BM, BN), dtype=tl.int32)
    for _ in range(0, K, BK):
        acc += tl.dot(tl.load(a_blk, boundary_check=(0, 1)), tl.load(b_blk, boundary_check=(0, 1)))
        a_blk = tl.advance(a_blk, (0, BK))
        b_blk = tl.advance(b_blk, (BK, 0))
    c_blk = tl.make_block_ptr(C, (M, N), (N, 1), (tl.program_id(0) * BM, tl.program_id(1) * BN), (BM, BN), (1, 0))
    tl.store(c_blk, acc, boundary_check=(0, 1))


INT8_SIG = {"C": "*i32", "A": "*i8", "B": "*i8", "M": "i32", "N": "i32", "K": "i32"}


def _int8_problem(m, n, k, worst, device="cpu"):
    if worst:  # every product 2^14: a tile's sum is K * 2^14, the largest the fp16 path must hold
        a = torch.full((m, k), -128, dtype=torch.int8)
        b = torch.full((k, n), -128, dtype=torch.int8)
    else:
        g = _gen(m + n + k)
        a = torch.randint(-128, 128, (m, k), generator=g, dtype=torch.int8)
        b = torch.randint(-128, 128, (k, n), generator=g, dtype=torch.int8)
    c = torch.full((m, n), -7, dtype=torch.int32, device=device)
    return a.to(device), b.to(device), c, a.int() @ b.int()


@pytest.mark.parametrize("m, n, k, bk, worst", [(40, 48, 160, 32, False), (32, 32, 2048, 1024, True)])
def test_dense_int8_dot_rewrite_is_exact(m, n, k, bk, worst):
    # the GPU path's rewrite (convert-tt-to-ttg: fp16 dot + fptosi + addi), run on the interpreter
    import sparsecc.runtime.interpreter as interpreter
    from sparsecc.passes.convert_tt_to_ttg import dense_int8_dots_on_fp16

    ck = sparsecc.compile(int8_gemm, INT8_SIG, {"BM": 32, "BN": 32, "BK": bk})
    module = ck.module.clone()
    dense_int8_dots_on_fp16(module)
    text = str(module)
    assert "xi8> * tensor" not in text and "xf16> * tensor" in text
    a, b, c, ref = _int8_problem(m, n, k, worst)
    interpreter.run(module, ck.name, ((m + 31) // 32, (n + 31) // 32, 1), [c, a, b, m, n, k])
    assert torch.equal(c, ref)


@pytest.mark.parametrize("target", TARGETS)
def test_dense_int8_dot_compiles(target):
    ck = sparsecc.compile(int8_gemm, INT8_SIG, {"BM": 32, "BN": 32, "BK": 64}, target=target)
    assert "f16" in ck.asm["ptx"] and "cubin" in ck.asm


def test_dense_int8_dot_longer_than_exact_is_still_refused():
    with pytest.raises(sparsecc.CompilationError, match="dense i8 tl.dot"):
        sparsecc.compile(int8_gemm, INT8_SIG, {"BM": 32, "BN": 32, "BK": 2048}, target="sm_90a")


@pytest.mark.gpu
@pytest.mark.parametrize("m, n, k, bk, worst", [(40, 48, 160, 32, False), (64, 64, 2048, 1024, True)])
def test_dense_int8_dot_on_the_gpu(m, n, k, bk, worst):
    a, b, c, ref = _int8_problem(m, n, k, worst, "cuda")
    int8_gemm[((m + 31) // 32, (n + 31) // 32)](c, a, b, m, n, k, BM=32, BN=32, BK=bk)
    torch.cuda.synchronize()
    assert torch.equal(c.cpu(), ref.cpu())


# -- a 2:4 right operand through a block pointer whose declared order is a hint ------------


@sparsecc.jit
def linear_block_ptr_row_order(Y, X, W, M, N, K, stride_wk, stride_wn,
                               BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """y = x @ W.T with W (N x K) 2:4 along K, read as the K x N operand (stride_wk = 1) through a
    block pointer that declares order (1, 0) anyway, as kernels written for a row-major B do."""
    x_blk = tl.make_block_ptr(X, (M, K), (K, 1), (tl.program_id(0) * BM, 0), (BM, BK), (1, 0))
    w_blk = tl.make_block_ptr(W, (K, N), (stride_wk, stride_wn), (0, tl.program_id(1) * BN), (BK, BN), (1, 0))
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for _ in range(0, K, BK):
        acc += tl.dot(tl.load(x_blk, boundary_check=(0, 1)), tl.load(w_blk, boundary_check=(0, 1)))
        x_blk = tl.advance(x_blk, (0, BK))
        w_blk = tl.advance(w_blk, (BK, 0))
    y_blk = tl.make_block_ptr(Y, (M, N), (N, 1), (tl.program_id(0) * BM, tl.program_id(1) * BN), (BM, BN), (1, 0))
    tl.store(y_blk, acc.to(tl.float16), boundary_check=(0, 1))


def _row_order_case(m, n, k, device):
    g = _gen(5 * m + n + k)
    x = torch.randn(m, k, generator=g).half()
    w = sparsecc.prune_2to4(torch.randn(n, k, generator=g).half())
    y = _nan(m, n, dtype=torch.float16, device=device)
    linear_block_ptr_row_order[((m + 31) // 32, (n + 31) // 32)](y, x.to(device), sparsecc.compress(w.to(device)),
                                                                 m, n, k, 1, k, BM=32, BN=32, BK=32)
    return y, x.float() @ w.float().T


@pytest.mark.parametrize("m, n, k", [(40, 64, 96), (16, 32, 64)])
def test_sparse_rhs_block_pointer_order_is_a_hint(m, n, k, interpret):
    y, ref = _row_order_case(m, n, k, "cpu")
    torch.testing.assert_close(y.float(), ref, rtol=1e-2, atol=3e-2)


@pytest.mark.parametrize("target", TARGETS)
def test_sparse_rhs_block_pointer_order_is_a_hint_compiles(target):
    sig = {"Y": "*fp16", "X": "*fp16", "W": "*fp16:NV24", "M": "i32", "N": "i32", "K": "i32",
           "stride_wk": "i32:1", "stride_wn": "i32"}
    sparsecc.compile(linear_block_ptr_row_order, sig, {"BM": 32, "BN": 32, "BK": 32}, target=target)


def test_sparse_rhs_block_pointer_with_a_runtime_k_stride_is_refused():
    # K's stride unknown (not specialized to 1) and the order says N is contiguous: refused
    sig = {"Y": "*fp16", "X": "*fp16", "W": "*fp16:NV24", "M": "i32", "N": "i32", "K": "i32",
           "stride_wk": "i32", "stride_wn": "i32"}
    with pytest.raises(sparsecc.CompilationError, match="order"):
        sparsecc.compile(linear_block_ptr_row_order, sig, {"BM": 32, "BN": 32, "BK": 32})


@pytest.mark.gpu
def test_sparse_rhs_block_pointer_order_on_the_gpu():
    y, ref = _row_order_case(40, 64, 96, "cuda")
    torch.testing.assert_close(y.float().cpu(), ref, rtol=1e-2, atol=3e-2)
