"""Sparse warpgroup MMA (sm_90a `wgmma.mma_async.sp`) built with the ptx dialect, end to end.

A one-CTA, one-warpgroup (128 threads) kernel computes D(64xN, f32) = A(64xK, 2:4) * B(KxN) with
K/32 chained `wgmma.mma_async.sp.m64nNk32`s. Inputs are sparsecc's NV24 format: A values
(64 x K/2, row-major), A meta (int16 [4, K]) and B given transposed (B^T, N x K, row-major, so B is
K-major in shared memory). The kernel copies A values and B^T into shared memory in the layout
the descriptors describe (no swizzle, or 32B/64B/128B swizzle), or loads A into registers,
builds the metadata registers from NV24 words, fences, issues the wgmmas, commits, waits and
stores D. CPU tests check the PTX text, ptxas (sm_90a) and the SASS (HGMMA.SP); GPU tests
compare with torch on random 2:4 data.
"""

from __future__ import annotations

import re

import pytest
from ptxas_tools import have_ptxas, needs_ptxas
from xdsl.builder import Builder, InsertPoint
from xdsl.dialects import arith
from xdsl.dialects.builtin import FloatAttr, ModuleOp, f32, i16, i32, i64
from xdsl.ir import Block, SSAValue
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException

from sparsecc.codegen import ptxas
from sparsecc.codegen.ptx_printer import emit_ptx
from sparsecc.dialects import make_context, ptx
from sparsecc.dialects import ptx_wgmma as wg

# ------------------------------------------------------------------------------------------------
# IR-building helper


class KB:
    """Appends ops to a block; helpers return SSA values (i32 unless said otherwise)."""

    def __init__(self, block: Block):
        self.b = Builder(InsertPoint.at_end(block))

    def op(self, op):
        return self.b.insert(op)

    def ci(self, v: int, width: int = 32) -> SSAValue:
        return self.op(arith.ConstantOp.from_int_and_width(v, width)).result

    def add(self, a, b):
        return self.op(arith.AddiOp(a, b if isinstance(b, SSAValue) else self.ci(b))).result

    def mul(self, a, c: int):
        return self.op(arith.MuliOp(a, self.ci(c))).result

    def shl(self, a, n: int):
        return self.op(arith.ShLIOp(a, self.ci(n))).result

    def shr(self, a, n: int):
        return self.op(arith.ShRUIOp(a, self.ci(n))).result

    def band(self, a, m: int):
        return self.op(arith.AndIOp(a, self.ci(m))).result

    def xor(self, a, b):
        return self.op(arith.XOrIOp(a, b)).result

    def gaddr(self, base, byte_off):
        return self.add(base, self.op(arith.ExtUIOp(byte_off, i64)).result)


def _log2(x: int) -> int:
    assert x > 0 and x & (x - 1) == 0, x
    return x.bit_length() - 1


# ------------------------------------------------------------------------------------------------
# Shared-memory layout of a K-major tile (R rows of `row_bytes`), as the descriptor sees it


