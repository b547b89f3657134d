"""Hopper (sm_90a) warpgroup MMA ops for the `ptx` dialect: sparse `wgmma.mma_async.sp` and its fences.

These ops live beside `sparsecc.dialects.ptx` (their names start with `ptx.` so they read as one
dialect; `sparsecc.dialects.make_context` loads them with it): `WGMMA_OPS` lists them, and
`load_into(ctx)` makes another context parse them. Each is a `ptx.TemplateOp`: it renders as
a PTX template (`asm_template()`, `$i` = results first, then operands, as in `ptx.asm`), which
`sparsecc.codegen.ptx_printer.emit_ptx` prints like any other op of the dialect. A kernel using them needs `target="sm_90a"`.

    ptx.wgmma.fence          `wgmma.fence.sync.aligned;` — before the first wgmma, and between
                             ordinary register accesses and a wgmma touching the same registers
    ptx.wgmma.commit_group   `wgmma.commit_group.sync.aligned;`
    ptx.wgmma.wait_group     `wgmma.wait_group.sync.aligned n;`
    ptx.fence.proxy.async    `fence.proxy.async.shared::cta;` — shared memory written by ordinary
                             stores must be fenced (in every writing thread, before the barrier)
                             before wgmma reads it through the async proxy
    ptx.wgmma.mma_async.sp   `wgmma.mma_async.sp.sync.aligned.m64nNk32.f32.T.T d, a, b-desc,
                             meta, sel, scale-d, imm-scale-a, imm-scale-b{, imm-trans-a}, imm-trans-b`
    ptx.wgmma.mma_async      `wgmma.mma_async.sync.aligned.m64nNk16.f32.T.T d, a, b-desc,
                             scale-d, imm-scale-a, imm-scale-b{, imm-trans-a}, imm-trans-b` (dense)

All four warps of a warpgroup (128 consecutive threads, starting at a warp index divisible by 4)
execute every one of them. `wgmma.mma_async.sp` computes D(64xN, f32) = A(64x32, 2:4) * B(32xN)
(+ D when scale-d is true), asynchronously: its results may be read only after a
`wgmma.commit_group` + `wgmma.wait_group` that covers it.

Layouts (checked on the H100, test/python/codegen/test_wgmma.py), with warp `w = tid/32` of the
warpgroup, `g = laneid >> 2`, `t = laneid % 4`:

- Accumulator D (m64nN, f32): N/2 registers; warp w owns rows 16w..16w+15 and, for every 8-column
  block j, d[4j+0], d[4j+1] = D[16w+g][8j+2t : 8j+2t+2], d[4j+2], d[4j+3] = D[16w+g+8][same cols].
- A from registers (compressed 64x16 values): 4 b32 per thread, warp w holds rows 16w.. in the
  mma.sp m16n8k32 A layout: a[0] = A[16w+g][2t:2t+2], a[1] = A[16w+g+8][2t:2t+2],
  a[2] = A[16w+g][2t+8:2t+10], a[3] = A[16w+g+8][2t+8:2t+10] (low half = lower column).
- Metadata: one b32 per thread, the m16n8k32 layout per warp: with sparsity selector `s` (0 or 1)
  the threads t = 2s and 2s+1 of each quad supply it; thread t holds 16-column half h = t % 2 of
  the 64x32 dense tile: bits 15:0 = row 16w+g, bits 31:16 = row 16w+g+8; in a row word, 4-column
  group j (columns 16h+4j..+3) uses bits 4j+1:4j = index of the first kept element, 4j+3:4j+2 =
  the second (ascending). In sparsecc's NV24 format (int16 meta[M/16, K], word of row m and
  16-column chunk c at meta[m//16, 16c + m%16]) the register of k32 step kk, for a tile whose
  rows start at 16-row block `mb`, is
      meta[mb + w, 32kk + 16h + g] | meta[mb + w, 32kk + 16h + g + 8] << 16
  — the same words the mma.sp path reads, so NV24 needs no Hopper-specific re-encoding.
- Shared-memory operands are described by a 64-bit matrix descriptor (`smem_desc_bits`):
  bits 13:0 start address >> 4, 29:16 leading-dimension byte offset (LBO) >> 4, 45:32
  stride-dimension byte offset (SBO) >> 4, 51:49 base offset (0 here: swizzle atoms are aligned),
  63:62 swizzle (0 none/"interleave", 1 = 128B, 2 = 64B, 3 = 32B). Both A (compressed, 64 x 16
  elements per instruction) and B (given as B^T, N x 32, i.e. "K-major", imm-trans-b = 0) are
  K-major tiles of 8-row x 16-byte core matrices:
    * no swizzle: a core matrix is 128 contiguous bytes (8 rows of 16 B); LBO = byte distance
      between core matrices adjacent in K, SBO = between core matrices adjacent in M (or N).
    * 32B/64B/128B swizzle: rows of W = 32/64/128 bytes, 8-row atoms of 8W bytes aligned to 8W;
      byte offset o inside an atom goes to o ^ (((o >> 7) & (W/16 - 1)) << 4) (for 128B: the
      16-byte chunk index XOR row % 8; `swizzle_offset`); SBO = 8W (the next 8 rows). A K extent
      wider than W is stored as W-byte column slabs of R x W bytes each, one after the other,
      and LBO = that slab pitch (R*W): the hardware reads it when one instruction's K extent
      spans two slabs (B under 32B swizzle: 64 B of K per k32 step); otherwise it is unused.
      The k-step inside a slab is taken by adding its byte offset to the start address (the
      hardware swizzles the final address).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.builder import Builder
from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerAttr, IntegerType, StringAttr, f32, i1, i32, i64
from xdsl.ir import Attribute, Dialect, Operation, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    prop_def,
    var_operand_def,
    var_result_def,
)
from xdsl.utils.exceptions import VerifyException

from sparsecc.analysis.swizzle import hardware_swizzle
from sparsecc.dialects.ptx import MMA_SP_AB_TYPES, TemplateOp, mma_acc_name, mma_sp_k

#: Swizzle mode name -> the descriptor's bits 63:62.
SWIZZLE_MODES: dict[str, int] = {"none": 0, "128B": 1, "64B": 2, "32B": 3}
#: Row width in bytes of each swizzle mode (a core-matrix row, 16 B, for "none").
SWIZZLE_BYTES: dict[str, int] = {"none": 16, "32B": 32, "64B": 64, "128B": 128}
#: N of m64nNk32 (multiples of 8 up to 256, as the PTX ISA allows for f16/bf16).
WGMMA_N = tuple(range(8, 257, 8))
WGMMA_AB_TYPES = ("f16", "bf16", "e4m3", "e5m2", "s8", "tf32")
"""Operand types of `wgmma.mma_async.sp` sparsecc emits (the 8-bit ones take K = 64, K-major
operands only, and s8 accumulates in s32; `ptx.MMA_SP_AB_TYPES`)."""


def _int(value: int, width: int = 32) -> IntegerAttr:
    return IntegerAttr(value, width)


# ----------------------------------------------------------------------------------------------
# Matrix descriptors


def smem_desc_bits(addr: int, lbo: int, sbo: int, swizzle: str = "none") -> int:
    """The 64-bit wgmma shared-memory matrix descriptor (unsigned) for byte values.

    `addr` is the 32-bit shared-window address of the tile (16-byte aligned; only bits 17:4
    are kept), `lbo`/`sbo` the leading/stride byte offsets (multiples of 16, < 2**18).
    """
    if swizzle not in SWIZZLE_MODES:
        raise ValueError(f"swizzle must be one of {list(SWIZZLE_MODES)}, got {swizzle!r}")
    for what, v in (("addr", addr), ("lbo", lbo), ("sbo", sbo)):
        if v % 16:
            raise ValueError(f"descriptor {what} must be a multiple of 16 bytes, got {v}")
    for what, v in (("lbo", lbo), ("sbo", sbo)):
        if not 0 <= v >> 4 < 1 << 14:
            raise ValueError(f"descriptor {what} {v} does not fit in 14 bits after >> 4")
    return ((addr >> 4) & 0x3FFF) | (lbo >> 4) << 16 | (sbo >> 4) << 32 | SWIZZLE_MODES[swizzle] << 62


def as_signed64(value: int) -> int:
    """An unsigned 64-bit pattern (a descriptor) as the signed value an i64 constant holds."""
    value &= (1 << 64) - 1
    return value - (1 << 64) if value >> 63 else value


def _i64_const(value: int) -> arith.ConstantOp:
    """An i64 constant from an unsigned 64-bit pattern (two's complement above 2**63)."""
    return arith.ConstantOp.from_int_and_width(as_signed64(value), 64)


def build_smem_desc(
    b: Builder, addr: SSAValue, *, lbo: int, sbo: int, swizzle: str = "none", offset: int = 0
) -> SSAValue:
    """Emit arith ops computing the descriptor (i64) of the tile at shared address `addr` + `offset`.

    `addr` is an i32 shared-window address (e.g. from `ptx.shared_base`); the constant fields
    are folded into one i64 that is or-ed with ((addr + offset) >> 4) & 0x3FFF.
    """
    if addr.type != i32:
        raise VerifyException(f"build_smem_desc: the address must be i32, got {addr.type}")
    const = smem_desc_bits(0, lbo, sbo, swizzle)
    if offset:
        addr = b.insert(arith.AddiOp(addr, b.insert(arith.ConstantOp.from_int_and_width(offset, 32)))).result
    wide = b.insert(arith.ExtUIOp(addr, i64)).result
    four = b.insert(arith.ConstantOp.from_int_and_width(4, 64)).result
    field = b.insert(arith.ShRUIOp(wide, four)).result
    mask = b.insert(arith.ConstantOp.from_int_and_width(0x3FFF, 64)).result
    field = b.insert(arith.AndIOp(field, mask)).result
    return b.insert(arith.OrIOp(field, b.insert(_i64_const(const)).result)).result


def swizzle_offset(offset: int, swizzle: str) -> int:
    """Where byte `offset` of an unswizzled K-major tile (rows of the swizzle width, 8-row atoms
    aligned to 8 x width) lands in shared memory under `swizzle` (identity for "none"):
    `sparsecc.analysis.swizzle.hardware_swizzle` of the mode's row width."""
    return hardware_swizzle(offset, SWIZZLE_BYTES[swizzle])


# ----------------------------------------------------------------------------------------------
# Ops


@irdl_op_definition
class WgmmaFenceOp(TemplateOp):
    """`wgmma.fence.sync.aligned;`: orders register (and shared memory) accesses before a wgmma."""

    name = "ptx.wgmma.fence"

    def __init__(self):
        super().__init__()

    def asm_template(self) -> str:
        return "wgmma.fence.sync.aligned;"


@irdl_op_definition
class WgmmaCommitGroupOp(TemplateOp):
    """`wgmma.commit_group.sync.aligned;`: close the group of the wgmmas issued since the last one."""

    name = "ptx.wgmma.commit_group"

    def __init__(self):
        super().__init__()

    def asm_template(self) -> str:
        return "wgmma.commit_group.sync.aligned;"


@irdl_op_definition
class WgmmaWaitGroupOp(TemplateOp):
    """`wgmma.wait_group.sync.aligned n;`: wait until at most `n` committed groups are pending."""

    name = "ptx.wgmma.wait_group"

    n = prop_def(IntegerAttr)

    def __init__(self, n: int = 0):
        super().__init__(properties={"n": _int(n)})

    def verify_(self) -> None:
        if self.n.value.data < 0:
            raise VerifyException("ptx.wgmma.wait_group: n must be >= 0")

    def asm_template(self) -> str:
        return f"wgmma.wait_group.sync.aligned {self.n.value.data};"


@irdl_op_definition
class FenceProxyAsyncOp(TemplateOp):
    """`fence.proxy.async.shared::cta;`: make generic-proxy shared stores visible to wgmma/TMA."""

    name = "ptx.fence.proxy.async"

    def __init__(self):
        super().__init__()

    def asm_template(self) -> str:
        return "fence.proxy.async.shared::cta;"


class _WarpgroupMma:
    """What the sparse and the dense warpgroup MMA share: A in registers or by descriptor, the
    accumulator tie, the checks of N, results, accumulators and A, and operand groups (a mixin of
    the two IRDL ops: it reads their `n`, `acc`, `a`, `res`, `trans_a`, `trans_b`, `scale_d_imm`)."""

    @property
    def a_in_registers(self) -> bool:
        return len(self.a) == 4

    def tied_operands(self) -> Sequence[SSAValue]:
        """The accumulator inputs, when they are distinct values used by nothing else: they die
        here, so the results may overwrite their registers. Without the copies ptxas keeps a
        chain of wgmmas in flight; with them it waits after each one."""
        acc = list(self.acc)
        if acc and len(set(acc)) == len(acc) and all(len(list(v.uses)) == 1 for v in acc):
            return acc
        return ()

    def _verify_shape(self, acc_ty: Attribute) -> None:
        """N, the result and accumulator counts and types, A's form, the 0/1 flags."""
        n = self.n.value.data
        name = self.name
        if n not in WGMMA_N:
            raise VerifyException(f"{name}: N must be a multiple of 8 in 8..256, got {n}")
        if len(self.res) != n // 2 or any(r.type != acc_ty for r in self.res):
            raise VerifyException(f"{name}: m64n{n} has {n // 2} {acc_ty} results, got {len(self.res)}")
        if len(self.acc) not in (0, n // 2) or any(v.type != acc_ty for v in self.acc):
            raise VerifyException(f"{name}: acc must be empty or {n // 2} {acc_ty} values, got {len(self.acc)}")
        a_types = [v.type for v in self.a]
        if a_types != [i64] and a_types != [i32] * 4:
            raise VerifyException(f"{name}: a must be one i64 descriptor or 4 i32 registers")
        for what in ("trans_a", "trans_b", "scale_d_imm"):
            if getattr(self, what).value.data not in (0, 1):
                raise VerifyException(f"{name}: {what} must be 0 or 1")
        if self.a_in_registers and self.trans_a.value.data:
            raise VerifyException(f"{name}: trans_a needs A in shared memory (a descriptor)")

    def _operand_groups(self, acc_type: str) -> tuple[list[str], str, str, int]:
        """(the accumulator copies, unless tied; the results' `{$..}`; A's operand; the index of
        the operand after A) of the asm template."""
        nres = self.n.value.data // 2
        nacc = len(self.acc)
        i = nres + nacc  # first operand index after the accumulator inputs
        copies = [] if self.tied_operands() else [f"mov.{acc_type} ${j}, ${nres + j};" for j in range(nacc)]
        if self.a_in_registers:
            a, i = _group(i, 4), i + 4
        else:
            a, i = f"${i}", i + 1
        return copies, _group(0, nres), a, i


def _group(first: int, count: int) -> str:
    return "{" + ", ".join(f"${first + j}" for j in range(count)) + "}"


@irdl_op_definition
class WgmmaMmaAsyncSpOp(_WarpgroupMma, TemplateOp):
    """`wgmma.mma_async.sp.sync.aligned.m64nNkK.C.T.T`: one 2:4-sparse warpgroup MMA.

    Operands: `acc` (empty, or N/2 accumulators, copied into the result registers before the
    wgmma), `a` (one i64 shared-memory descriptor of the compressed 64 x K/2 A, or 4 i32
    registers in the layout of the module docstring), `b_desc` (i64 descriptor of B, K x N),
    `meta` (i32 metadata register), optional `scale_d` (i1: add the accumulator iff true; when
    absent the immediate `scale_d_imm` is used, 1 with an `acc`, 0 without). Properties: `n`,
    `ab_type` T ("f16"/"bf16": K = 32; "e4m3"/"e5m2"/"s8": K = 64), `selector` (0/1 for 16-bit
    T, 0 for 8-bit), `scale_a`/`scale_b` (1 or -1; 1 for s8), `trans_a`/`trans_b` (0/1, 1 =
    MN-major operand; `trans_a` only for A in shared memory; 0 for 8-bit T). Results: N/2
    accumulators C (f32; s32 for s8).
    """

    name = "ptx.wgmma.mma_async.sp"

    acc = var_operand_def()
    a = var_operand_def(IntegerType)
    b_desc = operand_def(i64)
    meta = operand_def(i32)
    scale_d = opt_operand_def(i1)
    res = var_result_def()
    n = prop_def(IntegerAttr)
    ab_type = prop_def(StringAttr)
    selector = prop_def(IntegerAttr)
    scale_d_imm = prop_def(IntegerAttr)
    scale_a = prop_def(IntegerAttr)
    scale_b = prop_def(IntegerAttr)
    trans_a = prop_def(IntegerAttr)
    trans_b = prop_def(IntegerAttr)

    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def __init__(
        self,
        a: SSAValue | Operation | Sequence[SSAValue | Operation],
        b_desc: SSAValue | Operation,
        meta: SSAValue | Operation,
        *,
        n: int,
        ab_type: str = "f16",
        acc: Sequence[SSAValue | Operation] = (),
        scale_d: SSAValue | Operation | None = None,
        selector: int = 0,
        scale_a: int = 1,
        scale_b: int = 1,
        trans_a: int = 0,
        trans_b: int = 0,
    ):
        a_list = list(a) if isinstance(a, Sequence) else [a]
        super().__init__(
            operands=[list(acc), a_list, b_desc, meta, [scale_d] if scale_d is not None else []],
            result_types=[[MMA_SP_AB_TYPES.get(ab_type, (0, f32))[1]] * (n // 2)],
            properties={
                "n": _int(n),
                "ab_type": StringAttr(ab_type),
                "selector": _int(selector),
                "scale_d_imm": _int(1 if acc else 0),
                "scale_a": _int(scale_a),
                "scale_b": _int(scale_b),
                "trans_a": _int(trans_a),
                "trans_b": _int(trans_b),
            },
        )

    @property
    def kmajor_only(self) -> bool:
        """Whether the operands take no transpose (8-bit m64nNk64, tf32 m64nNk16): K-major only."""
        return self.ab_type.data in ("e4m3", "e5m2", "s8", "tf32")

    def verify_(self) -> None:
        name = self.name
        if self.ab_type.data not in WGMMA_AB_TYPES:
            raise VerifyException(f"{name}: ab_type must be one of {WGMMA_AB_TYPES}")
        t = self.ab_type.data
        self._verify_shape(MMA_SP_AB_TYPES[t][1])
        if self.kmajor_only:
            if t != "tf32" and self.selector.value.data != 0:
                raise VerifyException(f"{name}: the sparsity selector of m64nNk64 {t} is 0")
            if self.trans_a.value.data or self.trans_b.value.data:
                raise VerifyException(f"{name}: {t} operands must be K-major (trans_a = trans_b = 0)")
            if t == "s8" and (self.scale_a.value.data, self.scale_b.value.data) != (1, 1):
                raise VerifyException(f"{name}: s8 has no scale_a/scale_b (they must be 1)")
        elif self.selector.value.data not in (0, 1):
            raise VerifyException(f"{name}: the sparsity selector of m64nNk32 {t} is 0 or 1")
        for what in ("scale_a", "scale_b"):
            if getattr(self, what).value.data not in (1, -1):
                raise VerifyException(f"{name}: {what} must be 1 or -1")

    def asm_template(self) -> str:
        n = self.n.value.data
        # tied: the results live in the accumulator's registers, no copies
        t = self.ab_type.data
        acc = mma_acc_name(t)
        lines, d, a, i = self._operand_groups(acc)
        b_desc, meta = f"${i}", f"${i + 1}"
        i += 2
        scale_d = f"${i}" if self.scale_d is not None else str(self.scale_d_imm.value.data)
        # immediates: 16-bit: scale-a, scale-b, [trans-a,] trans-b; fp8: scale-a, scale-b; s8: none
        imms = [] if t == "s8" else [self.scale_a.value.data, self.scale_b.value.data]
        if not self.kmajor_only:
            if not self.a_in_registers:
                imms.append(self.trans_a.value.data)
            imms.append(self.trans_b.value.data)
        k = mma_sp_k(t)
        lines.append(
            f"wgmma.mma_async.sp.sync.aligned.m64n{n}k{k}.{acc}.{t}.{t} {d}, {a}, {b_desc}, "
            f"{meta}, {self.selector.value.data}, {scale_d}" + "".join(f", {v}" for v in imms) + ";"
        )
        return "\n".join(lines)


DENSE_WGMMA_AB_TYPES = ("f16", "bf16")
"""Operand types of the dense `wgmma.mma_async` sparsecc emits (m64nNk16, f32 accumulators)."""


@irdl_op_definition
class WgmmaMmaAsyncOp(_WarpgroupMma, TemplateOp):
    """`wgmma.mma_async.sync.aligned.m64nNk16.f32.T.T`: one dense warpgroup MMA of 16-bit
    operands, D(64xN) = A(64x16) * B(16xN) (+ D).

    The dense twin of `WgmmaMmaAsyncSpOp`, without metadata or selector: `a` is one i64
    descriptor of a K-major A (64 rows x 32 bytes of K per instruction) or 4 i32 registers in
    the mma.sync m16n8k16 A layout of each warp's 16 rows (a[0] = A[16w+g][2t:2t+2], a[1] =
    row +8, a[2] = columns +8, a[3] = both); `b_desc` describes B (K x N; `trans_b` = 1 for an
    MN-major tile). Example, A and B from shared memory, accumulating:

        WgmmaMmaAsyncOp(a_desc, b_desc, n=256, acc=acc, trans_b=1)
        # wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 {d..}, a, b, 1, 1, 1, 0, 1;
    """

    name = "ptx.wgmma.mma_async"

    acc = var_operand_def()
    a = var_operand_def(IntegerType)
    b_desc = operand_def(i64)
    scale_d = opt_operand_def(i1)
    res = var_result_def()
    n = prop_def(IntegerAttr)
    ab_type = prop_def(StringAttr)
    scale_d_imm = prop_def(IntegerAttr)
    trans_a = prop_def(IntegerAttr)
    trans_b = prop_def(IntegerAttr)

    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def __init__(
        self,
        a: SSAValue | Operation | Sequence[SSAValue | Operation],
        b_desc: SSAValue | Operation,
        *,
        n: int,
        ab_type: str = "f16",
        acc: Sequence[SSAValue | Operation] = (),
        scale_d: SSAValue | Operation | None = None,
        trans_a: int = 0,
        trans_b: int = 0,
    ):
        a_list = list(a) if isinstance(a, Sequence) else [a]
        super().__init__(
            operands=[list(acc), a_list, b_desc, [scale_d] if scale_d is not None else []],
            result_types=[[f32] * (n // 2)],
            properties={
                "n": _int(n),
                "ab_type": StringAttr(ab_type),
                "scale_d_imm": _int(1 if acc else 0),
                "trans_a": _int(trans_a),
                "trans_b": _int(trans_b),
            },
        )

    def verify_(self) -> None:
        if self.ab_type.data not in DENSE_WGMMA_AB_TYPES:
            raise VerifyException(f"{self.name}: ab_type must be one of {DENSE_WGMMA_AB_TYPES}")
        self._verify_shape(f32)

    def asm_template(self) -> str:
        n = self.n.value.data
        t = self.ab_type.data
        lines, d, a, i = self._operand_groups("f32")
        b_desc = f"${i}"
        i += 1
        scale_d = f"${i}" if self.scale_d is not None else str(self.scale_d_imm.value.data)
        imms = [1, 1] + ([] if self.a_in_registers else [self.trans_a.value.data]) + [self.trans_b.value.data]
        lines.append(f"wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{t}.{t} {d}, {a}, {b_desc}, "
                     f"{scale_d}" + "".join(f", {v}" for v in imms) + ";")
        return "\n".join(lines)


WGMMA_OPS: tuple[type[IRDLOperation], ...] = (
    WgmmaFenceOp,
    WgmmaCommitGroupOp,
    WgmmaWaitGroupOp,
    FenceProxyAsyncOp,
    WgmmaMmaAsyncSpOp,
    WgmmaMmaAsyncOp,
)
PTX_WGMMA = Dialect("ptx_wgmma", list(WGMMA_OPS), [])


def load_into(ctx: Context) -> None:
    """Let `ctx` (one not made by `make_context`, which has them) parse the ops of this module."""
    for op in WGMMA_OPS:
        if ctx.get_optional_op(op.name) is None:
            ctx.load_op(op)
