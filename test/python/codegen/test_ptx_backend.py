"""The bottom of the GPU backend: ptx dialect -> PTX text -> ptxas -> SASS -> (GPU) launch.

The centre piece is a single-warp kernel computing one m16n8k32 2:4-sparse tile with
`mma.sp::ordered_metadata`, built op by op with the dialect's Python API in two variants:
  * "global": every thread loads its fragments straight from global memory;
  * "shared": cp.async (masked, zero-fill form) stages A and B in shared memory, ldmatrix (x4, and
    x4.trans for B) builds the fragments, and D goes through st.shared/ld.shared before st.global.
It is assembled for sm_80 and sm_90a and its SASS must contain HMMA.SP; on a GPU it is launched
through sparsecc.runtime.driver and checked against torch.
"""

from __future__ import annotations

import os
import random
import re

import pytest
from ptxas_tools import have_ptxas, needs_ptxas
from xdsl.builder import Builder, InsertPoint
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import FloatAttr, ModuleOp, bf16, f16, f32, i1, i16, i32, i64
from xdsl.ir import Block, SSAValue
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException

from sparsecc.codegen import ptxas
from sparsecc.codegen.ptx_printer import PtxEmitError, emit_ptx
from sparsecc.dialects import make_context, ptx

# ------------------------------------------------------------------------------------------------
# A tiny IR-building helper over xDSL's Builder


class KB:
    """Appends ops to a block; helpers return SSA values."""

    def __init__(self, block: Block):
        self.b = Builder(InsertPoint.at_end(block))

    def op(self, op):
        return self.b.insert(op)

    def ci(self, v: int, width: int = 32) -> SSAValue:
        return self.op(arith.ConstantOp.from_int_and_width(v, width)).result

    def cf(self, v: float, ty=f32) -> SSAValue:
        return self.op(arith.ConstantOp(FloatAttr(v, ty))).result

    def add(self, a, b):
        return self.op(arith.AddiOp(a, b)).result

    def mul(self, a, b):
        return self.op(arith.MuliOp(a, b)).result

    def shr(self, a, n: int):
        return self.op(arith.ShRUIOp(a, self.ci(n))).result

    def band(self, a, m: int):
        return self.op(arith.AndIOp(a, self.ci(m))).result

    def lin(self, *terms, const: int = 0):
        """sum(coef * value) + const over i32 (terms are (value, coef) pairs)."""
        acc = self.ci(const)
        for v, c in terms:
            acc = self.add(acc, v if c == 1 else self.mul(v, self.ci(c)))
        return acc

    def gaddr(self, base, byte_off):
        """64-bit global address base + zext(byte_off)."""
        return self.add(base, self.op(arith.ExtUIOp(byte_off, i64)).result)


# ------------------------------------------------------------------------------------------------
# The m16n8k32 sparse tile kernel
#
# Params: D (16x8 f32, row-major), A (16x16 compressed values, row-major), E (metadata, int16[32]
# in sparsecc's global format for one 16-row tile: E[16*c + m] is the word of row m, 16-column
# chunk c), B (32x8, row-major). Layouts: see the docstring of sparsecc.dialects.ptx.
PARAMS = [("D", "ptr"), ("A", "ptr"), ("E", "ptr"), ("B", "ptr")]
SMEM_A, SMEM_B, SMEM_D = 0, 512, 1024  # byte offsets in the dynamic shared array


