"""The `ptx` dialect: the bottom of the GPU backend, one op per PTX instruction family.

`sparsecc.codegen.ptx_printer.emit_ptx` prints a module of `ptx.kernel`s as PTX text; every SSA
value becomes one virtual register. The dialect is deliberately thin: anything that is plain
scalar arithmetic or structured control flow is written with upstream ops, which the printer
knows how to print, so the lowering can use xDSL's builders, folders and CSE on it.

Value types and the PTX register class each one lives in:

    i1              %p   .pred
    i16, f16, bf16  %rs  .b16
    i32             %r   .b32   (also packed f16x2/bf16x2 pairs and every mma A/B/metadata reg)
    i64             %rd  .b64   (global addresses)
    f32             %f   .f32

Upstream ops the printer accepts inside a kernel:
- `arith.constant` (scalar), `addi/subi/muli/divsi/divui/remsi/remui/andi/ori/xori/shli/shrsi/
  shrui/maxsi/minsi/maxui/minui`, `cmpi`, `select`, `extsi/extui/trunci`, `addf/subf/mulf/divf/
  negf/maximumf/minimumf/maxnumf/minnumf`, `cmpf`, `sitofp/uitofp/fptosi/fptoui`, `extf/truncf`
  (`truncf` f32->f16/bf16 prints `cvt.rn.f16.f32`/`cvt.rn.bf16.f32`), `bitcast`, and `math.fma`.
  64-bit address arithmetic is `arith.extsi/extui` i32->i64 + `arith.muli/addi` on i64.
- Loops are `scf.for` with an i32 or i64 induction variable (no `index`). Loop-carried values
  (`iter_args`, e.g. accumulators) live in one register each; the back edge copies the
  `scf.yield`ed values into them (through temporaries when the yield permutes them) and the
  `scf.for` results are those registers. Printed as a guarded, bottom-tested labelled loop:
  `setp.ge` + `bra` around it, `add` + `setp.lt` + `@%p bra` at the bottom (signed compares).
- Conditionals are `scf.if` (with or without results / else region), printed as branches; for a
  single predicated memory access prefer the `mask` operand of the memory ops below.

Ops of this dialect:

    ptx.kernel         `.visible .entry`: symbol name, params, body block (args = params)
    ptx.ret            `ret;` (early exit; the printer always ends a kernel with `ret;`)
    ptx.sreg           `mov.u32 %r, %tid.x` etc. (tid/ntid/ctaid/nctaid .x/.y/.z, laneid, warpid)
    ptx.shared_base    `mov.u32 %r, smem` with `.extern .shared .align 16 .b8 smem[]`
    ptx.ld.global      `[@%p] ld.global{.cache}{.v2|.v4}.bN` (+ `other` values when masked off)
    ptx.st.global      `[@%p] st.global{.cache}{.v2|.v4}.bN`
    ptx.ld.shared      `[@%p] ld.shared{.v2|.v4}.bN` (32-bit shared addresses)
    ptx.st.shared      `[@%p] st.shared{.v2|.v4}.bN`
    ptx.cp.async       `cp.async.{cg|ca}.shared.global [dst], [src], size{, src_size}`; with a
                       `mask` operand, a false mask zero-fills (src-size form via `selp`)
    ptx.cp.async.commit_group / ptx.cp.async.wait_group {n}
    ptx.ldmatrix       `ldmatrix.sync.aligned.m8n8.x{1,2,4}{.trans}.shared.b16`
    ptx.mma.sp         `mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f32.T.T.f32`
    ptx.mma            `mma.sync.aligned.m16n8k16.row.col.f32.T.T.f32` (dense, for comparisons)
    ptx.bar.sync       `bar.sync id;`
    ptx.pack           two b16 values -> b32: `mov.b32 %r, {%lo, %hi}`
    ptx.unpack         b32 -> two b16 values: `mov.b32 {%lo, %hi}, %r`
    ptx.cvt.pack       two f32 -> f16x2/bf16x2: `cvt.rn.f16x2.f32 %r, %hi, %lo`
    ptx.asm            escape hatch: a PTX template with `$0..$n` (results first, then operands)

Building a kernel (see test/python/codegen/test_ptx_backend.py for a complete mma.sp kernel):

    kernel = ptx.KernelOp("k", [("D", "ptr"), ("n", "i32")], target="sm_80",
                          maxntid=(32, 1, 1), shared_bytes=0)
    d_ptr, n = kernel.args
    b = Builder(InsertPoint.at_end(kernel.body.block))
    tid = b.insert(ptx.SpecialRegOp("tid.x")).result
    ...
    b.insert(ptx.StGlobalOp(addr, [value]))
    text = emit_ptx(ModuleOp([kernel]))

Param kinds: "ptr" (an i64 block argument, `.param .u64`), "i64", "i32" and "f32". A kernel's
`shared_bytes` is the dynamic shared memory the launcher must pass (it is not part of the PTX).

Fragment layouts used by the mma ops (PTX ISA, "Matrix fragments for mma.m16n8k16 with floating
point type" and "... for sparse mma.m16n8k32 with .f16 and .bf16 types"), with
`g = laneid >> 2` (groupID) and `t = laneid % 4` (threadID_in_group):

- mma.sp m16n8k32, A: the compressed 16x16 values (the kept 2 of every 4 of a 16x32 row),
  4 b32 regs, each a pair of consecutive columns (low half = lower column):
  a[0] = A[g][2t:2t+2], a[1] = A[g+8][2t:2t+2], a[2] = A[g][2t+8:2t+10], a[3] = A[g+8][2t+8:2t+10]
  (the same layout as the dense m16n8k16 A operand; `ldmatrix.x4` of the four 8x8 quadrants
  in the order (rows 0-7, cols 0-7), (8-15, 0-7), (0-7, 8-15), (8-15, 8-15) yields it).
- mma.sp m16n8k32, B (32x8, K x N): 4 b32 regs, b[j] = {B[8j+2t][g], B[8j+2t+1][g]}
  (`ldmatrix.x4.trans` of the four 8x8 row blocks of a row-major B yields it).
- C/D (16x8 f32): c[0] = C[g][2t], c[1] = C[g][2t+1], c[2] = C[g+8][2t], c[3] = C[g+8][2t+1].
- dense mma m16n8k16, B (16x8): 2 b32 regs, b[j] = {B[8j+2t][g], B[8j+2t+1][g]}.
- mma.sp metadata: one b32 register per thread; only the two threads `t = 2*selector` and
  `t = 2*selector + 1` of every group of four supply it (selector 0: t = 0,1; selector 1:
  t = 2,3). Thread t of group g holds the metadata of 16-column half `h = t % 2` (columns
  16h..16h+15 of the 16x32 sparse A):
      bits [15:0]  = row g,   bits [31:16] = row g + 8,
  and inside each 16-bit row word, the 4-column group j (columns 16h+4j..16h+4j+3) uses bits
  4j..4j+3: low 2 bits = index of the first kept element, next 2 bits = the second (with
  `::ordered_metadata` the first index must be the smaller one). In sparsecc's global format
  (int16 meta[ceil(M/16), K], word of row m and 16-column chunk c at meta[m//16, 16*c + m%16])
  the register of (g, h) for the k32 step kk is therefore
      meta[tile, 16*(2kk+h) + g] | meta[tile, 16*(2kk+h) + g + 8] << 16.

8-bit operands (e4m3, e5m2, s8; m16n8k64) hold the same bytes in the same registers: a
compressed 16x32 8-bit A is 16 rows of 32 bytes, like the 16x16 16-bit one, and a thread's b32
holds 4 consecutive K elements of A or B where the 16-bit form holds 2. So the fragments are the
16-bit ones of the tile read as 16-bit pairs (ldmatrix loads them unchanged; B must be K-major,
as ldmatrix cannot transpose bytes). The metadata of one k64 step is one b32 per thread, every
thread of a quad supplying it (selector 0), and each b32 covers 32 columns of ONE row: thread t
holds row g + 8 (t % 2), 16-column chunks 2 (t // 2) (bits 15:0) and 2 (t // 2) + 1 (bits
31:16) of the step (measured on the H100 with host-permuted words, bench/results/NOTES.md). The
words are NV24's; only their order in the registers differs. The accumulator of s8 is s32.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    ArrayAttr,
    BFloat16Type,
    Float8E4M3FNType,
    Float8E5M2Type,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerAttr,
    IntegerType,
    StringAttr,
    SymbolNameConstraint,
    UnitAttr,
    bf16,
    f8E4M3FN,
    f8E5M2,
    f16,
    f32,
    i1,
    i8,
    i16,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, Dialect, Operation, Region, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    base,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.traits import IsolatedFromAbove, NoTerminator, Pure, SymbolOpInterface
from xdsl.utils.exceptions import VerifyException

from sparsecc.defaults import MAX_MAXNREG, MIN_MAXNREG
from sparsecc.dialects import ptx_targets

#: Every scalar type a PTX register of this dialect can hold.
SCALAR_TYPES: tuple[Attribute, ...] = (i1, i8, i16, i32, i64, f8E4M3FN, f8E5M2, f16, bf16, f32)
# IRDL constraints by base type; exact widths are checked in `verify_` (xDSL's `AnyOf` cannot
# hold two `IntegerType`s of different widths).
_B16_TYPES = base(IntegerType) | base(Float16Type) | base(BFloat16Type)
_MEM_TYPES = _B16_TYPES | base(Float32Type) | base(Float8E4M3FNType) | base(Float8E5M2Type)
_ADDR_TYPES = base(IntegerType)
#: Types a memory op may move (no predicates in memory).
MEM_TYPES: tuple[Attribute, ...] = (i8, i16, i32, i64, f8E4M3FN, f8E5M2, f16, bf16, f32)
B16_TYPES: tuple[Attribute, ...] = (i16, f16, bf16)

PARAM_KINDS: dict[str, Attribute] = {"ptr": i64, "i64": i64, "i32": i32, "f32": f32, "tmap": i64}
"""Block-argument type per param kind; a "tmap" is a 128-byte tensor map passed by value
(`.param .align 64 .b8 [128]`), its block argument the map's generic address."""
SPECIAL_REGS = tuple(
    [f"{r}.{d}" for r in ("tid", "ntid", "ctaid", "nctaid") for d in "xyz"] + ["laneid", "warpid", "cluster_ctarank"]
)
LD_CACHE_OPS = ("ca", "cg", "cs", "lu", "cv")
ST_CACHE_OPS = ("wb", "cg", "cs", "wt")
MMA_AB_TYPES = ("f16", "bf16")
MMA_SP_AB_TYPES: dict[str, tuple[int, Attribute]] = {
    "f16": (32, f32), "bf16": (32, f32), "e4m3": (64, f32), "e5m2": (64, f32), "s8": (64, i32), "tf32": (16, f32)}
