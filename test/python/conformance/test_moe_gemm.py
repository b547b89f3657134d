"""The MoE grouped GEMM of bench/moe.py (2:4 experts, a `while` loop over each expert's token
tiles around the K loop), as the GPU compiles it, and a GEMM whose weight tile is loaded
without a mask.

CPU part: the K loop's operands (the 2:4 weights, loaded unmasked, and x, masked on its token
dim only) are raised to block pointers and pipelined as 16-byte cp.async copies, on sm_90a and
sm_80, for every tile bench/moe.py tries; before, each element was an ld.global.b16 of its own
64-bit address (2x Triton's instructions, spills at 255 registers). An unmasked dim has no
extent a TMA tensor map could take: such a loop keeps cp.async, its masked twin takes TMA.
GPU part (`gpu` marker): those tiles against torch on ragged routings (an empty expert, an
expert whose rows end inside a token tile), written into NaN-poisoned outputs; also under the
compile switches bench/moe_sweep.py tries (mbarriers, unrolled by two, A from shared memory).

tma_extents (issue 29, off by default): the weight's and the tokens' tensor maps take their
extents from the allocations, so the K loop goes to TMA (CPU: the PTX and the recipes; GPU:
ragged routings with NaN rows past the routed tokens in x's allocation, and the refusal of a
K the loop overruns).
"""

from __future__ import annotations

import os
import re
import sys

import pytest
import torch

import sparsecc
import sparsecc.language as tl

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "bench"))
import moe  # noqa: E402
import moe_sweep  # noqa: E402

TILES = moe.DECODE_TILES + moe.PREFILL_TILES
KERNEL = moe.pk.sparsecc_kernel(moe.moe_gemm_kernel)


def _compile(tile: moe.Tile, target: str = "sm_90a", **switches: bool):
    return sparsecc.compile(KERNEL, moe.sparsecc_signature(), tile.constexprs, target=target,
                            num_warps=tile.warps, num_stages=tile.stages, **switches)


def _k_loop(ptx: str) -> str:
    """The body of the (only) scf.for of the kernel: the K loop."""
    m = re.search(r"\$L__loop\d+:(.*?)\$L__loop_end", ptx, re.S)
    assert m, "no K loop in the PTX"
    return m.group(1)


def _loops(ptx: str) -> list[str]:
    """The bodies of every scf.for of the kernel (a warp-specialized kernel has two K loops:
    the producer warp's copies, the compute warps' wgmmas)."""
    return re.findall(r"\$L__loop\d+:(.*?)\$L__loop_end", ptx, re.S)


def _compute_k_loop(ptx: str) -> str:
    """The body of the K loop that runs the wgmmas."""
    found = [b for b in _loops(ptx) if "wgmma.mma_async" in b]
    assert len(found) == 1, f"{len(found)} K loops run wgmmas"
    return found[0]


@pytest.mark.parametrize("target", ["sm_90a", "sm_80"])
@pytest.mark.parametrize("tile", TILES, ids=moe._tile_name)
def test_k_loop_copies_tiles_with_cp_async(tile, target):
    if target == "sm_80" and tile == moe.Tile(128, 256, 64, 8, 4):
        with pytest.raises(sparsecc.CompilationError, match="at most 3 stages fit"):
            _compile(tile, target)  # 164 KiB of rings: an H100/H200 tile (228 KiB), one sm_80 refuses
        return
    ck = _compile(tile, target)
    ptx = ck.asm["ptx"]
    body = _k_loop(ptx)
    assert "ld.global" not in body, "the K loop loads operands element by element into registers"
    # values, metadata and x: 16-byte copies into the next ring slot (x zero-filled past `end`)
    assert body.count("cp.async.cg.shared.global") >= 3 and "cp.async.commit_group" in body
    assert "cp.async.bulk.tensor" not in ptx  # no tensor map: the weights' extent is unknown
    assert not ck.metadata.get("tensor_maps")
    assert ck.asm.get("cubin"), "ptxas did not assemble it"
    if tile.block_t == 16:  # decode tiles: few registers, far from spilling
        (res,) = ck.metadata["ptxas"].values()
        assert res.registers <= 128 and (res.spill_stores, res.spill_loads) == (0, 0), res


