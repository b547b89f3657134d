"""Triton's tutorial matmul with a dense A (issue 30's parity row) on Hopper's warpgroup MMA.

On sm_90a a dense fp16/bf16 dot of loaded tiles becomes `wgmma.mma_async.m64nNk16` with A and B
read from shared memory (as Triton emits it), pipelined like the sparse GEMMs: TMA copies and
mbarriers where the tiles allow (aligned strides), cp.async otherwise. CPU part: the PTX, ptxas
resources and SASS of the parity configs, the fall-backs (mma.sync on sm_80, with the switch
off, and for a kernel with a dot of computed operands), the new PTX op, and the tutorial on the
interpreter against torch. GPU part (`gpu` marker): the tutorial source against torch on ragged
shapes for each parity config, the switch on and off, fp16 and bf16, and with a 2:4 A.
"""

from __future__ import annotations

import re

import pytest
import torch
from tutorial_kernels import matmul_kernel

import sparsecc
import sparsecc.language as tl
from sparsecc.codegen.ptxas import ToolNotFoundError, dump_sass

CONFIGS = [(128, 256, 64, 8, 8, 3), (128, 128, 64, 8, 4, 4), (64, 256, 32, 8, 4, 4)]
"""bench/parity.py's MM_CONFIGS: (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_warps, num_stages)."""
NAMES = matmul_kernel.arg_names


def _sig(dtype: str = "fp16", aligned: bool = True, a_enc: str = "") -> dict[str, str]:
    """What kernel[grid] specializes contiguous tensors to: unit strides ':1'; with `aligned`,
    16-byte pointers and sizes/strides divisible by 16 (TMA); else none (cp.async)."""
    ptr = f"*{dtype}" + (":16" if aligned else "")
    ints = {n: "i32:16" if aligned else "i32" for n in NAMES[3:12]}
    ints.update(stride_ak="i32:1", stride_bn="i32:1", stride_cn="i32:1")
    return {NAMES[0]: ptr + a_enc if a_enc else ptr, NAMES[1]: ptr, NAMES[2]: ptr, **ints}


def _consts(cfg: tuple[int, ...]) -> dict[str, int]:
    return dict(zip(("BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K", "GROUP_SIZE_M"), cfg[:4]))


def _compile(cfg: tuple[int, ...], sig: dict[str, str], target: str = "sm_90a", **opts):
    return sparsecc.compile(matmul_kernel, sig, _consts(cfg), target=target, num_warps=cfg[4],
                            num_stages=cfg[5], **opts)


def _no_spills(ck) -> None:
    (res,) = ck.metadata["ptxas"].values()
    assert (res.spill_stores, res.spill_loads) == (0, 0), res


@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: "x".join(map(str, c)))
def test_parity_configs_run_dense_wgmma_from_shared_memory(cfg):
    bm, bn, bk, _, warps, _ = cfg
    ck = _compile(cfg, _sig())
    ptx = ck.asm["ptx"]
    assert "versionMajor = 3" in ck.asm["ttgir"]
    rep_m = bm // (16 * warps)
    # per K tile: one m64nNk16 per k16 step and m64 block, A and B through descriptors
    assert ptx.count(f"wgmma.mma_async.sync.aligned.m64n{bn}k16.f32.f16.f16") == bk // 16 * rep_m
    assert "mma.sync" not in ptx and "ldmatrix" not in ptx
    assert "cp.async.bulk.tensor.2d" in ptx  # TMA copies
    assert "wgmma.wait_group.sync.aligned 1;" in ptx  # one group stays in flight in the K loop
    _no_spills(ck)
    try:
        sass = dump_sass(ck.asm["cubin"])
    except ToolNotFoundError as e:
        pytest.skip(f"no cuobjdump: {e}")
    assert f"HGMMA.64x{bn}x16.F32" in sass and "HMMA" not in sass


@pytest.mark.parametrize("cfg", CONFIGS[:2], ids=lambda c: "x".join(map(str, c)))
def test_unaligned_strides_take_cp_async_with_a_from_shared_memory(cfg):
    """K and the row strides unknown (a ragged K): no TMA, the cp.async ring; A is still read
    through a descriptor (in registers the 128x128 tile spilled)."""
    ck = _compile(cfg, _sig(aligned=False))
    ptx = ck.asm["ptx"]
    assert "cp.async.cg.shared.global" in ptx and "cp.async.bulk.tensor" not in ptx
    assert "wgmma.mma_async.sync.aligned" in ptx and "ldmatrix" not in ptx
    _no_spills(ck)