"""Sparse mma operand type -> (dense K of one instruction, accumulator type)."""


def mma_sp_k(ab_type: str) -> int:
    """The dense K of one sparse mma of `ab_type` (32 for 16-bit operands, 64 for 8-bit)."""
    return MMA_SP_AB_TYPES[ab_type][0]


def mma_acc_type(ab_type: str) -> Attribute:
    """The accumulator element type of a sparse mma of `ab_type` (s32 for s8, else f32)."""
    return MMA_SP_AB_TYPES[ab_type][1]


_FLOAT_TYPE_NAMES: dict[type[Attribute], str] = {
    Float16Type: "f16", BFloat16Type: "bf16", Float32Type: "f32", Float8E4M3FNType: "e4m3", Float8E5M2Type: "e5m2",
    Float64Type: "f64"}


def type_name(ty: Attribute) -> str | None:
    """PTX's name of scalar type `ty` as an arithmetic or tensor-core operand (integers signed);
    None for a type PTX has no such name for. The one element type -> PTX type map: the printer
    (`add.f16`, `cvt.rn.bf16.f32`) and the dot lowering (`mma_ab_type`) both ask it.

        >>> from xdsl.dialects.builtin import f8E4M3FN, i8
        >>> type_name(f8E4M3FN), type_name(i8)
        ('e4m3', 's8')
    """
    if isinstance(ty, IntegerType):
        return f"s{ty.width.data}" if ty.width.data in (8, 16, 32, 64) else None
    return _FLOAT_TYPE_NAMES.get(type(ty))


