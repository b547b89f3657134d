"""NV12, the tf32 1:2 format: its data, compress / prune / SparseTensor, and a user's `tl.dot`
with an NV12 operand through the same passes as NV24 (the interpreter in CI, mma.sp m16n8k16 /
wgmma m64nNk16 .tf32 on the H100)."""

from __future__ import annotations

import pickle

import pytest
import torch

import sparsecc
import sparsecc.language as tl
from sparsecc import formats
from sparsecc.formats import NV12
from sparsecc.runtime.codec import decode_meta


def test_nv12_data():
    assert (NV12.group.kept, NV12.group.size) == (1, 2)
    assert [e.name for e in NV12.element_types] == ["fp32"]
    assert NV12.meta.halves and NV12.meta.word_cols == 8 and NV12.meta.pad_word == 0x4444
    assert NV12.metadata.element.name == "i32" and (NV12.metadata.row_div, NV12.metadata.col_div) == (16, 1)
    assert formats.lookup("NV12") is NV12 and formats.for_dtype("float32") is NV12
    assert formats.for_dtype("float16") is formats.NV24
    assert formats.flat_params("A", "*fp32:NV12") == [("A.values", "*fp32"), ("A.meta", "*i32")]


def test_words_by_hand():
    # row 0: pairs (kept element) 0,1,1,0 | 1,1,1,1 ; nibble 0b0100 for element 0, 0b1110 for 1
    row = torch.tensor([[3.0, 0, 0, 5, 0, -1, 2, 0] + [0, 1, 0, 2, 0, 3, 0, 4]])
    s = sparsecc.compress(row)
    assert s.encoding == "NV12" and tuple(s.values.shape) == (1, 8) and tuple(s.meta.shape) == (1, 16)
    assert s.values.tolist() == [[3.0, 5.0, -1.0, 2.0, 1.0, 2.0, 3.0, 4.0]]
    words = s.meta.view(torch.int16)[0].tolist()  # 16-bit entry 16*c + r (rows 1-15 padding)
    assert words[0] & 0xFFFF == 0x4EE4 and words[16] & 0xFFFF == 0xEEEE
    assert all(w & 0xFFFF == 0x4444 for w in words[1:16] + words[17:])
    idx0, idx1 = decode_meta(s.meta, 1, NV12)
    assert idx0[0].tolist() == [0, 2, 2, 0, 2, 2, 2, 2] and (idx1 - idx0).eq(1).all()