def build_spmma_tile(ab_type: str = "f16", variant: str = "global", target: str = "sm_80") -> ModuleOp:
    elem = f16 if ab_type == "f16" else bf16
    kernel = ptx.KernelOp(
        f"spmma_tile_{ab_type}_{variant}",
        PARAMS,
        target=target,
        maxntid=(32, 1, 1),
        shared_bytes=1536 if variant == "shared" else 0,
    )
    d_ptr, a_ptr, e_ptr, b_ptr = kernel.args
    k = KB(kernel.body.block)
    lane = k.op(ptx.SpecialRegOp("laneid")).result
    g = k.shr(lane, 2)  # groupID
    t = k.band(lane, 3)  # threadID_in_group
    in_warp = k.op(arith.CmpiOp(lane, k.ci(32), "ult")).result  # always true: exercises masks

    # Metadata: selector 0, so threads t=0,1 of each quad supply it; thread t holds the 16-column
    # half h = t % 2: bits 15:0 = row g, bits 31:16 = row g+8 (E[16h + g] and E[16h + g + 8]).
    h = k.band(lane, 1)
    e_off = k.lin((h, 32), (g, 2))
    e_lo = k.op(ptx.LdGlobalOp(k.gaddr(e_ptr, e_off), i16)).res[0]
    e_hi = k.op(ptx.LdGlobalOp(k.gaddr(e_ptr, e_off), i16, offset=16)).res[0]
    meta = k.op(ptx.PackOp(e_lo, e_hi)).result

    if variant == "global":
        # a[j] = A[g + 8*(j&1)][2t + 8*(j>>1) : +2], one b32 each (masked, other = 0).
        zero = k.ci(0)
        a_regs = []
        for j in range(4):
            off = k.lin((g, 32), (t, 4), const=(8 * (j & 1)) * 32 + (8 * (j >> 1)) * 2)
            ld = k.op(ptx.LdGlobalOp(k.gaddr(a_ptr, off), i32, mask=in_warp, other=[zero]))
            a_regs.append(ld.res[0])
        # b[j] = {B[8j+2t][g], B[8j+2t+1][g]}: two b16 loads packed with ptx.pack.
        b_regs = []
        for j in range(4):
            off = k.lin((t, 32), (g, 2), const=8 * j * 16)
            addr = k.gaddr(b_ptr, off)
            lo = k.op(ptx.LdGlobalOp(addr, elem)).res[0]
            hi = k.op(ptx.LdGlobalOp(addr, elem, offset=16)).res[0]
            b_regs.append(k.op(ptx.PackOp(lo, hi)).result)
    else:
        smem = k.op(ptx.SharedBaseOp()).result
        # Each thread copies one 16-byte chunk of A (512 B) and one of B (512 B).
        chunk = k.mul(lane, k.ci(16))
        for src, base in ((a_ptr, SMEM_A), (b_ptr, SMEM_B)):
            dst = k.add(smem, k.add(chunk, k.ci(base)))
            k.op(ptx.CpAsyncOp(dst, k.gaddr(src, chunk), mask=in_warp))
        k.op(ptx.CpAsyncCommitGroupOp())
        k.op(ptx.CpAsyncWaitGroupOp(0))
        k.op(ptx.BarSyncOp(0))
        # ldmatrix.x4 of A: lanes 8i..8i+7 address the rows of quadrant i =
        # (rows 0-7, cols 0-7), (8-15, 0-7), (0-7, 8-15), (8-15, 8-15)  -> a[0..3].
        row = k.add(k.band(lane, 7), k.mul(k.band(k.shr(lane, 3), 1), k.ci(8)))
        col = k.mul(k.shr(lane, 4), k.ci(8))
        a_addr = k.add(smem, k.lin((row, 32), (col, 2), const=SMEM_A))
        a_regs = list(k.op(ptx.LdMatrixOp(a_addr, 4)).res)
        # ldmatrix.x4.trans of B: matrix j = rows 8j..8j+7; lane l addresses row l -> b[0..3].
        b_addr = k.add(smem, k.lin((lane, 16), const=SMEM_B))
        b_regs = list(k.op(ptx.LdMatrixOp(b_addr, 4, trans=True)).res)

    c = [k.cf(0.0)] * 4
    d = k.op(ptx.MmaSpOp(a_regs, b_regs, c, meta, ab_type=ab_type, selector=0)).res

    # D: c0,c1 -> D[g][2t:2t+2], c2,c3 -> D[g+8][2t:2t+2] (v2 stores; row g+8 is 256 bytes on).
    d_off = k.lin((g, 32), (t, 8))
    if variant == "shared":
        s_addr = k.add(smem, k.add(d_off, k.ci(SMEM_D)))
        k.op(ptx.StSharedOp(s_addr, d[0:2]))
        k.op(ptx.StSharedOp(s_addr, d[2:4], offset=256))
        k.op(ptx.BarSyncOp(0))
        d = [*k.op(ptx.LdSharedOp(s_addr, f32, 2)).res, *k.op(ptx.LdSharedOp(s_addr, f32, 2, offset=256)).res]
    out = k.gaddr(d_ptr, d_off)
    k.op(ptx.StGlobalOp(out, d[0:2], mask=in_warp))
    k.op(ptx.StGlobalOp(out, d[2:4], offset=256))
    module = ModuleOp([kernel])
    module.verify()
    return module


def build_dense_tile() -> ModuleOp:
    """Dense mma.m16n8k16 on zeros-in registers, for the dense/sparse SASS comparison."""
    kernel = ptx.KernelOp("dense_tile", [("D", "ptr"), ("A", "ptr")], target="sm_80", maxntid=(32,))
    d_ptr, a_ptr = kernel.args
    k = KB(kernel.body.block)
    lane = k.op(ptx.SpecialRegOp("laneid")).result
    a = k.op(ptx.LdGlobalOp(k.gaddr(a_ptr, k.mul(lane, k.ci(16))), i32, 4)).res
    d = k.op(ptx.MmaOp(a, a[:2], [k.cf(1.0)] * 4, ab_type="bf16")).res
    k.op(ptx.StGlobalOp(k.gaddr(d_ptr, k.mul(lane, k.ci(16))), d))
    return ModuleOp([kernel])