def mma_ab_type(ty: Attribute) -> str | None:
    """The `ab_type` of a sparse mma / wgmma whose A and B hold `ty` elements (f32 is read as
    tf32); None: no sparse tensor-core instruction takes `ty`.

        >>> from xdsl.dialects.builtin import f32
        >>> mma_ab_type(f32)
        'tf32'
    """
    name = type_name(ty)
    name = "tf32" if name == "f32" else name
    return name if name in MMA_SP_AB_TYPES else None


def mma_acc_name(ab_type: str) -> str:
    """PTX's name of the accumulator type of a sparse mma of `ab_type` (`s32` for s8, else `f32`)."""
    name = type_name(mma_acc_type(ab_type))
    assert name is not None
    return name


def bit_width(ty: Attribute) -> int:
    """Bits of a scalar type of this dialect (i1 counts as 1)."""
    if isinstance(ty, IntegerType):
        return ty.width.data
    if isinstance(ty, Float16Type | BFloat16Type):
        return 16
    if isinstance(ty, Float8E4M3FNType | Float8E5M2Type):
        return 8
    if isinstance(ty, Float32Type):
        return 32
    if isinstance(ty, Float64Type):
        return 64
    raise VerifyException(f"ptx: unsupported value type {ty}")


def _int_prop(value: int, width: int = 64) -> IntegerAttr:
    return IntegerAttr(value, width)


def _check_addr(op: Operation, addr: SSAValue, expected: Attribute) -> None:
    if addr.type != expected:
        raise VerifyException(f"{op.name}: address must be {expected}, got {addr.type}")


def _check_vector(op: Operation, values: Sequence[SSAValue], what: str) -> None:
    """A memory access moves 1, 2 or 4 values of one type, at most 16 bytes."""
    if len(values) not in (1, 2, 4):
        raise VerifyException(f"{op.name}: {what} must be 1, 2 or 4 values, got {len(values)}")
    types = {v.type for v in values}
    if not types <= set(MEM_TYPES):
        raise VerifyException(f"{op.name}: {what} must be of types {[str(t) for t in MEM_TYPES]}")
    if len(types) != 1:
        raise VerifyException(f"{op.name}: all {what} must have one type, got {sorted(map(str, types))}")
    if len(values) * bit_width(values[0].type) > 128:
        raise VerifyException(f"{op.name}: a vector access moves at most 16 bytes")


# ----------------------------------------------------------------------------------------------
# Kernel


