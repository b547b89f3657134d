"""Targets and instruction availability (issue 28: "the GPU path takes what it cannot run").

- The table of instructions newer than sm_80 (`ptx_targets`) agrees with ptxas, statement by
  statement and target by target: what it refuses, ptxas rejects, and what it lets through
  assembles.
- The printer computes bf16 add/sub/mul, compares and int conversions in f32 below sm_90 and
  i8 compares/selects/arithmetic in 16 bits (PTX has no 8-bit forms): the same kernel assembles
  for every target, and (on a GPU) the sm_80 form gives torch's results on random data.
- A frontend kernel with bf16 arithmetic and an int8 `tl.where` condition compiles to cubin for
  sm_80 and sm_90a (before: `mul.bf16` for sm_80, `setp.ne.b8` for both, rejected by ptxas).
"""

from __future__ import annotations

import pytest
import torch
from xdsl.builder import Builder
from xdsl.dialects import arith
from xdsl.dialects.builtin import ModuleOp, bf16, i1, i8, i32, i64
from xdsl.ir import SSAValue
from xdsl.rewriter import InsertPoint

import sparsecc
import sparsecc.language as tl
from sparsecc.codegen import ptxas
from sparsecc.codegen.ptx_printer import PtxEmitError, emit_ptx
from sparsecc.dialects import ptx
from sparsecc.dialects.ptx_targets import SUPPORTED_TARGETS, first_unavailable, satisfies


def _assembles(body: str, target: str) -> bool:
    """Whether ptxas accepts one statement in a kernel for `target` (skips without ptxas)."""
    text = "\n".join([
        ".version 8.5", f".target {target}", ".address_size 64",
        ".visible .entry k(.param .u64 p)", "{",
        "\t.reg .pred %p<4>; .reg .b16 %rs<8>; .reg .b32 %r<8>; .reg .f32 %f<8>; .reg .b64 %rd<4>;",
        f"\t{body}", "\tret;", "}", ""])
    try:
        ptxas.assemble(text, target, timeout=60)
    except ptxas.ToolNotFoundError as e:
        pytest.skip(f"no ptxas: {e}")
    except ptxas.PtxasError:
        return False
    return True


# (statement, the oldest target that has it; None: no target has it)
STATEMENTS = [
    ("mul.bf16 %rs1, %rs2, %rs3;", "sm_90"),
    ("add.rn.bf16 %rs1, %rs2, %rs3;", "sm_90"),
    ("sub.bf16 %rs1, %rs2, %rs3;", "sm_90"),
    ("setp.lt.bf16 %p1, %rs2, %rs3;", "sm_90"),
    ("cvt.rn.f16.bf16 %rs1, %rs2;", "sm_90"),
    ("cvt.rn.bf16.s32 %rs1, %r2;", "sm_90"),
    ("cvt.rzi.s32.bf16 %r1, %rs2;", "sm_90"),
    ("ex2.approx.ftz.bf16 %rs1, %rs2;", "sm_90"),
    ("wgmma.fence.sync.aligned;", "sm_90a"),
    ("setmaxnreg.inc.sync.aligned.u32 240;", "sm_90a"),
    ("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd1, {%r2, %r3}], [%r4];",
     "sm_90"),
    ("mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r1], %r2;", "sm_90"),
    ("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r1], 16;", "sm_90"),
    ("fence.proxy.async.shared::cta;", "sm_90"),
    ("fence.mbarrier_init.release.cluster;", "sm_90"),
    ("elect.sync %r1|%p1, -1;", "sm_90"),
    ("mapa.shared::cluster.u32 %r1, %r2, %r3;", "sm_90"),
    ("barrier.cluster.arrive;", "sm_90"),
    ("mov.u32 %r1, %cluster_ctarank;", "sm_90"),
    ("cvt.rn.satfinite.e4m3x2.f32 %rs1, %f1, %f2;", "sm_89"),
    ("setp.ne.b8 %p1, %rs2, %rs3;", None),
    ("add.s8 %rs1, %rs2, %rs3;", None),
    ("selp.b8 %rs1, %rs2, %rs3, %p1;", None),
    ("mov.b8 %rs1, %rs2;", None),
    ("cvt.rn.bf16.s8 %rs1, %rs2;", None),
    ("cvt.rzi.s8.bf16 %rs1, %rs2;", None),
    # what sm_80 has (the printer's own sm_80 forms among them): nothing may refuse these
    ("fma.rn.bf16 %rs1, %rs2, %rs3, %rs4;", "sm_80"),
    ("max.NaN.bf16 %rs1, %rs2, %rs3;", "sm_80"),
    ("cvt.f32.bf16 %f1, %rs2;", "sm_80"),
    ("cvt.rn.bf16.f32 %rs1, %f2;", "sm_80"),
    ("cvt.s16.s8 %rs1, %rs2;", "sm_80"),
    ("setp.ne.b16 %p1, %rs2, %rs3;", "sm_80"),
    ("mbarrier.init.shared::cta.b64 [%r1], 1;", "sm_80"),
    ("cp.async.cg.shared.global [%r1], [%rd1], 16;", "sm_80"),
    ("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r1, %r2, %r3, %r4}, [%r5];", "sm_80"),
]


