"""TMA copies on sm_90a (no GPU needed): which tiles and block pointers qualify, the tensor-map
recipes the host evaluates, the pipelined loop and its PTX, and the launcher's packing.

GPU runs of the same kernels: test_gpu_sparse_mm.py (every sparse_mm on an H100 takes this
path for the wgmma tiles) and test_mbarrier_pipeline_matches_torch[tma*]."""

from __future__ import annotations

import pytest
from ptx_lines import loop_bodies
from xdsl.parser import Parser

import sparsecc
import sparsecc.language as tl
from sparsecc.analysis.dtypes import esize
from sparsecc.analysis.tma import box_plan, evaluate
from sparsecc.codegen.ptxas import ToolNotFoundError, assemble, dump_sass
from sparsecc.dialects import make_context
from sparsecc.dialects import ttg as ttgd
from sparsecc.ops.sparse_mm import sparse_mm_kernel
from sparsecc.runtime import launcher

MM_CONSTS = {"BLOCK_M": 256, "BLOCK_N": 128, "BLOCK_K": 128, "GROUP_M": 16}


def _sig(hinted: bool, dtype: str = "fp16") -> dict[str, str]:
    i = "i32:16" if hinted else "i32"
    one = "i32:1" if hinted else "i32"
    return {"D": f"*{dtype}", "A": f"*{dtype}:NV24", "B": f"*{dtype}", "M": "i32", "N": "i32", "K": i,
            "stride_am": i, "stride_bk": i, "stride_bn": one, "stride_dm": i, "stride_dn": one}


@pytest.fixture(autouse=True)
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SPARSECC_CACHE_DIR", str(tmp_path))


def _compile(hinted: bool = True, dtype: str = "fp16", consts: dict | None = None, warps: int = 8, stages: int = 3,
             **switches: bool):
    return sparsecc.compile(sparse_mm_kernel, signature=_sig(hinted, dtype), constexprs=consts or MM_CONSTS,
                            target="sm_90a", num_warps=warps, num_stages=stages, **{"tma": True} | switches)


def _rings(ck) -> list[ttgd.MemDescType]:
    module = Parser(make_context(), ck.asm["ttgir"]).parse_module()
    return [op.result.type for op in module.walk()
            if isinstance(op, ttgd.LocalAllocOp) and len(op.result.type.get_shape()) == 3]


def test_box_plans_of_the_wgmma_tiles():
    """The A values (128-byte rows: 128B swizzle), metadata (plain rows) and B (64-column
    blocks of 128B swizzle) rings of the large tile are rows of TMA boxes."""
    plans = []
    for ring in _rings(_compile()):
        tile = ring.with_shape(ring.get_shape()[1:])
        plans.append(box_plan(tile, esize(tile.element_type)))
    got = [(p.rows, p.width, p.count, p.swizzle) for p in plans]
    assert got == [(256, 64, 1, 128), (16, 128, 1, 0), (128, 64, 2, 128)]


def test_box_plan_rejects_layouts_tma_cannot_write():
    # an XOR swizzle of 16-byte chunks by row // 2 over 128-byte rows (mma.sp's A ring shape) is
    # none of TMA's modes
    from xdsl.dialects.builtin import f16

    swz = ttgd.SharedEncodingAttr(8, 2, 4, (1, 0))
    assert box_plan(ttgd.MemDescType((64, 64), f16, swz, mutable=True), 2) is None
    # a transposed (K-major) tile is boxes along its columns: N rows of one 128-byte K atom...
    kmajor = ttgd.SharedEncodingAttr(8, 1, 8, (0, 1))
    plan = box_plan(ttgd.MemDescType((64, 64), f16, kmajor, mutable=True), 2)
    assert plan is not None and plan.transposed and (plan.rows, plan.width, plan.swizzle) == (64, 64, 128)
    # ...but not with a swizzle that is not the atom's
    assert box_plan(ttgd.MemDescType((64, 64), f16, ttgd.SharedEncodingAttr(8, 2, 4, (0, 1)), mutable=True), 2) is None
    # and the same swizzle on 64-byte rows is TMA's 64B mode
    assert box_plan(ttgd.MemDescType((64, 32), f16, swz, mutable=True), 2).swizzle == 64