@pytest.mark.parametrize("m,k", [(1, 16), (17, 32), (45, 48), (130, 256)])
def test_roundtrip_and_pickle(m, k):
    x = sparsecc.prune_1to2(torch.randn(m, k))
    assert ((x.reshape(m, k // 2, 2) != 0).sum(-1) <= 1).all()
    s = sparsecc.compress(x)
    assert torch.equal(s.to_dense(), x)
    assert torch.equal(pickle.loads(pickle.dumps(s)).to_dense(), x)
    assert "encoding='NV12'" in repr(s)


def test_errors_name_the_group_and_the_pruner():
    x = torch.zeros(16, 16)
    x[3, 6:8] = 1.0
    with pytest.raises(ValueError, match=r"not 1:2 sparse: row 3, columns 6..7 have 2 nonzeros .*prune_1to2"):
        sparsecc.compress(x)
    with pytest.raises(TypeError, match="unsupported dtype torch.float16 \\(NV12 supports torch.float32\\)"):
        sparsecc.compress(torch.zeros(16, 16, dtype=torch.float16), "NV12")
    with pytest.raises(ValueError, match="K = 8 is not a multiple of 16"):
        sparsecc.compress(torch.zeros(4, 8))
    with pytest.raises(ValueError, match='unknown sparse format "NV36"'):
        sparsecc.compress(torch.zeros(16, 16), "NV36")


@sparsecc.jit
def tf32_mm(D, A, B, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    a_ptr = tl.make_block_ptr(A, (M, K), (K, 1), (pid_m * BLOCK_M, 0), (BLOCK_M, BLOCK_K), (1, 0))
    b_ptr = tl.make_block_ptr(B, (K, N), (N, 1), (0, pid_n * BLOCK_N), (BLOCK_K, BLOCK_N), (1, 0))
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for _ in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptr, boundary_check=(0, 1), padding_option="zero")
        b = tl.load(b_ptr, boundary_check=(0, 1), padding_option="zero")
        acc = tl.dot(a, b, acc)
        a_ptr = tl.advance(a_ptr, (0, BLOCK_K))
        b_ptr = tl.advance(b_ptr, (BLOCK_K, 0))
    d_ptr = tl.make_block_ptr(D, (M, N), (N, 1), (pid_m * BLOCK_M, pid_n * BLOCK_N), (BLOCK_M, BLOCK_N), (1, 0))
    tl.store(d_ptr, acc, boundary_check=(0, 1))


@pytest.mark.parametrize("m,n,k", [(50, 40, 96), (33, 70, 160), (16, 16, 16)])
def test_user_kernel_on_the_interpreter(m, n, k):
    g = torch.Generator().manual_seed(m + n + k)
    a = sparsecc.prune_1to2(torch.randn(m, k, generator=g))
    b = torch.randn(k, n, generator=g)
    d = torch.full((m, n), float("nan"))
    tf32_mm[(-(-m // 32), -(-n // 32))](d, sparsecc.compress(a), b, m, n, k, BLOCK_M=32, BLOCK_N=32, BLOCK_K=32)
    torch.testing.assert_close(d, a @ b, rtol=1e-5, atol=1e-4)


def test_sparse_mm_on_the_interpreter():
    a = sparsecc.prune_1to2(torch.randn(45, 64))
    b = torch.randn(64, 30)
    torch.testing.assert_close(sparsecc.ops.sparse_mm(sparsecc.compress(a), b), a @ b, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("target,form", [("sm_90a", "wgmma.mma_async.sp"), ("sm_80", "mma.sp::ordered_metadata")])
def test_gpu_compile_row_major_b_assembles(target, form):
    # issue 29: a row-major B was refused; it is now transposed into shared memory (K-major)
    sig = {"D": "*fp32", "A": "*fp32:NV12", "B": "*fp32", "M": "i32", "N": "i32", "K": "i32"}
    ck = sparsecc.compile(tf32_mm, sig, {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32}, target=target)
    assert form in ck.asm["ptx"] and ck.asm["cubin"]


@pytest.mark.parametrize("target,form", [("sm_90a", "wgmma.mma_async.sp.sync.aligned.m64n128k16.f32.tf32.tf32"),
                                         ("sm_80", "mma.sp::ordered_metadata.sync.aligned.m16n8k16.row.col.f32.tf32.tf32.f32")])
def test_tf32_forms_assemble(target, form):
    """sparse_mm's K-major kernel for NV12 assembles (ptxas in CI) with each tf32 instruction."""
    from sparsecc.ops.sparse_mm_8bit import scaled_sparse_mm_kernel

    sig = {"D": "*fp32", "A": "*fp32:NV12", "B": "*fp32", "SCALE_A": "*fp32", "SCALE_B": "*fp32", "M": "i32",
           "N": "i32", "K": "i32", "stride_am": "i32:16", "stride_bk": "i32:1", "stride_bn": "i32:16",
           "stride_dm": "i32:16", "stride_dn": "i32:1"}
    ck = sparsecc.compile(scaled_sparse_mm_kernel, sig, {
        "BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32, "GROUP_M": 8, "B_KMAJOR": True, "ACC_INT": False,
        "ROW_SCALE": False, "COL_SCALE": False}, target=target, num_warps=4)
    assert form in ck.asm["ptx"] and len(ck.asm["cubin"]) > 0


def test_dense_fp32_dot_is_still_refused():
    @sparsecc.jit
    def k(D, A, B):
        r = tl.arange(0, 16)
        a = tl.load(A + r[:, None] * 16 + r[None, :])
        b = tl.load(B + r[:, None] * 16 + r[None, :])
        tl.store(D + r[:, None] * 16 + r[None, :], tl.dot(a, b))

    with pytest.raises(sparsecc.CompilationError, match="fp32 with a 1:2 NV12 operand"):
        sparsecc.compile(k, {"D": "*fp32", "A": "*fp32", "B": "*fp32"})


def _tf32_close(d: torch.Tensor, ref: torch.Tensor) -> None:
    # tf32 keeps 10 mantissa bits of each operand; the sums are fp32
    err = (d.double().cpu() - ref).abs().max().item()
    assert err <= 4e-3 * ref.abs().max().item(), f"max error {err} of {ref.abs().max().item()}"


GPU_CONFIGS = [None, sparsecc.ops.MMConfig(128, 128, 32, num_warps=4, num_stages=3),
               sparsecc.ops.MMConfig(256, 128, 32, num_warps=8, num_stages=5),
               sparsecc.ops.MMConfig(64, 64, 64, num_warps=4, num_stages=2),
               sparsecc.ops.MMConfig(32, 16, 128, num_warps=4, num_stages=4),
               sparsecc.ops.MMConfig(128, 128, 64, num_warps=4, num_stages=4)]  # B in two 128-byte column blocks


@pytest.mark.gpu
@pytest.mark.parametrize("m,n,k", [(300, 520, 384), (33, 8, 192), (1000, 272, 640), (128, 128, 256)])
@pytest.mark.parametrize("config", GPU_CONFIGS, ids=str)
def test_sparse_mm_gpu(m, n, k, config):
    g = torch.Generator().manual_seed(m + n + k)
    a = sparsecc.prune_1to2(torch.randn(m, k, generator=g))
    b = torch.randn(k, n, generator=g)
    out = torch.full((m, n), float("nan"), device="cuda")
    sparsecc.ops.sparse_mm(sparsecc.compress(a.cuda()), b.cuda(), out=out, config=config)
    _tf32_close(out, a.double() @ b.double())


@pytest.mark.gpu
def test_user_kernel_gpu():
    # tf32_mm reads B row-major (transposed into shared memory); its K-major twin too
    m, n, k = 200, 136, 256
    g = torch.Generator().manual_seed(3)
    a = sparsecc.prune_1to2(torch.randn(m, k, generator=g))
    b = torch.randn(k, n, generator=g)
    d = torch.full((m, n), float("nan"), device="cuda")
    tf32_mm[(4, 3)](d, sparsecc.compress(a.cuda()), b.cuda(), m, n, k, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32)
    _tf32_close(d, a.double() @ b.double())
    import sys
    sys.path.insert(0, __file__.rsplit("/", 2)[0] + "/ops")
    from test_sparse_mm_8bit import user_linear_8bit  # the pointer-tensor `y = x @ W.T` kernel

    x = torch.randn(m, k, generator=g)
    w = sparsecc.prune_1to2(torch.randn(n, k, generator=g))
    y = torch.full((m, n), float("nan"), dtype=torch.bfloat16, device="cuda")
    ones_m, ones_n = torch.ones(m, device="cuda"), torch.ones(n, device="cuda")
    user_linear_8bit[(-(-m // 64), -(-n // 64))](y, x.cuda(), sparsecc.compress(w.cuda()), ones_m, ones_n, m, n, k,
                                                  k, k, n, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, INT=False)
    _tf32_close(y, x.double() @ w.double().t())
