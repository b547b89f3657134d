"""parity_kernels.py's fused attention forward (issue 30's parity row) on sm_90a and sm_80.

What made it 4-6x (then 2x) slower than Triton, each with its regression check on the PTX and ptxas:
- K^T (`k_ptr + offs_n[None, :] * stride + offs_d[:, None]`) was loaded with scalar 16-bit loads:
  its layout now takes the order of the pointers' contiguity (dim 0 first), and the axis
  analysis carries contiguity through the loop's `ptrs += BLOCK_N * stride` (loop-carried
  tensors meet their yield), so K and V come as 16-byte vectors;
- the two chained dots put every warp along M (Triton's rule): the row max / sum stay in a warp
  and P, the first dot's accumulator, becomes the second dot's A by renaming registers;
- Q is stored to shared memory once, before the loop, not every iteration;
- on sm_90a both dots are wgmma (P @ V with P as wgmma's register A, renamed from the first
  dot's accumulators: no shared-memory round trip and no barrier for it), the unmasked K and V
  loads are raised to block pointers and streamed by the cp.async ring, and the unmasked
  epilogue store is a block-pointer store (16-byte vectors): 123 registers at D = 64 (was 188
  with mma.sync), two CTAs per SM;
- at D = 128 too (was mma.sync for both dots: K^T's 256-byte K-major rows had no 16-bit wgmma
  B layout, and a chain does not mix wgmma and mma.sync): K^T is staged K-major in two 128-byte
  column blocks (as 8-bit B is) and Q, A through a descriptor, in two K-major column blocks
  (test/python/codegen/test_wgmma_descriptor_reads.py checks which element every wgmma reads):
  152 registers (196 with mma.sync), no spills; the row max and sum move from Q K^T's m64n64
  layout to P @ V's m64n128 by renaming registers (analysis.mma_rename.is_mma_relabel).
The GPU part (`gpu` marker) checks the kernel against torch's scaled_dot_product_attention.
"""

from __future__ import annotations

import math
import re

import parity_kernels as pk
import pytest
import torch

import sparsecc
import sparsecc.language as tl

ATTN = pk.sparsecc_kernel(pk.attention_kernel)
SIG = {"q_ptr": "*fp16:16", "k_ptr": "*fp16:16", "v_ptr": "*fp16:16", "out_ptr": "*fp16:16", "sm_scale": "fp32",
       "stride_h": "i32:16", "stride_m": "i32:16", "n_ctx": "i32:16"}


def _compile(head_dim: int, target: str = "sm_90a"):
    return sparsecc.compile(ATTN, SIG, {"HEAD_DIM": head_dim, "BLOCK_M": 128, "BLOCK_N": 64}, target=target,
                            num_warps=8, num_stages=3)


def _loop(ptx: str) -> str:
    m = re.search(r"^(\$L__loop\d+):$(.*?)bra \1;", ptx, re.M | re.S)
    assert m is not None, "no loop in the PTX"
    return m.group(2)