@irdl_op_definition
class KernelOp(IRDLOperation):
    """A `.visible .entry`: params are the body block's arguments.

    `param_kinds[i]` says how param i is passed ("ptr" and "i64" as `.u64`, "i32" as `.u32`,
    "f32" as `.f32`); a pointer is an i64 block argument, which keeps address arithmetic plain
    `arith` on i64. `maxntid`/`reqntid` become `.maxntid`/`.reqntid`, `maxnreg` `.maxnreg` (the
    registers a thread may use: fewer let more CTAs share an SM); `shared_bytes` is the
    dynamic shared memory (the `smem` array) the kernel needs at launch, at most what one block
    of the target may have; `target` is the `.target`, one of
    `ptx_targets.SUPPORTED_TARGETS` (e.g. "sm_80", "sm_90a").
    """

    name = "ptx.kernel"

    sym_name = prop_def(SymbolNameConstraint())
    target = prop_def(StringAttr)
    param_kinds = prop_def(ArrayAttr[StringAttr])
    maxntid = opt_prop_def(ArrayAttr[IntegerAttr])
    reqntid = opt_prop_def(ArrayAttr[IntegerAttr])
    cluster = opt_prop_def(ArrayAttr[IntegerAttr])
    """`.reqnctapercluster`: the CTAs of one cluster (launched as such by a plain launch)."""
    maxnreg = opt_prop_def(IntegerAttr)
    shared_bytes = prop_def(IntegerAttr)
    body = region_def("single_block")

    traits = traits_def(SymbolOpInterface(), IsolatedFromAbove(), NoTerminator())

    def __init__(
        self,
        name: str,
        params: Sequence[tuple[str, str]] | Sequence[str],
        *,
        target: str = "sm_80",
        maxntid: Sequence[int] | None = None,
        reqntid: Sequence[int] | None = None,
        cluster: Sequence[int] | None = None,
        shared_bytes: int = 0,
        body: Region | None = None,
        maxnreg: int | None = None,
    ):
        """`params` is a list of kinds, or of (name, kind) pairs (names become arg name hints)."""
        kinds = [p[1] if isinstance(p, tuple) else p for p in params]
        for k in kinds:
            if k not in PARAM_KINDS:
                raise ValueError(f"ptx.kernel {name}: unknown param kind {k!r} (one of {list(PARAM_KINDS)})")
        if body is None:
            block = Block(arg_types=[PARAM_KINDS[k] for k in kinds])
            for arg, p in zip(block.args, params):
                if isinstance(p, tuple):
                    arg.name_hint = p[0]
            body = Region(block)

        def dims(d: Sequence[int] | None) -> ArrayAttr[IntegerAttr] | None:
            if d is None:
                return None
            d = list(d) + [1] * (3 - len(d))
            return ArrayAttr([_int_prop(x, 32) for x in d])

        props: dict[str, Attribute | None] = {
            "sym_name": StringAttr(name),
            "target": StringAttr(target),
            "param_kinds": ArrayAttr([StringAttr(k) for k in kinds]),
            "shared_bytes": _int_prop(shared_bytes),
            "maxntid": dims(maxntid),
            "reqntid": dims(reqntid),
            "cluster": dims(cluster),
            "maxnreg": _int_prop(maxnreg, 32) if maxnreg is not None else None,
        }
        super().__init__(properties={k: v for k, v in props.items() if v is not None}, regions=[body])

    @property
    def kernel_name(self) -> str:
        return self.sym_name.data

    @property
    def args(self) -> tuple[SSAValue, ...]:
        """The params as SSA values (the body block's arguments)."""
        return tuple(self.body.block.args)

    @property
    def kinds(self) -> list[str]:
        return [k.data for k in self.param_kinds.data]

    def verify_(self) -> None:
        kinds = self.kinds
        args = self.body.block.args
        if len(kinds) != len(args):
            raise VerifyException(f"ptx.kernel {self.kernel_name}: {len(kinds)} param kinds, {len(args)} block args")
        for i, (k, a) in enumerate(zip(kinds, args)):
            if k not in PARAM_KINDS:
                raise VerifyException(f"ptx.kernel {self.kernel_name}: param {i} has unknown kind {k!r}")
            if a.type != PARAM_KINDS[k]:
                raise VerifyException(
                    f"ptx.kernel {self.kernel_name}: param {i} of kind {k} must be {PARAM_KINDS[k]}, got {a.type}"
                )
        for attr in (self.maxntid, self.reqntid, self.cluster):
            if attr is not None and len(attr.data) != 3:
                raise VerifyException(f"ptx.kernel {self.kernel_name}: maxntid/reqntid/cluster need 3 dims")
        if self.maxnreg is not None and not MIN_MAXNREG <= self.maxnreg.value.data <= MAX_MAXNREG:
            raise VerifyException(f"ptx.kernel {self.kernel_name}: maxnreg must be {MIN_MAXNREG} to {MAX_MAXNREG}, "
                                  f"got {self.maxnreg.value.data}")
        problem = self.target_problem()
        if problem is not None:
            raise VerifyException(f"ptx.kernel {self.kernel_name}: {problem}")

    def target_problem(self) -> str | None:
        """Why this kernel cannot run on its `target` (an unknown target, more shared memory
        than one block of it may have), or None. Cheap: the printer asks it of every kernel,
        also when the full verifier is skipped."""
        t = self.target.data
        return ptx_targets.check_target(t) or ptx_targets.check_shared(t, self.shared_bytes.value.data)


