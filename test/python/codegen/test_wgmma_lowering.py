"""The sm_90a wgmma path of the compiler (no GPU needed): layouts, shared encodings, the
lowered PTX's synchronisation and ptxas/SASS for every config the GPU tests run.

GPU correctness of the same kernels: test_gpu_lower.py::test_wgmma_gemm_matches_torch and the
sparse_mm GPU tests (which compile for sm_90a on the H100)."""

from __future__ import annotations

import re

import pytest
from ptx_lines import first_loop, stripped
from sgemm_ir import WGMMA_CONFIGS, sparse_gemm_ttir
from xdsl.parser import Parser

from sparsecc.analysis.layouts import distributed
from sparsecc.codegen.ptxas import ToolNotFoundError, assemble, dump_sass
from sparsecc.compiler import CompileOptions, lower_to_ptx, run_passes, ttgir_rewrites
from sparsecc.dialects import make_context
from sparsecc.dialects import ptx_wgmma as wg
from sparsecc.dialects.ttg import MmaEncodingAttr
from sparsecc.ops.sparse_mm import default_config
from sparsecc.passes.sparse_gpu_encoding import wgmma_swizzle


def ttgir(bm: int, bn: int, bk: int, warps: int, stages: int, target: str = "sm_90a", dtype: str = "f16",
          mbarriers: bool = False, unroll: bool = False):
    """The ttgir stage of the sgemm kernel (ending in the compiler's ttgir rewrites)."""
    module = Parser(make_context(), sparse_gemm_ttir(bm, bn, bk, dtype)).parse_module()
    passes = [f"convert-tt-to-ttg{{num-warps={warps} target={target}}}", "sparse-gpu-encoding"]
    if stages > 1:
        passes.append(f"tritongpu-pipeline{{num-stages={stages}{' mbarriers=true' if mbarriers else ''}}}")
    rewrites = ttgir_rewrites(CompileOptions(target=target, wgmma_unroll=unroll))
    run_passes(module, passes + ["canonicalize", "cse", *rewrites])
    return module


