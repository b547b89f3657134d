"""Triton's shape ops (join/split/interleave, permute/trans/.T, cat, reshape/view/ravel,
broadcast/broadcast_to, expand_dims and the tensor methods) in real-style kernels: on the
interpreter against torch (random data, ragged shapes), compiled for sm_90a and sm_80 (ptxas),
with no shared memory where the op only renames registers, and on the GPU against torch and
against the interpreter. Bad uses are one located error."""

from __future__ import annotations

import re

import pytest
import shape_kernels as K
import torch

import sparsecc
import sparsecc.language as tl
from sparsecc.frontend.errors import CompilationError

TARGETS = ["sm_90a", "sm_80"]


def _nan(*shape, device="cpu", dtype=torch.float32):
    return torch.full(shape, float("nan"), device=device, dtype=dtype)


def _randn(*shape, device="cpu", dtype=torch.float32):
    """Random data made on the CPU (the same on either device for one seed)."""
    return torch.randn(*shape, dtype=dtype).to(device)


# --------------------------------------------------------------------------------------
# The runs, on either device (each returns (got, want))
# --------------------------------------------------------------------------------------


def run_complex(device: str, n: int = 300):
    z = _randn(n, dtype=torch.complex64, device=device)
    w = _randn(n, dtype=torch.complex64, device=device)
    out = _nan(n, 2, device=device)
    K.complex_mul_kernel[(triton_cdiv(n, 128),)](torch.view_as_real(z), torch.view_as_real(w), out, n, BLOCK=128)
    return out, torch.view_as_real(z * w)


def run_rope(device: str, seq: int = 37, half: int = 32):
    x = _randn(seq, 2 * half, device=device)
    theta = torch.rand(seq, half).to(device) * 6.28
    cos, sin = torch.cos(theta), torch.sin(theta)
    out = _nan(seq, 2 * half, device=device)
    K.rope_kernel[(seq,)](x, cos, sin, out, seq, x.stride(0), HALF=half)
    xc = torch.view_as_complex(x.view(seq, half, 2))
    want = torch.view_as_real(xc * torch.polar(torch.ones_like(theta), theta)).reshape(seq, 2 * half)
    return out, want


def run_transpose(device: str, m: int = 70, n: int = 45):
    x = _randn(m, n, device=device)
    y = _nan(n, m, device=device)
    K.transpose_kernel[(triton_cdiv(m, 32), triton_cdiv(n, 32))](x, y, m, n, x.stride(0), y.stride(0),
                                                                  BLOCK_M=32, BLOCK_N=32)
    return y, x.T


def run_permute3(device: str, perm=(2, 0, 1), shape=(4, 8, 16)):
    x = _randn(*shape, device=device)
    want = x.permute(*perm).contiguous()
    y = _nan(*want.shape, device=device)
    K.permute3_kernel[(1,)](x, y, A=shape[0], B=shape[1], C=shape[2], P0=perm[0], P1=perm[1], P2=perm[2])
    return y, want


def run_batched_trans(device: str, shape=(2, 16, 32)):
    x = _randn(*shape, device=device)
    y = _nan(shape[0], shape[2], shape[1], device=device)
    K.batched_trans_kernel[(1,)](x, y, A=shape[0], B=shape[1], C=shape[2])
    return y, x.transpose(1, 2)


def run_cat(device: str, dim: int, m: int = 13, n: int = 27):
    x = _randn(m, n, device=device)
    y = _randn(m, n, device=device)
    out = _nan(*((2 * m, n) if dim == 0 else (m, 2 * n)), device=device)
    K.cat_kernel[(1,)](x, y, out, m, n, M_BLOCK=16, N_BLOCK=32, DIM=dim)
    return out, torch.cat((x, y), dim)


def run_cat1d(device: str):
    x, y = _randn(256, device=device), _randn(256, device=device)
    out = _nan(512, device=device)
    K.cat1d_kernel[(1,)](x, y, out, BLOCK=256)
    return out, torch.cat((x, y))


def run_join_split3(device: str, a: int = 16, b: int = 32):
    x = _randn(a, b, device=device, dtype=torch.float16)
    y = _randn(a, b, device=device, dtype=torch.float16)
    out = _nan(a, 2 * b, device=device, dtype=torch.float16)
    s = _nan(a, b, device=device, dtype=torch.float16)
    K.join_split3_kernel[(1,)](x, y, out, s, A=a, B=b)
    got = torch.cat((out.flatten(), s.flatten()))
    want = torch.cat((torch.stack((y * 2, x), -1).reshape(a, 2 * b).flatten(), (x + y).flatten()))
    return got, want


