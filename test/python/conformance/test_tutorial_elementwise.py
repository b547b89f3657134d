"""Triton's tutorials 01 (vector add) and 02 (fused softmax), with only the import and decorator
changed, on the interpreter against torch and on the GPU."""

from __future__ import annotations

import pytest
import torch

import sparsecc
import sparsecc.language as tl


@sparsecc.jit
def add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    output = x + y
    tl.store(output_ptr + offsets, output, mask=mask)


@sparsecc.jit
def softmax_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_rows, n_cols,
                   BLOCK_SIZE: tl.constexpr):
    row_start = tl.program_id(0)
    row_step = tl.num_programs(0)
    for row_idx in range(row_start, n_rows, row_step):
        row_start_ptr = input_ptr + row_idx * input_row_stride
        col_offsets = tl.arange(0, BLOCK_SIZE)
        input_ptrs = row_start_ptr + col_offsets
        mask = col_offsets < n_cols
        row = tl.load(input_ptrs, mask=mask, other=-float('inf'))
        row_minus_max = row - tl.max(row, axis=0)
        numerator = tl.exp(row_minus_max)
        denominator = tl.sum(numerator, axis=0)
        softmax_output = numerator / denominator
        output_row_start_ptr = output_ptr + row_idx * output_row_stride
        output_ptrs = output_row_start_ptr + col_offsets
        tl.store(output_ptrs, softmax_output, mask=mask)


def _vector_add(device: str) -> None:
    size = 98432 if device == "cuda" else 4000
    x = torch.rand(size, device=device)
    y = torch.rand(size, device=device)
    output = torch.full_like(x, float("nan"))
    grid = lambda meta: (triton_cdiv(size, meta["BLOCK_SIZE"]),)  # noqa: E731 - as in the tutorial
    add_kernel[grid](x, y, output, size, BLOCK_SIZE=1024)
    torch.testing.assert_close(output, x + y)


def _softmax(device: str) -> None:
    x = torch.randn(37 if device == "cpu" else 1823, 781, device=device)
    y = torch.full_like(x, float("nan"))
    n_rows, n_cols = x.shape
    softmax_kernel[(min(n_rows, 8 if device == "cpu" else 264),)](
        y, x, x.stride(0), y.stride(0), n_rows, n_cols, BLOCK_SIZE=1024)
    torch.testing.assert_close(y, torch.softmax(x, dim=1), rtol=1e-5, atol=1e-6)


def triton_cdiv(x: int, y: int) -> int:
    return (x + y - 1) // y


def test_vector_add_on_the_interpreter(monkeypatch):
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    _vector_add("cpu")


def test_fused_softmax_on_the_interpreter(monkeypatch):
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    _softmax("cpu")


@pytest.mark.gpu
def test_vector_add_on_the_gpu():
    _vector_add("cuda")


@pytest.mark.gpu
def test_fused_softmax_on_the_gpu():
    _softmax("cuda")


@sparsecc.jit
def row_col_reduce(X, ROWS, COLS, M, N, stride_xm, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rm = tl.arange(0, BLOCK_M)
    rn = tl.arange(0, BLOCK_N)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(X + rm[:, None] * stride_xm + rn[None, :], mask=mask, other=0.0)
    tl.store(ROWS + rm, tl.sum(x, axis=1), mask=rm < M)
    tl.store(COLS + rn, tl.max(tl.where(mask, x, -float("inf")), axis=0), mask=rn < N)


def _row_col(device: str) -> None:
    x = torch.randn(50, 70, device=device)
    rows = torch.full((50,), float("nan"), device=device)
    cols = torch.full((70,), float("nan"), device=device)
    row_col_reduce[(1,)](x, rows, cols, 50, 70, x.stride(0), BLOCK_M=64, BLOCK_N=128)
    torch.testing.assert_close(rows, x.sum(1), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(cols, x.max(0).values)


def test_row_and_column_reductions_on_the_interpreter(monkeypatch):
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    _row_col("cpu")


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_reductions_assemble(target):
    sig = {"X": "*fp32", "ROWS": "*fp32", "COLS": "*fp32", "M": "i32", "N": "i32", "stride_xm": "i32"}
    ck = sparsecc.compile(row_col_reduce, sig, {"BLOCK_M": 64, "BLOCK_N": 128}, target=target, num_warps=4)
    assert isinstance(ck.asm["cubin"], bytes)
    sig = {"output_ptr": "*fp32", "input_ptr": "*fp32", "input_row_stride": "i32", "output_row_stride": "i32",
           "n_rows": "i32", "n_cols": "i32"}
    ck = sparsecc.compile(softmax_kernel, sig, {"BLOCK_SIZE": 1024}, target=target, num_warps=8)
    assert "ex2.approx.ftz.f32" in ck.asm["ptx"] and isinstance(ck.asm["cubin"], bytes)


@pytest.mark.gpu
def test_row_and_column_reductions_on_the_gpu():
    _row_col("cuda")


@sparsecc.jit
def reshape_kernel(X, Y, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    offs = tl.arange(0, BLOCK_M * BLOCK_N)
    x = tl.load(X + offs)
    tile = tl.reshape(x, (BLOCK_M, BLOCK_N))
    row_sums = tl.sum(tile, axis=1)
    out = tl.reshape(tile * 2.0, [BLOCK_M * BLOCK_N])
    tl.store(Y + offs, out)
    tl.store(Y + BLOCK_M * BLOCK_N + tl.arange(0, BLOCK_M), row_sums)


def _reshape(device: str) -> None:
    x = torch.randn(32 * 16, device=device)
    y = torch.full((32 * 16 + 32,), float("nan"), device=device)
    reshape_kernel[(1,)](x, y, BLOCK_M=32, BLOCK_N=16)
    torch.testing.assert_close(y[:512], x * 2)
    torch.testing.assert_close(y[512:], x.reshape(32, 16).sum(1), rtol=1e-5, atol=1e-5)


def test_reshape_on_the_interpreter(monkeypatch):
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    _reshape("cpu")


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_reshape_assembles(target):
    ck = sparsecc.compile(reshape_kernel, {"X": "*fp32", "Y": "*fp32"}, {"BLOCK_M": 32, "BLOCK_N": 16}, target=target)
    assert isinstance(ck.asm["cubin"], bytes)


@pytest.mark.gpu
def test_reshape_on_the_gpu():
    _reshape("cuda")