@irdl_op_definition
class ReturnOp(IRDLOperation):
    """`ret;` — leave the kernel early (e.g. inside an `scf.if`); not a terminator."""

    name = "ptx.ret"

    def __init__(self):
        super().__init__()


# ----------------------------------------------------------------------------------------------
# Special registers, shared memory base


@irdl_op_definition
class SpecialRegOp(IRDLOperation):
    """Read a special register (`%tid.x`, `%ctaid.y`, `%laneid`, ...) as an i32."""

    name = "ptx.sreg"

    reg = prop_def(StringAttr)
    result = result_def(i32)

    traits = traits_def(Pure())

    def __init__(self, reg: str):
        super().__init__(properties={"reg": StringAttr(reg)}, result_types=[i32])

    def verify_(self) -> None:
        if self.reg.data not in SPECIAL_REGS:
            raise VerifyException(f"ptx.sreg: unknown special register {self.reg.data!r} (one of {SPECIAL_REGS})")


@irdl_op_definition
class SharedBaseOp(IRDLOperation):
    """The 32-bit shared-window address of the dynamic shared array `smem` (16-byte aligned)."""

    name = "ptx.shared_base"

    result = result_def(i32)

    traits = traits_def(Pure())

    def __init__(self):
        super().__init__(result_types=[i32])


# ----------------------------------------------------------------------------------------------
# Loads and stores


class _LoadBase(IRDLOperation):
    """`[@mask] ld.SPACE{.cache}{.vN}.bW {results}, [addr + offset]`.

    With a `mask`, lanes whose mask is false do not access memory and their results are the
    `other` values (one per result; printed as `mov`s before the predicated load), or undefined
    when `other` is empty.
    """

    ADDR_TYPE: ClassVar[Attribute] = i64

    addr = operand_def(_ADDR_TYPES)
    mask = opt_operand_def(i1)
    other = var_operand_def(_MEM_TYPES)
    res = var_result_def(_MEM_TYPES)
    offset = prop_def(IntegerAttr)
    cache = opt_prop_def(StringAttr)

    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def __init__(
        self,
        addr: SSAValue | Operation,
        result_type: Attribute,
        vec: int = 1,
        *,
        mask: SSAValue | Operation | None = None,
        other: Sequence[SSAValue | Operation] = (),
        offset: int = 0,
        cache: str | None = None,
    ):
        props: dict[str, Attribute] = {"offset": _int_prop(offset)}
        if cache is not None:
            props["cache"] = StringAttr(cache)
        super().__init__(
            operands=[addr, [mask] if mask is not None else [], list(other)],
            result_types=[[result_type] * vec],
            properties=props,
        )

    def verify_(self) -> None:
        _check_addr(self, self.addr, self.ADDR_TYPE)
        _check_vector(self, self.res, "results")
        if self.other:
            if self.mask is None:
                raise VerifyException(f"{self.name}: `other` values need a `mask`")
            if [o.type for o in self.other] != [r.type for r in self.res]:
                raise VerifyException(f"{self.name}: `other` must match the results one to one")
        if self.cache is not None and self.cache.data not in LD_CACHE_OPS:
            raise VerifyException(f"{self.name}: cache operator must be one of {LD_CACHE_OPS}")


@irdl_op_definition
class LdGlobalOp(_LoadBase):
    """Global load; `addr` is a 64-bit generic/global address."""

    name = "ptx.ld.global"


@irdl_op_definition
class LdSharedOp(_LoadBase):
    """Shared load; `addr` is a 32-bit shared-window address (e.g. from `ptx.shared_base`)."""

    name = "ptx.ld.shared"
    ADDR_TYPE: ClassVar[Attribute] = i32


class _StoreBase(IRDLOperation):
    """`[@mask] st.SPACE{.cache}{.vN}.bW [addr + offset], {values}`."""

    ADDR_TYPE: ClassVar[Attribute] = i64

    addr = operand_def(_ADDR_TYPES)
    values = var_operand_def(_MEM_TYPES)
    mask = opt_operand_def(i1)
    offset = prop_def(IntegerAttr)
    cache = opt_prop_def(StringAttr)

    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def __init__(
        self,
        addr: SSAValue | Operation,
        values: Sequence[SSAValue | Operation],
        *,
        mask: SSAValue | Operation | None = None,
        offset: int = 0,
        cache: str | None = None,
    ):
        props: dict[str, Attribute] = {"offset": _int_prop(offset)}
        if cache is not None:
            props["cache"] = StringAttr(cache)
        super().__init__(
            operands=[addr, list(values), [mask] if mask is not None else []],
            properties=props,
        )

    def verify_(self) -> None:
        _check_addr(self, self.addr, self.ADDR_TYPE)
        _check_vector(self, self.values, "values")
        if self.cache is not None and self.cache.data not in ST_CACHE_OPS:
            raise VerifyException(f"{self.name}: cache operator must be one of {ST_CACHE_OPS}")