@pytest.mark.parametrize("target", ["sm_90a", "sm_80"])
@pytest.mark.parametrize("head_dim", [64, 128])
def test_attention_loop_streams_k_and_v_and_keeps_p_in_registers(head_dim, target):
    ck = _compile(head_dim, target)
    ptx = ck.asm["ptx"]
    loop = _loop(ptx)
    # K^T (64 x D) and V (64 x D) per iteration: the unmasked loads are raised to block pointers
    # and streamed by the cp.async ring in 16-byte copies (before: ld.global.v4 + st.shared)
    assert "ld.global" not in loop
    per_thread = 2 * 64 * head_dim // 256  # halves of K and V together each thread copies
    assert len(re.findall(r"cp\.async\.cg\.shared\.global \[[^]]+\], \[[^]]+\], 16;", loop)) == per_thread // 8
    # P goes from the first dot's accumulators to the second's A without shared memory: no
    # shared store in the loop at all (cp.async fills K and V), one barrier (the ring's)
    assert "st.shared" not in loop and "ld.shared" not in loop
    assert loop.count("bar.sync") == 1
    res = next(iter(ck.metadata["ptxas"].values()))
    assert (res.spill_stores, res.spill_loads) == (0, 0), res
    # the epilogue's unmasked store is a block-pointer store: 16-byte vectors after a quad transpose
    assert len(re.findall(r"st\.global\.v4\.b32", ptx)) == 128 * head_dim // 256 // 8
    assert not re.search(r"st\.global(\.b32|\.b16|\.v2)", ptx)
    if target == "sm_90a":
        # both dots on wgmma (Triton's form): Q K^T with A and B from shared memory, P @ V with
        # P as the register A ({4 x b32} per k16 step), B (V) from shared memory
        assert "mma.sync" not in loop and "ldmatrix" not in loop
        qk = re.findall(r"wgmma\.mma_async\.sync\.aligned\.m64n64k16\.f32\.f16\.f16 \{[^}]*\}, (\{|%rd)", loop)
        pv = re.findall(rf"wgmma\.mma_async\.sync\.aligned\.m64n{head_dim}k16\.f32\.f16\.f16 \{{[^}}]*\}}, (\{{|%rd)",
                        loop)
        if head_dim == 64:  # one instruction shape for both dots
            assert len(qk) == 2 * 64 // 16 and qk.count("{") == 64 // 16
        else:
            # D = 128: Q K^T's K is 128 (8 k16 steps, A = Q through a descriptor over two
            # 128-byte column blocks, B = K^T K-major over two column blocks); P @ V is m64n128
            assert qk == ["%rd"] * (head_dim // 16) and pv == ["{"] * (64 // 16)
            assert len(re.findall(r"wgmma\.mma_async", loop)) == head_dim // 16 + 64 // 16
            ttgir = ck.asm["ttgir"]
            assert "memdesc<128x128xf16, #ttg.shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [1, 0], " \
                   "colBlock = 64}>>" in ttgir  # Q
            assert "memdesc<3x128x64xf16, #ttg.shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [0, 1], " \
                   "colBlock = 64}>" in ttgir  # the K^T ring
        assert f"warpsPerCTA = [8, 1], instrShape = [64, {head_dim}]" in ck.asm["ttgir"]
        assert "versionMajor = 2" not in ck.asm["ttgir"]
        if head_dim == 64:
            assert res.registers <= 128, res  # two CTAs of 256 threads per SM, as Triton (109 regs)
        else:
            # one CTA per SM (129 KiB of shared memory); 196 with mma.sync, 166 with P @ V in flight
            assert res.registers <= 176, res
    else:
        # sm_80: mma.sync with every warp along M
        assert "wgmma" not in ptx
        assert loop.count("mma.sync.aligned.m16n8k16") == 2 * (128 // 8 // 16) * (64 // 8) * (head_dim // 16)
        assert "warpsPerCTA = [8, 1]" in ck.asm["ttgir"]
        assert res.registers <= 255


def test_q_is_stored_to_shared_memory_before_the_loop():
    ttgir = _compile(64).asm["ttgir"]
    body = ttgir[ttgir.index("scf.for"):]
    assert "ttg.local_alloc %q" in ttgir and "ttg.local_alloc %q" not in body


def test_transposed_k_takes_the_order_of_its_contiguity():
    """K^T's pointers are contiguous along dim 0: its layout runs 8 halves a thread down dim 0,
    and the block pointer it is raised to (the unmasked load has no boundary check) is
    column-major, so the ring's copies are 16-byte vectors down dim 0."""
    ttgir = _compile(64).asm["ttgir"]
    ptrs = re.findall(r"tt.make_tensor_ptr [^\n]*", ttgir)
    kt = [p for p in ptrs if "order = array<i32: 0, 1>" in p]
    assert len(kt) == 1, ptrs
    assert "sizePerThread = [8, 1]" in kt[0] and "order = [0, 1]" in kt[0]
    assert "boundaryCheck" not in ttgir  # nothing masked: no copy or store tests its bounds


def test_interpreter_matches_torch_on_several_lengths(monkeypatch):
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    for bh, n, d in [(2, 64, 16), (3, 192, 32)]:
        g = torch.Generator().manual_seed(n + d)
        q, k, v = (torch.randn(bh, n, d, generator=g).half() for _ in range(3))
        out = torch.full_like(q, float("nan"))
        ATTN[(n // 64, bh)](q, k, v, out, 1 / math.sqrt(d), n * d, d, n, HEAD_DIM=d, BLOCK_M=64, BLOCK_N=64,
                            num_warps=4)
        ref = torch.softmax(q.float() @ k.float().transpose(-1, -2) / math.sqrt(d), -1) @ v.float()
        torch.testing.assert_close(out.float(), ref, rtol=2e-2, atol=2e-2)


@pytest.mark.gpu
@pytest.mark.parametrize("bh, n, d", [(16, 1024, 64), (32, 2048, 64), (32, 4096, 128), (3, 384, 128), (5, 256, 64)])
def test_attention_matches_sdpa_on_the_gpu(bh, n, d):
    """The parity kernel masks no rows: n must be a multiple of BLOCK_M (128), else a program's
    last rows are the next head's and its stores overwrite that head's output (what the
    shapes 320 and 192 of this test did on the H200: a test error, not the compiler's)."""
    torch.manual_seed(bh + n + d)
    q, k, v = (torch.randn(bh, n, d, device="cuda", dtype=torch.float16) for _ in range(3))
    out = torch.full_like(q, float("nan"))
    ATTN[(-(-n // 128), bh)](q, k, v, out, 1 / math.sqrt(d), n * d, d, n, HEAD_DIM=d, BLOCK_M=128, BLOCK_N=64,
                             num_warps=8, num_stages=3)
    torch.cuda.synchronize()
    ref = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float())
    assert torch.isfinite(out).all(), "some outputs were never written"
    torch.testing.assert_close(out.float(), ref, rtol=2e-2, atol=2e-2)


def test_the_p_rename_takes_no_scratch_and_spans_mma_versions():
    """The accumulator -> A convert renames registers between any two mma layouts (versions 2
    and 3) whose warps agree and lie along M; such a convert takes no shared memory and no
    barrier (allocate-shared-memory and tritongpu-insert-barriers read `shared_size` /
    `shared_effects`). Warps along N, or different warps, keep the round trip."""
    from xdsl.dialects.builtin import TensorType, f16

    from sparsecc.analysis.mma_rename import is_mma_to_a_rename
    from sparsecc.analysis.shared_memory import shared_effects, shared_size
    from sparsecc.dialects.ttg import ConvertLayoutOp, DotOperandEncodingAttr, MmaEncodingAttr

    def ty(enc):
        return TensorType(f16, [128, 64], enc)

    v2, v3 = MmaEncodingAttr((8, 1)), MmaEncodingAttr((8, 1), version_major=3, instr_shape=(64, 128))
    for src in (v2, v3):
        for parent in (v2, v3):
            assert is_mma_to_a_rename(ty(src), ty(DotOperandEncodingAttr(0, parent, 2)))
    assert not is_mma_to_a_rename(ty(MmaEncodingAttr((4, 2))), ty(DotOperandEncodingAttr(0, MmaEncodingAttr((4, 2)), 2)))
    assert not is_mma_to_a_rename(ty(v3), ty(DotOperandEncodingAttr(0, MmaEncodingAttr((4, 2)), 2)))
    assert not is_mma_to_a_rename(ty(v3), ty(DotOperandEncodingAttr(1, v3, 2)))
    from xdsl.dialects import arith
    from xdsl.dialects.builtin import DenseIntOrFPElementsAttr

    p = arith.ConstantOp(DenseIntOrFPElementsAttr.from_list(ty(v3), [1.0]))
    rename = ConvertLayoutOp(p.result, ty(DotOperandEncodingAttr(0, v3, 2)))
    assert shared_size(rename) == 0 and shared_effects(rename) == ()
    trip = ConvertLayoutOp(p.result, ty(DotOperandEncodingAttr(0, MmaEncodingAttr((4, 2)), 2)))
    assert shared_size(trip) == 128 * 64 * 2 and shared_effects(trip) != ()


def test_row_vectors_of_two_wgmma_shapes_are_the_same_registers():
    """At head dim 128 the row max / sum come from Q K^T (m64n64) and scale P @ V's accumulator
    (m64n128): slices (and accumulators) of mma layouts that differ only in instruction N hold
    the same elements in the same registers (the register maps agree element by element), so
    their convert takes no scratch and no barrier. Other warps, another slice dim or another
    mma version keep the round trip."""
    from xdsl.dialects import arith
    from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, TensorType, f32

    from sparsecc.analysis.layouts import distributed
    from sparsecc.analysis.mma_rename import is_mma_relabel
    from sparsecc.analysis.shared_memory import shared_effects, shared_size
    from sparsecc.dialects.ttg import ConvertLayoutOp, MmaEncodingAttr, SliceEncodingAttr

    n64, n128 = (MmaEncodingAttr((8, 1), version_major=3, instr_shape=(64, n)) for n in (64, 128))
    row = lambda mma, dim=1: TensorType(f32, [128], SliceEncodingAttr(dim, mma))  # noqa: E731
    assert is_mma_relabel(row(n64), row(n128)) and is_mma_relabel(TensorType(f32, [128, 64], n64),
                                                                   TensorType(f32, [128, 64], n128))
    assert distributed(row(n64).encoding, (128,)) == distributed(row(n128).encoding, (128,))
    assert not is_mma_relabel(row(n64), row(n128, 0))
    assert not is_mma_relabel(row(n64), row(MmaEncodingAttr((4, 1), version_major=3, instr_shape=(64, 128))))
    assert not is_mma_relabel(row(n64), row(MmaEncodingAttr((8, 1))))
    c = arith.ConstantOp(DenseIntOrFPElementsAttr.from_list(row(n64), [1.0]))
    relabel = ConvertLayoutOp(c.result, row(n128))
    assert shared_size(relabel) == 0 and shared_effects(relabel) == ()


@sparsecc.jit
def masked_attention(q_ptr, k_ptr, v_ptr, out_ptr, sm_scale, stride_h, stride_m, n_ctx,
                     HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """The parity kernel with masks, for any n_ctx: rows past n_ctx are neither read nor
    written, keys past it get -inf scores (and zero V rows). The K/V masks are the tutorial
    matmul's form (`offs < n - start`), which raise-pointer-tensors turns into boundary checks."""
    start_m = tl.program_id(0)
    head = tl.program_id(1)
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    base = head * stride_h
    q = tl.load(q_ptr + base + offs_m[:, None] * stride_m + offs_d[None, :], mask=offs_m[:, None] < n_ctx,
                other=0.0)
    m_i = tl.zeros((BLOCK_M,), dtype=tl.float32) - float("inf")
    l_i = tl.zeros((BLOCK_M,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504
    kt_ptrs = k_ptr + base + offs_n[None, :] * stride_m + offs_d[:, None]
    v_ptrs = v_ptr + base + offs_n[:, None] * stride_m + offs_d[None, :]
    for start_n in range(0, n_ctx, BLOCK_N):
        kt = tl.load(kt_ptrs, mask=offs_n[None, :] < n_ctx - start_n, other=0.0)
        qk = tl.dot(q, kt)
        qk = tl.where(offs_n[None, :] < n_ctx - start_n, qk * qk_scale, float("-inf"))
        m_ij = tl.maximum(m_i, tl.max(qk, axis=1))
        p = tl.exp2(qk - m_ij[:, None])
        alpha = tl.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None]
        v = tl.load(v_ptrs, mask=offs_n[:, None] < n_ctx - start_n, other=0.0)
        acc = tl.dot(p.to(tl.float16), v, acc)
        m_i = m_ij
        kt_ptrs += BLOCK_N * stride_m
        v_ptrs += BLOCK_N * stride_m
    acc = acc / l_i[:, None]
    tl.store(out_ptr + base + offs_m[:, None] * stride_m + offs_d[None, :], acc.to(tl.float16),
             mask=offs_m[:, None] < n_ctx)


def _masked_args(bh: int, n: int, d: int, device: str, seed: int):
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(bh, n, d, generator=g).half().to(device) for _ in range(3))
    out = torch.full_like(q, float("nan"))
    return q, k, v, out


def _run_masked(q, k, v, out, block_m: int, num_warps: int) -> None:
    bh, n, d = q.shape
    masked_attention[(-(-n // block_m), bh)](q, k, v, out, 1 / math.sqrt(d), n * d, d, n, HEAD_DIM=d,
                                             BLOCK_M=block_m, BLOCK_N=64, num_warps=num_warps, num_stages=3)


@pytest.mark.parametrize("target, head_dim", [("sm_90a", 64), ("sm_80", 64), ("sm_90a", 128)])
def test_masked_attention_compiles_to_the_same_loop(target, head_dim):
    """The masked kernel takes the same path (the masks become boundary checks of the ring's
    copies and of the epilogue's store): on sm_90a both dots on wgmma with P in registers, at
    head dim 128 too (Q and K^T over two 128-byte column blocks)."""
    sig = dict(SIG, stride_h="i32", stride_m="i32:16", n_ctx="i32")
    ck = sparsecc.compile(masked_attention, sig, {"HEAD_DIM": head_dim, "BLOCK_M": 128, "BLOCK_N": 64},
                          target=target, num_warps=8, num_stages=3)
    loop = _loop(ck.asm["ptx"])
    assert "st.shared" not in loop and "ld.global" not in loop
    assert len(re.findall(r"cp\.async\.cg\.shared\.global", loop)) == 4 * head_dim // 64
    if target == "sm_90a":
        wg = re.findall(r"wgmma\.mma_async\.sync\.aligned\.m64n(\d+)k16\.f32\.f16\.f16 \{[^}]*\}, (\{|%rd)", loop)
        # Q K^T: head_dim / 16 steps, A (Q) through a descriptor; P @ V: 4 steps, P in registers
        assert sorted(wg) == sorted([("64", "%rd")] * (head_dim // 16) + [(str(head_dim), "{")] * 4)
        assert "mma.sync" not in loop
    else:
        assert "wgmma" not in loop and "mma.sync" in loop
    res = next(iter(ck.metadata["ptxas"].values()))
    assert (res.spill_stores, res.spill_loads) == (0, 0), res
    assert res.registers <= 255


def test_masked_attention_on_the_interpreter_matches_torch(monkeypatch):
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    q, k, v, out = _masked_args(2, 100, 16, "cpu", 5)
    _run_masked(q, k, v, out, 64, 4)
    ref = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float())
    torch.testing.assert_close(out.float(), ref, rtol=2e-2, atol=2e-2)


@pytest.mark.gpu
@pytest.mark.parametrize("bh, n, d", [(3, 1000, 64), (4, 512, 64), (2, 200, 128), (3, 1000, 128), (4, 512, 128),
                                     (2, 37, 128)])
def test_masked_attention_matches_sdpa_on_the_gpu(bh, n, d):
    """A ragged n_ctx (1000, 200, 37: the last query block and key block partial) and a tile
    multiple (512), against torch's scaled_dot_product_attention on random data; on the H100 /
    H200 (sm_90a) both dots are wgmma at d = 64 and d = 128 (Q and K^T over 128-byte column
    blocks at 128)."""
    q, k, v, out = _masked_args(bh, n, d, "cuda", bh + n + d)
    _run_masked(q, k, v, out, 128, 8)
    torch.cuda.synchronize()
    ref = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float())
    assert torch.isfinite(out).all(), "some outputs were never written"
    torch.testing.assert_close(out.float(), ref, rtol=2e-2, atol=2e-2)


@pytest.mark.gpu
@pytest.mark.parametrize("d", [64, 128])
def test_attention_gpu_matches_the_interpreter(monkeypatch, d):
    """The differential check: the same inputs through the wgmma kernel and the interpreter."""
    outs = []
    for device in ("cpu", "cuda"):
        if device == "cpu":
            monkeypatch.setenv("SPARSECC_INTERPRET", "1")
        else:
            monkeypatch.delenv("SPARSECC_INTERPRET", raising=False)
        q, k, v, out = _masked_args(2, 300, d, device, 11)
        _run_masked(q, k, v, out, 128, 8)
        outs.append(out.float().cpu())
    assert torch.isfinite(outs[1]).all()
    torch.testing.assert_close(outs[1], outs[0], rtol=1e-2, atol=1e-2)