def test_a_column_major_b_is_read_k_major():
    """B given as a transposed view (stride_bk = 1): staged as N rows of K, one 128-byte swizzle
    atom each, and read without the descriptor's transpose (imm-trans-b = 0)."""
    sig = _sig() | {"stride_bk": "i32:1", "stride_bn": "i32:16"}
    ck = _compile((128, 128, 64, 8, 8, 3), sig)
    ptx = ck.asm["ptx"]
    assert ptx.count("wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16") == 4
    assert ", 1, 1, 0, 0;" in ptx and "cp.async.bulk.tensor.2d" in ptx
    _no_spills(ck)


def test_bf16_runs_dense_wgmma():
    ck = _compile(CONFIGS[0], _sig("bf16"))
    assert "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16" in ck.asm["ptx"]
    _no_spills(ck)


@pytest.mark.parametrize("target, opts", [("sm_80", {}), ("sm_90", {}), ("sm_90a", {"dense_wgmma": False})])
def test_mma_sync_where_wgmma_is_not_asked_for(target, opts):
    ck = _compile(CONFIGS[1], _sig(), target=target, **opts)
    ptx = ck.asm["ptx"]
    assert "mma.sync.aligned.m16n8k16" in ptx and "wgmma" not in ptx
    assert ck.asm["cubin"]


def test_the_switch_reads_its_environment_variable(monkeypatch):
    monkeypatch.setenv("SPARSECC_DENSE_WGMMA", "0")
    assert "wgmma" not in _compile(CONFIGS[1], _sig()).asm["ptx"]


@sparsecc.jit
def two_dots_kernel(q_ptr, k_ptr, v_ptr, o_ptr, BM: tl.constexpr, BN: tl.constexpr, D: tl.constexpr):
    """Attention's shape: the second dot multiplies a computed P."""
    offs_m = tl.arange(0, BM)
    offs_n = tl.arange(0, BN)
    offs_d = tl.arange(0, D)
    q = tl.load(q_ptr + offs_m[:, None] * D + offs_d[None, :])
    kt = tl.load(k_ptr + offs_n[None, :] * D + offs_d[:, None])
    p = tl.dot(q, kt)
    v = tl.load(v_ptr + offs_n[:, None] * D + offs_d[None, :])
    o = tl.dot(p.to(tl.float16), v)
    tl.store(o_ptr + offs_m[:, None] * D + offs_d[None, :], o.to(tl.float16))


def test_a_chain_of_dots_runs_both_on_wgmma_with_p_in_registers():
    """P @ V on wgmma reads P, the first dot's accumulators, as the register A operand (the
    registers renamed: no shared-memory round trip), as Triton does on Hopper."""
    sig = {"q_ptr": "*fp16:16", "k_ptr": "*fp16:16", "v_ptr": "*fp16:16", "o_ptr": "*fp16:16"}
    ck = sparsecc.compile(two_dots_kernel, sig, {"BM": 64, "BN": 64, "D": 64}, target="sm_90a", num_warps=4)
    assert "versionMajor = 2" not in ck.asm["ttgir"]
    ptx = ck.asm["ptx"]
    assert "mma.sync" not in ptx
    forms = re.findall(r"wgmma\.mma_async\.sync\.aligned\.m64n64k16\.f32\.f16\.f16 \{[^}]*\}, (\{|%rd)", ptx)
    assert forms == ["%rd"] * 4 + ["{"] * 4  # Q K^T from shared memory, then P @ V from registers
    # P's convert renames registers: no 16-bit values go through shared memory (V's tile goes in
    # 16-byte vectors, the index converts in b32 words)
    assert not re.search(r"st\.shared(\.v\d)?\.b16", ptx)
    assert ck.asm["cubin"]