@irdl_op_definition
class StGlobalOp(_StoreBase):
    """Global store; `addr` is a 64-bit address."""

    name = "ptx.st.global"


@irdl_op_definition
class StSharedOp(_StoreBase):
    """Shared store; `addr` is a 32-bit shared-window address."""

    name = "ptx.st.shared"
    ADDR_TYPE: ClassVar[Attribute] = i32


# ----------------------------------------------------------------------------------------------
# Asynchronous copies


@irdl_op_definition
class CpAsyncOp(IRDLOperation):
    """`cp.async.{cg|ca}.shared.global [dst], [src], size{, src_size}` (global -> shared).

    `size` is 16 for `.cg` and 4, 8 or 16 for `.ca`. With a `mask`, a false mask copies nothing
    and zero-fills the `size` destination bytes (the printer emits `selp.b32 %r, size, 0, mask`
    and the src-size form), which is how a masked tile load is pipelined.
    """

    name = "ptx.cp.async"

    dst = operand_def(i32)
    src = operand_def(i64)
    mask = opt_operand_def(i1)
    size = prop_def(IntegerAttr)
    cache = prop_def(StringAttr)

    def __init__(
        self,
        dst: SSAValue | Operation,
        src: SSAValue | Operation,
        *,
        mask: SSAValue | Operation | None = None,
        size: int = 16,
        cache: str = "cg",
    ):
        super().__init__(
            operands=[dst, src, [mask] if mask is not None else []],
            properties={"size": _int_prop(size), "cache": StringAttr(cache)},
        )

    def verify_(self) -> None:
        size, cache = self.size.value.data, self.cache.data
        if cache not in ("ca", "cg"):
            raise VerifyException("ptx.cp.async: cache must be 'ca' or 'cg'")
        if size not in (4, 8, 16) or (cache == "cg" and size != 16):
            raise VerifyException(f"ptx.cp.async: size {size} invalid for .{cache} (.cg: 16; .ca: 4, 8, 16)")


@irdl_op_definition
class CpAsyncCommitGroupOp(IRDLOperation):
    """`cp.async.commit_group;` — close the current group of `cp.async`s."""

    name = "ptx.cp.async.commit_group"

    def __init__(self):
        super().__init__()


@irdl_op_definition
class CpAsyncWaitGroupOp(IRDLOperation):
    """`cp.async.wait_group n;` — wait until at most `n` committed groups are pending."""

    name = "ptx.cp.async.wait_group"

    n = prop_def(IntegerAttr)

    def __init__(self, n: int):
        super().__init__(properties={"n": _int_prop(n)})

    def verify_(self) -> None:
        if self.n.value.data < 0:
            raise VerifyException("ptx.cp.async.wait_group: n must be >= 0")


# ----------------------------------------------------------------------------------------------
# Tensor-core ops


@irdl_op_definition
class LdMatrixOp(IRDLOperation):
    """`ldmatrix.sync.aligned.m8n8.x{1,2,4}{.trans}.shared.b16 {r..}, [addr]`.

    Loads 1, 2 or 4 8x8 b16 matrices; threads 8i..8i+7 give the row addresses of matrix i.
    Result i is this thread's fragment of matrix i: row laneid/4, columns 2*(laneid%4)+{0,1}
    (with `.trans`: the transposed matrix).
    """

    name = "ptx.ldmatrix"

    addr = operand_def(i32)
    res = var_result_def(i32)
    trans = opt_prop_def(UnitAttr)

    def __init__(self, addr: SSAValue | Operation, num: int = 4, *, trans: bool = False):
        props: dict[str, Attribute] = {"trans": UnitAttr()} if trans else {}
        super().__init__(operands=[addr], result_types=[[i32] * num], properties=props)

    def verify_(self) -> None:
        if len(self.res) not in (1, 2, 4):
            raise VerifyException(f"ptx.ldmatrix: x1, x2 or x4 only, got {len(self.res)} results")


def _check_mma(op: IRDLOperation, groups: dict[str, tuple[Sequence[SSAValue], int, Attribute]]) -> None:
    for what, (vals, n, ty) in groups.items():
        if len(vals) != n or any(v.type != ty for v in vals):
            raise VerifyException(f"{op.name}: {what} must be {n} values of type {ty}")