VARIANTS = [("f16", "global"), ("f16", "shared"), ("bf16", "global"), ("bf16", "shared")]


# ------------------------------------------------------------------------------------------------
# (1) The sparse tile: PTX text, ptxas for sm_80 and sm_90a, HMMA.SP in SASS


@pytest.mark.parametrize("ab_type,variant", VARIANTS)
def test_spmma_tile_ptx_text(ab_type, variant):
    text = emit_ptx(build_spmma_tile(ab_type, variant))
    assert text.splitlines()[4:7] == [".version 8.5", ".target sm_80", ".address_size 64"]
    name = f"spmma_tile_{ab_type}_{variant}"
    assert f".visible .entry {name}(" in text
    assert f".param .u64 {name}_param_3" in text
    assert ".maxntid 32, 1, 1" in text
    mma = f"mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f32.{ab_type}.{ab_type}.f32"
    assert re.search(re.escape(mma) + r" \{%f\d+, %f\d+, %f\d+, %f\d+\}, \{(%r\d+, ){3}%r\d+\}, "
                     r"\{(%r\d+, ){3}%r\d+\}, \{(%f\d+, ){3}%f\d+\}, %r\d+, 0x0;", text)
    assert re.search(r"mov\.b32 %r\d+, \{%rs\d+, %rs\d+\};", text)  # metadata / B packing
    assert "mov.u32 %r1, %laneid;" in text
    if variant == "shared":
        assert ".extern .shared .align 16 .b8 smem[];" in text
        assert re.search(r"selp\.b32 (%r\d+), 16, 0, %p\d+;\n\tcp\.async\.cg\.shared\.global "
                         r"\[%r\d+\], \[%rd\d+\], 16, \1;", text)
        assert "cp.async.commit_group;" in text and "cp.async.wait_group 0;" in text
        assert re.search(r"ldmatrix\.sync\.aligned\.m8n8\.x4\.shared\.b16 \{(%r\d+, ){3}%r\d+\}, \[%r\d+\];", text)
        assert "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16" in text
        assert re.search(r"ld\.shared\.v2\.b32 \{%f\d+, %f\d+\}, \[%r\d+\+256\];", text)
        assert "bar.sync 0;" in text
    else:
        assert "smem" not in text
        # masked load with an `other` value: mov first, then the predicated load
        assert re.search(r"mov\.b32 (%r\d+), %r\d+;\n\t@%p\d+ ld\.global\.b32 \1, \[%rd\d+\];", text)
    assert re.search(r"@%p\d+ st\.global\.v2\.b32 \[%rd\d+\], \{%f\d+, %f\d+\};", text)
    assert re.search(r"st\.global\.v2\.b32 \[%rd\d+\+256\], \{%f\d+, %f\d+\};", text)
    assert text.rstrip().endswith("ret;\n}")


@needs_ptxas
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("ab_type,variant", VARIANTS)
def test_spmma_tile_assembles(ab_type, variant, arch):
    cubin = ptxas.assemble(emit_ptx(build_spmma_tile(ab_type, variant)), arch)
    assert cubin.data[:4] == b"\x7fELF" and cubin.arch == arch
    res = cubin.kernel_resources(f"spmma_tile_{ab_type}_{variant}")
    assert 0 < res.registers <= 255
    assert res.spill_stores == 0 and res.spill_loads == 0
    try:
        sass = ptxas.dump_sass(cubin)
    except ptxas.ToolNotFoundError as e:
        pytest.skip(f"cuobjdump not found, SASS not checked ({e})")
    assert "HMMA.SP" in sass, sass
    if variant == "shared":
        assert "LDGSTS" in sass and "LDSM" in sass


@needs_ptxas
def test_sm90a_target_in_ptx():
    module = build_spmma_tile("f16", "global", target="sm_90a")
    text = emit_ptx(module)
    assert ".target sm_90a" in text
    ptxas.assemble(text, "sm_90a")


@needs_ptxas
def test_dense_mma_assembles():
    cubin = ptxas.assemble(emit_ptx(build_dense_tile()), "sm_80")
    try:
        sass = ptxas.dump_sass(cubin.data)
    except ptxas.ToolNotFoundError as e:
        pytest.skip(f"cuobjdump not found ({e})")
    assert "HMMA.16816.F32.BF16" in sass and "HMMA.SP" not in sass


# ------------------------------------------------------------------------------------------------
# (2) On a GPU: launch through the driver and compare with torch


