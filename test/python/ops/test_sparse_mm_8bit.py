"""sparse_mm with int8 and fp8 (e4m3, e5m2) 2:4 operands: the interpreter (CI) and the H100.

int8 results must equal torch's exactly (integers; int32 sums); fp8 ones agree within the
rounding of the output dtype. Shapes are ragged, outputs poisoned, B row-major and column-major,
with and without rowwise scales; on the GPU the wgmma tiles (sm_90a) and the mma.sp tiles both
run, and a user's own `@jit` kernel with an 8-bit sparse operand compiles and runs too.
"""

from __future__ import annotations

import pytest
import torch

import sparsecc
import sparsecc.language as tl
from sparsecc.ops import MMConfig, sparse_mm

FP8 = (torch.float8_e4m3fn, torch.float8_e5m2)
DTYPES = (torch.int8, *FP8)


def _operands(dtype: torch.dtype, m: int, n: int, k: int, seed: int = 0):
    g = torch.Generator().manual_seed(seed * 1000 + m * 7 + n * 3 + k)
    if dtype == torch.int8:
        a = torch.randint(-128, 128, (m, k), generator=g, dtype=torch.int8)
        b = torch.randint(-128, 128, (k, n), generator=g, dtype=torch.int8)
    else:
        a = (torch.randn(m, k, generator=g) * 4).to(dtype)
        b = torch.randn(k, n, generator=g).to(dtype)
    return sparsecc.prune_2to4(a), b


def _check(d: torch.Tensor, ref: torch.Tensor, dtype: torch.dtype, exact: bool) -> None:
    d = d.double().cpu()
    if exact:
        assert torch.equal(d, ref), f"max error {(d - ref).abs().max().item()}"
        return
    # bf16 output: 8 bits of mantissa; the sums themselves are fp32
    tol = 2 ** -7 * ref.abs().max().item() + 1e-3
    err = (d - ref).abs().max().item()
    assert err <= tol, f"{dtype}: max error {err} > {tol}"


def _run(dtype, m, n, k, device, b_layout="row", scales=False, config=None):
    a, b = _operands(dtype, m, n, k)
    A = sparsecc.compress(a.to(device))
    B = b.to(device)
    if b_layout == "col":
        B = B.t().contiguous().t()
    ref = a.double() @ b.double()
    if scales:
        g = torch.Generator().manual_seed(m + n)
        sa, sb = torch.rand(m, generator=g) + 0.5, torch.rand(n, generator=g) + 0.5
        d = sparse_mm(A, B, torch.bfloat16, scale_a=sa.to(device), scale_b=sb.to(device), config=config)
        assert d.dtype == torch.bfloat16
        _check(d, ref * sa.double()[:, None] * sb.double()[None, :], dtype, exact=False)
        return
    out_dtype = torch.int32 if dtype == torch.int8 else torch.float32
    out = torch.full((m, n), -7, dtype=out_dtype, device=device)  # poisoned
    sparse_mm(A, B, out=out, config=config)
    _check(out, ref, dtype, exact=dtype == torch.int8)
    if dtype == torch.int8:
        assert torch.equal(sparse_mm(A, B).cpu().double(), ref)  # the default: int32, exact


SHAPES = [(16, 16, 64), (37, 23, 128), (70, 50, 96), (33, 8, 192)]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_interpreter(dtype, shape):
    _run(dtype, *shape, "cpu")


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_interpreter_scaled(dtype):
    _run(dtype, 45, 29, 128, "cpu", scales=True)


def test_defaults_and_errors():
    a, b = _operands(torch.int8, 32, 16, 64)
    A = sparsecc.compress(a)
    assert sparse_mm(A, b).dtype == torch.int32
    assert sparse_mm(A, b, scale_a=torch.ones(32)).dtype == torch.bfloat16
    with pytest.raises(TypeError, match="out_dtype must be one of"):
        sparse_mm(A, b, torch.int32, scale_a=torch.ones(32))
    with pytest.raises(TypeError, match="dtype mismatch"):
        sparse_mm(A, b.to(torch.float16))
    with pytest.raises(ValueError, match="scale_b must have 16 values"):
        sparse_mm(A, b, scale_b=torch.ones(15))
    f = sparsecc.compress(sparsecc.prune_2to4(torch.randn(32, 64, dtype=torch.float16)))
    with pytest.raises(TypeError, match="apply to int8 and fp8"):
        sparse_mm(f, torch.randn(64, 16, dtype=torch.float16), scale_a=torch.ones(32))
    fa, fb = _operands(torch.float8_e4m3fn, 32, 16, 64)
    assert sparse_mm(sparsecc.compress(fa), fb).dtype == torch.bfloat16