@pytest.mark.parametrize("target", SUPPORTED_TARGETS)
def test_instruction_table_agrees_with_ptxas(target):
    for statement, needed in STATEMENTS:
        runs = needed is not None and satisfies(target, needed)
        hit = first_unavailable("\t" + statement, target)
        assert (hit is None) == runs, f"{statement} on {target}: the table says {hit}"
        if hit is not None:
            assert hit[2] == needed and hit[1] in statement
        assert _assembles(statement, target) == runs, f"ptxas and the table disagree on {statement} for {target}"


def test_comments_are_not_instructions():
    assert first_unavailable("\t// wgmma.fence and mul.bf16 are mentioned here only\n\tret;", "sm_80") is None


# ------------------------------------------------------------------------------------------------
# The printer's sm_80 forms of bf16 and i8 arithmetic

OUTS = ("bf16_mul_sub", "bf16_add", "bf16_lt", "bf16_to_i32", "i8_to_bf16", "i8_slt", "i8_max", "i8_div",
        "i8_shr", "i8_select_lowbit")


def _arith_kernel(target: str) -> ptx.KernelOp:
    """Thread t reads x[t], y[t] (bf16) and c[t], d[t] (i8, d != 0) and writes, as i32 words of
    out[t * len(OUTS) + j]: bf16 x*y-x, x+y (bit patterns), x<y, int(x), bf16(c), c<d, max(c, d),
    c/d, c>>1 (signed), and (c & 1 ? c : d) (i8, sign-extended)."""
    kernel = ptx.KernelOp("arith_forms", [("X", "ptr"), ("Y", "ptr"), ("C", "ptr"), ("D", "ptr"), ("O", "ptr")],
                          target=target, maxntid=(64,))
    xp, yp, cp, dp, op = kernel.args
    b = Builder(InsertPoint.at_end(kernel.body.block))

    def val(o):
        return b.insert(o).results[0]

    def c32(v: int) -> SSAValue:
        return val(arith.ConstantOp.from_int_and_width(v, 32))

    tid = val(ptx.SpecialRegOp("tid.x"))

    def addr(base: SSAValue, elem_bytes: int, index: SSAValue) -> SSAValue:
        off = val(arith.ExtUIOp(val(arith.MuliOp(index, c32(elem_bytes))), i64))
        return val(arith.AddiOp(base, off))

    x = val(ptx.LdGlobalOp(addr(xp, 2, tid), bf16))
    y = val(ptx.LdGlobalOp(addr(yp, 2, tid), bf16))
    c = val(ptx.LdGlobalOp(addr(cp, 1, tid), i8))
    d = val(ptx.LdGlobalOp(addr(dp, 1, tid), i8))

    def bits(v: SSAValue) -> SSAValue:  # a bf16's 16 bits, zero-extended
        return val(arith.ExtUIOp(val(arith.BitcastOp(v, ptx.i16)), i32))

    results = [
        bits(val(arith.SubfOp(val(arith.MulfOp(x, y)), x))),
        bits(val(arith.AddfOp(x, y))),
        val(arith.ExtUIOp(val(arith.CmpfOp(x, y, "olt")), i32)),
        val(arith.FPToSIOp(x, i32)),
        bits(val(arith.SIToFPOp(c, bf16))),
        val(arith.ExtUIOp(val(arith.CmpiOp(c, d, "slt")), i32)),
        val(arith.ExtSIOp(val(arith.MaxSIOp(c, d)), i32)),
        val(arith.ExtSIOp(val(arith.DivSIOp(c, d)), i32)),
        val(arith.ExtSIOp(val(arith.ShRSIOp(c, val(arith.ConstantOp.from_int_and_width(1, 8)))), i32)),
        val(arith.ExtSIOp(val(arith.SelectOp(val(arith.TruncIOp(c, i1)), c, d)), i32)),
    ]
    base = val(arith.MuliOp(tid, c32(len(OUTS))))
    for j, r in enumerate(results):
        b.insert(ptx.StGlobalOp(addr(op, 4, val(arith.AddiOp(base, c32(j)))), [r]))
    return kernel