def test_recipes_evaluate_to_the_decomposed_operands():
    """The launch metadata holds one recipe per operand: base argument, dtype, dims (innermost
    first) and byte strides as expressions over the (decomposed) arguments."""
    ck = _compile()
    recipes = ck.metadata["tensor_maps"]
    names = ck.flat_arg_names
    # D, A.values, A.meta, B, M, N, K, stride_am, stride_bk, stride_bn, stride_dm, stride_dn
    m, n, k = 1000, 512, 1040
    values = [0x1000, 0x2000, 0x3000, 0x4000, m, n, k, k, n, 1, n, 1]
    got = {names[r["arg"]]: ([evaluate(e, values) for e in r["dims"]], [evaluate(e, values) for e in r["strides"]],
                             r["box"], r["swizzle"], r["dtype"]) for r in recipes}
    assert got == {
        "A.values": ([k // 2, m], [k], [64, 256], 128, "fp16"),  # K/2 values per row, 2 bytes each
        "A.meta": ([k, -(-m // 16)], [2 * k], [128, 16], 0, "u16"),  # one i16 row per 16 rows of A
        "B": ([n, k], [2 * n], [64, 128], 128, "fp16"),
    }


def test_unhinted_strides_keep_the_cp_async_pipeline():
    """Without a proof that the row strides are multiples of 16 bytes no tensor map is
    possible: the loop keeps cp.async and the CTA-barrier form (no mbarriers)."""
    ck = _compile(hinted=False)
    assert "ttg.async_tma_copy" not in ck.asm["ttgir"] and "ttg.init_barrier" not in ck.asm["ttgir"]
    assert "ttg.async_wait" in ck.asm["ttgir"] and "tensor_maps" not in ck.metadata


def test_expressions_follow_c_division():
    func_free = [["divs", ["arg", 0], ["const", 16]], ["rems", ["arg", 0], ["const", 16]]]
    assert [evaluate(e, [-17]) for e in func_free] == [-1, -1]
    assert [evaluate(e, [33]) for e in func_free] == [2, 1]


def _count(body: list[str], prefix: str) -> int:
    return sum(ln.startswith(prefix) or f" {prefix}" in ln for ln in body)


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_warp_specialized_tma_kernel(dtype):
    """One 128-byte tensor-map parameter per operand and 8 + 1 warps. The producer warp's loop
    waits for a free slot, announces the stage's 69632 bytes and issues 4 boxes per step (A,
    metadata, two B column blocks) and nothing else; the compute warps' loop waits for data,
    reads the metadata (A goes through a descriptor), issues 8 wgmmas and frees the slot, with
    no copy and no CTA barrier. The split tests a warp-uniform value (no serialised wgmma);
    SASS has UTMALDG and HGMMA.SP."""
    ck = _compile(dtype=dtype)
    ptx = ck.asm["ptx"]
    assert ptx.count(".param .align 64 .b8 sparse_mm_kernel_param_") == 3
    assert ".maxntid 288, 1, 1" in ptx and ck.metadata["threads"] == 288
    assert "shfl.sync.idx.b32" in ptx
    producer, consumer = loop_bodies(ptx)
    assert _count(producer, "cp.async.bulk.tensor.2d") == 4
    assert _count(producer, "mbarrier.arrive.expect_tx.shared::cta.b64") == 1 and "69632;" in "".join(producer)
    assert _count(producer, "mbarrier.try_wait.parity") == 1  # the empty slot
    assert not any(_count(producer, p) for p in ("wgmma", "ldmatrix", "bar.sync"))
    assert _count(consumer, "wgmma.mma_async.sp") == 8 and _count(consumer, "ldmatrix") == 1
    assert _count(consumer, "mbarrier.try_wait.parity") == 1  # the full slot
    assert _count(consumer, "mbarrier.arrive.shared::cta.b64") == 1  # the slot read one step ago
    assert not any(_count(consumer, p) for p in ("cp.async", "bar.sync"))
    cubin = assemble(ptx, "sm_90a")
    assert cubin.resources["sparse_mm_kernel"].spill_stores == 0
    assert "serialized" not in cubin.log
    try:
        sass = dump_sass(cubin)
    except ToolNotFoundError as e:
        pytest.skip(f"no cuobjdump: {e}")
    assert "UTMALDG.2D" in sass and "HGMMA.SP.64x128x32" in sass


def test_without_warp_specialization_thread_0_copies():
    """warp_specialize=False: one loop in 8 warps; thread 0 issues the boxes after the
    wait for the slot, between the compute steps."""
    ck = _compile(warp_specialize=False)
    (body,) = loop_bodies(ck.asm["ptx"])
    assert ck.metadata["threads"] == 256
    assert _count(body, "cp.async.bulk.tensor.2d") == 4 and _count(body, "wgmma.mma_async.sp") == 8
    assert _count(body, "mbarrier.try_wait.parity") == 2 and not _count(body, "bar.sync")


def test_recipes_survive_the_disk_cache():
    first = _compile()
    again = _compile()
    assert again.cache_hit and again.metadata["tensor_maps"] == first.metadata["tensor_maps"]


def test_launcher_appends_tensor_maps_once_per_argument_values(monkeypatch):
    """The packed launch values end with one 128-byte map per recipe; the maps are built once
    per distinct value of the arguments they read."""
    from sparsecc.runtime import tensor_map

    built = []

    def fake_encode(recipe, values, kernel="kernel", names=(), available=None):
        built.append((recipe["arg"], tuple(values)))
        return bytes([recipe["arg"]]) * 128

    monkeypatch.setattr(tensor_map, "encode", fake_encode)
    recipes = [{"arg": 0, "dtype": "fp16", "dims": [["arg", 1], ["const", 8]], "strides": [["arg", 1]],
                "box": [64, 8], "swizzle": 128, "esize": 2}]
    pack = launcher._with_tensor_maps(lambda args, device: list(args), recipes, "k", ["X", "n", "y"])
    assert pack([0x100, 64, 7], 0) == [0x100, 64, 7, bytes([0]) * 128]
    pack([0x100, 64, 9], 0)  # y is not read by the recipe: the same map
    pack([0x200, 64, 9], 0)  # a new base: a new map
    assert [b[1] for b in built] == [(0x100, 64, 7), (0x200, 64, 9)]
    assert launcher._driver_kinds({}, ["*fp16", "i32", "i32"], 1) == ["ptr", "i32", "i32", "tmap"]


@sparsecc.jit
def gemm_storing_every_step(D, P, A, B, M, N, K, stride_am, stride_bk, stride_dm,
                            BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """A K loop that also stores its running sum every step (into P): a store the producer
    warp of a warp-specialized kernel must not run."""
    a_ptr = tl.make_block_ptr(A, shape=(M, K), strides=(stride_am, 1), offsets=(0, 0),
                              block_shape=(BLOCK_M, BLOCK_K), order=(1, 0))
    b_ptr = tl.make_block_ptr(B, shape=(K, N), strides=(stride_bk, 1), offsets=(0, 0),
                              block_shape=(BLOCK_K, BLOCK_N), order=(1, 0))
    p_ptr = tl.make_block_ptr(P, shape=(M, N), strides=(stride_dm, 1), offsets=(0, 0),
                              block_shape=(BLOCK_M, BLOCK_N), order=(1, 0))
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for _ in range(0, tl.cdiv(K, BLOCK_K)):
        acc = tl.dot(tl.load(a_ptr, boundary_check=(0, 1)), tl.load(b_ptr, boundary_check=(0, 1)), acc)
        tl.store(p_ptr, acc.to(P.dtype.element_ty), boundary_check=(0, 1))
        a_ptr = tl.advance(a_ptr, (0, BLOCK_K))
        b_ptr = tl.advance(b_ptr, (BLOCK_K, 0))
    d_ptr = tl.make_block_ptr(D, shape=(M, N), strides=(stride_dm, 1), offsets=(0, 0),
                              block_shape=(BLOCK_M, BLOCK_N), order=(1, 0))
    tl.store(d_ptr, acc.to(D.dtype.element_ty), boundary_check=(0, 1))


def test_a_store_in_the_loop_keeps_the_copies_in_the_compute_warps():
    """The loop still gets TMA copies, but no producer warp: it would run the store too."""
    sig = {"D": "*fp16", "P": "*fp16", "A": "*fp16:NV24", "B": "*fp16", "M": "i32", "N": "i32", "K": "i32:16",
           "stride_am": "i32:16", "stride_bk": "i32:16", "stride_dm": "i32:16"}
    ck = sparsecc.compile(gemm_storing_every_step, signature=sig, constexprs={"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 64},
                          target="sm_90a", num_warps=4, num_stages=3)
    assert "ttg.async_tma_copy" in ck.asm["ttgir"] and ck.metadata["tensor_maps"]
    assert ck.metadata["threads"] == 128 and "shfl.sync.idx" not in ck.asm["ptx"]  # (the warp split's broadcast)
    assemble(ck.asm["ptx"], "sm_90a")


def test_cta_pairs_multicast_b_and_need_the_cluster_attribute():
    """num_ctas=2: B's copies (two 64-column boxes) become multicasts of a CTA pair, the kernel a
    2-CTA cluster; without TMA (unhinted strides) nothing is clustered. ttgir whose copies
    multicast in a module that is not marked `ttg.num-ctas = 2` is refused by name."""
    from sparsecc.codegen.lower_base import LoweringError
    from sparsecc.compiler import CompileOptions, lower_to_ptx

    consts = {**MM_CONSTS, "CLUSTER_M": 2}
    ck = sparsecc.compile(sparse_mm_kernel, signature=_sig(True), constexprs=consts, target="sm_90a",
                          num_warps=8, num_stages=3, num_ctas=2)
    assert ck.metadata["cluster"] == 2
    module = Parser(make_context(), ck.asm["ttgir"]).parse_module()
    copies = [op for op in module.walk() if isinstance(op, ttgd.AsyncTmaCopyOp)]
    assert {op.ctas for op in copies} == {1, 2}
    assert all(op.ctas == 2 for op in copies if op.dst.type.get_shape() == (128, 128))  # B
    assert ck.asm["ptx"].count(".multicast::cluster") == sum(op.ctas == 2 for op in copies) * 2
    del module.attributes["ttg.num-ctas"]
    with pytest.raises(LoweringError, match=r"multicast = 2 needs a module of CTA pairs"):
        lower_to_ptx(module, CompileOptions(target="sm_90a"))
    plain = sparsecc.compile(sparse_mm_kernel, signature=_sig(False), constexprs=consts, target="sm_90a",
                             num_warps=8, num_stages=3, num_ctas=2)
    assert "cluster" not in plain.metadata and ".reqnctapercluster" not in plain.asm["ptx"]
    with pytest.raises(ValueError, match="num_ctas must be 1 or 2"):
        sparsecc.compile(sparse_mm_kernel, signature=_sig(True), constexprs=consts, target="sm_90a", num_ctas=4)