def test_fp8_needs_sm89():
    @sparsecc.jit
    def k(D, A, B, BLOCK: tl.constexpr):
        a = tl.load(tl.make_block_ptr(A, (BLOCK, BLOCK), (BLOCK, 1), (0, 0), (BLOCK, BLOCK), (1, 0)))
        b = tl.load(tl.make_block_ptr(B, (BLOCK, BLOCK), (1, BLOCK), (0, 0), (BLOCK, BLOCK), (0, 1)))
        tl.store(D + tl.arange(0, BLOCK)[:, None] * BLOCK + tl.arange(0, BLOCK)[None, :], tl.dot(a, b))

    sig = {"D": "*fp32", "A": "*fp8e4nv:NV24", "B": "*fp8e4nv"}
    with pytest.raises(sparsecc.CompilationError, match="needs sm_89 or newer") as e:
        sparsecc.compile(k, sig, {"BLOCK": 64}, target="sm_80")
    assert "tl.dot(a, b)" in str(e.value)
    ck = sparsecc.compile(k, sig, {"BLOCK": 64}, target="sm_89")
    assert "mma.sp::ordered_metadata.sync.aligned.m16n8k64.row.col.f32.e4m3.e4m3.f32" in ck.asm["ptx"]


@pytest.mark.parametrize("target,form", [("sm_90a", "wgmma.mma_async.sp"), ("sm_80", "mma.sp::ordered_metadata")])
def test_row_major_b_assembles(target, form):
    """issue 29: a row-major (N-contiguous) 8-bit B was refused; Triton accepts it. It is staged
    K-major in shared memory, transposed element by element on its way in."""
    @sparsecc.jit
    def k(D, A, B, BLOCK: tl.constexpr):
        a = tl.load(tl.make_block_ptr(A, (BLOCK, BLOCK), (BLOCK, 1), (0, 0), (BLOCK, BLOCK), (1, 0)))
        b = tl.load(tl.make_block_ptr(B, (BLOCK, BLOCK), (BLOCK, 1), (0, 0), (BLOCK, BLOCK), (1, 0)))
        tl.store(D + tl.arange(0, BLOCK)[:, None] * BLOCK + tl.arange(0, BLOCK)[None, :], tl.dot(a, b))

    ck = sparsecc.compile(k, {"D": "*i32", "A": "*i8:NV24", "B": "*i8"}, {"BLOCK": 64}, target=target)
    assert form in ck.asm["ptx"] and "st.shared.b8" in ck.asm["ptx"] and ck.asm["cubin"]


@pytest.mark.parametrize("t,form", [("s8", "m64n128k64.s32.s8.s8"), ("e4m3", "m64n128k64.f32.e4m3.e4m3"),
                                    ("e5m2", "m64n128k64.f32.e5m2.e5m2")])
def test_wgmma_forms_assemble(t, form):
    """The sm_90a kernels of each 8-bit type assemble (ptxas runs in CI) and use wgmma."""
    name = {"s8": "i8", "e4m3": "fp8e4nv", "e5m2": "fp8e5"}[t]
    from sparsecc.ops.sparse_mm_8bit import scaled_sparse_mm_kernel

    sig = {"D": "*i32" if t == "s8" else "*bf16", "A": f"*{name}:NV24", "B": f"*{name}", "SCALE_A": "*fp32",
           "SCALE_B": "*fp32", "M": "i32", "N": "i32", "K": "i32", "stride_am": "i32:16", "stride_bk": "i32",
           "stride_bn": "i32:16", "stride_dm": "i32:16", "stride_dn": "i32"}
    ck = sparsecc.compile(scaled_sparse_mm_kernel, sig, {
        "BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 128, "GROUP_M": 8, "B_KMAJOR": True, "ACC_INT": t == "s8",
        "ROW_SCALE": t != "s8", "COL_SCALE": t != "s8"}, target="sm_90a", num_warps=4)
    assert f"wgmma.mma_async.sp.sync.aligned.{form}" in ck.asm["ptx"]
    assert len(ck.asm["cubin"]) > 0