def run_views(device: str, block: int = 16):
    x = _randn(block, block, device=device)
    out = _nan(4 * block * block, device=device)
    K.views_kernel[(1,)](x, out, BLOCK=block)
    col = x.sum(1, keepdim=True)
    row = x.max(0, keepdim=True).values
    want = torch.cat(((x * 2).flatten(), col.expand(block, block).flatten(), (col - row).flatten(),
                      (x + x).flatten()))
    return out, want


def run_mask_interleave(device: str, n: int = 37):
    x = _randn(128, device=device)
    out = _nan(128, device=device)
    K.mask_interleave_kernel[(1,)](x, out, n, BLOCK=64)
    keep = torch.arange(128, device=device) // 2 < n
    return out, torch.where(keep, x, -1.0)


def run_scalar_join(device: str):
    x = _randn(2, device=device)
    out = _nan(3, device=device)
    K.scalar_join_kernel[(1,)](x, out)
    return out, torch.stack((x[0], x[1] * 3, x[0] + x[1] * 3))


def run_methods(device: str, m: int = 8, n: int = 16):
    x = _randn(m, n, device=device)
    out = _nan(6 * m * n, device=device)
    K.methods_kernel[(1,)](x, out, M=m, N=n)
    q = x.reshape(2, m // 2, n // 2, 2).permute(3, 1, 0, 2)
    want = torch.cat((x.T.flatten(), x.T.flatten(), (2 * x).flatten(), q.flatten(), x.flatten(),
                      torch.cat((x, 3 * x), -1).flatten()[m * n:]))
    return out, want


RUNS = {
    "complex": run_complex,
    "rope": run_rope,
    "transpose": run_transpose,
    "permute3-201": run_permute3,
    "permute3-102": lambda d: run_permute3(d, (1, 0, 2), (8, 4, 16)),
    "permute3-021": lambda d: run_permute3(d, (0, 2, 1), (2, 32, 8)),
    "batched-trans": run_batched_trans,
    "cat-dim0": lambda d: run_cat(d, 0),
    "cat-dim1": lambda d: run_cat(d, 1),
    "cat-1d-can-reorder": run_cat1d,
    "join-split-rank3": run_join_split3,
    "views": run_views,
    "mask-interleave": run_mask_interleave,
    "scalar-join": run_scalar_join,
    "methods": run_methods,
}
"""The cases, by name; `TOL` has the few that need more than exact equality."""

TOL = {"complex": 1e-5, "rope": 1e-5, "views": 1e-5, "methods": 1e-6}


def triton_cdiv(x: int, y: int) -> int:
    return (x + y - 1) // y


def _check(name: str, got: torch.Tensor, want: torch.Tensor) -> None:
    tol = TOL.get(name, 0.0)
    torch.testing.assert_close(got.float().cpu(), want.float().cpu(), rtol=tol, atol=tol)


@pytest.mark.parametrize("name", sorted(RUNS))
def test_on_the_interpreter(name, monkeypatch):
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    torch.manual_seed(0)
    got, want = RUNS[name]("cpu")
    _check(name, got, want)


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(RUNS))
def test_on_the_gpu_against_torch_and_the_interpreter(name, monkeypatch):
    torch.manual_seed(1)
    got, want = RUNS[name]("cuda")
    _check(name, got, want)
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")  # the same inputs on the interpreter
    torch.manual_seed(1)
    cpu, _ = RUNS[name]("cpu")
    _check(name, got, cpu)


DTYPES = [torch.int8, torch.float16, torch.bfloat16, torch.float32, torch.int64]


def run_permute_dtypes(device: str, dtype: torch.dtype, shape=(4, 8, 16), n: int = 301):
    a, b, c = shape
    x = (torch.randn(*shape) * 50).to(dtype).to(device)
    y = torch.zeros(b, c, a, dtype=dtype, device=device) + 7
    out = torch.zeros(a, b, 2 * c, dtype=dtype, device=device) + 7
    K.permute_dtypes_kernel[(1,)](x, y, out, n, A=a, B=b, C=c)
    keep = (torch.arange(a * b * c, device=device).reshape(shape) < n).permute(1, 2, 0)
    want_y = torch.where(keep, x.permute(1, 2, 0), torch.full_like(y, 7))
    want_out = torch.stack((x, x), -1).reshape(a, b, 2 * c)
    return torch.cat((y.flatten(), out.flatten())), torch.cat((want_y.flatten(), want_out.flatten()))