@sparsecc.jit
def scaled_a_kernel(a_ptr, b_ptr, c_ptr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """A dot whose A is computed from a load, not from another dot."""
    offs_m = tl.arange(0, BM)
    offs_n = tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    a = tl.load(a_ptr + offs_m[:, None] * BK + offs_k[None, :]) * 2.0
    b = tl.load(b_ptr + offs_k[:, None] * BN + offs_n[None, :])
    c = tl.dot(a.to(tl.float16), b)
    tl.store(c_ptr + offs_m[:, None] * BN + offs_n[None, :], c.to(tl.float16))


def test_a_dot_of_a_computed_a_keeps_mma_sync():
    """An A computed from a load is in no dot's accumulator registers: the dot keeps mma.sync."""
    sig = {"a_ptr": "*fp16:16", "b_ptr": "*fp16:16", "c_ptr": "*fp16:16"}
    ck = sparsecc.compile(scaled_a_kernel, sig, {"BM": 64, "BN": 64, "BK": 64}, target="sm_90a", num_warps=4)
    assert "versionMajor = 3" not in ck.asm["ttgir"]
    assert "wgmma" not in ck.asm["ptx"] and "mma.sync" in ck.asm["ptx"]


def test_dense_wgmma_op_prints_both_operand_forms():
    from xdsl.dialects import arith
    from xdsl.dialects.builtin import IntegerAttr, f32, i32, i64
    from xdsl.utils.exceptions import VerifyException

    from sparsecc.dialects import ptx_wgmma as wg

    desc = arith.ConstantOp(IntegerAttr(0, i64)).result
    regs = [arith.ConstantOp(IntegerAttr(0, i32)).result for _ in range(4)]
    op = wg.WgmmaMmaAsyncOp(desc, desc, n=16, trans_b=1)
    op.verify()
    assert op.asm_template() == ("wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16 {$0, $1, $2, $3, $4, $5, $6, "
                                 "$7}, $8, $9, 0, 1, 1, 0, 1;")
    acc = list(op.results)
    reg_a = wg.WgmmaMmaAsyncOp(regs, desc, n=16, ab_type="bf16", acc=acc)
    reg_a.verify()
    assert reg_a.asm_template().endswith(".m64n16k16.f32.bf16.bf16 {$0, $1, $2, $3, $4, $5, $6, $7}, "
                                         "{$16, $17, $18, $19}, $20, 1, 1, 1, 0;")
    assert reg_a.results[0].type == f32
    with pytest.raises(VerifyException, match="N must be a multiple of 8"):
        wg.WgmmaMmaAsyncOp(desc, desc, n=12).verify()
    with pytest.raises(VerifyException, match="ab_type must be one of"):
        wg.WgmmaMmaAsyncOp(desc, desc, n=16, ab_type="e4m3").verify()
    with pytest.raises(VerifyException, match="trans_a needs A in shared memory"):
        wg.WgmmaMmaAsyncOp(regs, desc, n=16, trans_a=1).verify()


def _launch(a, b, out, cfg, **opts) -> None:
    m, k = a.shape[0], b.shape[0]
    n = b.shape[1]
    bm, bn = cfg[0], cfg[1]
    grid = (-(-m // bm) * -(-n // bn),)
    matmul_kernel[grid](a, b, out, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                        out.stride(0), out.stride(1), **_consts(cfg), num_warps=cfg[4], num_stages=cfg[5], **opts)


def _check(out: torch.Tensor, ref: torch.Tensor) -> None:
    assert torch.isfinite(out).all(), "some outputs were never written"
    torch.testing.assert_close(out.float(), ref, rtol=1e-2, atol=1e-2 * ref.abs().max().item())


@pytest.mark.parametrize("m, n, k", [(100, 72, 96), (33, 130, 40)])
def test_dense_tutorial_on_the_interpreter(m, n, k, monkeypatch):
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    g = torch.Generator().manual_seed(m + n + k)
    a = torch.randn(m, k, generator=g).half()
    b = torch.randn(k, n, generator=g).half()
    out = torch.full((m, n), float("nan"), dtype=torch.float16)
    _launch(a, b, out, (32, 32, 32, 2, 4, 1))
    _check(out, a.float() @ b.float())


GPU_SHAPES = [(4096, 4096, 4096), (192, 320, 160), (333, 517, 1000), (1000, 24, 520), (16, 256, 4104)]
"""Aligned (TMA), ragged M/N with a K tail inside a tile (TMA zero fill), ragged everything
(cp.async), fewer columns than a tile, and one tile row with a long K."""


@pytest.mark.gpu
@pytest.mark.parametrize("dense_wgmma", [True, False])
@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: "x".join(map(str, c)))
@pytest.mark.parametrize("m, n, k", GPU_SHAPES)
def test_dense_tutorial_matmul_on_the_gpu(m, n, k, cfg, dense_wgmma):
    torch.manual_seed(m + 3 * n + 7 * k)
    a = torch.randn(m, k, device="cuda", dtype=torch.float16)
    b = torch.randn(k, n, device="cuda", dtype=torch.float16)
    out = torch.full((m, n), float("nan"), device="cuda", dtype=torch.float16)
    _launch(a, b, out, cfg, dense_wgmma=dense_wgmma)
    torch.cuda.synchronize()
    _check(out, a.float() @ b.float())


@pytest.mark.gpu
@pytest.mark.parametrize("m, n, k", GPU_SHAPES[1:])
def test_dense_tutorial_matmul_with_a_column_major_b_on_the_gpu(m, n, k):
    torch.manual_seed(5 * m + n + k)
    a = torch.randn(m, k, device="cuda", dtype=torch.float16)
    b = torch.randn(n, k, device="cuda", dtype=torch.float16).T  # stride_bk = 1
    out = torch.full((m, n), float("nan"), device="cuda", dtype=torch.float16)
    _launch(a, b, out, (128, 128, 64, 8, 8, 3))
    torch.cuda.synchronize()
    _check(out, a.float() @ b.float())


@pytest.mark.gpu
@pytest.mark.parametrize("m, n, k", GPU_SHAPES[1:3])
def test_dense_tutorial_matmul_bf16_on_the_gpu(m, n, k):
    torch.manual_seed(m + n + k)
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
    out = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    _launch(a, b, out, CONFIGS[0])
    torch.cuda.synchronize()
    ref = a.float() @ b.float()
    torch.testing.assert_close(out.float(), ref, rtol=2e-2, atol=2e-2 * ref.abs().max().item())


@pytest.mark.gpu
@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: "x".join(map(str, c)))
@pytest.mark.parametrize("m, n, k", [s for s in GPU_SHAPES if s[2] % 16 == 0][:3])
def test_tutorial_matmul_with_a_sparse_on_the_gpu(m, n, k, cfg):
    """The parity table's 2:4 row: the same source and configs, A compressed (K a multiple of
    16, as NV24's metadata words need: `compress` refuses other K)."""
    torch.manual_seed(m + n + k)
    dense = sparsecc.prune_2to4(torch.randn(m, k, device="cuda", dtype=torch.float16))
    b = torch.randn(k, n, device="cuda", dtype=torch.float16)
    out = torch.full((m, n), float("nan"), device="cuda", dtype=torch.float16)
    _launch(sparsecc.compress(dense), b, out, cfg)
    torch.cuda.synchronize()
    _check(out, dense.float() @ b.float())


WIDE_K_CONFIGS = [(128, 128, 128, 8, 8, 3), (64, 128, 128, 8, 4, 3)]
"""BLOCK_K = 128: A's rows (and a column-major B's) are 256 bytes, two 128-byte column blocks
read through descriptors (dot_staging.kmajor_col_blocks); was ldmatrix / mma.sync."""


@pytest.mark.parametrize("cfg", WIDE_K_CONFIGS, ids=lambda c: "x".join(map(str, c)))
@pytest.mark.parametrize("aligned, kmajor_b", [(True, False), (False, False), (True, True)])
def test_wide_k_tiles_read_a_through_column_block_descriptors(cfg, aligned, kmajor_b):
    sig = _sig(aligned=aligned)
    if kmajor_b:  # a column-major B: K-major rows of 256 bytes, two column blocks as well
        sig.update(stride_bk="i32:1", stride_bn="i32:16")
    ck = _compile(cfg, sig)
    ptx = ck.asm["ptx"]
    assert "ldmatrix" not in ptx and "mma.sync" not in ptx
    wg = re.findall(r"wgmma\.mma_async\.sync\.aligned\.m64n128k16\.f32\.f16\.f16 \{[^}]*\}, (%rd\d+|\{)[^;]*, (\d);",
                    ptx)
    # A through a descriptor; imm-trans-b 1 for a row-major (MN-major) B, 0 for a K-major one
    assert wg and all(a.startswith("%rd") and t == str(int(not kmajor_b)) for a, t in wg)
    ttgir = ck.asm["ttgir"]
    assert "order = [1, 0], colBlock = 64" in ttgir and ("order = [0, 1], colBlock = 64" in ttgir) == kmajor_b
    assert ("cp.async.bulk.tensor" in ptx) == aligned
    _no_spills(ck)


@pytest.mark.gpu
@pytest.mark.parametrize("cfg", WIDE_K_CONFIGS, ids=lambda c: "x".join(map(str, c)))
@pytest.mark.parametrize("kmajor_b", [False, True])
@pytest.mark.parametrize("m, n, k", GPU_SHAPES[:3])
def test_wide_k_tiles_on_the_gpu(m, n, k, cfg, kmajor_b):
    """BLOCK_K = 128 against torch: aligned (TMA: a box per column block), a K tail inside a
    tile, ragged everything (cp.async), with B row-major (MN-major) or column-major (K-major
    in two column blocks)."""
    torch.manual_seed(m + 5 * n + 3 * k)
    a = torch.randn(m, k, device="cuda", dtype=torch.float16)
    b = torch.randn(n, k, device="cuda", dtype=torch.float16).T if kmajor_b else \
        torch.randn(k, n, device="cuda", dtype=torch.float16)
    out = torch.full((m, n), float("nan"), device="cuda", dtype=torch.float16)
    _launch(a, b, out, cfg)
    torch.cuda.synchronize()
    _check(out, a.float() @ b.float())