@pytest.mark.parametrize("tile", [t for t in TILES if t.block_t >= 128], ids=moe._tile_name)
def test_prefill_tiles_use_sparse_wgmma_without_spilling_in_the_k_loop(tile):
    from sparsecc.codegen.ptxas import ToolNotFoundError, dump_sass

    ck = _compile(tile)
    assert "wgmma.mma_async.sp" in _k_loop(ck.asm["ptx"])
    try:
        sass = dump_sass(ck.asm["cubin"])
    except ToolNotFoundError:
        pytest.skip("cuobjdump not found")
    # the K loop is the backward branch's range: no local-memory traffic inside it
    lines = sass.splitlines()
    addr = [(int(m.group(1), 16), ln) for ln in lines if (m := re.search(r"/\*([0-9a-f]{4,})\*/\s+(.*?);", ln))]
    back = [(a, int(t.group(1), 16)) for a, ln in addr
            if (t := re.search(r"BRA (?:\S+ )?0x([0-9a-f]+)", ln)) and int(t.group(1), 16) < a]
    assert back, "no backward branch in the SASS"
    hgmma = [a for a, ln in addr if "HGMMA.SP" in ln]
    # the innermost loop around the MMAs (the while loop around it holds the epilogue too)
    end, start = min(((a, t) for a, t in back if any(t <= h <= a for h in hgmma)), key=lambda p: p[0] - p[1])
    assert not [ln for a, ln in addr if start <= a <= end and re.search(r"\b(STL|LDL)\b", ln)]