def _expected(x: torch.Tensor, y: torch.Tensor, c: torch.Tensor, d: torch.Tensor) -> torch.Tensor:
    """What `_arith_kernel` writes, from torch (bf16 results rounded once, as PTX and torch do)."""
    def bits(t: torch.Tensor) -> torch.Tensor:
        return t.view(torch.int16).to(torch.int32) & 0xFFFF

    c32, d32 = c.to(torch.int32), d.to(torch.int32)
    quotient = torch.div(c32, d32, rounding_mode="trunc")
    cols = [bits(x * y - x), bits(x + y), (x < y).to(torch.int32), x.float().trunc().to(torch.int32),
            bits(c.to(torch.bfloat16)), (c < d).to(torch.int32), torch.maximum(c32, d32),
            quotient.to(torch.int8).to(torch.int32), (c32 >> 1), torch.where((c32 & 1) == 1, c32, d32)]
    return torch.stack(cols, dim=1)


@pytest.mark.parametrize("target", SUPPORTED_TARGETS)
def test_bf16_and_i8_arithmetic_print_for_every_target(target):
    text = emit_ptx(ModuleOp([_arith_kernel(target)]))
    assert first_unavailable(text, target) is None
    assert "setp.lt.s16" in text and ".b8 " not in text.replace("ld.global.b8 ", "")
    if satisfies(target, "sm_90"):
        assert "mul.bf16" in text and "setp.lt.bf16" in text
    else:  # the f32 forms: no bf16 ALU instruction before sm_90
        assert "mul.f32" in text and "setp.lt.f32" in text and "cvt.rn.bf16.f32" in text
        assert "mul.bf16" not in text and "cvt.rzi.s32.bf16" not in text
    try:
        ptxas.assemble(text, target)
    except ptxas.ToolNotFoundError as e:
        pytest.skip(f"no ptxas: {e}")


def test_printer_refuses_an_instruction_the_target_lacks():
    kernel = ptx.KernelOp("k", [], target="sm_80")
    Builder(InsertPoint.at_end(kernel.body.block)).insert(ptx.AsmOp("elect.sync _|$0, -1;", [], [i1]))
    with pytest.raises(PtxEmitError, match=r"'ptx.asm' needs sm_90 or newer for 'elect.sync'.*target is sm_80") as info:
        emit_ptx(ModuleOp([kernel]), verify=False)
    assert info.value.op is kernel.body.block.first_op


def test_printer_refuses_a_bad_target_or_budget_also_unverified():
    for kernel, message in [(ptx.KernelOp("k", [], target="sm_1000"), "unknown target 'sm_1000'"),
                            (ptx.KernelOp("k", [], target="sm_86", shared_bytes=101377),
                             "101377 bytes of shared memory exceed the 101376 bytes")]:
        with pytest.raises(PtxEmitError, match=message):
            emit_ptx(ModuleOp([kernel]), verify=False)


