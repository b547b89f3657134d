"""A gallery of bad kernels a Triton user could write: each is launched on the CPU interpreter
and compiled for sm_90a by test_bad_kernels.py, and must fail there with one located user error.

Each `Case` names the kernel, how to build its (CPU) launch arguments, its constexprs, the
phrase the error must contain and a snippet of the offending line (the error's `file:line`).
`None` as the snippet means the kernel's `def` line (a bad launch argument)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

import sparsecc
import sparsecc.language as tl


@dataclass
class Case:
    name: str
    kernel: Any
    args: Callable[[], list[Any]]
    wrong: str
    phrase: str
    line: str | None
    constexprs: dict[str, Any] = field(default_factory=dict)
    grid: tuple[int, ...] = (1,)
    options: dict[str, Any] = field(default_factory=dict)


def f16(*shape: int) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(0)).half()


def sparse16(m: int, k: int) -> Any:
    return sparsecc.compress(sparsecc.prune_2to4(f16(m, k)))


def sparse32(m: int, k: int) -> Any:
    """A 1:2-sparse fp32 matrix (NV12, multiplied in tf32)."""
    return sparsecc.compress(sparsecc.prune_1to2(f16(m, k).float()))


def _not_jit(x):
    return x * 2


# ---- tl.dot -----------------------------------------------------------------------------


@sparsecc.jit
def dot_k_mismatch(A, B, C):
    r = tl.arange(0, 16)
    a = tl.load(A + r[:, None] * 32 + tl.arange(0, 32)[None, :])
    b = tl.load(B + r[:, None] * 16 + r[None, :])
    c = tl.dot(a, b)
    tl.store(C + r[:, None] * 16 + r[None, :], c)


@sparsecc.jit
def dot_1d(A, B, C):
    r = tl.arange(0, 16)
    c = tl.dot(tl.load(A + r), tl.load(B + r))
    tl.store(C + r, c)


@sparsecc.jit
def dot_fp16_bf16(A, B, C):
    r = tl.arange(0, 16)
    a = tl.load(A + r[:, None] * 16 + r[None, :])
    b = tl.load(B + r[:, None] * 16 + r[None, :])
    tl.store(C + r[:, None] * 16 + r[None, :], tl.dot(a, b))


@sparsecc.jit
def dot_i8_into_float_acc(A, B, C):
    r = tl.arange(0, 16)
    a = tl.load(A + r[:, None] * 32 + tl.arange(0, 32)[None, :])
    b = tl.load(B + tl.arange(0, 32)[:, None] * 16 + r[None, :])
    acc = tl.zeros((16, 16), tl.float32)
    acc = tl.dot(a, b, acc)
    tl.store(C + r[:, None] * 16 + r[None, :], acc)


@sparsecc.jit
def dot_out_dtype_vs_acc(A, B, C):
    r = tl.arange(0, 16)
    a = tl.load(A + r[:, None] * 32 + tl.arange(0, 32)[None, :])
    b = tl.load(B + tl.arange(0, 32)[:, None] * 16 + r[None, :])
    acc = tl.zeros((16, 16), tl.float32)
    acc = tl.dot(a, b, acc, out_dtype=tl.float16)
    tl.store(C + r[:, None] * 16 + r[None, :], acc)


@sparsecc.jit
def dot_bf16_acc(A, B, C):
    r = tl.arange(0, 16)
    a = tl.load(A + r[:, None] * 32 + tl.arange(0, 32)[None, :])
    b = tl.load(B + tl.arange(0, 32)[:, None] * 16 + r[None, :])
    acc = tl.zeros((16, 16), tl.bfloat16)
    acc = tl.dot(a, b, acc)
    tl.store(C + r[:, None] * 16 + r[None, :], acc)


@sparsecc.jit
def dot_input_precision_ieee(A, B, C):
    r = tl.arange(0, 16)
    a = tl.load(A + r[:, None] * 32 + tl.arange(0, 32)[None, :])
    b = tl.load(B + tl.arange(0, 32)[:, None] * 16 + r[None, :])
    c = tl.dot(a, b, input_precision="ieee")
    tl.store(C + r[:, None] * 16 + r[None, :], c)


@sparsecc.jit
def dot_input_precision_typo(A, B, C):
    r = tl.arange(0, 16)
    a = tl.load(A + r[:, None] * 32 + tl.arange(0, 32)[None, :])
    b = tl.load(B + tl.arange(0, 32)[:, None] * 16 + r[None, :])
    c = tl.dot(a, b, input_precision="fp32")
    tl.store(C + r[:, None] * 16 + r[None, :], c)


@sparsecc.jit
def dot_fp16_out(A, B, C):
    r = tl.arange(0, 16)
    a = tl.load(A + r[:, None] * 32 + tl.arange(0, 32)[None, :])
    b = tl.load(B + tl.arange(0, 32)[:, None] * 16 + r[None, :])
    c = tl.dot(a, b, out_dtype=tl.float16)
    tl.store(C + r[:, None] * 16 + r[None, :], c)


@sparsecc.jit
def dot_too_small(A, B, C):
    r = tl.arange(0, 8)
    a = tl.load(A + r[:, None] * 32 + tl.arange(0, 32)[None, :])
    b = tl.load(B + tl.arange(0, 32)[:, None] * 8 + r[None, :])
    c = tl.dot(a, b)
    tl.store(C + r[:, None] * 8 + r[None, :], c)


# ---- sparse operands used as dense ------------------------------------------------------


@sparsecc.jit
def sparse_added(A, C):
    r = tl.arange(0, 16)
    a = tl.load(A + r[:, None] * 32 + tl.arange(0, 32)[None, :])
    tl.store(C + r[:, None] * 32 + tl.arange(0, 32)[None, :], a + 1.0)


@sparsecc.jit
def sparse_stored(A, C):
    r = tl.arange(0, 16)
    a = tl.load(A + r[:, None] * 32 + tl.arange(0, 32)[None, :])
    tl.store(C + r[:, None] * 32 + tl.arange(0, 32)[None, :], a)


@sparsecc.jit
def sparse_reduced(A, C):
    r = tl.arange(0, 16)
    a = tl.load(A + r[:, None] * 32 + tl.arange(0, 32)[None, :])
    tl.store(C + r, tl.sum(a, axis=1))


@sparsecc.jit
def store_to_sparse_arg(A, X):
    r = tl.arange(0, 16)
    x = tl.load(X + r[:, None] * 32 + tl.arange(0, 32)[None, :])
    tl.store(A + r[:, None] * 32 + tl.arange(0, 32)[None, :], x)


@sparsecc.jit
def sparse_where(A, C):
    r = tl.arange(0, 16)
    a = tl.load(A + r[:, None] * 32 + tl.arange(0, 32)[None, :])
    tl.store(C + r[:, None] * 32 + tl.arange(0, 32)[None, :], tl.where(r[:, None] > 3, a, 0.0))


# ---- shapes -----------------------------------------------------------------------------


@sparsecc.jit
def arange_not_pow2(X):
    r = tl.arange(0, 24)
    tl.store(X + r, r)


@sparsecc.jit
def huge_block(X, BLOCK: tl.constexpr):
    acc = tl.zeros((BLOCK, BLOCK), tl.float32)
    tl.store(X + tl.arange(0, 16), tl.sum(tl.sum(acc, axis=1), axis=0))


@sparsecc.jit
def huge_broadcast(X, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    grid2d = r[:, None] + r[None, :]
    tl.store(X + tl.arange(0, 16), tl.sum(tl.sum(grid2d, axis=1), axis=0))


@sparsecc.jit
def huge_block_ptr(X, BLOCK: tl.constexpr):
    p = tl.make_block_ptr(X, shape=(BLOCK, BLOCK), strides=(BLOCK, 1), offsets=(0, 0),
                          block_shape=(BLOCK, BLOCK), order=(1, 0))
    tl.store(p, tl.load(p) + 1.0)


@sparsecc.jit
def mask_not_broadcastable(X, n):
    r = tl.arange(0, 16)
    m = tl.arange(0, 32) < n
    x = tl.load(X + r, mask=m, other=0.0)
    tl.store(X + r, x)


@sparsecc.jit
def mask_grows_pointer(X, n):
    r = tl.arange(0, 16)
    m = (r[:, None] + r[None, :]) < n
    x = tl.load(X + r, mask=m, other=0.0)
    tl.store(X + r, tl.sum(x, axis=0))


@sparsecc.jit
def other_grows_pointer(X, n):
    r = tl.arange(0, 16)
    x = tl.load(X + r, mask=r < n, other=tl.zeros((16, 16), tl.float32))
    tl.store(X + r, tl.sum(x, axis=0))


@sparsecc.jit
def store_value_shape(X):
    r = tl.arange(0, 16)
    v = tl.zeros((16, 16), tl.float32)
    tl.store(X + r, v)


@sparsecc.jit
def store_tensor_to_scalar_ptr(X):
    v = tl.arange(0, 16).to(tl.float32)
    tl.store(X, v)


@sparsecc.jit
def store_mask_grows_pointer(X, n):
    r = tl.arange(0, 16)
    tl.store(X + r, 1.0, mask=(r[:, None] + r[None, :]) < n)


@sparsecc.jit
def atomic_value_grows_pointer(X):
    r = tl.arange(0, 16)
    tl.atomic_add(X + r, tl.zeros((16, 16), tl.float32) + 1.0)


@sparsecc.jit
def where_mismatch(X):
    r = tl.arange(0, 16)
    s = tl.arange(0, 32)
    tl.store(X + r, tl.where(r > 4, r, s))


@sparsecc.jit
def loop_carried_shape_change(X, N):
    acc = tl.zeros((16,), tl.float32)
    for _i in range(N):
        acc = acc[:, None] + tl.zeros((16, 16), tl.float32)
    tl.store(X + tl.arange(0, 16), tl.sum(acc, axis=0))


# ---- program ids, returns, constexprs ---------------------------------------------------


@sparsecc.jit
def program_id_3(X):
    pid = tl.program_id(3)
    tl.store(X + pid, 1.0)


@sparsecc.jit
def kernel_returns(X):
    x = tl.load(X)
    return x + 1.0


@sparsecc.jit
def block_from_runtime_int(X, n):
    r = tl.arange(0, n)
    tl.store(X + r, 1.0)


@sparsecc.jit
def constexpr_is_tensor(X, FLAG: tl.constexpr):
    if FLAG:
        tl.store(X, 1.0)


@sparsecc.jit
def constexpr_is_torch_dtype(X, DTYPE: tl.constexpr):
    r = tl.arange(0, 16)
    if DTYPE == tl.float16:
        tl.store(X + r, 1.0)
    else:
        tl.store(X + r, 2.0)


# ---- memory builtins --------------------------------------------------------------------


@sparsecc.jit
def load_non_pointer(X, n):
    x = tl.load(n)
    tl.store(X, x)


@sparsecc.jit
def load_bad_cache_modifier(X):
    r = tl.arange(0, 16)
    x = tl.load(X + r, cache_modifier=".xyz")
    tl.store(X + r, x + 1.0)


@sparsecc.jit
def store_bad_eviction_policy(X):
    r = tl.arange(0, 16)
    tl.store(X + r, 1.0, eviction_policy="evict_sometimes")


@sparsecc.jit
def advance_wrong_rank(X):
    p = tl.make_block_ptr(X, shape=(16, 16), strides=(16, 1), offsets=(0, 0), block_shape=(16, 16),
                          order=(1, 0))
    p = tl.advance(p, (16,))
    tl.store(p, tl.load(p))


@sparsecc.jit
def block_ptr_order_length(X):
    p = tl.make_block_ptr(X, shape=(16, 16), strides=(16, 1), offsets=(0, 0), block_shape=(16, 16),
                          order=(0,))
    tl.store(p, tl.load(p))


@sparsecc.jit
def block_ptr_padding_on_int(X):
    p = tl.make_block_ptr(X, shape=(16, 16), strides=(16, 1), offsets=(0, 0), block_shape=(16, 16),
                          order=(1, 0))
    tl.store(p, tl.load(p, boundary_check=(0, 1), padding_option="nan"))


@sparsecc.jit
def maximum_of_pointers(X, Y):
    r = tl.arange(0, 16)
    p = tl.maximum(X + r, Y + r)
    tl.store(p, 1.0)


# ---- names and calls --------------------------------------------------------------------


@sparsecc.jit
def undefined_name(X):
    tl.store(X, not_defined_anywhere)  # noqa: F821


@sparsecc.jit
def calls_python_function(X):
    r = tl.arange(0, 16)
    tl.store(X + r, _not_jit(r))


@sparsecc.jit
def five_d_tile(X):
    r = tl.arange(0, 16)
    t = r[:, None, None, None, None] + r[None, None, None, None, :]
    tl.store(X + r, tl.sum(tl.sum(tl.sum(tl.sum(t, axis=4), axis=3), axis=2), axis=1))


@sparsecc.jit
def fp64_tile(X):
    r = tl.arange(0, 16)
    x = tl.load(X + r).to(tl.float64)
    tl.store(X + r, tl.exp(x * 2.0))


@sparsecc.jit
def big_gpu_tile(X, B: tl.constexpr):
    r = tl.arange(0, B)
    x = tl.load(X + r[:, None] * B + r[None, :])
    tl.store(X + r[:, None] * B + r[None, :], x + 1.0)


@sparsecc.jit
def plain(X, n, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    tl.store(X + r, 1.0, mask=r < n)


CASES: list[Case] = [
    Case("dot_k_mismatch", dot_k_mismatch, lambda: [f16(16, 32), f16(16, 16), torch.zeros(16, 16)],
         "tl.dot with K=32 on the left and K=16 on the right", "tl.dot shapes do not agree", "c = tl.dot(a, b)"),
    Case("dot_1d", dot_1d, lambda: [f16(16), f16(16), torch.zeros(16)],
         "tl.dot of 1-D vectors", "tl.dot needs two 2-D tiles", "c = tl.dot("),
    Case("dot_fp16_bf16", dot_fp16_bf16, lambda: [f16(16, 16), f16(16, 16).bfloat16(), torch.zeros(16, 16)],
         "tl.dot of fp16 x bf16", "same element type", "tl.dot(a, b))"),
    Case("dot_i8_into_float_acc", dot_i8_into_float_acc,
         lambda: [torch.ones(16, 32, dtype=torch.int8), torch.ones(32, 16, dtype=torch.int8), torch.zeros(16, 16)],
         "an int8 tl.dot accumulating into an fp32 acc", "accumulates in i32", "acc = tl.dot(a, b, acc)"),
    Case("dot_out_dtype_vs_acc", dot_out_dtype_vs_acc, lambda: [f16(16, 32), f16(32, 16), torch.zeros(16, 16)],
         "out_dtype=tl.float16 with an fp32 acc", "out_dtype", "acc = tl.dot(a, b, acc, out_dtype"),
    Case("dot_bf16_acc", dot_bf16_acc, lambda: [f16(16, 32), f16(32, 16), torch.zeros(16, 16)],
         "a bf16 accumulator", "accumulator", "acc = tl.dot(a, b, acc)"),
    Case("dot_input_precision_ieee", dot_input_precision_ieee,
         lambda: [sparse32(16, 32), f16(32, 16).float(), torch.zeros(16, 16)],
         "an fp32 (NV12) sparse dot asking for input_precision='ieee' (computed in tf32)",
         "input_precision='ieee' is not supported", "c = tl.dot(a, b, input_precision"),
    Case("dot_input_precision_typo", dot_input_precision_typo,
         lambda: [f16(16, 32), f16(32, 16), torch.zeros(16, 16)],
         "input_precision='fp32' (not one of Triton's)", "input_precision must be one of",
         "c = tl.dot(a, b, input_precision"),
    Case("dot_too_small", dot_too_small, lambda: [f16(8, 32), f16(32, 8), torch.zeros(8, 8)],
         "an 8x32 @ 32x8 tl.dot (Triton needs M, N, K >= 16)", "at least 16", "c = tl.dot(a, b)"),
    Case("sparse_added", sparse_added, lambda: [sparse16(16, 32), torch.zeros(16, 32)],
         "2:4-sparse tile added to a scalar", "cannot be used in '+'", "a + 1.0"),
    Case("sparse_stored", sparse_stored, lambda: [sparse16(16, 32), torch.zeros(16, 32)],
         "2:4-sparse tile stored to memory", "cannot be used in tl.store", "tl.store(C"),
    Case("sparse_reduced", sparse_reduced, lambda: [sparse16(16, 32), torch.zeros(16)],
         "2:4-sparse tile reduced with tl.sum", "cannot be used in tl.sum", "tl.sum(a, axis=1)"),
    Case("store_to_sparse_arg", store_to_sparse_arg, lambda: [sparse16(16, 32), f16(16, 32)],
         "tl.store into a SparseTensor argument", "cannot be used in tl.store", "tl.store(A"),
    Case("sparse_where", sparse_where, lambda: [sparse16(16, 32), torch.zeros(16, 32)],
         "2:4-sparse tile in tl.where", "cannot be used in tl.where", "tl.where("),
    Case("arange_not_pow2", arange_not_pow2, lambda: [torch.zeros(32, dtype=torch.int32)],
         "tl.arange(0, 24)", "must be a power of two", "r = tl.arange(0, 24)"),
    Case("huge_block", huge_block, lambda: [torch.zeros(16)], "a 16384x16384 tl.zeros tile",
         "1048576", "acc = tl.zeros((BLOCK, BLOCK)", {"BLOCK": 16384}),
    Case("huge_broadcast", huge_broadcast, lambda: [torch.zeros(16, dtype=torch.int32)],
         "a 16384x16384 tile made by broadcasting two aranges", "1048576", "grid2d = r[:, None] + r[None, :]",
         {"BLOCK": 16384}),
    Case("huge_block_ptr", huge_block_ptr, lambda: [torch.zeros(16)],
         "a 16384x16384 block pointer tile", "1048576", "p = tl.make_block_ptr(", {"BLOCK": 16384}),
    Case("mask_not_broadcastable", mask_not_broadcastable, lambda: [torch.zeros(32), 16],
         "a [32] mask for a [16] pointer", "the mask has shape [32]", "x = tl.load(X + r, mask=m"),
    Case("mask_grows_pointer", mask_grows_pointer, lambda: [torch.zeros(16), 16],
         "a [16, 16] mask for a [16] pointer (Triton broadcasts the mask to the pointer, never the pointer)",
         "mask", "x = tl.load(X + r, mask=m"),
    Case("other_grows_pointer", other_grows_pointer, lambda: [torch.zeros(16), 16],
         "a [16, 16] other for a [16] pointer", "cannot broadcast", "x = tl.load(X + r, mask=r < n"),
    Case("store_value_shape", store_value_shape, lambda: [torch.zeros(16)],
         "a [16, 16] value stored through a [16] pointer (each address written 16 times)",
         "stored value", "tl.store(X + r, v)"),
    Case("store_tensor_to_scalar_ptr", store_tensor_to_scalar_ptr, lambda: [torch.zeros(16)],
         "a [16] value stored through a scalar pointer (16 writes to one address)",
         "stored value", "tl.store(X, v)"),
    Case("store_mask_grows_pointer", store_mask_grows_pointer, lambda: [torch.zeros(16), 16],
         "a [16, 16] store mask for a [16] pointer", "mask", "tl.store(X + r, 1.0, mask="),
    Case("atomic_value_grows_pointer", atomic_value_grows_pointer, lambda: [torch.zeros(16)],
         "a [16, 16] value atomically added through a [16] pointer (each address added 16 times)",
         "added value", "tl.atomic_add(X + r"),
    Case("where_mismatch", where_mismatch, lambda: [torch.zeros(16, dtype=torch.int32)],
         "tl.where of [16] and [32]", "cannot be broadcast", "tl.where(r > 4, r, s)"),
    Case("loop_carried_shape_change", loop_carried_shape_change, lambda: [torch.zeros(16), 2],
         "a loop-carried accumulator that changes shape", "loop-carried 'acc'", "for _i in range(N)"),
    Case("program_id_3", program_id_3, lambda: [torch.zeros(16)], "tl.program_id(3)",
         "axis must be 0, 1 or 2", "pid = tl.program_id(3)"),
    Case("kernel_returns", kernel_returns, lambda: [torch.zeros(16)], "a kernel that returns a value",
         "cannot return a value", "return x + 1.0"),
    Case("block_from_runtime_int", block_from_runtime_int, lambda: [torch.zeros(16), 16],
         "tl.arange(0, n) with a runtime n", "compile-time integer", "r = tl.arange(0, n)"),
    Case("constexpr_is_tensor", constexpr_is_tensor, lambda: [torch.zeros(16)],
         "a torch tensor given for a tl.constexpr (truthiness taken at compile time)",
         "constexpr 'FLAG'", None, {"FLAG": torch.tensor([0])}),
    Case("constexpr_is_torch_dtype", constexpr_is_torch_dtype, lambda: [torch.zeros(16)],
         "torch.float16 given for a tl.constexpr compared with tl.float16 (never equal)",
         "constexpr 'DTYPE'", None, {"DTYPE": torch.float16}),
    Case("load_non_pointer", load_non_pointer, lambda: [torch.zeros(16), 3],
         "tl.load of an int argument", "tl.load needs a pointer", "x = tl.load(n)"),
    Case("load_bad_cache_modifier", load_bad_cache_modifier, lambda: [torch.zeros(16)],
         "tl.load(cache_modifier='.xyz')", "cache_modifier", "x = tl.load(X + r, cache_modifier"),
    Case("store_bad_eviction_policy", store_bad_eviction_policy, lambda: [torch.zeros(16)],
         "tl.store(eviction_policy='evict_sometimes')", "eviction_policy", "tl.store(X + r, 1.0, eviction"),
    Case("advance_wrong_rank", advance_wrong_rank, lambda: [torch.zeros(16, 16)],
         "tl.advance of a 2-D block pointer by one offset", "needs 2 offsets", "p = tl.advance(p, (16,))"),
    Case("block_ptr_order_length", block_ptr_order_length, lambda: [torch.zeros(16, 16)],
         "tl.make_block_ptr with order=(0,) for a 2-D block", "order has 1 entries", "p = tl.make_block_ptr("),
    Case("block_ptr_padding_on_int", block_ptr_padding_on_int, lambda: [torch.zeros(16, 16, dtype=torch.int32)],
         "padding_option='nan' on an int32 block", "nan", "tl.store(p, tl.load(p, boundary_check"),
    Case("maximum_of_pointers", maximum_of_pointers, lambda: [torch.zeros(16), torch.zeros(16)],
         "tl.maximum of two pointer tensors", "pointer", "p = tl.maximum(X + r, Y + r)"),
    Case("undefined_name", undefined_name, lambda: [torch.zeros(16)], "an undefined name",
         "name 'not_defined_anywhere' is not defined", "tl.store(X, not_defined_anywhere)"),
    Case("calls_python_function", calls_python_function, lambda: [torch.zeros(16)],
         "a call of a plain Python function", "cannot be used in a kernel", "tl.store(X + r, _not_jit(r))"),
    Case("five_d_tile", five_d_tile, lambda: [torch.zeros(16, dtype=torch.int32)],
         "a 5-D tile", "5-D", "t = r[:, None, None, None, None]"),
]

GPU_ONLY_CASES: list[Case] = [
    Case("fp64_tile", fp64_tile, lambda: [torch.zeros(16)], "fp64 math without a PTX instruction",
         "math.exp on f64: the GPU (PTX) lowering computes math in f32", "tl.store(X + r, tl.exp(x * 2.0))"),
    Case("dot_fp16_out", dot_fp16_out, lambda: [sparse16(16, 32), f16(32, 16), torch.zeros(16, 16).half()],
         "a sparse tl.dot with out_dtype=tl.float16", "not supported on the GPU", "c = tl.dot(a, b, out_dtype"),
    Case("big_gpu_tile", big_gpu_tile, lambda: [torch.zeros(512 * 512)],
         "a 512x512 fp32 tile at num_warps=4 (ptxas takes minutes)", "at most 512 per thread",
         "x = tl.load(X + r[:, None] * B", {"B": 512}),
]
"""Kernels the interpreter runs and the GPU path refuses, saying so at the line."""

LAUNCH_CASES: list[Case] = [
    Case("too_few_args", plain, lambda: [torch.zeros(16)], "a launch missing argument 'n'",
         "missing a required argument: 'n'", None, {"BLOCK": 16}),
    Case("too_many_args", plain, lambda: [torch.zeros(16), 16, 16, 3], "a launch with an extra argument",
         "too many positional arguments", None),
    Case("grid_rank_4", plain, lambda: [torch.zeros(16), 16], "a grid of rank 4", "grid must be a tuple of 1 to 3",
         None, {"BLOCK": 16}, grid=(1, 1, 1, 1)),
]