@pytest.mark.parametrize("shape", [(4, 8, 16), (2, 2, 64), (8, 32, 4)])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_permute_and_interleave_dtypes_on_the_interpreter(dtype, shape, monkeypatch):
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    torch.manual_seed(2)
    got, want = run_permute_dtypes("cpu", dtype, shape)
    assert torch.equal(got, want)


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(4, 8, 16), (2, 2, 64), (8, 32, 4)])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_permute_and_interleave_dtypes_on_the_gpu(dtype, shape):
    torch.manual_seed(2)
    got, want = run_permute_dtypes("cuda", dtype, shape)
    assert torch.equal(got.cpu(), want.cpu())


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", ["i8", "fp16", "bf16", "fp32", "i64", "fp8e4nv"])
def test_shuffles_of_every_width_assemble(dtype, target):
    """The shared-memory shuffle (incl. an i1 mask, stored as i16) for 1-, 2-, 4- and 8-byte elements."""
    if dtype == "fp8e4nv" and target == "sm_80":
        pytest.skip("fp8 needs sm_89+")
    sig = {"X": f"*{dtype}", "Y": f"*{dtype}", "OUT": f"*{dtype}", "n": "i32"}
    for shape in ((4, 8, 16), (8, 32, 4)):
        ck = sparsecc.compile(K.permute_dtypes_kernel, sig, dict(zip("ABC", shape)), target=target, num_warps=4)
        assert isinstance(ck.asm["cubin"], bytes) and "st.shared" in ck.asm["ptx"]


# --------------------------------------------------------------------------------------
# Compiled for both targets; which ops are free
# --------------------------------------------------------------------------------------

SIGS = {
    "complex": (K.complex_mul_kernel, {"Z": "*fp32", "W": "*fp32", "OUT": "*fp32", "n": "i32"}, {"BLOCK": 128}),
    "rope": (K.rope_kernel, {"X": "*fp32", "COS": "*fp32", "SIN": "*fp32", "OUT": "*fp32", "seq_len": "i32",
                             "stride_row": "i32"}, {"HALF": 32}),
    "rope-fp16": (K.rope_kernel, {"X": "*fp16", "COS": "*fp16", "SIN": "*fp16", "OUT": "*fp16", "seq_len": "i32",
                                  "stride_row": "i32"}, {"HALF": 64}),
    "transpose": (K.transpose_kernel, {"X": "*fp32", "Y": "*fp32", "M": "i32", "N": "i32", "stride_xm": "i32",
                                       "stride_ym": "i32"}, {"BLOCK_M": 32, "BLOCK_N": 32}),
    "permute3": (K.permute3_kernel, {"X": "*fp32", "Y": "*fp32"},
                 {"A": 4, "B": 8, "C": 16, "P0": 2, "P1": 0, "P2": 1}),
    "batched-trans": (K.batched_trans_kernel, {"X": "*fp16", "Y": "*fp16"}, {"A": 2, "B": 16, "C": 32}),
    "cat-dim0": (K.cat_kernel, {"X": "*fp32", "Y": "*fp32", "OUT": "*fp32", "M": "i32", "N": "i32"},
                 {"M_BLOCK": 16, "N_BLOCK": 32, "DIM": 0}),
    "cat-dim1": (K.cat_kernel, {"X": "*fp32", "Y": "*fp32", "OUT": "*fp32", "M": "i32", "N": "i32"},
                 {"M_BLOCK": 16, "N_BLOCK": 32, "DIM": 1}),
    "join-split-rank3": (K.join_split3_kernel, {"X": "*fp16", "Y": "*fp16", "OUT": "*fp16", "SUM": "*fp16"},
                         {"A": 16, "B": 32}),
    "views": (K.views_kernel, {"X": "*fp32", "OUT": "*fp32"}, {"BLOCK": 16}),
    "mask-interleave": (K.mask_interleave_kernel, {"X": "*fp32", "OUT": "*fp32", "n": "i32"}, {"BLOCK": 64}),
    "scalar-join": (K.scalar_join_kernel, {"X": "*fp32", "OUT": "*fp32"}, {}),
    "methods": (K.methods_kernel, {"X": "*fp32", "OUT": "*fp32"}, {"M": 8, "N": 16}),
}

FREE = {"complex", "rope", "rope-fp16", "cat-dim0", "cat-dim1", "mask-interleave"}
"""Kernels whose shape ops all rename registers: their PTX has no shared memory at all."""


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", sorted(SIGS))
def test_assembles(name, target):
    kernel, sig, consts = SIGS[name]
    ck = sparsecc.compile(kernel, sig, consts, target=target, num_warps=4)
    assert isinstance(ck.asm["cubin"], bytes) and ck.asm["cubin"]
    ptx = ck.asm["ptx"]
    if name in FREE:
        assert "st.shared" not in ptx and "ld.shared" not in ptx and "bar.sync" not in ptx
        assert not re.search(r"\.shared", ptx)


def test_permute_goes_through_shared_memory_vectorized():
    """(4, 8, 16) -> (16, 4, 8): stored with 16-byte vectors along the source's contiguous dim."""
    kernel, sig, consts = SIGS["permute3"]
    ptx = sparsecc.compile(kernel, sig, consts, target="sm_80", num_warps=4).asm["ptx"]
    assert "st.shared.v4.f32" in ptx or "st.shared.v4.b32" in ptx
    assert "bar.sync" in ptx