def _make_sparse_tile(seed: int, dtype):
    """(A dense 16x32 2:4, A values 16x16, E int16[32] in sparsecc's format, B 32x8)."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    rng = random.Random(seed)
    pairs = [(i, j) for i in range(4) for j in range(i + 1, 4)]
    dense = torch.zeros(16, 32)
    values = torch.zeros(16, 16)
    words = [[0, 0] for _ in range(16)]  # words[row][chunk]
    rand = torch.randn(16, 16, generator=gen)
    for r in range(16):
        for q in range(8):  # group of 4 columns
            i0, i1 = rng.choice(pairs)
            dense[r, 4 * q + i0], dense[r, 4 * q + i1] = rand[r, 2 * q], rand[r, 2 * q + 1]
            values[r, 2 * q], values[r, 2 * q + 1] = rand[r, 2 * q], rand[r, 2 * q + 1]
            words[r][q // 4] |= (i0 | (i1 << 2)) << (4 * (q % 4))
    # global format of one 16-row tile: E[16*c + m] = word of row m, chunk c
    e = [words[m][c] for c in range(2) for m in range(16)]
    meta = torch.tensor([w - (1 << 16) if w >= 1 << 15 else w for w in e], dtype=torch.int16)
    b = torch.randn(32, 8, generator=gen)
    return dense.to(dtype), values.to(dtype), meta, b.to(dtype)


def _gpu_or_skip():
    try:
        import torch
    except ImportError:
        pytest.skip("torch not installed")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device (torch.cuda.is_available() is False)")
    try:
        from sparsecc.runtime.driver import cuda_driver

        cuda_driver()
    except ImportError as e:
        pytest.skip(f"cuda-python missing: {e}")
    major, minor = torch.cuda.get_device_capability()
    if major < 8:
        pytest.skip(f"mma.sp needs sm_80+, device is sm_{major}{minor}")
    if not have_ptxas():
        pytest.skip("no ptxas")
    return torch, f"sm_{major}{minor}" + ("a" if major == 9 else "")


@pytest.mark.gpu
@pytest.mark.parametrize("ab_type,variant", VARIANTS)
def test_spmma_tile_on_gpu(ab_type, variant):
    torch, arch = _gpu_or_skip()
    from sparsecc.runtime.driver import CudaKernel

    dtype = torch.float16 if ab_type == "f16" else torch.bfloat16
    module = build_spmma_tile(ab_type, variant)
    (kop,) = [op for op in module.walk() if isinstance(op, ptx.KernelOp)]
    cubin = ptxas.assemble(emit_ptx(module), arch)
    kernel = CudaKernel.from_kernel_op(cubin.data, kop)
    for seed in range(3):
        dense, values, meta, b = _make_sparse_tile(seed, dtype)
        dev = torch.device("cuda")
        values_d, meta_d, b_d = values.to(dev), meta.to(dev), b.to(dev)
        out = torch.full((16, 8), float("nan"), device=dev)
        kernel.launch((1, 1, 1), (32, 1, 1), [out.data_ptr(), values_d.data_ptr(), meta_d.data_ptr(), b_d], shared_bytes=None)
        torch.cuda.synchronize()
        ref = dense.float() @ b.float()
        torch.testing.assert_close(out.cpu(), ref, rtol=1e-3, atol=1e-3)


@pytest.mark.gpu
def test_driver_reports_launch_errors():
    torch, arch = _gpu_or_skip()
    from sparsecc.runtime.driver import CudaError, CudaKernel

    module = build_spmma_tile("f16", "global")
    (kop,) = [op for op in module.walk() if isinstance(op, ptx.KernelOp)]
    kernel = CudaKernel.from_kernel_op(ptxas.assemble(emit_ptx(module), arch).data, kop)
    with pytest.raises(CudaError, match="spmma_tile_f16_global"):
        kernel.launch((1, 1, 1), (4096, 1, 1), [0, 0, 0, 0])  # too many threads per block
    with pytest.raises(TypeError, match="takes 4 arguments"):
        kernel.launch((1, 1, 1), (32, 1, 1), [0])
    for native in (True, False):  # the C launcher and the ctypes one report alike
        raw = kernel.raw_launcher((4096, 1, 1), 0, native=native)
        with pytest.raises(CudaError, match=r"spmma_tile_f16_global.*cuLaunchKernel\(grid=\(1, 1, 1\), block=\(4096"):
            raw(1, 1, 1, [0, 0, 0, 0], 0)


# ------------------------------------------------------------------------------------------------
# (3) Printer unit tests


def test_register_classes():
    kernel = ptx.KernelOp("regs", [("p", "ptr"), ("n", "i32"), ("x", "f32"), ("q", "i64")])
    p, n, x, q = kernel.args
    k = KB(kernel.body.block)
    t = k.op(arith.ConstantOp.from_int_and_width(1, 1)).result
    s = k.ci(-1, 16)
    h = k.cf(1.0, f16)
    bh = k.cf(1.0, bf16)
    neg = k.ci(-7)
    big = k.ci(-1, 64)
    k.op(ptx.StGlobalOp(p, [s], mask=t))
    k.op(ptx.StGlobalOp(p, [h, h]))
    k.op(ptx.StGlobalOp(p, [bh], offset=2))
    k.op(ptx.StGlobalOp(p, [k.add(n, neg)]))
    k.op(ptx.StGlobalOp(p, [k.add(q, big), q]))
    k.op(ptx.StGlobalOp(p, [k.op(arith.TruncFOp(x, f16)).result], offset=8))
    k.op(ptx.StGlobalOp(p, [k.op(arith.TruncFOp(x, bf16)).result], offset=10))
    text = emit_ptx(ModuleOp([kernel]))
    decls = re.findall(r"\.reg (\.\w+) \t(%\w+)<(\d+)>;", text)
    assert decls == [(".pred", "%p", "2"), (".b16", "%rs", "6"), (".b32", "%r", "4"),
                     (".b64", "%rd", "5"), (".f32", "%f", "2")]  # fmt: skip
    for line in [
        "ld.param.u64 %rd1, [regs_param_0];",
        "ld.param.u32 %r1, [regs_param_1];",
        "ld.param.f32 %f1, [regs_param_2];",
        "ld.param.u64 %rd2, [regs_param_3];",
        "mov.pred %p1, 1;",
        "mov.b16 %rs1, 0xFFFF;",
        "mov.b16 %rs2, 0x3C00;",  # f16 1.0
        "mov.b16 %rs3, 0x3F80;",  # bf16 1.0
        "mov.b32 %r2, 0xFFFFFFF9;",
        "mov.b64 %rd3, 0xFFFFFFFFFFFFFFFF;",
        "@%p1 st.global.b16 [%rd1], %rs1;",
        "st.global.v2.b16 [%rd1], {%rs2, %rs2};",
        "st.global.b16 [%rd1+2], %rs3;",
        "add.s32 %r3, %r1, %r2;",
        "st.global.v2.b64 [%rd1], {%rd4, %rd2};",
        "cvt.rn.f16.f32 %rs4, %f1;",
        "cvt.rn.bf16.f32 %rs5, %f1;",
        "st.global.b16 [%rd1+10], %rs5;",
    ]:
        assert f"\t{line}\n" in text, line
    if have_ptxas():
        ptxas.assemble(text, "sm_80")


def _loop_kernel(swap: bool = True) -> ModuleOp:
    """acc0, acc1 = 0, 1; for i in [lo, n): acc0, acc1 = acc1, acc0 + acc1 * float(i)."""
    kernel = ptx.KernelOp("loop", [("out", "ptr"), ("lo", "i32"), ("n", "i32")], maxntid=(128,))
    out, lo, n = kernel.args
    k = KB(kernel.body.block)
    one = k.ci(1)
    body = Block(arg_types=[i32, f32, f32])
    iv, a0, a1 = body.args
    kb = KB(body)
    fi = kb.op(arith.SIToFPOp(iv, f32)).result
    prod = kb.op(arith.MulfOp(a1, fi)).result
    s = kb.op(arith.AddfOp(a0, prod)).result
    kb.op(scf.YieldOp(a1, s) if swap else scf.YieldOp(s, a1))
    loop = k.op(scf.ForOp(lo, n, one, [k.cf(0.0), k.cf(1.0)], body))
    k.op(ptx.StGlobalOp(out, list(loop.results)))
    module = ModuleOp([kernel])
    module.verify()
    return module


def test_loop_with_carried_values():
    text = emit_ptx(_loop_kernel())
    body = text[text.index("{\n") :]
    # iv, then the two carried registers, initialised before the guard
    expected = [
        r"// scf.for %r4 = %r1 to %r2 step %r3, carried: %f3, %f4",
        r"mov.b32 %r4, %r1;",
        r"mov.b32 %f3, %f1;",
        r"mov.b32 %f4, %f2;",
        r"setp.ge.s32 %p1, %r4, %r2;",
        r"@%p1 bra \$L__loop_end2;",
        r"\$L__loop1:",
        r"cvt.rn.f32.s32 %f5, %r4;",
        r"mul.f32 %f6, %f4, %f5;",
        r"add.f32 %f7, %f3, %f6;",
        # the yield (acc1, acc0 + ...) reads %f4 which is also a destination: staged via a temp
        r"mov.b32 %f8, %f4;",
        r"mov.b32 %f3, %f8;",
        r"mov.b32 %f4, %f7;",
        r"add.s32 %r4, %r4, %r3;",
        r"setp.lt.s32 %p1, %r4, %r2;",
        r"@%p1 bra \$L__loop1;",
        r"\$L__loop_end2:",
        r"st.global.v2.b32 \[%rd1\], \{%f3, %f4\};",  # loop results are the carried registers
    ]
    assert re.search(r"\s*".join(expected), body), body
    no_swap = emit_ptx(_loop_kernel(swap=False))
    assert "%f8" not in no_swap  # a non-permuting yield needs no temporary
    if have_ptxas():
        ptxas.assemble(text, "sm_80")


def test_if_with_results_and_early_return():
    kernel = ptx.KernelOp("cond", [("out", "ptr"), ("n", "i32")])
    out, n = kernel.args
    k = KB(kernel.body.block)
    tid = k.op(ptx.SpecialRegOp("tid.x")).result
    oob = k.op(arith.CmpiOp(tid, n, "sge")).result
    early = Block()
    KB(early).op(ptx.ReturnOp())
    KB(early).op(scf.YieldOp())
    k.op(scf.IfOp(oob, [], [early]))
    small = k.op(arith.CmpiOp(tid, k.ci(16), "slt")).result
    then_b, else_b = Block(), Block()
    KB(then_b).op(scf.YieldOp(KB(then_b).add(tid, tid)))
    KB(else_b).op(scf.YieldOp(KB(else_b).ci(7)))
    val = k.op(scf.IfOp(small, [i32], [then_b], [else_b])).results[0]
    k.op(ptx.StGlobalOp(k.gaddr(out, k.mul(tid, k.ci(4))), [val]))
    text = emit_ptx(ModuleOp([kernel]))
    assert re.search(r"@!%p1 bra (\$L__endif2);\n\tret;\n\1:", text), text
    assert re.search(
        r"@!%p2 bra (\$L__else3);\n\tadd.s32 %r5, %r2, %r2;\n\tmov.b32 (%r4), %r5;\n\tbra.uni (\$L__endif4);\n"
        r"\1:\n\tmov.b32 %r6, 7;\n\tmov.b32 \2, %r6;\n\3:",
        text,
    ), text
    if have_ptxas():
        ptxas.assemble(text, "sm_80")


def test_arith_coverage_assembles():
    """Every arith op the printer claims to support prints and assembles."""
    kernel = ptx.KernelOp("ar", [("out", "ptr"), ("a", "i32"), ("x", "f32"), ("b", "i32")])
    out, a, x, b = kernel.args  # b: a run-time divisor (a constant one divides without div/rem)
    k = KB(kernel.body.block)
    ints = [k.op(cls(a, b)).result for cls in (
        arith.AddiOp, arith.SubiOp, arith.MuliOp, arith.DivSIOp, arith.DivUIOp, arith.RemSIOp,
        arith.RemUIOp, arith.AndIOp, arith.OrIOp, arith.XOrIOp, arith.ShLIOp, arith.ShRSIOp,
        arith.ShRUIOp, arith.MaxSIOp, arith.MinSIOp, arith.MaxUIOp, arith.MinUIOp)]  # fmt: skip
    a64 = k.op(arith.ExtSIOp(a, i64)).result
    ints.append(k.op(arith.TruncIOp(k.op(arith.ShLIOp(a64, k.ci(2, 64))).result, i32)).result)
    y = k.cf(2.5)
    floats = [k.op(cls(x, y)).result for cls in (
        arith.AddfOp, arith.SubfOp, arith.MulfOp, arith.DivfOp, arith.MaximumfOp,
        arith.MinimumfOp, arith.MaxnumfOp, arith.MinnumfOp)]  # fmt: skip
    from xdsl.dialects import math

    floats.append(k.op(math.FmaOp(x, y, x)).result)
    floats.append(k.op(arith.NegfOp(x)).result)
    floats.append(k.op(arith.SIToFPOp(a, f32)).result)
    floats.append(k.op(arith.UIToFPOp(a, f32)).result)
    floats.append(k.op(arith.ExtFOp(k.op(arith.TruncFOp(x, bf16)).result, f32)).result)
    floats.append(k.op(arith.ExtFOp(k.op(arith.TruncFOp(x, f16)).result, f32)).result)
    floats.append(k.op(arith.BitcastOp(a, f32)).result)
    ints.append(k.op(arith.FPToSIOp(x, i32)).result)
    ints.append(k.op(arith.FPToUIOp(x, i32)).result)
    preds = [k.op(arith.CmpiOp(a, b, p)).result for p in ("eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge")]
    preds += [k.op(arith.CmpfOp(x, y, p)).result for p in ("oeq", "olt", "une", "uno", "ord", "ugt")]
    p = preds[0]
    for q in preds[1:]:
        p = k.op(arith.XOrIOp(p, q)).result
    p = k.op(arith.SelectOp(preds[1], p, preds[2])).result
    p = k.op(arith.TruncIOp(k.op(arith.ExtUIOp(p, i32)).result, i1)).result
    acc = k.op(arith.ExtSIOp(p, i32)).result
    for v in ints:
        acc = k.add(acc, v)
    facc = k.op(arith.SelectOp(p, x, y)).result
    for v in floats:
        facc = k.op(arith.AddfOp(facc, v)).result
    k.op(ptx.StGlobalOp(out, [acc, k.op(arith.BitcastOp(facc, i32)).result]))
    hi = k.op(ptx.CvtPackOp(x, y, "bf16")).result
    lo, _ = k.op(ptx.UnpackOp(hi, bf16)).results
    k.op(ptx.StGlobalOp(out, [lo], offset=8))
    r = k.op(ptx.AsmOp("prmt.b32 $0, $1, $2, 0x5410;", [a, b], [i32], pure=True)).res[0]
    k.op(ptx.StGlobalOp(out, [r], offset=12))
    text = emit_ptx(ModuleOp([kernel]))
    for frag in ["mul.lo.s32", "div.u32", "rem.s32", "shr.s32", "shl.b64", "cvt.u32.u64",
                 "max.NaN.f32", "div.rn.f32", "fma.rn.f32", "neg.f32", "cvt.rzi.s32.f32",
                 "setp.hs.u32", "setp.gtu.f32", "setp.nan.f32", "xor.pred", "selp.s32",
                 "cvt.f32.bf16", "cvt.rn.bf16x2.f32", "prmt.b32"]:  # fmt: skip
        assert frag in text, frag
    if have_ptxas():
        ptxas.assemble(text, "sm_80")


def test_output_is_deterministic_and_ir_roundtrips():
    module = build_spmma_tile("f16", "shared")
    text = emit_ptx(module)
    assert emit_ptx(build_spmma_tile("f16", "shared")) == text
    parsed = Parser(make_context(), str(module)).parse_module()
    parsed.verify()
    assert emit_ptx(parsed) == text


def test_printer_errors():
    kernel = ptx.KernelOp("bad", [("out", "ptr")])
    k = KB(kernel.body.block)
    k.op(ptx.StGlobalOp(kernel.args[0], [k.op(arith.DivfOp(k.cf(1.0, f16), k.cf(2.0, f16))).result]))
    # an f16 division is printed in f32 and rounded once (it used to be refused)
    text = emit_ptx(ModuleOp([kernel]))
    assert "div.rn.f32" in text and "cvt.rn.f16.f32" in text
    with pytest.raises(PtxEmitError, match="one target"):
        emit_ptx(ModuleOp([ptx.KernelOp("a", [], target="sm_80"), ptx.KernelOp("b", [], target="sm_90a")]))
    with pytest.raises(PtxEmitError, match="no ptx.kernel"):
        emit_ptx(ModuleOp([]))


def test_verifier_errors():
    kernel = ptx.KernelOp("v", [("p", "ptr"), ("n", "i32")])
    p, n = kernel.args
    k = KB(kernel.body.block)
    zero = k.cf(0.0)
    bad = [
        (ptx.LdGlobalOp(n, i32), "address must be i64"),
        (ptx.LdGlobalOp(p, i32, 3), "1, 2 or 4"),
        (ptx.LdGlobalOp(p, i64, 4), "at most 16 bytes"),
        (ptx.LdGlobalOp(p, i32, other=[n]), "need a `mask`"),
        (ptx.StSharedOp(p, [n]), "address must be i32"),
        (ptx.CpAsyncOp(n, p, size=8, cache="cg"), "invalid for .cg"),
        (ptx.MmaSpOp([n] * 4, [n] * 4, [zero] * 4, n, selector=2), "selector"),
        (ptx.MmaSpOp([n] * 4, [n] * 3, [zero] * 4, n), "b must be 4 values"),
        (ptx.MmaOp([n] * 4, [n] * 2, [zero] * 4, ab_type="f32"), "ab_type"),
        (ptx.SpecialRegOp("tid.w"), "unknown special register"),
        (ptx.LdMatrixOp(n, 3), "x1, x2 or x4"),
    ]
    for op, msg in bad:
        with pytest.raises(VerifyException, match=re.escape(msg)):
            op.verify()
    with pytest.raises(ValueError, match="unknown param kind"):
        ptx.KernelOp("x", [("p", "f64")])
    with pytest.raises(VerifyException, match="unknown target .compute_80."):
        ptx.KernelOp("x", [], target="compute_80").verify()


# ------------------------------------------------------------------------------------------------
# ptxas / cuobjdump wrappers and the driver without a GPU


@needs_ptxas
def test_ptxas_error_is_reported():
    bad = ".version 8.5\n.target sm_80\n.address_size 64\n.visible .entry broken()\n{\n\tfoo.bar %r1;\n\tret;\n}\n"
    with pytest.raises(ptxas.PtxasError) as info:
        ptxas.assemble(bad, "sm_80")
    msg = str(info.value)
    assert "ptxas failed for sm_80" in msg and "error" in msg.lower()
    assert "line 6" in msg  # ptxas names the offending line
    assert info.value.ptx == bad and info.value.log
    with pytest.raises(ValueError, match="bad ptxas arch"):
        ptxas.assemble(bad, "compute_80")


def test_tool_lookup_override(monkeypatch, tmp_path):
    monkeypatch.setenv("SPARSECC_PTXAS", str(tmp_path / "nope"))
    with pytest.raises(ptxas.ToolNotFoundError, match="SPARSECC_PTXAS"):
        ptxas.find_ptxas()
    fake = tmp_path / "ptxas"
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(0o755)
    monkeypatch.setenv("SPARSECC_PTXAS", str(fake))
    assert ptxas.find_ptxas() == str(fake)


def test_tool_missing_message(monkeypatch):
    monkeypatch.delenv("SPARSECC_CUOBJDUMP", raising=False)
    monkeypatch.setenv("CUDA_HOME", "/nonexistent")
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setattr(ptxas, "_triton_bin", lambda tool: None)
    monkeypatch.setattr(ptxas, "_nvidia_wheel_bin", lambda tool: None)
    monkeypatch.setattr(os.path, "isdir", os.path.isdir)
    if os.path.exists("/usr/local/cuda/bin/cuobjdump"):
        pytest.skip("a CUDA toolkit is installed at /usr/local/cuda")
    with pytest.raises(ptxas.ToolNotFoundError, match="pip install triton"):
        ptxas.find_cuobjdump()


def test_resource_report_parsing():
    log = """ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'k1' for 'sm_80'