class KMajorTile:
    """Where each 16-byte chunk of a row-major R x row_bytes tile goes, and its descriptors.

    no swizzle: 8x16 B core matrices; the core matrices of one 8-row group lie next to each
    other along K (LBO = 128), 8-row groups follow (SBO = 128 * row_bytes/16).
    W-byte swizzle: the tile is cut into column slabs of W bytes (R x W bytes each, slab after
    slab); inside a slab row r is at r*W and the 16-byte chunk is XOR-swizzled (`swizzle_offset`);
    SBO = 8W, LBO unused (16).
    """

    def __init__(self, rows: int, row_bytes: int, swizzle: str):
        self.rows, self.row_bytes, self.swizzle = rows, row_bytes, swizzle
        self.w = wg.SWIZZLE_BYTES[swizzle]
        if row_bytes % self.w:
            raise ValueError(f"rows of {row_bytes} B cannot hold {swizzle} swizzle atoms")
        if swizzle == "none":
            self.lbo, self.sbo = 128, 128 * (row_bytes // 16)
        else:  # LBO: from one W-byte column slab to the next along K
            self.lbo, self.sbo = rows * self.w, 8 * self.w
        self.nbytes = rows * row_bytes

    def offset(self, r: int, c16: int) -> int:
        """Byte offset of chunk c16 of row r (Python reference of `emit_offset`)."""
        if self.swizzle == "none":
            return (r >> 3) * self.sbo + c16 * self.lbo + (r & 7) * 16
        per = self.w // 16
        return (c16 // per) * self.rows * self.w + wg.swizzle_offset(r * self.w + (c16 % per) * 16, self.swizzle)

    def emit_offset(self, k: KB, r, c16):
        if self.swizzle == "none":
            return k.add(k.add(k.mul(k.shr(r, 3), self.sbo), k.mul(c16, self.lbo)), k.shl(k.band(r, 7), 4))
        per = self.w // 16
        o = k.add(k.mul(r, self.w), k.shl(k.band(c16, per - 1), 4))
        o = k.xor(o, k.shl(k.band(k.shr(o, 7), per - 1), 4))
        return k.add(o, k.mul(k.shr(c16, _log2(per)), self.rows * self.w))

    def start_offset(self, k_byte: int) -> int:
        """Offset of the descriptor start for the k-step beginning at byte k_byte of each row."""
        if self.swizzle == "none":
            assert k_byte % 16 == 0
            return (k_byte // 16) * self.lbo
        return (k_byte // self.w) * self.rows * self.w + k_byte % self.w


# ------------------------------------------------------------------------------------------------
# The kernel

PARAMS = [("D", "ptr"), ("A", "ptr"), ("E", "ptr"), ("BT", "ptr")]
ALIGN = 1024  # swizzle atoms must sit on 8 x W-byte boundaries: align the tiles to 1 KiB


def build_wgmma_sp(
    ab_type: str = "f16", n: int = 64, k_dim: int = 32, *, swizzle: str = "none", a_src: str = "smem", selector: int = 0
) -> ModuleOp:
    """The one-warpgroup kernel D(64 x n) = A(64 x k_dim, NV24) * B(k_dim x n) (see module doc)."""
    assert k_dim % 32 == 0 and a_src in ("smem", "regs")
    steps = k_dim // 32
    tile_a = KMajorTile(64, k_dim, swizzle)  # compressed: k_dim/2 elements x 2 bytes per row
    tile_b = KMajorTile(n, 2 * k_dim, swizzle)
    a_bytes = tile_a.nbytes if a_src == "smem" else 0
    off_b = -(-a_bytes // ALIGN) * ALIGN
    smem_bytes = off_b + tile_b.nbytes + ALIGN
    kernel = ptx.KernelOp(
        f"wgmma_sp_{ab_type}_n{n}_k{k_dim}_{swizzle}_{a_src}_s{selector}",
        PARAMS,
        target="sm_90a",
        reqntid=(128, 1, 1),
        shared_bytes=smem_bytes,
    )
    d_ptr, a_ptr, e_ptr, bt_ptr = kernel.args
    k = KB(kernel.body.block)
    tid = k.op(ptx.SpecialRegOp("tid.x")).result
    warp, lane = k.shr(tid, 5), k.band(tid, 31)
    g, t = k.shr(lane, 2), k.band(lane, 3)
    raw = k.op(ptx.SharedBaseOp()).result
    base = k.band(k.add(raw, ALIGN - 1), -ALIGN)

    # Stage the K-major tiles: thread tid copies 16-byte chunks tid, tid+128, ... (row-major order).
    def stage(tile: KMajorTile, src, dst_off: int) -> None:
        per_row = tile.row_bytes // 16
        for i in range(tile.rows * per_row // 128):
            q = k.add(tid, 128 * i)
            vals = k.op(ptx.LdGlobalOp(k.gaddr(src, k.shl(q, 4)), i32, 4)).res
            r, c16 = k.shr(q, _log2(per_row)), k.band(q, per_row - 1)
            k.op(ptx.StSharedOp(k.add(base, k.add(tile.emit_offset(k, r, c16), dst_off)), vals))

    if a_src == "smem":
        stage(tile_a, a_ptr, 0)
    stage(tile_b, bt_ptr, off_b)
    k.op(wg.FenceProxyAsyncOp())  # generic-proxy stores -> visible to the async proxy
    k.op(ptx.BarSyncOp(0))

    # Metadata of step s: meta[w, 32s + 16h + g] | meta[w, 32s + 16h + g + 8] << 16, h = t % 2.
    h = k.band(t, 1)
    metas = []
    for s in range(steps):
        e_off = k.shl(k.add(k.add(k.mul(warp, k_dim), k.shl(h, 4)), k.add(g, 32 * s)), 1)
        lo = k.op(ptx.LdGlobalOp(k.gaddr(e_ptr, e_off), i16)).res[0]
        hi = k.op(ptx.LdGlobalOp(k.gaddr(e_ptr, e_off), i16, offset=16)).res[0]
        metas.append(k.op(ptx.PackOp(lo, hi)).result)

    # A operand per step: a descriptor, or 4 registers a[j] = A[16w+g+8(j&1)][16s+2t+8(j>>1) : +2].
    a_ops = []
    for s in range(steps):
        if a_src == "smem":
            start = k.add(base, tile_a.start_offset(32 * s))  # 16 compressed elements = 32 B per step
            a_ops.append(wg.build_smem_desc(k.b, start, lbo=tile_a.lbo, sbo=tile_a.sbo, swizzle=swizzle))
        else:
            row = k.add(k.shl(warp, 4), g)
            regs = []
            for j in range(4):
                col = k.add(k.shl(t, 1), 16 * s + 8 * (j >> 1))
                off = k.add(k.mul(k.add(row, 8 * (j & 1)), k_dim), k.shl(col, 1))
                regs.append(k.op(ptx.LdGlobalOp(k.gaddr(a_ptr, off), i32)).res[0])
            a_ops.append(regs)
    b_descs = [
        wg.build_smem_desc(k.b, k.add(base, off_b + tile_b.start_offset(64 * s)), lbo=tile_b.lbo, sbo=tile_b.sbo, swizzle=swizzle)
        for s in range(steps)
    ]

    k.op(wg.WgmmaFenceOp())
    acc: list[SSAValue] = []
    for s in range(steps):
        mma = k.op(wg.WgmmaMmaAsyncSpOp(a_ops[s], b_descs[s], metas[s], n=n, ab_type=ab_type, acc=acc, selector=selector))
        acc = list(mma.res)
    k.op(wg.WgmmaCommitGroupOp())
    k.op(wg.WgmmaWaitGroupOp(0))

    # D: d[4j..4j+1] -> D[16w+g][8j+2t..], d[4j+2..4j+3] -> D[16w+g+8][8j+2t..].
    row = k.add(k.shl(warp, 4), g)
    d_base = k.gaddr(d_ptr, k.shl(k.add(k.mul(row, n), k.shl(t, 1)), 2))
    for j in range(n // 8):
        k.op(ptx.StGlobalOp(d_base, acc[4 * j : 4 * j + 2], offset=32 * j))
        k.op(ptx.StGlobalOp(d_base, acc[4 * j + 2 : 4 * j + 4], offset=32 * j + 8 * n * 4))
    module = ModuleOp([kernel])
    module.verify()
    return module


# (ab_type, n, k_dim, swizzle, a_src, selector)
CASES = [
    ("f16", 64, 32, "none", "smem", 0),
    ("bf16", 64, 32, "none", "smem", 0),
    ("f16", 128, 64, "none", "smem", 1),
    ("bf16", 256, 64, "none", "regs", 0),
    ("f16", 256, 32, "none", "regs", 1),
    ("bf16", 64, 32, "32B", "smem", 0),
    ("f16", 128, 64, "32B", "regs", 1),
    ("f16", 64, 64, "64B", "smem", 1),
    ("f16", 256, 128, "128B", "smem", 0),
    ("bf16", 128, 128, "128B", "smem", 1),
    ("bf16", 64, 128, "128B", "regs", 0),
]
CASE_IDS = ["-".join(map(str, c)) for c in CASES]


# ------------------------------------------------------------------------------------------------
# CPU: descriptors, layouts, op verification, PTX text, ptxas + SASS


def test_smem_desc_bits():
    d = wg.smem_desc_bits(0x1230, 128, 512)
    assert d & 0x3FFF == 0x123 and (d >> 16) & 0x3FFF == 8 and (d >> 32) & 0x3FFF == 32 and d >> 62 == 0
    assert wg.smem_desc_bits(0x400, 16, 1024, "128B") == 0x40 | 1 << 16 | 64 << 32 | 1 << 62
    assert wg.smem_desc_bits(0, 16, 256, "32B") >> 62 == 3 and wg.smem_desc_bits(0, 16, 512, "64B") >> 62 == 2
    assert wg.smem_desc_bits(0x40000 + 0x20, 0, 0) & 0x3FFF == 2  # only address bits 17:4
    with pytest.raises(ValueError, match="multiple of 16"):
        wg.smem_desc_bits(8, 16, 16)
    with pytest.raises(ValueError, match="swizzle must be one of"):
        wg.smem_desc_bits(0, 16, 16, "16B")
    with pytest.raises(ValueError, match="14 bits"):
        wg.smem_desc_bits(0, 1 << 18, 16)


def test_swizzle_offsets_are_a_permutation():
    for swz, w in (("32B", 32), ("64B", 64), ("128B", 128)):
        atom = [wg.swizzle_offset(o, swz) for o in range(0, 8 * w, 16)]
        assert sorted(atom) == list(range(0, 8 * w, 16))
    # 128B: chunk c of row r lands at chunk c ^ (r % 8)
    assert [wg.swizzle_offset(3 * 128 + 16 * c, "128B") for c in range(8)] == [3 * 128 + 16 * (c ^ 3) for c in range(8)]
    assert wg.swizzle_offset(1234 * 16, "none") == 1234 * 16


@pytest.mark.parametrize("swizzle", ["none", "32B", "64B", "128B"])
def test_kmajor_tile_covers_every_chunk_once(swizzle):
    tile = KMajorTile(64, 256, swizzle)
    offs = {tile.offset(r, c) for r in range(64) for c in range(16)}
    assert offs == set(range(0, tile.nbytes, 16))


def _desc_kernel(swizzle: str) -> tuple[ModuleOp, SSAValue]:
    kernel = ptx.KernelOp("desc", [("D", "ptr")], target="sm_90a")
    k = KB(kernel.body.block)
    desc = wg.build_smem_desc(k.b, k.op(ptx.SharedBaseOp()).result, lbo=128, sbo=1024, swizzle=swizzle, offset=64)
    k.op(ptx.StGlobalOp(kernel.args[0], [desc]))
    return ModuleOp([kernel]), desc


def test_build_smem_desc_ir():
    module, desc = _desc_kernel("128B")
    module.verify()
    text = emit_ptx(module)
    assert desc.type == i64
    assert re.search(r"shr\.u64 %rd\d+, %rd\d+, %r\d+;", text) and "and.b64" in text and "or.b64" in text
    assert re.search(rf"mov\.b64 %rd\d+, {wg.smem_desc_bits(0, 128, 1024, '128B')};", text)  # folded fields
    _, desc32 = _desc_kernel("32B")  # bit 63 set: a negative i64 constant, printed as hex
    assert "0xC000004000080000" in emit_ptx(desc32.owner.parent_op())
    with pytest.raises(VerifyException, match="must be i32"):
        wg.build_smem_desc(KB(Block()).b, desc, lbo=16, sbo=16)


def _operands(k: KB, n: int = 64):
    desc = k.op(arith.ConstantOp.from_int_and_width(0, 64)).result
    meta = k.ci(0x4444)
    acc = [k.op(arith.ConstantOp(FloatAttr(0.0, f32))).result] * (n // 2)
    return desc, meta, acc


def test_wgmma_op_text_forms():
    k = KB(Block())
    desc, meta, acc = _operands(k, 16)
    r = k.ci(1)
    op = wg.WgmmaMmaAsyncSpOp(desc, desc, meta, n=16, ab_type="bf16", selector=1, scale_b=-1, trans_b=1)
    op.verify()
    assert op.asm_template() == (
        "wgmma.mma_async.sp.sync.aligned.m64n16k32.f32.bf16.bf16 {$0, $1, $2, $3, $4, $5, $6, $7}, "
        "$8, $9, $10, 1, 0, 1, -1, 0, 1;"
    )
    pred = k.op(arith.CmpiOp(r, r, "eq")).result
    op = wg.WgmmaMmaAsyncSpOp([r] * 4, desc, meta, n=16, acc=acc, scale_d=pred)
    op.verify()
    lines = op.asm_template().splitlines()
    assert lines[:2] == ["mov.f32 $0, $8;", "mov.f32 $1, $9;"] and len(lines) == 9
    assert lines[-1] == (
        "wgmma.mma_async.sp.sync.aligned.m64n16k32.f32.f16.f16 {$0, $1, $2, $3, $4, $5, $6, $7}, "
        "{$16, $17, $18, $19}, $20, $21, 0, $22, 1, 1, 0;"
    )
    assert wg.WgmmaWaitGroupOp(2).asm_template() == "wgmma.wait_group.sync.aligned 2;"


def test_wgmma_verifier_errors():
    k = KB(Block())
    desc, meta, acc = _operands(k)
    r = k.ci(1)
    bad = [
        (wg.WgmmaMmaAsyncSpOp(desc, desc, meta, n=12), "multiple of 8"),
        (wg.WgmmaMmaAsyncSpOp(desc, desc, meta, n=64, ab_type="f32"), "ab_type"),
        (wg.WgmmaMmaAsyncSpOp(desc, desc, meta, n=64, selector=2), "selector"),
        (wg.WgmmaMmaAsyncSpOp(desc, desc, meta, n=64, scale_a=0), "scale_a must be 1 or -1"),
        (wg.WgmmaMmaAsyncSpOp(desc, desc, meta, n=64, trans_b=2), "trans_b must be 0 or 1"),
        (wg.WgmmaMmaAsyncSpOp([r] * 3, desc, meta, n=64), "4 i32 registers"),
        (wg.WgmmaMmaAsyncSpOp([r] * 4, desc, meta, n=64, trans_a=1), "trans_a needs A in shared"),
        (wg.WgmmaMmaAsyncSpOp(desc, desc, meta, n=64, acc=acc[:4]), "acc must be empty or 32"),
        (wg.WgmmaWaitGroupOp(-1), "n must be >= 0"),
    ]
    for op, msg in bad:
        with pytest.raises(VerifyException, match=re.escape(msg)):
            op.verify()


def test_wgmma_ops_round_trip_through_text():
    module = build_wgmma_sp("f16", 64, 64)
    text = str(module)
    ctx = make_context()
    wg.load_into(ctx)
    parsed = Parser(ctx, text).parse_module()
    parsed.verify()
    assert emit_ptx(parsed) == emit_ptx(module)
    assert "ptx.wgmma.mma_async.sp" in text and "ptx.fence.proxy.async" in text


@pytest.mark.parametrize("case", CASES[:4], ids=CASE_IDS[:4])
def test_wgmma_kernel_ptx_text(case):
    ab_type, n, k_dim, swizzle, a_src, sel = case
    text = emit_ptx(build_wgmma_sp(ab_type, n, k_dim, swizzle=swizzle, a_src=a_src, selector=sel))
    assert ".target sm_90a" in text and ".reqntid 128, 1, 1" in text
    body = text[text.index("{") :]
    order = [body.index(s) for s in ("fence.proxy.async.shared::cta;", "bar.sync 0;", "wgmma.fence.sync.aligned;",
                                      "wgmma.mma_async.sp", "wgmma.commit_group.sync.aligned;",
                                      "wgmma.wait_group.sync.aligned 0;", "st.global.v2.b32")]
    assert order == sorted(order)
    acc = r"\{" + ", ".join([r"%f\d+"] * (n // 2)) + r"\}"
    a = r"\{(%r\d+, ){3}%r\d+\}" if a_src == "regs" else r"%rd\d+"
    mma = re.findall(rf"wgmma\.mma_async\.sp\.sync\.aligned\.m64n{n}k32\.f32\.{ab_type}\.{ab_type} {acc}, {a}, "
                     rf"%rd\d+, %r\d+, {sel}, ([01]), 1, 1, {'0, ' if a_src == 'smem' else ''}0;", text)
    assert [m[-1] for m in mma] == ["0"] + ["1"] * (k_dim // 32 - 1)
    # chained steps accumulate in place: every wgmma names the same registers, no copies
    assert len({re.search(acc, line).group(0) for line in text.splitlines() if "wgmma.mma_async" in line}) == 1
    assert "mov.f32 %f" not in text


def test_untied_accumulator_is_copied():
    """An accumulator value that is still used elsewhere must not be overwritten in place."""
    kernel = ptx.KernelOp("untied", [("D", "ptr")], target="sm_90a", reqntid=(128,))
    k = KB(kernel.body.block)
    desc, meta, _ = _operands(k, 8)
    first = k.op(wg.WgmmaMmaAsyncSpOp(desc, desc, meta, n=8)).res
    second = k.op(wg.WgmmaMmaAsyncSpOp(desc, desc, meta, n=8, acc=first)).res
    k.op(wg.WgmmaCommitGroupOp())
    k.op(wg.WgmmaWaitGroupOp(0))
    k.op(ptx.StGlobalOp(kernel.args[0], [first[0], second[0]]))
    text = emit_ptx(ModuleOp([kernel]))
    # %f1 is _operands' zero; `first` is %f2..%f5, `second` %f6..%f9, filled by copies first
    assert "mov.f32 %f6, %f2;\n\tmov.f32 %f7, %f3;\n\tmov.f32 %f8, %f4;\n\tmov.f32 %f9, %f5;\n\twgmma" in text
    assert re.search(r"wgmma\.mma_async\.sp\S+ \{%f6, %f7, %f8, %f9\}, %rd\d+, %rd\d+, %r\d+, 0, 1, 1, 1, 0, 0;", text)
    assert "st.global.v2.b32 [%rd1], {%f2, %f6};" in text


@needs_ptxas
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_wgmma_kernel_assembles(case):
    ab_type, n, k_dim, swizzle, a_src, sel = case
    module = build_wgmma_sp(ab_type, n, k_dim, swizzle=swizzle, a_src=a_src, selector=sel)
    cubin = ptxas.assemble(emit_ptx(module), "sm_90a")
    res = cubin.kernel_resources()
    assert 0 < res.registers <= 255 and res.spill_stores == 0 and res.stack_bytes == 0
    assert "serialized" not in cubin.log, cubin.log
    try:
        sass = ptxas.dump_sass(cubin)
    except ptxas.ToolNotFoundError as e:
        pytest.skip(f"cuobjdump not found, SASS not checked ({e})")
    dtype = ".BF16" if ab_type == "bf16" else ""
    hgmma = re.findall(rf"HGMMA\.SP\.64x{n}x32\.F32{re.escape(dtype)} ", sass)
    assert len(hgmma) == k_dim // 32, sass
    assert "HMMA" not in sass.replace("HGMMA", "")
    # one fence, the whole chain in flight, one wait: ptxas did not serialize the wgmmas
    assert sass.count("WARPGROUP.ARRIVE") == 1 and sass.count("WARPGROUP.DEPBAR") == 1, sass


@needs_ptxas
def test_wgmma_needs_sm90a():
    text = emit_ptx(build_wgmma_sp()).replace(".target sm_90a", ".target sm_90")
    with pytest.raises(ptxas.PtxasError, match="sm_90"):
        ptxas.assemble(text, "sm_90")


# ------------------------------------------------------------------------------------------------
# GPU: compare with torch


def _gpu_or_skip():
    import torch

    major, minor = torch.cuda.get_device_capability()
    if major != 9:
        pytest.skip(f"wgmma needs sm_90a (Hopper), device is sm_{major}{minor}")
    if not have_ptxas():
        pytest.skip("no ptxas")
    return torch


def _random_case(torch, seed: int, dtype, n: int, k_dim: int):
    from sparsecc.runtime.compress import compress, prune_2to4

    gen = torch.Generator().manual_seed(seed)
    dense = prune_2to4(torch.randn(64, k_dim, generator=gen)).to(dtype)
    bt = torch.randn(n, k_dim, generator=gen).to(dtype)
    sp = compress(dense)
    return dense, sp.values.contiguous(), sp.meta.contiguous(), bt.contiguous()


@pytest.mark.gpu
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_wgmma_sp_on_gpu(case):
    torch = _gpu_or_skip()
    from sparsecc.runtime.driver import CudaKernel

    ab_type, n, k_dim, swizzle, a_src, sel = case
    dtype = torch.float16 if ab_type == "f16" else torch.bfloat16
    module = build_wgmma_sp(ab_type, n, k_dim, swizzle=swizzle, a_src=a_src, selector=sel)
    (kop,) = [op for op in module.walk() if isinstance(op, ptx.KernelOp)]
    kernel = CudaKernel.from_kernel_op(ptxas.assemble(emit_ptx(module), "sm_90a").data, kop)
    dev = torch.device("cuda")
    for seed in range(2):
        dense, values, meta, bt = _random_case(torch, seed, dtype, n, k_dim)
        assert meta.shape == (4, k_dim) and values.shape == (64, k_dim // 2)
        out = torch.full((64, n), float("nan"), device=dev)
        kernel.launch((1, 1, 1), (128, 1, 1), [out, values.to(dev), meta.to(dev), bt.to(dev)])
        torch.cuda.synchronize()
        ref = dense.float() @ bt.float().T
        torch.testing.assert_close(out.cpu(), ref, rtol=1e-3, atol=1e-3)