@pytest.mark.gpu
@pytest.mark.parametrize("target", ["sm_80", "sm_90"])
def test_bf16_and_i8_arithmetic_on_the_gpu(target):
    """The sm_80 (f32, 16-bit) forms and the sm_90 (native bf16) ones give torch's results;
    both PTX texts are assembled for the GPU at hand (ptxas takes an older .target)."""
    from sparsecc.runtime.driver import CudaKernel

    major, minor = torch.cuda.get_device_capability()
    arch = f"sm_{major}{minor}"
    if not satisfies(arch, target):
        pytest.skip(f"{target} code does not run on {arch}")
    kernel_op = _arith_kernel(target)
    kernel = CudaKernel.from_kernel_op(ptxas.assemble(emit_ptx(ModuleOp([kernel_op])), arch).data, kernel_op)
    gen = torch.Generator().manual_seed(28)
    n = 64
    x = (torch.randn(n, generator=gen) * 40).to(torch.bfloat16)
    y = (torch.randn(n, generator=gen) * 40).to(torch.bfloat16)
    y[:4] = x[:4]  # some equal pairs for the compare
    c = torch.randint(-128, 128, (n,), generator=gen, dtype=torch.int8)
    d = torch.randint(-128, 128, (n,), generator=gen, dtype=torch.int8)
    d[d == 0] = 7
    c[:2], d[:2] = -128, -1  # -128 / -1 wraps in 8 bits; -128 >> 1 must stay negative
    dev = [t.cuda() for t in (x, y, c, d)]
    out = torch.full((n, len(OUTS)), -12345, dtype=torch.int32, device="cuda")
    kernel.launch((1, 1, 1), (n, 1, 1), [t.data_ptr() for t in dev] + [out.data_ptr()])
    torch.cuda.synchronize()
    expected = _expected(x, y, c, d)
    got = out.cpu()
    # `mul` then `sub` without a rounding modifier may be contracted by ptxas into one fma (as
    # Triton's default fp fusion allows; the sm_90 bf16 ALU forms are such a pair): either the
    # twice-rounded or the once-rounded x*y - x is right, element by element
    fused = (x.double() * y.double() - x.double()).to(torch.bfloat16).view(torch.int16).to(torch.int32) & 0xFFFF
    assert ((got[:, 0] == expected[:, 0]) | (got[:, 0] == fused)).all(), OUTS[0]
    for j, name in enumerate(OUTS[1:], start=1):
        assert torch.equal(got[:, j], expected[:, j]), name


# ------------------------------------------------------------------------------------------------
# From the frontend


@sparsecc.jit
def _where_kernel(X, Y, Z, C, n: tl.constexpr):
    offs = tl.arange(0, n)
    x = tl.load(X + offs)
    y = tl.load(Y + offs)
    c = tl.load(C + offs)
    z = tl.where(c, x * y - x, x + y)
    tl.store(Z + offs, tl.where(x < y, z, x))


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_int8_where_and_bf16_arithmetic_compile_to_cubin(target):
    ck = sparsecc.compile(_where_kernel, {"X": "*bf16", "Y": "*bf16", "Z": "*bf16", "C": "*i8"}, {"n": 128},
                          target=target)
    assert ".b8 " not in ck.asm["ptx"].replace("ld.global.b8 ", "")
    assert isinstance(ck.asm["cubin"], bytes)


def test_int8_where_and_bf16_arithmetic_on_the_interpreter(monkeypatch):
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    gen = torch.Generator().manual_seed(5)
    x, y = (torch.randn(128, generator=gen).to(torch.bfloat16) for _ in range(2))
    c = torch.randint(-3, 3, (128,), generator=gen, dtype=torch.int8)
    z = torch.full_like(x, float("nan"))
    _where_kernel[(1,)](x, y, z, c, n=128)
    ref = torch.where(x < y, torch.where(c != 0, x * y - x, x + y), x)
    assert torch.equal(z, ref)