@sparsecc.jit
def gemm_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, MASKED: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_ptrs = a_ptr + rm[:, None] * stride_am + rk[None, :]
    b_ptrs = b_ptr + rk[:, None] * stride_bk + rn[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        if MASKED:
            a = tl.load(a_ptrs, mask=(rm[:, None] < M) & (rk[None, :] < K - k * BK), other=0.0)
        else:
            a = tl.load(a_ptrs)
        b = tl.load(b_ptrs, mask=(rk[:, None] < K - k * BK) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BK
        b_ptrs += BK * stride_bk
    c_ptrs = c_ptr + rm[:, None] * stride_cm + rn[None, :]
    tl.store(c_ptrs, acc.to(tl.float16), mask=(rm[:, None] < M) & (rn[None, :] < N))


GEMM_SIG = {"a_ptr": "*fp16:NV24", "b_ptr": "*fp16:16", "c_ptr": "*fp16:16", "M": "i32:16", "N": "i32:16",
            "K": "i32:16", "stride_am": "i32:16", "stride_bk": "i32:16", "stride_cm": "i32:16"}


def test_an_unmasked_weight_tile_keeps_cp_async_where_its_masked_twin_takes_tma():
    """Masks bound every dim of the masked kernel's tiles by arguments: TMA tensor maps. The
    unmasked A has no extent a tensor map could take (raise-pointer-tensors gives it
    UNBOUNDED, above the largest tensor-map dim): the whole loop stays on cp.async."""
    consts = {"BM": 128, "BN": 128, "BK": 64}
    masked = sparsecc.compile(gemm_kernel, GEMM_SIG, consts | {"MASKED": True}, target="sm_90a")
    assert len(masked.metadata["tensor_maps"]) == 3  # values, metadata, B
    unmasked = sparsecc.compile(gemm_kernel, GEMM_SIG, consts | {"MASKED": False}, target="sm_90a")
    assert not unmasked.metadata.get("tensor_maps")
    ptx = unmasked.asm["ptx"]
    assert "cp.async.cg.shared.global" in ptx and "wgmma.mma_async.sp" in ptx
    assert "ld.global" not in _k_loop(ptx)


# --------------------------------------------------------------------------------------
# GPU
# --------------------------------------------------------------------------------------

ROUTINGS = [(1, 0), (16, 1), (150, 2)]
"""(tokens, seed): a single token (6 of 8 experts empty), decode, and a prefill-like batch
whose experts end inside token tiles."""


@pytest.mark.gpu
@pytest.mark.parametrize("tokens,seed", ROUTINGS)
@pytest.mark.parametrize("tile", TILES, ids=moe._tile_name)
def test_moe_gemm_on_the_gpu_matches_torch(tile, tokens, seed):
    experts, n, k = 8, 512, 1024
    x, offs, _ = moe.route(tokens, experts, moe.TOP_K, k, "cuda", seed=seed)
    w = moe.make_weights(experts, n, k, "cuda", seed=seed + 7)
    y = torch.full((x.shape[0] + 5, n), float("nan"), dtype=torch.float16, device="cuda")
    moe.launch(KERNEL, sparsecc.compress(w), x, y, offs, n, k, tile, experts)
    torch.cuda.synchronize()
    ref = moe.reference(w, x, offs, n)
    assert torch.isfinite(y[:x.shape[0]]).all(), "rows left unwritten"
    assert torch.isnan(y[x.shape[0]:]).all(), "rows past the routed ones were written"
    torch.testing.assert_close(y[:x.shape[0]].float(), ref, rtol=1e-2, atol=1e-2)


@pytest.mark.gpu
@pytest.mark.parametrize("switches", moe_sweep.SPARSECC_VARIANTS[1:], ids=moe_sweep.switch_label)
@pytest.mark.parametrize("tile", [moe.Tile(64, 16, 64, 4, 6), moe.Tile(128, 256, 64, 8, 3), moe.Tile(128, 128, 64, 8, 4)],
                         ids=moe._tile_name)
def test_moe_gemm_under_the_sweeps_switches_on_the_gpu_matches_torch(tile, switches):
    """The pipelines bench/moe_sweep.py also times (mbarriers, the loop unrolled by two, A from
    shared memory), on a routing whose experts take several token tiles each (~275 rows: the
    next tile's K loop initialises the mbarriers again), with an odd count of K steps."""
    experts, n, k = 8, 512, 1088  # 1088 / 64 = 17 K steps: the unrolled loop's odd last trip
    x, offs, _ = moe.route(1100, experts, moe.TOP_K, k, "cuda", seed=3)
    w = moe.make_weights(experts, n, k, "cuda", seed=4)
    y = torch.full((x.shape[0], n), float("nan"), dtype=torch.float16, device="cuda")
    moe.launch(KERNEL, sparsecc.compress(w), x, y, offs, n, k, tile, experts, **switches)
    torch.cuda.synchronize()
    torch.testing.assert_close(y.float(), moe.reference(w, x, offs, n), rtol=1e-2, atol=1e-2)


# --------------------------------------------------------------------------------------
# tma_extents: tensor maps whose extents come from the allocations (issue 29)
# --------------------------------------------------------------------------------------

PREFILL = moe.Tile(128, 256, 64, 8, 3)


def test_tma_extents_puts_the_moe_k_loop_on_tma_with_a_from_shared_memory():
    """With tma_extents the unmasked weight (values and metadata) and the token tile (bounded by
    the loaded `end`, stored under the same bound) get tensor maps: the K loop copies with TMA
    into mbarrier rings, wgmma.sp reads the values through a descriptor and only the metadata
    goes through ldmatrix; no cp.async, no CTA barrier in the loop."""
    ck = _compile(PREFILL, tma_extents=True)
    maps = ck.metadata["tensor_maps"]
    assert [m["arg"] for m in maps] == [0, 1, 2]  # w values, w metadata, x
    assert all(m["dims"][1][0] == "rows" for m in maps)  # rows: what each allocation holds
    assert all(m["guards"] for m in maps)
    ptx = ck.asm["ptx"]
    body = _compute_k_loop(ptx)
    assert "cp.async.bulk.tensor.2d" in ptx and "cp.async.cg" not in ptx
    assert "bar.sync" not in body and "mbarrier.try_wait" in body
    assert body.count("ldmatrix") == 1, "only the metadata should go through ldmatrix"
    assert "wgmma.mma_async.sp" in body
    # default: unchanged (cp.async, no tensor maps)
    assert not _compile(PREFILL).metadata.get("tensor_maps")


@pytest.mark.parametrize("unroll", [False, True], ids=["plain", "unroll"])
@pytest.mark.parametrize("tile", moe.PREFILL_TILES, ids=moe._tile_name)
def test_tma_extents_gives_the_moe_gemm_a_producer_warp_and_one_ring_for_all_token_tiles(tile, unroll):
    """Issue 29: under tma_extents (with warp_specialize, the default) the rings and their
    mbarriers are made and initialised once, before the `while` over token tiles, and a producer
    warp runs that loop issuing every tile's copies: its K loop has the TMA copies and the
    empty-slot waits, the compute warps' K loop the wgmmas and no copies, and after the split
    no CTA barrier but the compute warps' named one (the epilogue's store scratch, where it fits)."""
    ck = _compile(tile, tma_extents=True, wgmma_unroll=unroll)
    assert '"ttg.producer-warps" = 1' in ck.asm["ttgir"]
    ptx = ck.asm["ptx"]
    split = ptx.index("shfl.sync.idx.b32")  # the producer / compute-warps branch
    first_while = ptx.index("$L__while")
    inits = [m.start() for m in re.finditer(r"mbarrier\.init", ptx)]
    assert len(inits) == 2 * tile.stages and max(inits) < min(split, first_while), "mbarriers initialised per tile"
    producer_loops = [b for b in _loops(ptx) if "cp.async.bulk.tensor" in b]
    assert producer_loops and all("wgmma" not in b and "mbarrier.try_wait" in b for b in producer_loops)
    assert "cp.async.bulk.tensor" not in _compute_k_loop(ptx)
    assert set(re.findall(r"bar\.sync [^;]*;", ptx[split:])) <= {f"bar.sync 1, {32 * tile.warps};"}


def test_tma_extents_without_warp_specialization_keeps_the_ring_per_token_tile():
    """The A/B of bench/moe_sweep.py (`tmaext+ws=0`): with warp_specialize off, the rings stay
    inside the `while` (initialised per token tile, a CTA barrier after each K loop), as before
    issue 29."""
    ttgir = _compile(PREFILL, tma_extents=True, warp_specialize=False).asm["ttgir"]
    loop = ttgir[ttgir.index("scf.while"):]
    assert "producer" not in ttgir and loop.count("ttg.init_barrier") == 2 and "ttg.barrier" in loop


def test_tma_extents_leaves_sm_80_and_mma_sp_tiles_as_they_were():
    for tile, target in ((PREFILL, "sm_80"), (moe.DECODE_TILES[1], "sm_90a")):
        assert _compile(tile, target, tma_extents=True).asm["ptx"] == _compile(tile, target).asm["ptx"]


@sparsecc.jit
def moe_unmasked_store_kernel(w_ptr, x_ptr, y_ptr, expert_offs_ptr, N, K, stride_wn, stride_xm, stride_ym,
                              BLOCK_N: tl.constexpr, BLOCK_T: tl.constexpr, BLOCK_K: tl.constexpr):
    """bench/moe.py's kernel with the y store unmasked: the token rows past `end` reach memory."""
    pid_n = tl.program_id(0)
    expert = tl.program_id(1)
    start = tl.load(expert_offs_ptr + expert)
    end = tl.load(expert_offs_ptr + expert + 1)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    w_rows = expert * N + offs_n
    t0 = start
    while t0 < end:
        offs_t = t0 + tl.arange(0, BLOCK_T)
        w_ptrs = w_ptr + w_rows[:, None] * stride_wn + offs_k[None, :]
        x_ptrs = x_ptr + offs_t[None, :] * stride_xm + offs_k[:, None]
        acc = tl.zeros((BLOCK_N, BLOCK_T), dtype=tl.float32)
        for _ in range(0, tl.cdiv(K, BLOCK_K)):
            w = tl.load(w_ptrs)
            xt = tl.load(x_ptrs, mask=offs_t[None, :] < end, other=0.0)
            acc = tl.dot(w, xt, acc)
            w_ptrs += BLOCK_K
            x_ptrs += BLOCK_K
        y_ptrs = y_ptr + offs_t[None, :] * stride_ym + offs_n[:, None]
        tl.store(y_ptrs, acc.to(tl.float16))
        t0 += BLOCK_T


def test_tma_extents_keeps_the_exact_token_bound_where_rows_past_it_are_stored():
    """The rows past `end` may be read from the allocation only when nothing of them is
    stored; with an unmasked store the token tile keeps its bound, so the loop stays cp.async."""
    ck = sparsecc.compile(moe_unmasked_store_kernel, moe.sparsecc_signature(), PREFILL.constexprs,
                          target="sm_90a", num_warps=PREFILL.warps, num_stages=PREFILL.stages, tma_extents=True)
    assert not ck.metadata.get("tensor_maps")
    assert "cp.async.cg.shared.global" in ck.asm["ptx"]
    assert "tma.extents" not in ck.asm["ttgir"], "a loop that stays on cp.async keeps no extents"


def test_tma_extents_gives_the_unmasked_gemm_weight_tensor_maps():
    consts = {"BM": 128, "BN": 128, "BK": 64, "MASKED": False}
    ck = sparsecc.compile(gemm_kernel, GEMM_SIG, consts, target="sm_90a", tma_extents=True)
    maps = ck.metadata["tensor_maps"]
    assert len(maps) == 3 and "cp.async.bulk.tensor" in ck.asm["ptx"]
    assert [m["dims"][1][0] for m in maps[:2]] == ["rows", "rows"] and "guards" not in maps[2]


def test_tma_extents_recipes_evaluate_to_the_allocation_and_refuse_rows_too_short():
    """The launch-time side: the weight's tensor maps, evaluated for Mixtral's shapes, cover
    exactly the experts' rows and the K columns; a K that the K loop overruns (K % BLOCK_K != 0,
    so its last step reads into the next row) is refused with an error naming the argument."""
    from sparsecc.analysis.tma import evaluate
    from sparsecc.runtime.tensor_map import TensorMapError, check_guards

    maps = _compile(PREFILL, tma_extents=True).metadata["tensor_maps"]
    rows, k = 8 * 14336, 4096
    args = [0, 0, 0, 0, 0, 14336, k, k, k, 14336]
    avail = {0: rows * k // 2, 1: rows // 16 * k, 2: 4100 * k}
    dims = [[evaluate(d, args, avail) for d in m["dims"]] for m in maps]
    assert dims == [[k // 2, rows], [k, rows // 16], [k, 4100]]
    for m in maps:
        check_guards(m, args, avail)
    short = [0, 0, 0, 0, 0, 14336, k - 32, k - 32, k - 32, 14336]
    with pytest.raises(TensorMapError, match="argument 'w_ptr_values'.*tma_extents"):
        check_guards(maps[0], short, avail, "moe_gemm_kernel", ["w_ptr_values", "w_ptr_meta", "x_ptr"])


def _skewed_routing(counts: list[int], k: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """x (sum(counts) x k, sorted by expert) and int32 offsets for experts with these row counts."""
    g = torch.Generator(device="cpu").manual_seed(seed)
    x = torch.randn(sum(counts), k, generator=g).to(torch.float16)
    offs = torch.zeros(len(counts) + 1, dtype=torch.int32)
    offs[1:] = torch.cumsum(torch.tensor(counts), 0)
    return x.cuda(), offs.cuda()


SKEWED = {"empty-and-ragged": [0, 300, 0, 1, 0, 256, 513, 0], "one-expert-takes-all": [0, 0, 0, 1100, 0, 0, 0, 0]}
"""Routings the random top-2 one does not produce: empty experts between full ones, an expert
of one token, one of exactly one 256-row tile, one whose rows end 1 past two tiles; and one
expert with every token (the ring runs through 5-9 token tiles of one program)."""


@pytest.mark.gpu
@pytest.mark.parametrize("unroll", [False, True], ids=["plain", "unroll"])
@pytest.mark.parametrize("routing", [(1, 0), (150, 2), (1100, 3), *SKEWED],
                         ids=lambda r: r if isinstance(r, str) else f"{r[0]}tok")
@pytest.mark.parametrize("tile", moe.PREFILL_TILES, ids=moe._tile_name)
def test_moe_gemm_with_tma_extents_on_the_gpu_matches_torch(tile, routing, unroll):
    """Ragged routings (empty experts, experts ending inside a token tile, several tiles per
    expert, one expert with all tokens) under tma_extents: one TMA ring across each program's
    token tiles, filled by a producer warp (issue 29). x lies at the start of a larger buffer
    whose rows past the routed ones are NaN: the last expert's token tile reads them through its
    tensor map (rows past `end`), and none of it may reach y; y's rows past the routed ones must
    stay unwritten."""
    experts, n, k = 8, 512, 1088  # 17 K steps: the unrolled loop's odd last trip; not a multiple of the stages
    if isinstance(routing, str):
        x, offs = _skewed_routing(SKEWED[routing], k, seed=11)
    else:
        x, offs, _ = moe.route(routing[0], experts, moe.TOP_K, k, "cuda", seed=routing[1])
    buf = torch.full((x.shape[0] + 300, k), float("nan"), dtype=torch.float16, device="cuda")
    buf[:x.shape[0]] = x
    w = moe.make_weights(experts, n, k, "cuda", seed=7)
    y = torch.full((x.shape[0] + 5, n), float("nan"), dtype=torch.float16, device="cuda")
    moe.launch(KERNEL, sparsecc.compress(w), buf[:x.shape[0]], y, offs, n, k, tile, experts,
               tma_extents=True, wgmma_unroll=unroll)
    torch.cuda.synchronize()
    ref = moe.reference(w, x, offs, n)
    assert torch.isfinite(y[:x.shape[0]]).all(), "rows left unwritten (or NaN rows past `end` leaked in)"
    assert torch.isnan(y[x.shape[0]:]).all(), "rows past the routed ones were written"
    torch.testing.assert_close(y[:x.shape[0]].float(), ref, rtol=1e-2, atol=1e-2)


@sparsecc.jit
def moe_for_kernel(w_ptr, x_ptr, y_ptr, expert_offs_ptr, N, K, stride_wn, stride_xm, stride_ym,
                   BLOCK_N: tl.constexpr, BLOCK_T: tl.constexpr, BLOCK_K: tl.constexpr):
    """bench/moe.py's kernel with a `for` over the expert's token tiles instead of the `while`."""
    pid_n = tl.program_id(0)
    expert = tl.program_id(1)
    start = tl.load(expert_offs_ptr + expert)
    end = tl.load(expert_offs_ptr + expert + 1)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    w_rows = expert * N + offs_n
    for i in range(0, tl.cdiv(end - start, BLOCK_T)):
        offs_t = start + i * BLOCK_T + tl.arange(0, BLOCK_T)
        w_ptrs = w_ptr + w_rows[:, None] * stride_wn + offs_k[None, :]
        x_ptrs = x_ptr + offs_t[None, :] * stride_xm + offs_k[:, None]
        acc = tl.zeros((BLOCK_N, BLOCK_T), dtype=tl.float32)
        for _ in range(0, tl.cdiv(K, BLOCK_K)):
            w = tl.load(w_ptrs)
            xt = tl.load(x_ptrs, mask=offs_t[None, :] < end, other=0.0)
            acc = tl.dot(w, xt, acc)
            w_ptrs += BLOCK_K
            x_ptrs += BLOCK_K
        y_ptrs = y_ptr + offs_t[None, :] * stride_ym + offs_n[:, None]
        tl.store(y_ptrs, acc.to(tl.float16), mask=offs_t[None, :] < end)


def test_tma_extents_gives_a_for_over_token_tiles_the_producer_warp_too():
    """The outer loop may be an scf.for (its trip count from the loaded bounds): the same one
    ring (initialised before it, its step counter carried) and producer warp."""
    ck = sparsecc.compile(moe_for_kernel, moe.sparsecc_signature(), PREFILL.constexprs, target="sm_90a",
                          num_warps=PREFILL.warps, num_stages=PREFILL.stages, tma_extents=True)
    ttgir = ck.asm["ttgir"]
    assert '"ttg.producer-warps" = 1' in ttgir and len(ck.metadata["tensor_maps"]) == 3
    outer = ttgir[ttgir.index("scf.for"):]
    assert "ttg.init_barrier" not in outer and "tt.store" in outer
    ptx = ck.asm["ptx"]
    assert "cp.async.bulk.tensor" not in _compute_k_loop(ptx)


@pytest.mark.gpu
@pytest.mark.parametrize("routing", [(150, 2), *SKEWED], ids=lambda r: r if isinstance(r, str) else f"{r[0]}tok")
@pytest.mark.parametrize("tile", [PREFILL, moe.Tile(128, 128, 64, 4, 3)], ids=moe._tile_name)
def test_moe_for_kernel_with_tma_extents_on_the_gpu_matches_torch(tile, routing):
    """The `for` form of the grouped GEMM under tma_extents (one ring across its token tiles, a
    producer warp) on ragged routings, NaN-poisoned x rows past the routed ones and y rows."""
    experts, n, k = 8, 512, 1088
    if isinstance(routing, str):
        x, offs = _skewed_routing(SKEWED[routing], k, seed=12)
    else:
        x, offs, _ = moe.route(routing[0], experts, moe.TOP_K, k, "cuda", seed=routing[1])
    buf = torch.full((x.shape[0] + 300, k), float("nan"), dtype=torch.float16, device="cuda")
    buf[:x.shape[0]] = x
    w = moe.make_weights(experts, n, k, "cuda", seed=8)
    y = torch.full((x.shape[0] + 5, n), float("nan"), dtype=torch.float16, device="cuda")
    moe.launch(moe_for_kernel, sparsecc.compress(w), buf[:x.shape[0]], y, offs, n, k, tile, experts, tma_extents=True)
    torch.cuda.synchronize()
    assert torch.isfinite(y[:x.shape[0]]).all(), "rows left unwritten (or NaN rows past `end` leaked in)"
    assert torch.isnan(y[x.shape[0]:]).all(), "rows past the routed ones were written"
    torch.testing.assert_close(y[:x.shape[0]].float(), moe.reference(w, x, offs, n), rtol=1e-2, atol=1e-2)


@pytest.mark.gpu
def test_moe_gemm_with_tma_extents_refuses_a_k_its_loop_overruns():
    """K = 1056 with BLOCK_K = 64: the last K step reads 32 columns past each row, which the
    pointer load would take from the next row and a tensor map would zero-fill: refused."""
    experts, n, k = 8, 512, 1056
    x, offs, _ = moe.route(64, experts, moe.TOP_K, k, "cuda", seed=5)
    w = moe.make_weights(experts, n, k, "cuda", seed=6)
    y = torch.empty((x.shape[0], n), dtype=torch.float16, device="cuda")
    with pytest.raises(ValueError, match="tma_extents"):
        moe.launch(KERNEL, sparsecc.compress(w), x, y, offs, n, k, PREFILL, experts, tma_extents=True)