ptxas info    : Function properties for k1
    8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads
ptxas info    : Used 40 registers, used 1 barriers, 16 bytes smem, 376 bytes cmem[0]
ptxas info    : Compiling entry function 'k2' for 'sm_80'
ptxas info    : Function properties for k2
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 8 registers, 360 bytes cmem[0]
"""
    res = ptxas.parse_resource_report(log)
    assert res["k1"] == ptxas.KernelResources(registers=40, shared_bytes=16, spill_stores=4, spill_loads=12, stack_bytes=8, barriers=1)
    assert res["k2"].registers == 8 and res["k2"].shared_bytes == 0


@needs_ptxas
def test_assemble_leaves_no_files(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    ptxas.assemble(emit_ptx(_loop_kernel()), "sm_80")
    with pytest.raises(ptxas.PtxasError):
        ptxas.assemble("garbage", "sm_80")
    assert list(tmp_path.iterdir()) == []


@needs_ptxas
def test_start_assemble_runs_in_the_background(tmp_path, monkeypatch):
    """A started ptxas gives the cubin `assemble` gives; a cancelled one leaves no files, and a
    compile whose later step fails stops the ptxas it started."""
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    text = emit_ptx(_loop_kernel())
    pending = ptxas.start_assemble(text, "sm_80")
    assert pending.result().data == ptxas.assemble(text, "sm_80").data
    assert pending.result() is pending.result()  # collected once
    cancelled = ptxas.start_assemble(text, "sm_80")
    cancelled.cancel()
    assert list(tmp_path.iterdir()) == []

    import sparsecc
    import sparsecc.language as tl
    from sparsecc import compiler

    @sparsecc.jit
    def add_one(X, Y, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(Y + offs, tl.load(X + offs, mask=offs < n) + 1.0, mask=offs < n)

    started: list[ptxas.PendingCubin] = []
    real_start, real_print = ptxas.start_assemble, compiler.print_ir

    def start(*a, **k):
        started.append(real_start(*a, **k))
        return started[-1]

    def print_ir(module):  # the texts printed while ptxas runs
        if started:
            raise RuntimeError("a failing step after ptxas started")
        return real_print(module)

    monkeypatch.setenv("SPARSECC_CACHE", "0")
    monkeypatch.setattr(ptxas, "start_assemble", start)
    monkeypatch.setattr(compiler, "print_ir", print_ir)
    with pytest.raises(RuntimeError, match="failing step"):
        sparsecc.compile(add_one, signature={"X": "*fp32", "Y": "*fp32", "n": "i32"},
                         constexprs={"BLOCK": 128}, target="sm_80")
    assert len(started) == 1 and started[0].proc is None and list(tmp_path.iterdir()) == []


def test_driver_imports_without_cuda_python():
    from sparsecc.runtime import driver

    with pytest.raises(ValueError, match="unknown param kind"):
        driver.CudaKernel(b"", "k", ["f64"])