# --------------------------------------------------------------------------------------
# Bad uses: one located error each
# --------------------------------------------------------------------------------------


@sparsecc.jit
def _bad_permute(X):
    x = tl.load(X + tl.arange(0, 8)[:, None] * 4 + tl.arange(0, 4)[None, :])
    tl.store(X + tl.arange(0, 32), tl.ravel(tl.permute(x, (0, 0))))


@sparsecc.jit
def _bad_split(X):
    x = tl.load(X + tl.arange(0, 8)[:, None] * 4 + tl.arange(0, 4)[None, :])
    a, b = tl.split(x)
    tl.store(X + tl.arange(0, 8), a + b)


@sparsecc.jit
def _bad_reshape(X):
    x = tl.load(X + tl.arange(0, 24 // 3 * 4))
    tl.store(X + tl.arange(0, 32), tl.reshape(x, (3, 8)).ravel())


@sparsecc.jit
def _bad_reshape_count(X):
    x = tl.load(X + tl.arange(0, 32))
    tl.store(X + tl.arange(0, 32), x.reshape(4, 4).ravel())


@sparsecc.jit
def _bad_cat_shapes(X):
    x = tl.load(X + tl.arange(0, 32))
    y = tl.load(X + tl.arange(0, 16))
    tl.store(X + tl.arange(0, 64), tl.cat(x, y, can_reorder=True))


@sparsecc.jit
def _bad_cat_reorder_2d(X):
    x = tl.load(X + tl.arange(0, 8)[:, None] * 4 + tl.arange(0, 4)[None, :])
    tl.store(X + tl.arange(0, 64), tl.ravel(tl.cat(x, x, can_reorder=True)))


@sparsecc.jit
def _bad_trans_1d(X):
    x = tl.load(X + tl.arange(0, 32))
    tl.store(X + tl.arange(0, 32), x.T)


@sparsecc.jit
def _bad_expand_dims(X):
    x = tl.load(X + tl.arange(0, 32))
    tl.store(X + tl.arange(0, 32), tl.ravel(tl.expand_dims(x, (1, -2))))


@sparsecc.jit
def _bad_broadcast_to(X):
    x = tl.load(X + tl.arange(0, 32))
    tl.store(X + tl.arange(0, 32), tl.ravel(tl.broadcast_to(x[:, None], (32, 6))))


@sparsecc.jit
def _bad_join_dtypes(X, Y):
    x = tl.load(X + tl.arange(0, 32))
    y = tl.load(Y + tl.arange(0, 32))
    tl.store(X + tl.arange(0, 64), tl.ravel(tl.join(x, y)))


@sparsecc.jit
def _bad_method(X):
    x = tl.load(X + tl.arange(0, 32))
    tl.store(X + tl.arange(0, 32), x.frobnicate())


BAD = [
    (_bad_permute, "dims must be a permutation of 0..1, got [0, 0]", "tl.permute(x, (0, 0))"),
    (_bad_split, "tl.split splits a last dim of size 2", "tl.split(x)"),
    (_bad_reshape, "dimensions must be powers of two, got [3, 8]", "tl.reshape(x, (3, 8))"),
    (_bad_reshape_count, "[32] has 32 elements, [4, 4] has 16", "x.reshape(4, 4)"),
    (_bad_cat_shapes, "tl.cat needs tensors of the same shape", "tl.cat(x, y, can_reorder=True)"),
    (_bad_cat_reorder_2d, "can_reorder=True) concatenates 1-D tensors", "tl.cat(x, x, can_reorder=True)"),
    (_bad_trans_1d, "fewer than two", "x.T"),
    (_bad_expand_dims, "duplicate axes [1, 1]", "tl.expand_dims(x, (1, -2))"),
    (_bad_broadcast_to, "powers of two, got [32, 6]", "tl.broadcast_to(x[:, None], (32, 6))"),
    (_bad_join_dtypes, "tl.join needs operands of one dtype, got fp32 and i32", "tl.join(x, y)"),
    (_bad_method, "a tensor has no attribute 'frobnicate'", "x.frobnicate"),
]


@pytest.mark.parametrize("kernel, message, where", BAD, ids=[b[0].__name__ if hasattr(b[0], "__name__") else str(i)
                                                             for i, b in enumerate(BAD)])
def test_bad_use_is_one_located_error(kernel, message, where, monkeypatch):
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    args = [torch.zeros(64)]
    if kernel is _bad_join_dtypes:
        args.append(torch.zeros(64, dtype=torch.int32))
    with pytest.raises(CompilationError) as info:
        kernel[(1,)](*args)
    text = str(info.value)
    assert message in text, text
    assert re.search(r"test_shape_ops\.py:\d+:\d+: error:", text), text
    assert where in text and "Traceback" not in text