@irdl_op_definition
class MmaSpOp(IRDLOperation):
    """`mma.sp::ordered_metadata.sync.aligned.m16n8kK.row.col.C.T.T.C d, a, b, c, e, sel`.

    a: 4 b32 (the compressed 16 x K/2 A), b: 4 b32 (K x 8 B), c: 4 accumulators, e: the metadata
    b32, `selector` (16-bit T: 0 or 1, which thread pair of each quad supplies e; 8-bit T: 0,
    every thread does); results: 4 accumulators. T = `ab_type`: "f16"/"bf16" (K = 32, C = f32),
    "e4m3"/"e5m2" (K = 64, C = f32) or "s8" (K = 64, C = s32). Layouts are in this module's
    docstring.
    """

    name = "ptx.mma.sp"

    a = var_operand_def(i32)
    b = var_operand_def(i32)
    c = var_operand_def()
    meta = operand_def(i32)
    res = var_result_def()
    ab_type = prop_def(StringAttr)
    selector = prop_def(IntegerAttr)

    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def __init__(
        self,
        a: Sequence[SSAValue | Operation],
        b: Sequence[SSAValue | Operation],
        c: Sequence[SSAValue | Operation],
        meta: SSAValue | Operation,
        *,
        ab_type: str = "f16",
        selector: int = 0,
    ):
        acc = MMA_SP_AB_TYPES[ab_type][1] if ab_type in MMA_SP_AB_TYPES else f32
        super().__init__(
            operands=[list(a), list(b), list(c), meta],
            result_types=[[acc] * 4],
            properties={"ab_type": StringAttr(ab_type), "selector": _int_prop(selector, 32)},
        )

    def verify_(self) -> None:
        t = self.ab_type.data
        if t not in MMA_SP_AB_TYPES:
            raise VerifyException(f"ptx.mma.sp: ab_type must be one of {tuple(MMA_SP_AB_TYPES)}")
        k, acc = MMA_SP_AB_TYPES[t]
        _check_mma(self, {"a": (self.a, 4, i32), "b": (self.b, 4, i32), "c": (self.c, 4, acc), "d": (self.res, 4, acc)})
        selectors = (0,) if k == 64 else (0, 1)
        if self.selector.value.data not in selectors:
            raise VerifyException(f"ptx.mma.sp: the sparsity selector of m16n8k{k} {t} is "
                                  + " or ".join(map(str, selectors)))


@irdl_op_definition
class MmaOp(IRDLOperation):
    """Dense `mma.sync.aligned.m16n8k16.row.col.f32.T.T.f32 d, a, b, c` (a: 4 b32, b: 2 b32)."""

    name = "ptx.mma"

    a = var_operand_def(i32)
    b = var_operand_def(i32)
    c = var_operand_def(f32)
    res = var_result_def(f32)
    ab_type = prop_def(StringAttr)

    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def __init__(
        self,
        a: Sequence[SSAValue | Operation],
        b: Sequence[SSAValue | Operation],
        c: Sequence[SSAValue | Operation],
        *,
        ab_type: str = "f16",
    ):
        super().__init__(
            operands=[list(a), list(b), list(c)],
            result_types=[[f32] * 4],
            properties={"ab_type": StringAttr(ab_type)},
        )

    def verify_(self) -> None:
        _check_mma(self, {"a": (self.a, 4, i32), "b": (self.b, 2, i32), "c": (self.c, 4, f32), "d": (self.res, 4, f32)})
        if self.ab_type.data not in MMA_AB_TYPES:
            raise VerifyException(f"ptx.mma: ab_type must be one of {MMA_AB_TYPES}")


@irdl_op_definition
class BarSyncOp(IRDLOperation):
    """`bar.sync id;` — CTA-wide barrier (id 0 is `__syncthreads`); `bar.sync id, threads;` — a
    named barrier of the first `threads` threads that reach it (a multiple of 32)."""

    name = "ptx.bar.sync"

    barrier = prop_def(IntegerAttr)
    threads = opt_prop_def(IntegerAttr)

    def __init__(self, barrier: int = 0, threads: int | None = None):
        props = {"barrier": _int_prop(barrier, 32)}
        if threads is not None:
            props["threads"] = _int_prop(threads, 32)
        super().__init__(properties=props)

    def verify_(self) -> None:
        if not 0 <= self.barrier.value.data < 16:
            raise VerifyException("ptx.bar.sync: barrier id must be in 0..15")


# ----------------------------------------------------------------------------------------------
# Packing and conversions that `arith` has no op for


@irdl_op_definition
class PackOp(IRDLOperation):
    """`mov.b32 %r, {%lo, %hi}`: two 16-bit values into one b32 (`lo` in bits 15:0)."""

    name = "ptx.pack"

    lo = operand_def(_B16_TYPES)
    hi = operand_def(_B16_TYPES)
    result = result_def(i32)

    traits = traits_def(Pure())

    def __init__(self, lo: SSAValue | Operation, hi: SSAValue | Operation):
        super().__init__(operands=[lo, hi], result_types=[i32])

    def verify_(self) -> None:
        if self.lo.type not in B16_TYPES or self.hi.type not in B16_TYPES:
            raise VerifyException("ptx.pack: operands must be i16, f16 or bf16")


@irdl_op_definition
class UnpackOp(IRDLOperation):
    """`mov.b32 {%lo, %hi}, %r`: one b32 into two 16-bit values of `elem_type`."""

    name = "ptx.unpack"

    input = operand_def(i32)
    lo = result_def(_B16_TYPES)
    hi = result_def(_B16_TYPES)

    traits = traits_def(Pure())

    def __init__(self, input: SSAValue | Operation, elem_type: Attribute = f16):
        super().__init__(operands=[input], result_types=[elem_type, elem_type])

    def verify_(self) -> None:
        if self.lo.type not in B16_TYPES or self.hi.type != self.lo.type:
            raise VerifyException("ptx.unpack: results must be two i16, f16 or bf16 of one type")