GPU_SHAPES = [(128, 128, 256), (300, 520, 384), (33, 8, 192), (256, 16, 1024), (1000, 272, 640)]
GPU_CONFIGS = [None, MMConfig(128, 128, 128, num_warps=4, num_stages=3), MMConfig(64, 64, 64, num_warps=4, num_stages=2),
               MMConfig(32, 16, 256, num_warps=4, num_stages=4), MMConfig(128, 256, 128, num_warps=8, num_stages=4),
               MMConfig(256, 128, 256, num_warps=8, num_stages=3)]  # K-major B in two 128-byte column blocks


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", GPU_SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("b_layout", ["row", "col"])
def test_gpu(dtype, shape, b_layout):
    _run(dtype, *shape, "cuda", b_layout=b_layout)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("config", GPU_CONFIGS, ids=str)
def test_gpu_configs_scaled(dtype, config):
    _run(dtype, 300, 200, 512, "cuda", b_layout="col", scales=True, config=config)
    _run(dtype, 300, 200, 512, "cuda", b_layout="col", config=config)


def _op_case(dtype, device):
    from sparsecc.nn.torch_ops import sparse_mm_op

    a, b = _operands(dtype, 40, 24, 128, seed=3)
    A = sparsecc.compress(a.to(device))
    g = torch.Generator().manual_seed(5)
    sa, sb = (torch.rand(40, generator=g) + 0.5).to(device), (torch.rand(24, generator=g) + 0.5).to(device)
    ref = a.double() @ b.double()
    bb = b.to(device).t().contiguous().t()
    if dtype == torch.int8:
        d = sparse_mm_op(A.values, A.meta, 128, bb)
        assert d.dtype == torch.int32 and torch.equal(d.cpu().double(), ref)
    d = sparse_mm_op(A.values, A.meta, 128, bb, sa, sb)
    assert d.dtype == torch.bfloat16
    _check(d, ref * sa.double().cpu()[:, None] * sb.double().cpu()[None, :], dtype, exact=False)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_torch_op_cpu(dtype):
    _op_case(dtype, "cpu")


def test_torch_op_compiles_with_scales():
    from sparsecc.nn.torch_ops import sparse_mm_op

    a, b = _operands(torch.float8_e4m3fn, 32, 16, 64)
    A = sparsecc.compress(a)
    sa, sb = torch.rand(32) + 0.5, torch.rand(16) + 0.5

    def f(b, sa, sb):
        return sparse_mm_op(A.values, A.meta, 64, b, sa, sb).float() * 2

    ref = (a.double() @ b.double() * sa.double()[:, None] * sb.double()[None, :] * 2)
    _check(torch.compile(f, fullgraph=True, backend="aot_eager")(b, sa, sb), ref, torch.float8_e4m3fn, exact=False)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_torch_op_gpu(dtype):
    _op_case(dtype, "cuda")


@sparsecc.jit
def user_linear_8bit(Y, X, W, SX, SW, M, N, K, stride_xm, stride_wn, stride_ym,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, INT: tl.constexpr):
    # a user's rowwise-scaled `y = (x @ W.T) * sx[:, None] * sw[None, :]`, W 2:4 sparse on the
    # right of tl.dot, written with tensors of pointers as a Triton user would
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    x_ptrs = X + rm[:, None] * stride_xm + rk[None, :]
    w_ptrs = W + rk[:, None] + rn[None, :] * stride_wn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.int32 if INT else tl.float32)
    for k in range(0, K, BLOCK_K):
        x = tl.load(x_ptrs, mask=(rm[:, None] < M) & (rk[None, :] + k < K), other=0)
        w = tl.load(w_ptrs, mask=(rk[:, None] + k < K) & (rn[None, :] < N), other=0)
        acc = tl.dot(x, w, acc)
        x_ptrs += BLOCK_K
        w_ptrs += BLOCK_K
    sx = tl.load(SX + rm, mask=rm < M, other=0.0)
    sw = tl.load(SW + rn, mask=rn < N, other=0.0)
    y = acc.to(tl.float32) * sx[:, None] * sw[None, :]
    tl.store(Y + rm[:, None] * stride_ym + rn[None, :], y.to(Y.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))


