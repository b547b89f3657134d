"""Every op keeps the kernel line it came from, and errors of later passes name it."""

from __future__ import annotations

import inspect

import pytest
from xdsl.dialects.builtin import FileLineColLoc

import sparsecc
import sparsecc.language as tl
from sparsecc.compiler import print_ir
from sparsecc.frontend.errors import CompilationError


@sparsecc.jit
def column_major_sparse(D, A, B, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    a_ptrs = tl.make_block_ptr(A, shape=(BM, BK), strides=(1, BM), offsets=(0, 0),
                               block_shape=(BM, BK), order=(0, 1))
    b_ptrs = tl.make_block_ptr(B, shape=(BK, BN), strides=(BN, 1), offsets=(0, 0),
                               block_shape=(BK, BN), order=(1, 0))
    d = tl.dot(tl.load(a_ptrs), tl.load(b_ptrs))
    d_ptrs = tl.make_block_ptr(D, shape=(BM, BN), strides=(BN, 1), offsets=(0, 0),
                               block_shape=(BM, BN), order=(1, 0))
    tl.store(d_ptrs, d.to(tl.float16))


SIG = {"D": "*fp16", "A": "*fp16:NV24", "B": "*fp16"}


def _line_of(fn, text: str) -> int:
    lines, first = inspect.getsourcelines(fn.fn)
    return first + next(i for i, line in enumerate(lines) if text in line)


def test_a_pass_error_names_the_kernel_line():
    with pytest.raises(CompilationError) as info:
        sparsecc.compile(column_major_sparse, SIG, {"BM": 32, "BN": 16, "BK": 64})
    err = info.value
    assert err.file == __file__
    assert err.line == _line_of(column_major_sparse, "a_ptrs = tl.make_block_ptr(A")
    assert "order = [1, 0]" in err.message
    assert "a_ptrs = tl.make_block_ptr(A" in str(err) and "^" in str(err)


def test_every_op_of_every_stage_is_located():
    from kernels import POINTER_SIG, pointer_gemm

    ck = sparsecc.compile(pointer_gemm, POINTER_SIG, {"BM": 32, "BN": 16, "BK": 64})
    assert ck.module is not None
    lines, first = inspect.getsourcelines(pointer_gemm.fn)
    kernel_lines = range(first, first + len(lines))
    for op in ck.module.walk():
        if op is ck.module:
            continue
        assert isinstance(op.location, FileLineColLoc), op.name
        assert op.location.line.data in kernel_lines, (op.name, op.location)
    # The printed stages do not show locations (lit tests and caches see the same text).
    assert "loc(" not in ck.asm["ttir"] and "loc(" not in print_ir(ck.module)


def test_ops_of_an_inlined_helper_carry_the_helpers_line():
    @sparsecc.jit
    def offsets(base, n: tl.constexpr):
        return base + tl.arange(0, n)

    @sparsecc.jit
    def copy(X, Y, n: tl.constexpr):
        tl.store(Y + tl.arange(0, n), tl.load(offsets(X, n)))

    ck = sparsecc.compile(copy, {"X": "*fp32", "Y": "*fp32"}, {"n": 16})
    ranges = [op for op in ck.module.walk() if op.name == "tt.make_range"]
    helper_line = _line_of(offsets, "return base")
    assert any(op.location.line.data == helper_line for op in ranges)
