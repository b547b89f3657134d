"""sparse_mm and a user-written sparse GEMM against torch.mm; the GPU launcher's checks and speed.

Tests marked `gpu` need an sm_80+ GPU and cuda-python (conftest.py skips them otherwise). The
unmarked ones run everywhere: input validation, the launcher's argument checks (with a stand-in
driver), the contiguity analysis, and sparse_mm's kernel through the CPU interpreter.
"""

from __future__ import annotations

import importlib.util
import math
import sys
import time
import types

import pytest
import torch

import sparsecc
import sparsecc.language as tl
from sparsecc.ops import sparse_mm
from sparsecc.ops.sparse_mm import MMConfig, sparse_mm_kernel
from sparsecc.runtime import launcher

HAVE_INTERPRETER = importlib.util.find_spec("sparsecc.runtime.interpreter") is not None
HAVE_DECOMPOSE = importlib.util.find_spec("sparsecc.passes.decompose_sparse_tensors") is not None

EPS = {torch.float16: 2.0**-10, torch.bfloat16: 2.0**-7, torch.float32: 2.0**-20}


@sparsecc.jit
def user_gemm(D, A, B, M, N, K, stride_am, stride_bk, stride_dm,
              BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """A plain 2-D-grid sparse GEMM as a user would write it (no tile grouping)."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    a_ptr = tl.make_block_ptr(A, shape=(M, K), strides=(stride_am, 1), offsets=(pid_m * BLOCK_M, 0),
                              block_shape=(BLOCK_M, BLOCK_K), order=(1, 0))
    b_ptr = tl.make_block_ptr(B, shape=(K, N), strides=(stride_bk, 1), offsets=(0, pid_n * BLOCK_N),
                              block_shape=(BLOCK_K, BLOCK_N), order=(1, 0))
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for _ in range(0, tl.cdiv(K, BLOCK_K)):
        acc = tl.dot(tl.load(a_ptr, boundary_check=(0, 1)), tl.load(b_ptr, boundary_check=(0, 1)), acc)
        a_ptr = tl.advance(a_ptr, (0, BLOCK_K))
        b_ptr = tl.advance(b_ptr, (BLOCK_K, 0))
    d_ptr = tl.make_block_ptr(D, shape=(M, N), strides=(stride_dm, 1),
                              offsets=(pid_m * BLOCK_M, pid_n * BLOCK_N),
                              block_shape=(BLOCK_M, BLOCK_N), order=(1, 0))
    tl.store(d_ptr, acc.to(D.dtype.element_ty), boundary_check=(0, 1))


@sparsecc.jit
def add_one(X, n, BLOCK: tl.constexpr):
    """X += 1 through a block pointer with a constant stride: assumes X contiguous."""
    p = tl.make_block_ptr(X, shape=(n,), strides=(1,), offsets=(tl.program_id(0) * BLOCK,),
                          block_shape=(BLOCK,), order=(0,))
    tl.store(p, tl.load(p, boundary_check=(0,)) + 1.0, boundary_check=(0,))


@sparsecc.jit
def add_one_masked(X, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(X + offs, tl.load(X + offs, mask=mask, other=0.0) + 1.0, mask=mask)


def run_user_gemm(a, b, d, bm=64, bn=64, bk=64, num_warps=4, num_stages=3):
    m, k = a.shape
    n = b.shape[1]
    grid = (triton_cdiv(m, bm), triton_cdiv(n, bn))
    user_gemm[grid](d, a, b, m, n, k, a.stride(0), b.stride(0), d.stride(0),
                    BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, num_warps=num_warps, num_stages=num_stages)


def triton_cdiv(x: int, y: int) -> int:
    return -(-x // y)


def make_operands(m, n, k, dtype, device, seed):
    gen = torch.Generator().manual_seed(seed)
    dense = sparsecc.prune_2to4(torch.randn(m, k, generator=gen).to(dtype)).to(device)
    b = torch.randn(k, n, generator=gen).to(dtype).to(device)
    return dense, sparsecc.compress(dense), b


def assert_close_to_torch(out, dense, b, k):
    """Within a few output ulps of torch.mm(A_dense, B); the absolute term grows like sqrt(K)."""
    ref = torch.mm(dense, b).float()
    got = out.float()
    assert not torch.isnan(got).any(), f"{int(torch.isnan(got).sum())} NaN outputs (unwritten?)"
    eps = EPS[b.dtype]  # torch.mm rounds to the input dtype even when `out` is fp32
    tol = 2 * eps * math.sqrt(k) + 2 * eps * ref.abs()
    bad = (got - ref).abs() > tol
    assert not bad.any(), (f"{int(bad.sum())}/{bad.numel()} mismatches; max |err| "
                           f"{(got - ref).abs().max().item():.4g}")


def sparse_mm_mismatch(a, b, dense, ref_b, k, config=None) -> str | None:
    """sparse_mm(a, b) into a NaN-poisoned `out`: None when it matches torch.mm(dense, ref_b)
    (assert_close_to_torch), else that assertion's message."""
    out = torch.full((dense.shape[0], b.shape[1]), float("nan"), dtype=b.dtype, device=b.device)
    try:
        sparse_mm(a, b, out=out, config=config)
        torch.cuda.synchronize()
        assert_close_to_torch(out, dense, ref_b, k)
    except AssertionError as e:
        return str(e)
    return None


# ---- everywhere: validation ---------------------------------------------------------------

def test_sparse_mm_rejects_bad_inputs():
    dense, a, b = make_operands(32, 16, 64, torch.float16, "cpu", 0)
    with pytest.raises(ValueError, match=r"shape mismatch: A is 32x64 but B is 48x16"):
        sparse_mm(a, torch.zeros(48, 16, dtype=torch.float16))
    with pytest.raises(TypeError, match="dtype mismatch: A is torch.float16 but B is torch.bfloat16"):
        sparse_mm(a, b.to(torch.bfloat16))
    with pytest.raises(ValueError, match="device mismatch: A is on cpu but B is on meta"):
        sparse_mm(a, torch.empty(64, 16, dtype=torch.float16, device="meta"))
    with pytest.raises(TypeError, match="A must be a sparsecc.SparseTensor"):
        sparse_mm(dense, b)
    with pytest.raises(TypeError, match=r"quantized \(NV24.w4g64\) .*use sparsecc.ops.sparse_linear"):
        sparse_mm(sparsecc.compress(dense, quant="w4g64"), b)
    with pytest.raises(ValueError, match=r"B must be 2-D"):
        sparse_mm(a, b.reshape(-1))
    with pytest.raises(TypeError, match="out_dtype must be one of"):
        sparse_mm(a, b, out_dtype=torch.int32)
    with pytest.raises(ValueError, match=r"out has shape \(16, 16\), expected \(32, 16\)"):
        sparse_mm(a, b, out=torch.empty(16, 16, dtype=torch.float16))
    with pytest.raises(ValueError, match="needs BLOCK_M and BLOCK_N multiples of 16"):
        sparse_mm(a, b, config=MMConfig(24, 32, 32))


def fake_compiled(kinds, names, cubin=b"\x7fELF-fake", **meta):
    return types.SimpleNamespace(
        name="kern", asm={"cubin": cubin}, metadata={"name": "kern", "num_warps": 4, **meta},
        flat_signature=kinds, flat_arg_names=names, module=None, target="sm_90", num_warps=4)


@pytest.fixture
def fake_driver(monkeypatch):
    """A stand-in sparsecc.runtime.driver that records loads and launches."""
    loads, launches = [], []

    class CudaKernel:
        def __init__(self, cubin, name, param_kinds, *, shared_bytes=0):
            loads.append((cubin, name, list(param_kinds), shared_bytes))

        def launch(self, grid, block, args, shared_bytes, stream):
            launches.append((grid, block, list(args), shared_bytes, stream))

    mod = types.ModuleType("sparsecc.runtime.driver")
    mod.CudaKernel = CudaKernel
    monkeypatch.setitem(sys.modules, "sparsecc.runtime.driver", mod)
    monkeypatch.setattr(launcher, "_raw_stream", lambda device: 1234)
    return loads, launches


def test_launcher_names_the_bad_argument(fake_driver):
    loads, launches = fake_driver
    ck = fake_compiled(["i32", "fp32", "*fp16", "*i16"], ["n", "alpha", "A.values", "A.meta"])
    h = torch.zeros(4, dtype=torch.float16)
    m16 = torch.zeros(4, dtype=torch.int16)
    with pytest.raises(ValueError, match=r"kern: argument 'A.values' is on the CPU, but the kernel runs on cuda"):
        launcher.launch(ck, (1, 1, 1), [3, 1.0, h, m16], 4)
    with pytest.raises(ValueError, match=r"argument 'A.values' \(\*fp16\) must have dtype torch.float16, got torch.float32"):
        launcher.launch(ck, (1, 1, 1), [3, 1.0, h.float(), m16], 4)
    with pytest.raises(ValueError, match=r"argument 'A.values' \(\*fp16\) must be a CUDA torch.Tensor"):
        launcher.launch(ck, (1, 1, 1), [3, 1.0, [1.0], m16], 4)
    meta_only = fake_compiled(["*i16"], ["A.meta"])
    with pytest.raises(ValueError, match=r"argument 'A.meta' \(\*i16\) must have dtype torch.int16, got torch.int32"):
        launcher.launch(meta_only, (1, 1, 1), [m16.int()], 4)
    with pytest.raises(ValueError, match=r"argument 'n' = 4294967296 does not fit in i32"):
        launcher.launch(ck, (1, 1, 1), [2**32, 1.0, h, m16], 4)
    with pytest.raises(ValueError, match=r"argument 'n' \(i32\) is a tensor"):
        launcher.launch(ck, (1, 1, 1), [torch.tensor(3), 1.0, h, m16], 4)
    with pytest.raises(ValueError, match=r"argument 'alpha' \(fp32\) must be a float, got str"):
        launcher.launch(ck, (1, 1, 1), [3, "x", h, m16], 4)
    with pytest.raises(ValueError, match=r"expected 4 arguments \(n, alpha, A.values, A.meta\), got 2"):
        launcher.launch(ck, (1, 1, 1), [3, 1.0], 4)
    assert loads == [] and launches == []  # nothing reached the driver


def test_launcher_plan_is_built_once_and_empty_grids_do_nothing(fake_driver):
    loads, launches = fake_driver
    ck = fake_compiled(["i32", "i64", "fp32", "i1"], ["a", "b", "c", "d"], shared_bytes=65536)
    for _ in range(3):
        launcher.launch(ck, (2, 1, 1), [7, 2**40, 0.5, True], 8)
    launcher.launch(ck, (0, 1, 1), [7, 1, 1.0, False], 8)
    assert loads == [(b"\x7fELF-fake", "kern", ["i32", "i64", "f32", "i32"], 65536)]
    assert launches == [((2, 1, 1), (128, 1, 1), [7, 2**40, 0.5, 1], 65536, 1234)] * 3
    assert launcher.plan_for(ck) is launcher.plan_for(ck)


def test_launcher_wraps_driver_errors_with_the_kernel_name(fake_driver, monkeypatch):
    class Boom:
        def __init__(self, *a, **k):
            pass

        def launch(self, *a):
            raise RuntimeError("CUDA_ERROR_INVALID_VALUE: invalid argument")

    monkeypatch.setattr(sys.modules["sparsecc.runtime.driver"], "CudaKernel", Boom)
    ck = fake_compiled(["i32"], ["n"])
    with pytest.raises(RuntimeError, match=r"kern: launch failed .*CUDA_ERROR_INVALID_VALUE: invalid argument"):
        launcher.launch(ck, (1, 1, 1), [1], 4)
    with pytest.raises(RuntimeError, match="kern: no cubin to launch"):
        launcher.launch(fake_compiled(["i32"], ["n"], cubin=None), (1, 1, 1), [1], 4)


def test_contiguity_analysis_tells_fixed_from_strided_pointers():
    from sparsecc.frontend import to_ttir

    m = to_ttir(add_one, {"X": "*fp32", "n": "i32"}, {"BLOCK": 64})
    assert launcher.contiguous_params(m, "add_one") == {0}  # strides=(1,): assumes contiguous
    m = to_ttir(add_one_masked, {"X": "*fp32", "n": "i32"}, {"BLOCK": 64})
    assert launcher.contiguous_params(m, "add_one_masked") == {0}  # X + offs: likewise
    sig = {"D": "*fp16", "A": "*fp16:NV24", "B": "*fp16", **{n: "i32" for n in (
        "M", "N", "K", "stride_am", "stride_bk", "stride_bn", "stride_dm", "stride_dn")}}
    m = to_ttir(sparse_mm_kernel, sig, {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 64, "GROUP_M": 8})
    assert launcher.contiguous_params(m, "sparse_mm_kernel") == set()  # runtime strides


def test_only_block_pointer_bases_must_be_aligned():
    from sparsecc.frontend import to_ttir
    from sparsecc.frontend.compile import block_pointer_params

    sig = {"D": "*fp16", "A": "*fp16:NV24", "B": "*fp16", **{n: "i32" for n in (
        "M", "N", "K", "stride_am", "stride_bk", "stride_bn", "stride_dm", "stride_dn")}}
    ck = sparsecc.compile(sparse_mm_kernel, sig, {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 64, "GROUP_M": 8})
    assert ck.flat_arg_names[:4] == ["D", "A.values", "A.meta", "B"] and ck.aligned == [0, 1, 2, 3]
    m = to_ttir(add_one_masked, {"X": "*fp32", "n": "i32"}, {"BLOCK": 64})
    assert block_pointer_params(m, "add_one_masked") == set()  # X + offs: element accesses
    ck = fake_compiled(["*fp32", "i32"], ["X", "n"])
    ck.aligned = []
    plan = launcher.plan_for(ck)
    x = torch.zeros(8)[1:]  # 4 bytes past the start: fine for element accesses
    assert plan.converters[0](x, -1) == x.data_ptr()


def test_contiguity_analysis_reparses_cached_ir():
    """A disk-cache hit has no module object, only the stage texts: the analysis re-parses."""
    from sparsecc.compiler import print_ir
    from sparsecc.frontend import to_ttir

    text = print_ir(to_ttir(add_one, {"X": "*fp32", "n": "i32"}, {"BLOCK": 64}))
    ck = fake_compiled(["*fp32", "i32"], ["X", "n"])
    ck.asm["ttir-decomposed"] = text
    assert launcher.contiguous_params(launcher._module_of(ck), "add_one") == {0}


# ---- everywhere: sparse_mm's kernel on the interpreter -----------------------------------

@pytest.mark.skipif(not (HAVE_INTERPRETER and HAVE_DECOMPOSE),
                    reason="needs sparsecc.runtime.interpreter and decompose-sparse-tensors")
@pytest.mark.parametrize("m,n,k", [(16, 16, 32), (17, 33, 48), (40, 24, 96)])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_sparse_mm_on_the_interpreter(m, n, k, dtype, monkeypatch):
    monkeypatch.delenv("SPARSECC_INTERPRET", raising=False)
    dense, a, b = make_operands(m, n, k, dtype, "cpu", m * n + k)
    out = torch.full((m, n), float("nan"), dtype=dtype)
    assert sparse_mm(a, b, out=out) is out
    assert_close_to_torch(out, dense, b, k)
    f32 = sparse_mm(a, b, out_dtype=torch.float32)
    assert f32.dtype == torch.float32
    assert_close_to_torch(f32, dense, b, k)


@pytest.mark.skipif(not (HAVE_INTERPRETER and HAVE_DECOMPOSE),
                    reason="needs sparsecc.runtime.interpreter and decompose-sparse-tensors")
@pytest.mark.parametrize("m,n,k", [(100, 70, 96), (33, 200, 32), (40, 24, 160)])
def test_persistent_sparse_mm_on_the_interpreter(m, n, k, monkeypatch):
    # fewer programs than tiles (the CPU grid is capped at 8): each walks several tiles, K
    # tails and ragged edges included, and K = BLOCK_K (every step ends a tile)
    monkeypatch.delenv("SPARSECC_INTERPRET", raising=False)
    dense, a, b = make_operands(m, n, k, torch.float16, "cpu", m + n * k)
    out = torch.full((m, n), float("nan"), dtype=torch.float16)
    sparse_mm(a, b, out=out, config=MMConfig(32, 32, 32, group_m=2, num_warps=4, num_stages=1, persistent=True))
    assert_close_to_torch(out, dense, b, k)


@pytest.mark.skipif(not (HAVE_INTERPRETER and HAVE_DECOMPOSE),
                    reason="needs sparsecc.runtime.interpreter and decompose-sparse-tensors")
@pytest.mark.parametrize("m,n,k,group_m", [(100, 70, 96, 1), (100, 70, 96, 4), (33, 48, 128, 2), (16, 40, 32, 8)])
def test_cta_pair_tile_order_on_the_interpreter(m, n, k, group_m, monkeypatch):
    # num_ctas=2: programs 2j, 2j+1 take row tiles 2i, 2i+1 of one column panel; with an odd
    # number of row tiles the last pair's second program lies below the matrix and stores nothing
    monkeypatch.delenv("SPARSECC_INTERPRET", raising=False)
    dense, a, b = make_operands(m, n, k, torch.float16, "cpu", m * n + k)
    out = torch.full((m, n), float("nan"), dtype=torch.float16)
    sparse_mm(a, b, out=out, config=MMConfig(16, 16, 32, group_m=group_m, num_warps=4, num_stages=1, num_ctas=2))
    assert_close_to_torch(out, dense, b, k)


def test_sparse_mm_rejects_cta_pairs_with_persistent_programs():
    dense, a, b = make_operands(32, 32, 32, torch.float16, "cpu", 1)
    with pytest.raises(ValueError, match="num_ctas must be 1, or 2 without persistent"):
        sparse_mm(a, b, config=MMConfig(16, 16, 32, num_ctas=2, persistent=True))
    with pytest.raises(ValueError, match="num_ctas must be 1, or 2 without persistent"):
        sparse_mm(a, b, config=MMConfig(16, 16, 32, num_ctas=4))


def test_launcher_wants_whole_clusters(fake_driver):
    loads, launches = fake_driver
    ck = fake_compiled(["i32"], ["n"], cluster=2)
    with pytest.raises(ValueError, match=r"kern: compiled with num_ctas=2, so the grid's x extent must be a "
                                         r"multiple of 2, got 3"):
        launcher.launch(ck, (3, 1, 1), [7], 4)
    with pytest.raises(ValueError, match="multiple of 2, got 5"):
        launcher.fast_launcher(ck, 4)(5, 1, 1, [7])
    assert launches == []
    launcher.launch(ck, (4, 1, 1), [7], 4)
    launcher.fast_launcher(ck, 4)(6, 1, 1, [7])
    assert [g for g, *_ in launches] == [(4, 1, 1), (6, 1, 1)]


# ---- on the GPU ------------------------------------------------------------------------

# (M, N, K): squares, ragged M and N, thin and wide, K not a multiple of BLOCK_K (K % 16 == 0).
SHAPES = [
    (16, 16, 16), (16, 16, 32), (32, 16, 64), (17, 33, 48), (33, 17, 80), (1, 1, 16),
    (1000, 1000, 1008), (64, 64, 64), (128, 128, 128), (100, 300, 208), (255, 257, 272),
    (256, 256, 256), (512, 512, 512), (1000, 17, 4096), (17, 1000, 4096), (4096, 16, 4096),
    (16, 4096, 4096), (333, 777, 1024), (1024, 1024, 1024), (2048, 2048, 2048),
    (1024, 4000, 1040), (4000, 1024, 2064), (8192, 16, 8192), (16, 8192, 8192),
    (8192, 128, 8192), (5120, 128, 4096), (4096, 4096, 4096), (3000, 5000, 3008),
    (8192, 8192, 8192), (8192, 1000, 16), (1000, 8192, 64), (999, 1001, 8192),
    (5120, 1, 4096), (8192, 1, 8192), (300, 3, 512), (77, 7, 96),  # N < 8: B read K-major
]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
def test_sparse_mm_matches_torch(dtype):
    failures = []
    for i, (m, n, k) in enumerate(SHAPES):
        dense, a, b = make_operands(m, n, k, dtype, "cuda", i)
        if (e := sparse_mm_mismatch(a, b, dense, b, k)) is not None:
            failures.append(f"{m}x{n}x{k}: {e}")
    assert not failures, "\n".join(failures)


# B column-major (x.T): narrow decode widths, ragged, wide (sm_90a copies those row-major first)
KMAJOR_SHAPES = [(16, 1, 16), (77, 1, 96), (5120, 1, 4096), (300, 3, 512), (64, 7, 4096), (1000, 8, 1008),
                 (33, 16, 80), (4096, 16, 4096), (1000, 40, 1040), (255, 257, 272), (2048, 2048, 2048)]
KMAJOR_CONFIGS = [None, MMConfig(64, 16, 128, num_warps=4, num_stages=3), MMConfig(32, 32, 64, num_warps=4, num_stages=2),
                  MMConfig(128, 64, 64, num_warps=8, num_stages=1)]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
def test_sparse_mm_reads_column_major_b(dtype):
    failures = []
    for i, (m, n, k) in enumerate(KMAJOR_SHAPES):
        dense, a, b = make_operands(m, n, k, dtype, "cuda", 400 + i)
        bt = b.t().contiguous().t()  # the same values, column-major
        for cfg in KMAJOR_CONFIGS:
            if (e := sparse_mm_mismatch(a, bt, dense, b, k, cfg)) is not None:
                failures.append(f"{m}x{n}x{k} {cfg}: {e}")
    assert not failures, "\n".join(failures)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
def test_user_gemm_matches_torch(dtype):
    failures = []
    for i, (m, n, k) in enumerate(SHAPES):
        if m * n * k > 2**33:
            continue  # the largest problems are covered by sparse_mm; keep this test quick
        dense, a, b = make_operands(m, n, k, dtype, "cuda", 100 + i)
        out = torch.full((m, n), float("nan"), dtype=dtype, device="cuda")
        try:
            run_user_gemm(a, b, out)
            torch.cuda.synchronize()
            assert_close_to_torch(out, dense, b, k)
        except AssertionError as e:
            failures.append(f"{m}x{n}x{k}: {e}")
    assert not failures, "\n".join(failures)


@pytest.mark.gpu
def test_sparse_mm_out_dtypes_and_configs():
    dense, a, b = make_operands(200, 136, 320, torch.float16, "cuda", 7)
    f32 = sparse_mm(a, b, out_dtype=torch.float32)
    assert f32.dtype == torch.float32
    assert_close_to_torch(f32, dense, b, 320)
    for cfg in (MMConfig(64, 64, 32, num_stages=1), MMConfig(128, 64, 64, num_warps=8, num_stages=4),
                MMConfig(32, 128, 128, num_warps=4, num_stages=2)):
        out = torch.full((200, 136), float("nan"), dtype=torch.float16, device="cuda")
        sparse_mm(a, b, out=out, config=cfg)
        assert_close_to_torch(out, dense, b, 320)


@pytest.mark.gpu
def test_launcher_rejects_cpu_dtype_and_layout_errors():
    dense, a, b = make_operands(64, 64, 64, torch.float16, "cuda", 3)
    d = torch.empty(64, 64, dtype=torch.float16, device="cuda")
    run_user_gemm(a, b, d)
    ck = next(c for c in user_gemm.cache.values()
              if c.target is not None and c.signature["D"].split(":")[0] == "*fp16")
    args = [d, a.values, a.meta, b, 64, 64, 64, 64, 64, 64]
    grid = (1, 1, 1)
    with pytest.raises(ValueError, match=r"user_gemm: argument 'B' is on the CPU"):
        launcher.launch(ck, grid, [*args[:3], b.cpu(), *args[4:]], 4)
    with pytest.raises(ValueError, match=r"argument 'D' \(\*fp16(:16)?\) must have dtype torch.float16, got torch.float32"):
        launcher.launch(ck, grid, [d.float(), *args[1:]], 4)
    with pytest.raises(ValueError, match=r"argument 'A.meta' \(\*i16\) must have dtype torch.int16"):
        launcher.launch(ck, grid, [d, a.values, a.meta.to(torch.int32), *args[3:]], 4)
    strided = torch.empty(64, 64, dtype=torch.float16, device="cuda").t()
    with pytest.raises(ValueError, match=r"argument 'A.values' must be contiguous"):
        launcher.launch(ck, grid, [d, strided[:, :32], a.meta, *args[3:]], 4)
    x = torch.zeros(256, device="cuda")
    add_one[(4,)](x, 256, BLOCK=64)
    (ck1,) = [c for c in add_one.cache.values() if c.target is not None]
    # a strided view is passed by its raw data pointer, as Triton passes it: the kernel's unit
    # stride then walks the storage (elements 0..255 of the 256 x 2 base), not the view
    base = torch.zeros(256, 2, device="cuda")
    launcher.launch(ck1, (4, 1, 1), [base[:, 0], 256], 4)
    torch.cuda.synchronize()
    assert torch.equal(x, torch.ones(256, device="cuda"))
    assert torch.equal(base.flatten()[:256], torch.ones(256, device="cuda")) and (base.flatten()[256:] == 0).all()


@pytest.mark.gpu
def test_launch_overhead():
    x = torch.zeros(1024, device="cuda")
    add_one[(16,)](x, 1024, BLOCK=64)
    torch.cuda.synchronize()
    (ck,) = [c for c in add_one.cache.values() if c.target is not None]
    n = 2000

    def per_launch(fn) -> float:
        fn()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        host = (time.perf_counter() - t0) / n * 1e6
        torch.cuda.synchronize()
        return host

    direct = per_launch(lambda: launcher.launch(ck, (16, 1, 1), [x, 1024], 4))
    jit = per_launch(lambda: add_one[(16,)](x, 1024, BLOCK=64))
    torch.cuda.synchronize()
    assert torch.equal(x, torch.full_like(x, 3 + 2 * n))  # 1 + (1 warm-up + n) per loop
    print(f"\nhost launch overhead: launcher.launch {direct:.1f} us, kernel[grid](...) {jit:.1f} us")
    assert direct < 50.0, f"launcher.launch takes {direct:.1f} us per launch"


@pytest.mark.gpu
def test_sparse_mm_autotune_picks_a_candidate_and_matches_torch(tmp_path, monkeypatch):
    from sparsecc.frontend.jit import current_target
    from sparsecc.ops.sparse_mm import candidate_configs, tuned_config

    monkeypatch.setenv("SPARSECC_CACHE_DIR", str(tmp_path))  # the winners file goes there
    for i, (m, n, k) in enumerate([(1000, 520, 4096), (4096, 16, 4096), (300, 3, 512)]):
        dense, a, b = make_operands(m, n, k, torch.float16, "cuda", 200 + i)
        out = torch.full((m, n), float("nan"), dtype=torch.float16, device="cuda")
        sparse_mm(a, b, out=out, autotune=True)
        torch.cuda.synchronize()
        assert_close_to_torch(out, dense, b, k)
        cfg = tuned_config(a, b)
        assert cfg in candidate_configs(m, max(n, 16), k, torch.float16, current_target())
    assert list((tmp_path / "autotune").glob("sparse_mm_kernel-*.json"))


@pytest.mark.gpu
def test_repeated_calls_take_the_hot_path_and_stay_correct():
    import importlib

    mod = importlib.import_module("sparsecc.ops.sparse_mm")
    dense, a, b = make_operands(300, 48, 256, torch.float16, "cuda", 300)
    assert_close_to_torch(sparse_mm(a, b), dense, b, 256)
    hot = len(mod._HOT)
    for _ in range(3):  # new B values, same description: the hot path, still correct
        b2 = torch.randn_like(b)
        assert_close_to_torch(sparse_mm(a, b2), dense, b2, 256)
    assert len(mod._HOT) == hot >= 1
    bt = b.t().contiguous().t()  # other strides: a new description, checked and launched anew
    assert_close_to_torch(sparse_mm(a, bt), dense, bt, 256)
    assert len(mod._HOT) == hot + 1


@pytest.mark.gpu
def test_sparse_mm_copies_views_at_an_offset():
    dense, a, b = make_operands(300, 40, 256, torch.float16, "cuda", 500)
    wide = torch.randn(256, 41, dtype=torch.float16, device="cuda")
    wide[:, 1:] = b
    view = wide[:, 1:]  # 2 bytes past a 16-byte boundary
    assert view.data_ptr() % 16
    assert_close_to_torch(sparse_mm(a, view), dense, b, 256)
    assert_close_to_torch(sparse_mm(a, view), dense, b, 256)  # again: the hot path
    col = torch.randn(41, 256, dtype=torch.float16, device="cuda")
    col[1:] = b.t()
    assert_close_to_torch(sparse_mm(a, col[1:].t()), dense, b, 256)  # column-major at an offset
    big = torch.full((300, 41), float("nan"), dtype=torch.float16, device="cuda")
    sparse_mm(a, b, out=big[:, 1:])
    assert_close_to_torch(big[:, 1:], dense, b, 256)
    assert torch.isnan(big[:, 0]).all()  # nothing outside `out` was written


@pytest.mark.gpu
def test_launcher_names_a_pointer_at_an_offset(fake_driver):
    view = torch.zeros(64, dtype=torch.float16, device="cuda")[1:]
    ck = fake_compiled(["*fp16"], ["X"])
    with pytest.raises(ValueError, match=r"kern: argument 'X' must start at a 16-byte aligned address .* = 2"):
        launcher.launch(ck, (1, 1, 1), [view], 4)


@pytest.mark.gpu
def test_element_pointer_kernels_take_views_at_any_offset():
    x = torch.arange(70, dtype=torch.float32, device="cuda")
    add_one_masked[(2,)](x[3:], 67, BLOCK=64)  # 12 bytes past a 16-byte boundary
    torch.cuda.synchronize()
    want = torch.arange(70, dtype=torch.float32, device="cuda") + (torch.arange(70, device="cuda") >= 3)
    assert torch.equal(x, want)
    with pytest.raises(ValueError, match=r"argument 'X' must start at a 16-byte aligned address"):
        add_one[(2,)](x[3:], 67, BLOCK=64)  # a block pointer's base


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
def test_every_config_the_autotuner_can_pick_matches_torch(dtype):
    # one ragged problem per tier (decode, narrow/small, large), every candidate of that tier,
    # row-major and column-major B, K not a multiple of BLOCK_K
    from sparsecc.frontend.jit import current_target
    from sparsecc.ops.sparse_mm import candidate_configs

    failures = []
    for i, (m, n, k) in enumerate([(1000, 13, 1040), (300, 200, 1040), (1100, 1000, 1040)]):
        dense, a, b = make_operands(m, n, k, dtype, "cuda", 600 + i)
        for cfg in candidate_configs(m, n, k, dtype, current_target()):
            for bb in (b, b.t().contiguous().t()):
                if (e := sparse_mm_mismatch(a, bb, dense, b, k, cfg)) is not None:
                    failures.append(f"{m}x{n}x{k} {cfg} B strides {bb.stride()}: {e}")
    assert not failures, "\n".join(failures)


@pytest.fixture
def compiler_switches(tmp_path, monkeypatch):
    """Set compiler switches through their environment overrides (which every compile of
    the test then resolves into its CompileOptions) for one test, with a fresh cache folder and
    no compiled sparse_mm in memory before or after it."""
    sparse_mm_module = importlib.import_module("sparsecc.ops.sparse_mm")  # (the package exports the function)

    def drop_compiled():
        sparse_mm_kernel.cache.clear()
        sparse_mm_module._HOT.clear()

    def switch(**values: bool) -> None:
        for name, on in values.items():
            monkeypatch.setenv(name, "1" if on else "0")
        drop_compiled()

    monkeypatch.setenv("SPARSECC_CACHE_DIR", str(tmp_path))
    yield switch
    drop_compiled()


@pytest.mark.gpu
@pytest.mark.parametrize("switches", [
    {"SPARSECC_MBARRIERS": True, "SPARSECC_TMA": False},
    {"SPARSECC_MBARRIERS": True, "SPARSECC_TMA": False, "SPARSECC_WGMMA_UNROLL": True, "SPARSECC_WGMMA_A_SMEM": True},
    {"SPARSECC_TMA": True, "SPARSECC_WARP_SPECIALIZE": False},
    {"SPARSECC_TMA": True, "SPARSECC_WARP_SPECIALIZE": True},
    {"SPARSECC_TMA": True, "SPARSECC_WARP_SPECIALIZE": True, "SPARSECC_WGMMA_UNROLL": True},
], ids=["cp.async-mbarriers", "cp.async-mbarriers+unroll+a_smem", "tma", "tma+warp_specialized",
        "tma+warp_specialized+unroll"])
def test_mbarrier_pipeline_matches_torch(compiler_switches, switches):
    """tritongpu-pipeline{mbarriers=true} (and tma=true) on the wgmma tiles: K loops of 1, 2, S,
    and many trips (barrier phases wrapping several times, odd trip counts for the unrolled
    loop), ragged M/N (TMA boxes partly out of bounds), and a B whose rows are not 16-byte
    multiples (N = 100: no tensor map possible, copies through ld.global + st.shared published
    by the same mbarrier arrivals)."""
    from sparsecc.frontend.jit import current_target
    from sparsecc.ops.sparse_mm import has_wgmma

    if not has_wgmma(current_target()):
        pytest.skip("the mbarrier pipeline applies to wgmma loops (sm_90a)")
    compiler_switches(**switches)
    configs = [MMConfig(256, 128, 128, group_m=16, num_warps=8, num_stages=3),
               MMConfig(64, 64, 128, num_warps=4, num_stages=4),
               MMConfig(128, 256, 64, group_m=16, num_warps=8, num_stages=3)]
    problems = [(300, 200, 16), (257, 136, 240), (513, 100, 384), (1100, 1000, 1040), (640, 384, 4096)]
    failures = _mismatches(configs, problems, seed=700)
    assert not failures, "\n".join(failures)


def _mismatches(configs: list[MMConfig], problems: list[tuple[int, int, int]], seed: int) -> list[str]:
    """Every config on every (M, N, K) problem, fp16 and bf16: what disagrees with torch."""
    failures = []
    for dtype in (torch.float16, torch.bfloat16):
        for i, (m, n, k) in enumerate(problems):
            dense, a, b = make_operands(m, n, k, dtype, "cuda", seed + i)
            for cfg in configs:
                if (e := sparse_mm_mismatch(a, b, dense, b, k, cfg)) is not None:
                    failures.append(f"{dtype} {m}x{n}x{k} {cfg}: {e}")
    return failures


@pytest.mark.gpu
@pytest.mark.parametrize("switches", [
    {"SPARSECC_TMA": True, "SPARSECC_WARP_SPECIALIZE": True},
    {"SPARSECC_TMA": True, "SPARSECC_WARP_SPECIALIZE": False},
    {"SPARSECC_TMA": False, "SPARSECC_MBARRIERS": True},
    {"SPARSECC_TMA": False, "SPARSECC_MBARRIERS": False},
], ids=["tma+warp_specialized", "tma", "cp.async-mbarriers", "cp.async-barriers"])
def test_persistent_sparse_mm_matches_torch(compiler_switches, switches):
    """PERSISTENT: one program per SM walks tiles in one flat (tile, K step) loop, its
    pipeline running into the next tile while the epilogue stores this one. Problems with
    more tiles than SMs (several tiles per program, a last round that leaves SMs idle), one K
    step per tile (every step ends a tile), K tails, ragged M/N, N = 100 (no tensor map), on
    the wgmma tiles and an mma.sp tile."""
    compiler_switches(**switches)
    configs = [MMConfig(256, 128, 128, group_m=16, num_warps=8, num_stages=3, persistent=True),
               MMConfig(64, 64, 128, num_warps=4, num_stages=4, persistent=True),
               MMConfig(32, 64, 64, group_m=4, num_warps=4, num_stages=3, persistent=True)]
    problems = [(3000, 2000, 528), (1100, 1000, 112), (4100, 1000, 16), (1100, 100, 1040), (700, 3000, 256)]
    failures = _mismatches(configs, problems, seed=900)
    assert not failures, "\n".join(failures)


CLUSTER_CONFIGS = [MMConfig(128, 256, 64, group_m=16, num_warps=8, num_stages=4, num_ctas=2),
                   MMConfig(256, 128, 128, group_m=16, num_warps=8, num_stages=3, num_ctas=2),
                   MMConfig(64, 64, 128, group_m=1, num_warps=4, num_stages=4, num_ctas=2)]
# an odd number of row tiles (the pair's second CTA reads zeros and stores nothing), one row
# tile, K tails, ragged N
CLUSTER_SHAPES = [(1000, 1000, 1008), (300, 600, 512), (100, 300, 208), (2048, 2048, 2048), (4000, 1024, 2064),
                  (17, 33, 48)]


@pytest.mark.gpu
@pytest.mark.parametrize("unroll", [False, True], ids=["plain", "unrolled"])
def test_cta_pairs_multicasting_b_match_torch(compiler_switches, unroll):
    """num_ctas=2: clusters of two CTAs on vertically adjacent tiles, each CTA issuing half of
    B's TMA boxes into both (tritongpu-pipeline{num-ctas=2}); NaN-poisoned outputs."""
    compiler_switches(SPARSECC_TMA=True, SPARSECC_WARP_SPECIALIZE=True, SPARSECC_WGMMA_UNROLL=unroll)
    failures = []
    for dtype in (torch.float16, torch.bfloat16):
        for i, (m, n, k) in enumerate(CLUSTER_SHAPES):
            dense, a, b = make_operands(m, n, k, dtype, "cuda", 700 + i)
            for cfg in CLUSTER_CONFIGS:
                for bb in (b, b.t().contiguous().t()):
                    if (e := sparse_mm_mismatch(a, bb, dense, b, k, cfg)) is not None:
                        failures.append(f"{dtype} {m}x{n}x{k} {cfg} B strides {bb.stride()}: {e}")
    assert not failures, "\n".join(failures)
    # the shapes whose strides allow TMA (all but 17x33x48) ran as clusters that multicast B
    clustered = [c for c in sparse_mm_kernel.cache.values() if c.metadata.get("cluster") == 2]
    assert len(clustered) >= len(CLUSTER_CONFIGS)
    assert all(".multicast::cluster" in c.asm["ptx"] for c in clustered)