@pytest.mark.parametrize("warps, m, n", [(4, 64, 64), (4, 128, 128), (8, 256, 128), (8, 128, 256)])
def test_version3_layout_is_the_wgmma_accumulator(warps, m, n):
    """Register r of (warp, lane) holds what wgmma.m64nN's d[r % (N/2)] of m64 block r // (N/2)
    of that warp's warpgroup holds (ptx_wgmma's docstring, checked on the H100)."""
    dl = distributed(MmaEncodingAttr((warps, 1), version_major=3, instr_shape=(64, n)), (m, n))
    per = n // 2
    assert dl.num_regs == (m // (16 * warps)) * per
    for warp in range(warps):
        group, w = divmod(warp, 4)
        for lane in range(32):
            g, t = lane // 4, lane % 4
            for r in range(dl.num_regs):
                i, d = divmod(r, per)
                j, q = divmod(d, 4)
                row = 16 * warps * i + 64 * group + 16 * w + g + (8 if q >= 2 else 0)
                col = 8 * j + 2 * t + q % 2
                assert dl.coord(warp, lane, r) == (row, col)


@pytest.mark.parametrize("width", [128, 64, 32])
def test_col_block_layout_is_the_mn_major_canonical_layout(width):
    """Byte offset of B[k][n] in the colBlock layout = column block * (K x width) + the swizzled
    offset of (row k, byte 2n) inside a `width`-byte-row atom: what the descriptor with
    LBO = block pitch, SBO = 8 rows describes."""
    k_rows, n_cols = 64, 256
    enc = wgmma_swizzle(n_cols, 2)
    assert enc.col_block * 2 == 128  # the widest swizzle that fits wins
    enc = wgmma_swizzle(width // 2, 2)
    cols = width // 2
    seen = set()
    for k in range(k_rows):
        for n in range(cols * 2 if width != 128 else cols):
            off = 2 * enc.swizzled_offset(k, n, cols * 2, k_rows)
            block, nn = divmod(n, cols)
            want = block * k_rows * width + wg.swizzle_offset(k * width + 2 * nn, f"{width}B")
            assert off == want
            seen.add(off)
    assert len(seen) == len({(k, n) for k in range(k_rows) for n in range(cols * 2 if width != 128 else cols)})


def test_ragged_rows_fill_no_swizzle():
    with pytest.raises(ValueError, match="fills no 32/64/128-byte swizzle"):
        wgmma_swizzle(8, 2)


def test_only_sparse_tiles_of_whole_warpgroups_use_wgmma():
    def versions(bm, bn, warps, target="sm_90a"):
        mod = ttgir(bm, bn, 64, warps, 1, target)
        return set(re.findall(r"versionMajor = (\d)", str(mod)))

    assert versions(64, 64, 4) == {"3"}
    assert versions(128, 256, 8) == {"3"}
    assert versions(64, 64, 4, target="sm_90") == {"2"}
    assert versions(32, 16, 4) == {"2"}  # 32 rows cannot hold a 64-row warpgroup tile
    assert versions(128, 512, 4) == {"2"}  # N > 256: wider than one wgmma


def test_pipelined_loop_keeps_one_group_in_flight_and_drains_it():
    """The K loop commits its wgmma group without waiting; the next iteration drains it before
    its async_wait barrier (so no warpgroup's group still reads a slot when any thread rewrites
    it, nor the A/metadata registers when they are reloaded), and the epilogue waits before it
    reads the accumulators."""
    _, ptx, meta = lower_to_ptx(ttgir(256, 128, 64, 8, 3), CompileOptions(target="sm_90a"))
    assert ".target sm_90a" in ptx
    body = ptx[ptx.index("$L__loop"):]
    loop, after = body.split("@%p", 1)[0], body
    _, inside, rest = first_loop(ptx)
    kinds = [ln.split()[0] for ln in inside if ln.startswith(("cp.async.wait", "bar.sync", "wgmma.", "ldmatrix", "fence"))]
    first_wait = kinds.index("wgmma.wait_group.sync.aligned")
    assert first_wait < kinds.index("bar.sync") < kinds.index("ldmatrix.sync.aligned.m8n8.x4.shared.b16")
    assert first_wait < kinds.index("fence.proxy.async.shared::cta;") < kinds.index("bar.sync")
    assert kinds.count("wgmma.mma_async.sp.sync.aligned.m64n128k32.f32.f16.f16") == 4
    _assert_copies_wait_for_every_group(inside)
    last = [ln for ln in inside if ln.startswith("wgmma.")][-1]
    assert last == "wgmma.commit_group.sync.aligned;"  # no wait at the end of the body
    assert rest[1] == "wgmma.wait_group.sync.aligned 0;"  # drained after the loop
    assert meta["shared"] % 1024 == 0 and loop and after


def _assert_copies_wait_for_every_group(body: list[str]) -> None:
    """Each cp.async of the loop body comes after a `wgmma.wait_group 0` issued since the last
    commit and a barrier after that wait: the group of the previous iteration may read the very
    slot the copy overwrites, and wait_group only waits for the issuing warpgroup's groups, so
    every warpgroup must have drained (the barrier) before any thread writes."""
    drained = published = False
    copies = 0
    for ln in body:
        if ln == "wgmma.commit_group.sync.aligned;":
            drained = published = False
        elif ln == "wgmma.wait_group.sync.aligned 0;":
            drained = True
        elif ln.startswith("bar.sync") and drained:
            published = True
        elif ln.startswith("cp.async.cg"):
            assert published, "cp.async while a wgmma group (this or another warpgroup's) may still read its slot"
            copies += 1
    assert copies


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
@pytest.mark.parametrize("cfg", WGMMA_CONFIGS, ids=lambda c: "x".join(map(str, c)))
def test_wgmma_configs_assemble_to_hgmma_sp(cfg, dtype):
    bm, bn, bk, warps, stages = cfg
    _, ptx, _ = lower_to_ptx(ttgir(bm, bn, bk, warps, stages, dtype=dtype), CompileOptions(target="sm_90a"))
    assert f"wgmma.mma_async.sp.sync.aligned.m64n{bn}k32.f32.{dtype}.{dtype}" in ptx
    cubin = assemble(ptx, "sm_90a")
    res = cubin.kernel_resources()
    if (bm * bn) // (warps * 32) < 128:  # one warpgroup holding 128x128 accumulators spills a little
        assert res.spill_stores == 0, res
    assert "wgmma.mma_async instructions are serialized" not in cubin.log
    try:
        sass = dump_sass(cubin.data)
    except ToolNotFoundError as e:
        pytest.skip(f"no cuobjdump: {e}")
    assert "HGMMA.SP.64x" in sass


def test_sparse_mm_picks_wgmma_tiles_on_hopper_only():
    import torch

    big = default_config(8192, 8192, 8192, torch.float16, "cuda", "sm_90a")
    assert (big.block_m, big.block_n, big.block_k, big.num_warps) == (256, 128, 128, 8)
    assert default_config(8192, 8192, 8192, torch.float16, "cuda", "sm_80").num_warps == 4
    decode = default_config(8192, 16, 8192, torch.bfloat16, "cuda", "sm_90a")
    assert decode.block_n == 16 and decode.block_k == 256


def test_autotune_candidates_start_with_the_default_and_are_distinct():
    import torch

    from sparsecc.ops.sparse_mm import candidate_configs

    for shape in [(8192, 8192, 8192), (8192, 16, 8192), (5120, 128, 4096), (200, 300, 64)]:
        for target in ("sm_90a", "sm_80"):
            cands = candidate_configs(*shape, torch.float16, target)
            assert cands[0] == default_config(*shape, torch.float16, "cuda", target)
            assert len(set(cands)) == len(cands) >= 2


def test_unrolled_wgmma_loop_double_buffers_the_fragment_registers():
    """unroll_by_two (wgmma_unroll=True): two dots per trip plus a guarded last one, each
    copy with its own fragment registers; every barrier drains the groups in flight (the slots
    they read are shared by all warpgroups), and the kernel still assembles to HGMMA.SP
    without spills."""
    _, ptx, _ = lower_to_ptx(ttgir(64, 64, 64, 4, 3, unroll=True), CompileOptions(target="sm_90a"))
    _, inside, rest = first_loop(ptx)
    assert sum(ln == "wgmma.commit_group.sync.aligned;" for ln in inside) == 2
    first_frag = next(i for i, ln in enumerate(inside) if ln.startswith("ldmatrix"))
    waits = [ln for ln in inside[:first_frag] if ln.startswith("wgmma.wait_group")]
    assert waits == ["wgmma.wait_group.sync.aligned 0;"]  # drained before the top barrier
    _assert_copies_wait_for_every_group(inside)
    assert sum(ln.startswith("wgmma.mma_async.sp") for ln in rest) == 2  # the last odd iteration
    assert rest[1] == "wgmma.wait_group.sync.aligned 0;"
    cubin = assemble(ptx, "sm_90a")
    assert cubin.kernel_resources().spill_stores == 0


def test_unroll_by_two_keeps_the_trip_count():
    """The rewritten loop runs the body for exactly the original iterations (interpreted in
    Python on the loop bounds: main trips cover pairs, the guarded remainder the odd one)."""
    for lb, ub, step in [(0, 1, 1), (0, 2, 1), (0, 7, 1), (3, 20, 4), (0, 0, 1), (5, 4, 1)]:
        want = list(range(lb, ub, step))
        got, nxt = [], lb
        for i in range(lb, ub - step, 2 * step):
            got += [i, i + step]
            nxt = i + 2 * step
        if nxt < ub:
            got.append(nxt)
        assert got == want, (lb, ub, step)


def test_a_values_from_shared_memory_through_a_descriptor():
    """wgmma_a_smem=True: A values in a canonical K-major swizzled ring are read by wgmma
    itself (an i64 descriptor operand, no ldmatrix for them); the metadata still comes in
    registers; every copy still waits for the groups reading the ring."""
    _, base, _ = lower_to_ptx(ttgir(64, 64, 64, 4, 3), CompileOptions(target="sm_90a"))
    _, ptx, _ = lower_to_ptx(ttgir(64, 64, 64, 4, 3), CompileOptions(target="sm_90a", wgmma_a_smem=True))
    lines = stripped(ptx)
    mmas = [ln for ln in lines if ln.startswith("wgmma.mma_async.sp")]
    assert mmas and all(ln.split("}, ")[1].startswith("%rd") for ln in mmas)  # A: a descriptor
    assert all(ln.endswith(", 0, 1;") for ln in mmas)  # imm-trans-a 0 (K-major), imm-trans-b 1
    count = lambda text, what: sum(ln.strip().startswith(what) for ln in text.splitlines())  # noqa: E731
    assert count(ptx, "ldmatrix") < count(base, "ldmatrix")  # only the metadata's remain
    assert count(ptx, "ldmatrix.sync.aligned.m8n8.x4.shared") == 0
    _assert_copies_wait_for_every_group(first_loop(ptx)[1])
    cubin = assemble(ptx, "sm_90a")
    assert cubin.kernel_resources().spill_stores == 0


def _assert_mbarrier_protocol(body: list[str]) -> None:
    """In an mbarrier-pipelined wgmma loop: no CTA barrier; the first shared read comes after a
    wait on the full barrier and a proxy fence; every cp.async comes after, since the last
    commit, a wgmma.wait_group that retires the previous group, the thread's release of the slot
    (mbarrier.arrive) and a wait on the empty barrier; each copy batch ends in the thread's
    cp.async arrival on the full barrier."""
    assert not any(ln.startswith("bar.sync") for ln in body)
    waited = fenced = False
    retired = released = free = False
    copies = arrivals = 0
    for ln in body:
        if ln.startswith("mbarrier.try_wait.parity"):
            waited = True
            free = released  # the second wait of an iteration is the empty barrier's
        elif ln == "fence.proxy.async.shared::cta;":
            fenced = waited
        elif ln.startswith(("ldmatrix", "ld.shared")):
            assert waited and fenced, "a shared read before the full barrier's wait + fence"
        elif ln == "wgmma.commit_group.sync.aligned;":
            retired = released = free = False
        elif ln.startswith("wgmma.wait_group.sync.aligned"):
            retired = True
        elif "mbarrier.arrive.shared::cta.b64 _," in ln:
            assert retired, "a slot released before its wgmma group retired"
            released = True
        elif ln.startswith("cp.async.cg"):
            assert free, "cp.async into a slot before every thread released it"
            copies += 1
        elif ln.startswith("cp.async.mbarrier.arrive.noinc"):
            arrivals += 1
    assert copies and arrivals


@pytest.mark.parametrize("unroll", [False, True], ids=["plain", "unrolled"])
def test_mbarrier_pipeline_lowers_without_cta_barriers(unroll):
    """tritongpu-pipeline{mbarriers=true}: full/empty mbarriers initialised once (one thread,
    then fence + barrier), S-1 prologue arrivals, and a loop that synchronises only through
    them (GPU runs: test_gpu_sparse_mm.py::test_mbarrier_pipeline_matches_torch)."""
    _, ptx, meta = lower_to_ptx(ttgir(256, 128, 128, 8, 3, mbarriers=True, unroll=unroll),
                               CompileOptions(target="sm_90a"))
    before, inside, after = first_loop(ptx)
    # full and empty rings: 256 arrivals each (every thread's copies; every thread's release)
    assert sum(ln.startswith("@") and "mbarrier.init.shared::cta.b64" in ln and ln.endswith(", 256;")
               for ln in before) == 6
    assert sum(ln.startswith("cp.async.mbarrier.arrive.noinc") for ln in before) == 2  # S - 1
    _assert_mbarrier_protocol(inside)
    if unroll:
        assert sum(ln == "wgmma.commit_group.sync.aligned;" for ln in inside) == 2
    assert not any(ln.startswith("cp.async.wait_group") for ln in inside)
    cubin = assemble(ptx, "sm_90a")
    try:
        sass = dump_sass(cubin)
    except ToolNotFoundError as e:
        pytest.skip(f"no cuobjdump: {e}")
    assert "HGMMA.SP.64x128x32" in sass and "SYNCS" in sass