@irdl_op_definition
class CvtPackOp(IRDLOperation):
    """`cvt.rn.{f16x2|bf16x2}.f32 %r, %hi, %lo`: round two f32 and pack them (`lo` in 15:0)."""

    name = "ptx.cvt.pack"

    lo = operand_def(f32)
    hi = operand_def(f32)
    result = result_def(i32)
    elem_type = prop_def(StringAttr)

    traits = traits_def(Pure())

    def __init__(self, lo: SSAValue | Operation, hi: SSAValue | Operation, elem_type: str = "f16"):
        super().__init__(operands=[lo, hi], result_types=[i32], properties={"elem_type": StringAttr(elem_type)})

    def verify_(self) -> None:
        if self.elem_type.data not in MMA_AB_TYPES:
            raise VerifyException(f"ptx.cvt.pack: elem_type must be one of {MMA_AB_TYPES}")


@irdl_op_definition
class AsmOp(IRDLOperation):
    """Raw PTX for instructions without an op (`prmt`, `shfl.sync`, `lop3`, ...).

    `template` is one or more PTX statements; `$i` names register i, results first, then
    operands (LLVM inline-asm order). Treated as having side effects unless `pure` is set.
    """

    name = "ptx.asm"

    args = var_operand_def()
    res = var_result_def()
    template = prop_def(StringAttr)
    pure = opt_prop_def(UnitAttr)

    def __init__(
        self,
        template: str,
        args: Sequence[SSAValue | Operation] = (),
        result_types: Sequence[Attribute] = (),
        *,
        pure: bool = False,
    ):
        props: dict[str, Attribute] = {"template": StringAttr(template)}
        if pure:
            props["pure"] = UnitAttr()
        super().__init__(operands=[list(args)], result_types=[list(result_types)], properties=props)

    def verify_(self) -> None:
        for v in [*self.res, *self.args]:
            if v.type not in SCALAR_TYPES:
                raise VerifyException(f"ptx.asm: unsupported value type {v.type}")


class TemplateOp(IRDLOperation):
    """Base of ops that carry their own PTX text: `emit_ptx` prints any subclass (the wgmma
    and mbarrier ops of `ptx_wgmma` / `ptx_mbarrier`) from `asm_template()`, with `$i` naming
    register i, results first, then operands (as in `ptx.asm`). A dialect adds instructions
    by subclassing it; the printer needs no entry per op.
    """

    def asm_template(self) -> str:
        """The op's PTX statements (one per line) with `$i` placeholders."""
        raise NotImplementedError(f"{self.name}: no asm_template")

    def tied_operands(self) -> Sequence[SSAValue]:
        """Per result, the operand whose register the result takes over (that value dies
        here, so the instruction may overwrite it in place); empty: every result gets a
        register of its own. `asm_template()` must then not copy the operands itself."""
        return ()


@irdl_op_definition
class AtomGlobalAddOp(TemplateOp):
    """`atom{.sem.gpu}.global.add.{f32|s32} old, [addr], value` (predicated by `mask` when
    given): one element of `tl.atomic_add`; `addr` is a 64-bit address; `sem` (acquire,
    release, acq_rel) orders it at GPU scope, none is the relaxed default."""

    name = "ptx.atom.global.add"
    addr = operand_def(i64)
    value = operand_def()
    mask = opt_operand_def(i1)
    sem = opt_prop_def(StringAttr)
    result = result_def()

    def __init__(self, addr: SSAValue, value: SSAValue, mask: SSAValue | None = None, sem: str = "relaxed"):
        super().__init__(operands=[addr, value, [mask] if mask is not None else []], result_types=[value.type],
                         properties={"sem": StringAttr(sem)} if sem != "relaxed" else {})

    def verify_(self) -> None:
        if self.value.type not in (f32, i32):
            raise VerifyException(f"{self.name}: f32 or i32 values only, got {self.value.type}")

    def asm_template(self) -> str:
        suffix = "f32" if self.value.type == f32 else "s32"
        guard = "@$3 " if self.mask is not None else ""
        order = f".{self.sem.data}.gpu" if self.sem is not None else ""
        return f"{guard}atom{order}.global.add.{suffix} $0, [$1], $2;"


COLD_ELSE = "sparsecc.cold_else"
"""On an `scf.if` in a kernel: its else region is a rarely taken slow path, so loop-invariant
hoisting (ptx-hoist-loop-invariants) leaves its ops where they are (not worth registers)."""


PTX = Dialect(
    "ptx",
    [
        KernelOp,
        ReturnOp,
        SpecialRegOp,
        SharedBaseOp,
        LdGlobalOp,
        AtomGlobalAddOp,
        LdSharedOp,
        StGlobalOp,
        StSharedOp,
        CpAsyncOp,
        CpAsyncCommitGroupOp,
        CpAsyncWaitGroupOp,
        LdMatrixOp,
        MmaSpOp,
        MmaOp,
        BarSyncOp,
        PackOp,
        UnpackOp,
        CvtPackOp,
        AsmOp,
    ],
    [],
)
