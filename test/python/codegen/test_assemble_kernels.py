"""Every frontend test kernel compiles through all stages; ptxas accepts it for sm_80, sm_90 and
sm_90a and its SASS runs the sparse tensor cores (HMMA.SP; HGMMA.SP for the sm_90a tiles that
hold whole warpgroups). Runs in CI without a GPU."""

from __future__ import annotations

import pytest
from kernels import SEED_BLOCKS, SEED_SIG, dot_kernel

import sparsecc
from sparsecc.codegen.ptxas import ToolNotFoundError, dump_sass
from sparsecc.demo import sparse_gemm_kernel
from sparsecc.ops.sparse_mm import sparse_mm_kernel

GEMM_SIG = {"M": "i32", "N": "i32", "K": "i32", "stride_am": "i32", "stride_bk": "i32", "stride_dm": "i32"}
MM_SIG = {"M": "i32", "N": "i32", "K": "i32", "stride_am": "i32", "stride_bk": "i32", "stride_bn": "i32",
          "stride_dm": "i32", "stride_dn": "i32"}


def _ptrs(dtype: str) -> dict[str, str]:
    return {"D": f"*{dtype}", "A": f"*{dtype}:NV24", "B": f"*{dtype}"}


CASES = [
    ("seed", dot_kernel, SEED_SIG, SEED_BLOCKS, 4, 1),
    ("demo-fp16", sparse_gemm_kernel, _ptrs("fp16") | GEMM_SIG, {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 64}, 4, 3),
    ("sparse_mm-bf16", sparse_mm_kernel, _ptrs("bf16") | MM_SIG,
     {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8}, 4, 3),
    ("sparse_mm-fp16-8warps", sparse_mm_kernel, _ptrs("fp16") | MM_SIG,
     {"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 64, "GROUP_M": 8}, 8, 2),
]


@pytest.fixture(autouse=True)
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SPARSECC_CACHE_DIR", str(tmp_path))


@pytest.mark.parametrize("target", ["sm_80", "sm_90", "sm_90a"])
@pytest.mark.parametrize("name, kernel, sig, consts, warps, stages", CASES, ids=[c[0] for c in CASES])
def test_kernel_assembles_to_sparse_tensor_core_code(name, kernel, sig, consts, warps, stages, target):
    ck = sparsecc.compile(kernel, signature=sig, constexprs=consts, target=target,
                          num_warps=warps, num_stages=stages)
    assert set(sparsecc.STAGES) <= set(ck.asm)
    assert "#tt.sparse<\"NV24\">" in ck.asm["ttir"] and "tt.sparse" not in ck.asm["ttir-decomposed"]
    assert "meta = 1" in ck.asm["ttgir"] and "meta = 0" in ck.asm["ttgir"]
    ptx = ck.asm["ptx"]
    assert f".target {target}" in ptx and ".version 8.5" in ptx
    wgmma = "#ttg.mma<{versionMajor = 3" in ck.asm["ttgir"]
    assert wgmma == (target == "sm_90a" and consts.get("BLOCK_M", 0) % (16 * warps) == 0)
    if wgmma:  # Hopper: whole-warpgroup tiles run on wgmma.mma_async.sp
        assert "wgmma.mma_async.sp.sync.aligned.m64n" in ptx
    else:
        assert "mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f32" in ptx
    cubin = ck.asm["cubin"]
    assert isinstance(cubin, bytes) and len(cubin) > 1000
    try:
        sass = dump_sass(cubin)
    except ToolNotFoundError as e:
        pytest.skip(f"no cuobjdump: {e}")
    assert ("HGMMA.SP" if wgmma else "HMMA.SP") in sass


def test_unsupported_target_names_the_minimum():
    with pytest.raises(ValueError, match="sm_80 or newer"):
        sparsecc.compile(dot_kernel, signature=SEED_SIG, constexprs=SEED_BLOCKS, target="sm_75")


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_column_major_b_is_staged_k_major_and_read_without_trans(target):
    # B given as x.T (stride_bk == 1): 16-byte copies along K into a K-major ring, plain
    # ldmatrix for its fragments, mma.sp also at a tile wgmma would take (wgmma reads B N-major)
    sig = _ptrs("fp16") | MM_SIG | {"K": "i32:16", "stride_am": "i32:16", "stride_bk": "i32:1", "stride_bn": "i32:16"}
    consts = {"BLOCK_M": 64, "BLOCK_N": 16, "BLOCK_K": 256, "GROUP_M": 8}
    kmajor = sparsecc.compile(sparse_mm_kernel, signature=sig, constexprs=consts | {"B_KMAJOR": True},
                              target=target, num_warps=4, num_stages=4)
    ttgir, ptx = kmajor.asm["ttgir"], kmajor.asm["ptx"]
    assert "order = array<i32: 0, 1>} : !tt.ptr<tensor<256x16xf16, #ttg.blocked<{sizePerThread = [8, 1]" in ttgir
    assert "memdesc<4x256x16xf16, #ttg.shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [0, 1]}>" in ttgir
    assert "versionMajor = 3" not in ttgir and "mma.sp::ordered_metadata" in ptx
    assert "ld.global" not in ptx  # every B chunk is a proven-aligned 16-byte cp.async
    row_major = sparsecc.compile(sparse_mm_kernel, signature=sig | {"stride_bk": "i32:16", "stride_bn": "i32:1"},
                                 constexprs=consts, target=target, num_warps=4, num_stages=4).asm["ptx"]
    trans = "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"
    assert ptx.count(trans) < row_major.count(trans) or target == "sm_90a"  # B's ldmatrix lose .trans
    assert "HMMA.SP" in _sass_or_skip(kmajor.asm["cubin"])


def _sass_or_skip(cubin: bytes) -> str:
    try:
        return dump_sass(cubin)
    except ToolNotFoundError as e:
        pytest.skip(f"no cuobjdump: {e}")