def _user_case(dtype, m, n, k, device, tiles=(64, 64, 128), num_warps=4):
    g = torch.Generator().manual_seed(m + n + k)
    if dtype == torch.int8:
        x = torch.randint(-128, 128, (m, k), generator=g, dtype=torch.int8)
        w = sparsecc.prune_2to4(torch.randint(-128, 128, (n, k), generator=g, dtype=torch.int8))
    else:
        x = torch.randn(m, k, generator=g).to(dtype)
        w = sparsecc.prune_2to4((torch.randn(n, k, generator=g) * 4).to(dtype))
    sx, sw = torch.rand(m, generator=g) + 0.5, torch.rand(n, generator=g) + 0.5
    y = torch.full((m, n), float("nan"), dtype=torch.bfloat16, device=device)
    W = sparsecc.compress(w.to(device))
    bm, bn, bk = tiles
    user_linear_8bit[(-(-m // bm), -(-n // bn))](
        y, x.to(device), W, sx.to(device), sw.to(device), m, n, k, k, k, n,
        BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, INT=dtype == torch.int8, num_warps=num_warps)
    ref = x.double() @ w.double().t() * sx.double()[:, None] * sw.double()[None, :]
    _check(y, ref, dtype, exact=False)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_user_kernel_interpreter(dtype):
    _user_case(dtype, 37, 48, 128, "cpu", tiles=(32, 32, 64))


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape,tiles,warps", [((200, 300, 512), (64, 64, 128), 4), ((16, 1000, 1024), (16, 32, 256), 4),
                                               ((300, 520, 384), (128, 128, 64), 8)])
def test_user_kernel_gpu(dtype, shape, tiles, warps):
    _user_case(dtype, *shape, "cuda", tiles=tiles, num_warps=warps)


@pytest.mark.parametrize("dt,fmt,bk,target,sass_op", [
    ("fp8e4nv", "NV24", 256, "sm_90a", "QGMMA.SP.64x128x64.F32.E4M3.E4M3"),
    ("fp8e5", "NV24", 128, "sm_89", "QMMA.SP.16864.F32.E5M2.E5M2"),
    ("i8", "NV24", 256, "sm_90a", "IGMMA.SP.64x128x64.S8.S8"),
    ("i8", "NV24", 128, "sm_80", "IMMA.SP.16864.S8.S8"),
    ("fp32", "NV12", 64, "sm_90a", "HGMMA.SP.64x128x16.F32.TF32"),
    ("fp32", "NV12", 32, "sm_80", "HMMA.SP.16816.F32.TF32"),
])
def test_sass_of_each_form(dt, fmt, bk, target, sass_op):
    """Each new instruction form reaches the SASS the hardware runs (ptxas and cuobjdump in CI),
    and only that sparse MMA form."""
    import re

    from sparsecc.codegen import ptxas
    from sparsecc.ops.sparse_mm_8bit import scaled_sparse_mm_kernel

    out = {"i8": "*i32", "fp32": "*fp32"}.get(dt, "*bf16")
    sig = {"D": out, "A": f"*{dt}:{fmt}", "B": f"*{dt}", "SCALE_A": "*fp32", "SCALE_B": "*fp32", "M": "i32",
           "N": "i32", "K": "i32", "stride_am": "i32:16", "stride_bk": "i32:1", "stride_bn": "i32:16",
           "stride_dm": "i32:16", "stride_dn": "i32:1"}
    ck = sparsecc.compile(scaled_sparse_mm_kernel, sig, {
        "BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": bk, "GROUP_M": 8, "B_KMAJOR": True, "ACC_INT": dt == "i8",
        "ROW_SCALE": False, "COL_SCALE": False}, target=target, num_warps=4)
    try:
        sass = ptxas.dump_sass(ptxas.assemble(ck.asm["ptx"], target))
    except ptxas.ToolNotFoundError as e:
        pytest.skip(f"no ptxas/cuobjdump: {e}")
    assert set(re.findall(r"\b([A-Z]*MMA\.SP[A-Z0-9.x]*)", sass)) == {sass_op}
