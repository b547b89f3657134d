"""`emit_ptx(module) -> str`: print `ptx.kernel`s (with `arith`/`math.fma`/`scf` inside) as PTX.

Every SSA value gets one virtual register of its type's class (see `sparsecc.dialects.ptx`),
numbered from 1 per class and kernel in program order, so the output is deterministic; ptxas
does the real register allocation. Constants are materialised with `mov` (ptxas folds them).
Control flow is structured: `scf.for` becomes a guarded bottom-tested loop whose carried values
live in fixed registers (copied at the back edge), `scf.if` becomes branches around its regions.
Labels are `$L__<kind><n>` with a per-kernel counter.
"""

from __future__ import annotations

import bisect
import re
import struct
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from xdsl.dialects import arith, math, scf
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float8E4M3FNType,
    Float8E5M2Type,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    ModuleOp,
)
from xdsl.ir import Attribute, Block, Operation, OpResult, SSAValue

from sparsecc.analysis.divisibility import int_constant
from sparsecc.codegen import fp8_casts
from sparsecc.codegen.constant_division import constant_division_lines
from sparsecc.codegen.ptx_errors import PtxEmitError
from sparsecc.dialects import ptx, ptx_targets

#: `.version` of the emitted PTX: `mma.sp::ordered_metadata` needs PTX ISA 8.5.
PTX_VERSION = "8.5"
#: Name of the dynamic shared memory array (`ptx.shared_base` is its address).
SMEM_SYMBOL = "smem"

_PARAM_PTX_TYPE = {"ptr": ".u64", "i64": ".u64", "i32": ".u32", "f32": ".f32"}


# ----------------------------------------------------------------------------------------------
# Types and registers


_REG_CLASS_CACHE: dict[Attribute, tuple[str, str]] = {}


def _reg_class(ty: Attribute) -> tuple[str, str]:
    """(register prefix, `.reg` type) of a value type (memoised: types are few and hashable)."""
    cls = _REG_CLASS_CACHE.get(ty)
    if cls is None:
        cls = _REG_CLASS_CACHE[ty] = _compute_reg_class(ty)
    return cls


def _compute_reg_class(ty: Attribute) -> tuple[str, str]:
    if isinstance(ty, IntegerType):
        w = ty.width.data
        if w == 1:
            return "%p", ".pred"
        if w in (8, 16):  # PTX has no 8-bit registers: bytes load into and store from b16 ones
            return "%rs", ".b16"
        if w == 32:
            return "%r", ".b32"
        if w == 64:
            return "%rd", ".b64"
    elif isinstance(ty, Float16Type | BFloat16Type | Float8E4M3FNType | Float8E5M2Type):
        return "%rs", ".b16"
    elif isinstance(ty, Float32Type):
        return "%f", ".f32"
    elif isinstance(ty, Float64Type):
        return "%fd", ".f64"
    raise PtxEmitError(f"no PTX register class for type {ty} (use i1, i8, i16, i32, i64, f8, f16, bf16, f32 or f64)")


_CLASS_ORDER = ("%p", "%rs", "%r", "%rd", "%f", "%fd")


_WIDTH_CACHE: dict[Attribute, int] = {}


def _width(ty: Attribute) -> int:
    w = _WIDTH_CACHE.get(ty)
    if w is None:
        _reg_class(ty)  # reject unsupported types with a clear message
        w = _WIDTH_CACHE[ty] = ptx.bit_width(ty)
    return w


def _ftype(ty: Attribute) -> str:
    """PTX type suffix of a float type the arithmetic takes (f64, f32, f16, bf16)."""
    name = ptx.type_name(ty) if _is_float(ty) else None
    if name is None:
        raise PtxEmitError(f"expected a float type, got {ty}")
    return name


def _is_float(ty: Attribute) -> bool:
    return isinstance(ty, Float16Type | BFloat16Type | Float32Type | Float64Type)


def _is_pred(ty: Attribute) -> bool:
    return _reg_class(ty)[0] == "%p" if ty in _REG_CLASS_CACHE else (
        isinstance(ty, IntegerType) and ty.width.data == 1)


_CMPI = {
    "eq": ("eq", "b"), "ne": ("ne", "b"),
    "slt": ("lt", "s"), "sle": ("le", "s"), "sgt": ("gt", "s"), "sge": ("ge", "s"),
    "ult": ("lo", "u"), "ule": ("ls", "u"), "ugt": ("hi", "u"), "uge": ("hs", "u"),
}  # fmt: skip
_CMPF = {
    "oeq": "eq", "ogt": "gt", "oge": "ge", "olt": "lt", "ole": "le", "one": "ne", "ord": "num",
    "ueq": "equ", "ugt": "gtu", "uge": "geu", "ult": "ltu", "ule": "leu", "une": "neu", "uno": "nan",
}  # fmt: skip

# arith integer binary op -> (PTX opcode, type letter); i1 operands use `.pred` logic instead.
_INT_BINARY: dict[type[Operation], tuple[str, str]] = {
    arith.AddiOp: ("add", "s"),
    arith.SubiOp: ("sub", "s"),
    arith.MuliOp: ("mul.lo", "s"),
    arith.DivSIOp: ("div", "s"),
    arith.DivUIOp: ("div", "u"),
    arith.RemSIOp: ("rem", "s"),
    arith.RemUIOp: ("rem", "u"),
    arith.AndIOp: ("and", "b"),
    arith.OrIOp: ("or", "b"),
    arith.XOrIOp: ("xor", "b"),
    arith.MaxSIOp: ("max", "s"),
    arith.MinSIOp: ("min", "s"),
    arith.MaxUIOp: ("max", "u"),
    arith.MinUIOp: ("min", "u"),
}
_SHIFTS: dict[type[Operation], str] = {arith.ShLIOp: "shl.b", arith.ShRUIOp: "shr.u", arith.ShRSIOp: "shr.s"}
_PRED_LOGIC: dict[type[Operation], str] = {arith.AndIOp: "and", arith.OrIOp: "or", arith.XOrIOp: "xor"}
_FLOAT_BINARY: dict[type[Operation], str] = {
    arith.AddfOp: "add",
    arith.SubfOp: "sub",
    arith.MulfOp: "mul",
    arith.DivfOp: "div.rn",
    arith.MaximumfOp: "max.NaN",
    arith.MinimumfOp: "min.NaN",
    arith.MaxnumfOp: "max",
    arith.MinnumfOp: "min",
}


def _float_bits(value: float, ty: Attribute) -> str:
    """A float immediate: `0fXXXXXXXX` for f32, the raw bits (for `mov.b16`) for f16/bf16."""
    if isinstance(ty, Float32Type):
        return f"0f{struct.unpack('<I', struct.pack('<f', value))[0]:08X}"
    if isinstance(ty, Float64Type):
        return f"0d{struct.unpack('<Q', struct.pack('<d', value))[0]:016X}"
    if isinstance(ty, Float16Type):
        return f"0x{struct.unpack('<H', struct.pack('<e', value))[0]:04X}"
    if isinstance(ty, BFloat16Type):
        if value != value:  # NaN
            return "0x7FC0"
        bits = struct.unpack("<I", struct.pack("<f", value))[0]
        bits += 0x7FFF + ((bits >> 16) & 1)  # round to nearest even
        return f"0x{(bits >> 16) & 0xFFFF:04X}"
    raise PtxEmitError(f"float constant of type {ty}")


def _int_imm(value: int, width: int) -> str:
    """An integer immediate of `width` bits: decimal when non-negative, else two's-complement hex."""
    mask = (1 << width) - 1
    v = value & mask
    return str(v) if v == value else f"0x{v:X}"


# ----------------------------------------------------------------------------------------------
# Kernel printer


class _KernelEmitter:
    """Prints one `ptx.kernel`; `lines` is the body, `counts` the registers used per class."""

    def __init__(self, kernel: ptx.KernelOp):
        self.kernel = kernel
        self.regs: dict[SSAValue, str] = {}
        self.counts: dict[str, int] = {c: 0 for c in _CLASS_ORDER}
        self.lines: list[str] = []
        self.labels = 0
        self.uses_smem = False
        self.target = kernel.target.data
        #: bf16 add/sub/mul, compares and conversions to f16/integers are sm_90 instructions;
        #: older targets compute them in f32 (exact for compares and conversions, as Triton does)
        self.bf16_alu = ptx_targets.satisfies(self.target, "sm_90")
        #: (index of the first line an op printed, the op), in print order: which op printed a line
        self.marks: list[tuple[int, Operation]] = []
        #: values that take an existing register when defined (`_coalesce_carried`)
        self.preset: dict[SSAValue, str] = {}

    # registers -----------------------------------------------------------------------------

    def fresh(self, ty: Attribute) -> str:
        prefix = _reg_class(ty)[0]
        n = self.counts[prefix] + 1
        self.counts[prefix] = n
        return f"{prefix}{n}"

    def define(self, value: SSAValue) -> str:
        regs = self.regs
        if value in regs:
            raise PtxEmitError(f"value {value} defined twice")
        reg = regs[value] = self.preset.pop(value, None) or self.fresh(value.type)
        return reg

    def alias(self, value: SSAValue, reg: str) -> None:
        """Let `value` live in an existing register (loop results share the carried ones)."""
        self.regs[value] = reg

    def use(self, value: SSAValue) -> str:
        try:
            return self.regs[value]
        except KeyError:
            owner = value.owner
            where = owner.name if isinstance(owner, Operation) else "a block argument"
            raise PtxEmitError(
                f"kernel {self.kernel.kernel_name}: value of type {value.type} from {where} is used "
                "before it has a register (defined outside the kernel?)"
            ) from None

    def emit(self, line: str) -> None:
        self.lines.append("\t" + line)

    def to_f32(self, value: SSAValue) -> str:
        """A register holding bf16 `value` as f32 (exact: bf16 is f32 with 16 fraction bits
        fewer), for the targets without bf16 arithmetic."""
        tmp = self.fresh(Float32Type())
        self.emit(f"cvt.f32.bf16 {tmp}, {self.use(value)};")
        return tmp

    def int16(self, value: SSAValue, signed: bool) -> str:
        """A 16-bit register of an integer `value`: an i8 (whose register's high byte is not
        kept defined by arithmetic) sign- or zero-extended, since PTX has no 8-bit ALU or
        compare forms; any wider value as it is."""
        reg = self.use(value)
        if _width(value.type) != 8:
            return reg
        letter = "s" if signed else "u"
        tmp = self.fresh(value.type)
        self.emit(f"cvt.{letter}16.{letter}8 {tmp}, {reg};")
        return tmp

    def label(self, kind: str) -> str:
        self.labels += 1
        return f"$L__{kind}{self.labels}"

    def mov(self, dst: str, src: str, ty: Attribute) -> None:
        if dst != src:
            suffix = "pred" if _is_pred(ty) else f"b{max(16, _width(ty))}"
            self.emit(f"mov.{suffix} {dst}, {src};")

    # kernel --------------------------------------------------------------------------------

    def run(self) -> list[str]:
        k = self.kernel
        name = k.kernel_name
        for i, (arg, kind) in enumerate(zip(k.args, k.kinds)):
            reg = self.define(arg)
            if kind == "tmap":  # the by-value tensor map's generic address (a grid constant)
                self.emit(f"mov.b64 {reg}, {name}_param_{i};")
                self.emit(f"cvta.param.u64 {reg}, {reg};")
                continue
            self.emit(f"ld.param{_PARAM_PTX_TYPE[kind]} {reg}, [{name}_param_{i}];")
        self.block(k.body.block)
        self.emit("ret;")
        self.check_instructions()

        out = [f"\t// .globl\t{name}", f".visible .entry {name}("]
        params = [f"\t.param .align 64 .b8 {name}_param_{i}[128]" if kind == "tmap" else
                  f"\t.param {_PARAM_PTX_TYPE[kind]} {name}_param_{i}" for i, kind in enumerate(k.kinds)]
        out.append(",\n".join(params))
        out.append(")")
        if k.maxntid is not None:
            out.append(".maxntid " + ", ".join(str(d.value.data) for d in k.maxntid.data))
        if k.reqntid is not None:
            out.append(".reqntid " + ", ".join(str(d.value.data) for d in k.reqntid.data))
        if k.cluster is not None:
            out.append(".reqnctapercluster " + ", ".join(str(d.value.data) for d in k.cluster.data))
        if k.maxnreg is not None:
            out.append(f".maxnreg {k.maxnreg.value.data}")
        out.append("{")
        for prefix in _CLASS_ORDER:
            if self.counts[prefix]:
                decl = {"%p": ".pred", "%rs": ".b16", "%r": ".b32", "%rd": ".b64", "%f": ".f32", "%fd": ".f64"}[prefix]
                out.append(f"\t.reg {decl} \t{prefix}<{self.counts[prefix] + 1}>;")
        shared = k.shared_bytes.value.data
        if shared:
            out.append(f"\t// dynamic shared memory: {shared} bytes")
        out.append("")
        out.extend(self.lines)
        out.append("}")
        return out

    def block(self, block: Block, *, skip_terminator: bool = False) -> None:
        last = block.last_op if skip_terminator else None
        handlers = _HANDLERS
        marks, lines = self.marks, self.lines
        for op in block.ops:
            if op is last and isinstance(op, scf.YieldOp | scf.ConditionOp):
                break
            marks.append((len(lines), op))
            handler = handlers.get(op.__class__)
            if handler is None:
                handler = _handler_for(self, op)
            handler(self, op)

    def check_instructions(self) -> None:
        """Refuse the kernel when a printed instruction does not exist on its target (ptxas would
        reject it), naming the instruction, the target it needs and the op that printed it."""
        text = "\n".join(self.lines)
        hit = ptx_targets.first_unavailable(text, self.target)
        if hit is None:
            return
        offset, instruction, needed = hit
        line = text.count("\n", 0, offset)
        at = bisect.bisect_right(self.marks, line, key=lambda mark: mark[0]) - 1
        op = self.marks[at][1] if at >= 0 else self.kernel
        name = self.kernel.kernel_name
        if needed is None:
            raise PtxEmitError(f"kernel {name}: '{op.name}' prints '{instruction}', which is not a PTX instruction "
                               "on any target (PTX has no 8-bit arithmetic: widen to 16 bits first)", op)
        newer = "" if needed.endswith("a") else " or newer"  # sm_90a features are on sm_90a alone
        raise PtxEmitError(f"kernel {name}: '{op.name}' needs {needed}{newer} for '{instruction}', but the "
                           f"kernel's target is {self.target}", op)

    # ops -----------------------------------------------------------------------------------

    def op(self, op: Operation) -> None:
        handler = _HANDLERS.get(op.__class__) or _handler_for(self, op)
        handler(self, op)


def _handler_for(e: _KernelEmitter, op: Operation) -> Callable[[_KernelEmitter, Any], None]:
    """The handler of a subclass of a known op (e.g. sparsecc's tensor-capable arith), memoised."""
    for cls in type(op).__mro__[1:]:
        handler = _HANDLERS.get(cls)
        if handler is not None:
            _HANDLERS[type(op)] = handler
            return handler
    raise PtxEmitError(f"kernel {e.kernel.kernel_name}: cannot print op '{op.name}' as PTX")


# Handlers: (emitter, op) -> None -----------------------------------------------------------------


def _constant(e: _KernelEmitter, op: arith.ConstantOp) -> None:
    ty = op.result.type
    value = op.value
    d = e.define(op.result)
    if isinstance(value, IntegerAttr) and isinstance(ty, IntegerType):
        v = value.value.data
        if ty.width.data == 1:
            e.emit(f"mov.pred {d}, {1 if v & 1 else 0};")
        else:
            e.emit(f"mov.b{max(16, ty.width.data)} {d}, {_int_imm(v, ty.width.data)};")
    elif isinstance(value, FloatAttr) and _is_float(ty):
        if isinstance(ty, Float32Type | Float64Type):
            e.emit(f"mov.{_ftype(ty)} {d}, {_float_bits(value.value.data, ty)};")
        else:
            e.emit(f"mov.b16 {d}, {_float_bits(value.value.data, ty)};")
    elif isinstance(value, FloatAttr) and isinstance(ty, Float8E4M3FNType | Float8E5M2Type) and value.value.data == 0.0:
        e.emit(f"mov.b16 {d}, 0;")  # the zero an 8-bit float load pads with (+0.0: all bits 0)
    else:
        raise PtxEmitError(f"arith.constant: only scalar integer/float constants print as PTX, got {value}")


def _int_binary(e: _KernelEmitter, op: Operation) -> None:
    lhs, rhs = op.operands
    ty = op.results[0].type
    a, b = e.use(lhs), e.use(rhs)
    if _is_pred(ty):
        opcode = _lookup(_PRED_LOGIC, op)
        if opcode is None:
            raise PtxEmitError(f"{op.name} on i1 has no PTX form (only andi/ori/xori)")
        e.emit(f"{opcode}.pred {e.define(op.results[0])}, {a}, {b};")
        return
    opcode, letter = _lookup(_INT_BINARY, op)
    w = _width(ty)
    if w == 8:  # in 16 bits: the low byte of add/sub/mul/and/or/xor ignores the high byte,
        w = 16  # div/rem/min/max need the operands extended first
        if opcode in ("div", "rem", "max", "min"):
            a, b = e.int16(lhs, letter == "s"), e.int16(rhs, letter == "s")
    elif opcode in ("div", "rem") and (divisor := int_constant(rhs)) is not None and divisor > 0:
        _emit_constant_division(e, op, opcode, letter, w, a, divisor)
        return
    e.emit(f"{opcode}.{letter}{w} {e.define(op.results[0])}, {a}, {b};")


def _emit_constant_division(e: _KernelEmitter, op: Operation, opcode: str, letter: str, w: int, a: str,
                            divisor: int) -> None:
    """div/rem by a positive constant without a division instruction (`constant_division`:
    ptxas keeps a real division, MUFU.RCP and a correction, even for an immediate divisor);
    a divisor too wide for the type divides as written."""
    d = e.define(op.results[0])
    try:
        lines = constant_division_lines(opcode, letter, w, d, a, divisor, lambda: e.fresh(IntegerType(w)))
    except ValueError:
        lines = [f"{opcode}.{letter}{w} {d}, {a}, {divisor};"]
    for line in lines:
        e.emit(line)


def _lookup(table: dict[type[Operation], Any], op: Operation) -> Any:
    """table[type(op)], also for subclasses of a key (None if none matches)."""
    v = table.get(op.__class__)
    if v is None:
        v = next((v for c, v in table.items() if isinstance(op, c)), None)
    return v


def _shift(e: _KernelEmitter, op: Operation) -> None:
    lhs, rhs = op.operands
    ty = op.results[0].type
    w = _width(ty)
    if w == 1:
        raise PtxEmitError(f"{op.name} on i1 has no PTX form")
    amount = e.use(rhs)
    if w != 32:  # PTX shift amounts are always .u32
        tmp = e.fresh(IntegerType(32))
        e.emit(f"cvt.u32.u{w} {tmp}, {amount};")
        amount = tmp
    opcode = _lookup(_SHIFTS, op)
    value = e.use(lhs)
    if w == 8:  # shifted in 16 bits; a right shift brings in the extended high byte
        value = e.int16(lhs, opcode == "shr.s") if opcode != "shl.b" else value
        w = 16
    e.emit(f"{opcode}{w} {e.define(op.results[0])}, {value}, {amount};")


def approximate(op: Operation) -> bool:
    """Whether `op` (an `arith.divf` or `math.sqrt`) carries `fastmath<afn>`: Triton's `/` on
    floats and `tl.sqrt` (PTX `div.full.f32`, `sqrt.approx.ftz.f32`); without it the division
    and the root are IEEE round-to-nearest (`tl.div_rn`, `tl.sqrt_rn`)."""
    flags = op.properties.get("fastmath")
    return isinstance(flags, arith.FastMathFlagsAttr) and arith.FastMathFlag.APPROX_FUNC in flags.data


def _float_binary(e: _KernelEmitter, op: Operation) -> None:
    lhs, rhs = op.operands
    ty = op.results[0].type
    opcode = _lookup(_FLOAT_BINARY, op)
    if opcode.startswith("div") and isinstance(ty, Float32Type | Float16Type | BFloat16Type):
        # f32: div.full.f32 (full range, 2 ulp; Triton's '/') under fastmath<afn>, else div.rn.
        # 16-bit floats are divided in f32 and rounded once (exact for div.rn: 24 >= 2*11 + 2
        # bits), as Triton divides fp16 (its frontend promotes '/' to f32)
        div = "div.full.f32" if approximate(op) else "div.rn.f32"
        if isinstance(ty, Float32Type):
            e.emit(f"{div} {e.define(op.results[0])}, {e.use(lhs)}, {e.use(rhs)};")
            return
        name = _ftype(ty)
        wide = [e.fresh(Float32Type()) for _ in range(3)]
        e.emit(f"cvt.f32.{name} {wide[0]}, {e.use(lhs)};")
        e.emit(f"cvt.f32.{name} {wide[1]}, {e.use(rhs)};")
        e.emit(f"{div} {wide[2]}, {wide[0]}, {wide[1]};")
        e.emit(f"cvt.rn.{name}.f32 {e.define(op.results[0])}, {wide[2]};")
        return
    if opcode in ("add", "sub", "mul") and isinstance(ty, BFloat16Type) and not e.bf16_alu:
        # f32 then one rounding to bf16: the same result (f32 holds the exact product, and double
        # rounding is harmless for + - * when 24 >= 2*8 + 2 bits), as Triton computes it on sm_80
        wide = e.fresh(Float32Type())
        e.emit(f"{opcode}.f32 {wide}, {e.to_f32(lhs)}, {e.to_f32(rhs)};")
        e.emit(f"cvt.rn.bf16.f32 {e.define(op.results[0])}, {wide};")
        return
    e.emit(f"{opcode}.{_ftype(ty)} {e.define(op.results[0])}, {e.use(lhs)}, {e.use(rhs)};")


def _negf(e: _KernelEmitter, op: arith.NegfOp) -> None:
    e.emit(f"neg.{_ftype(op.result.type)} {e.define(op.result)}, {e.use(op.operand)};")


def _fma(e: _KernelEmitter, op: math.FmaOp) -> None:
    a, b, c = op.operands
    ty = op.results[0].type
    e.emit(f"fma.rn.{_ftype(ty)} {e.define(op.results[0])}, {e.use(a)}, {e.use(b)}, {e.use(c)};")


_MATH_UNARY: dict[type[Operation], str] = {
    math.Exp2Op: "ex2.approx.ftz.f32", math.Log2Op: "lg2.approx.ftz.f32",
    math.SqrtOp: "sqrt.rn.f32", math.RsqrtOp: "rsqrt.approx.ftz.f32",  # sqrt with afn: sqrt.approx.ftz
    math.SinOp: "sin.approx.ftz.f32", math.CosOp: "cos.approx.ftz.f32",
    math.TanhOp: "tanh.approx.f32", math.FloorOp: "cvt.rmi.f32.f32", math.CeilOp: "cvt.rpi.f32.f32",
    math.AbsFOp: "abs.f32", math.TruncOp: "cvt.rzi.f32.f32",
}
"""f32 math ops with one PTX instruction (the approximations Triton also uses)."""
_MATH_UNARY_F64: dict[type[Operation], str] = {
    math.SqrtOp: "sqrt.rn.f64", math.FloorOp: "cvt.rmi.f64.f64", math.CeilOp: "cvt.rpi.f64.f64",
    math.AbsFOp: "abs.f64", math.TruncOp: "cvt.rzi.f64.f64",
}
"""The f64 math ops with an exact PTX instruction (the approximations have no f64 form)."""


def _math_unary(e: _KernelEmitter, op: Operation) -> None:
    src, res = op.operands[0], op.results[0]
    if isinstance(res.type, Float64Type) and type(op) in _MATH_UNARY_F64:
        e.emit(f"{_MATH_UNARY_F64[type(op)]} {e.define(res)}, {e.use(src)};")
        return
    if not isinstance(res.type, Float32Type):
        raise PtxEmitError(f"{op.name}: only f32 is printed (widen 16-bit floats first)")
    opcode = "sqrt.approx.ftz.f32" if isinstance(op, math.SqrtOp) and approximate(op) else _MATH_UNARY[type(op)]
    e.emit(f"{opcode} {e.define(res)}, {e.use(src)};")


def _absi(e: _KernelEmitter, op: Operation) -> None:
    w = _width(op.results[0].type)
    if w == 1:
        raise PtxEmitError("math.absi on i1 has no PTX form", op)
    e.emit(f"abs.s{max(16, w)} {e.define(op.results[0])}, {e.int16(op.operands[0], True)};")


def _cmpi(e: _KernelEmitter, op: arith.CmpiOp) -> None:
    pred = arith.CMPI_COMPARISON_OPERATIONS[op.predicate.value.data]
    ty = op.lhs.type
    if _is_pred(ty):
        if pred not in ("eq", "ne"):
            raise PtxEmitError(f"arith.cmpi {pred} on i1 has no PTX form")
        d = e.define(op.result)
        e.emit(f"xor.pred {d}, {e.use(op.lhs)}, {e.use(op.rhs)};")
        if pred == "eq":
            e.emit(f"not.pred {d}, {d};")
        return
    cmp, letter = _CMPI[pred]
    a, b = e.int16(op.lhs, letter == "s"), e.int16(op.rhs, letter == "s")  # setp has no 8-bit form
    e.emit(f"setp.{cmp}.{letter}{max(16, _width(ty))} {e.define(op.result)}, {a}, {b};")


def _cmpf(e: _KernelEmitter, op: arith.CmpfOp) -> None:
    pred = arith.CMPF_COMPARISON_OPERATIONS[op.predicate.value.data]
    if pred in ("false", "true"):
        e.emit(f"mov.pred {e.define(op.result)}, {1 if pred == 'true' else 0};")
        return
    ty = op.lhs.type
    if isinstance(ty, BFloat16Type) and not e.bf16_alu:  # compared exactly as f32 (no setp.bf16)
        a, b = e.to_f32(op.lhs), e.to_f32(op.rhs)
        e.emit(f"setp.{_CMPF[pred]}.f32 {e.define(op.result)}, {a}, {b};")
        return
    e.emit(f"setp.{_CMPF[pred]}.{_ftype(ty)} {e.define(op.result)}, {e.use(op.lhs)}, {e.use(op.rhs)};")


def _select(e: _KernelEmitter, op: arith.SelectOp) -> None:
    ty = op.result.type
    c, t, f = e.use(op.cond), e.use(op.lhs), e.use(op.rhs)
    d = e.define(op.result)
    if _is_pred(ty):  # d = (c & t) | (!c & f)
        tmp = e.fresh(ty)
        e.emit(f"and.pred {tmp}, {c}, {t};")
        e.emit(f"not.pred {d}, {c};")
        e.emit(f"and.pred {d}, {d}, {f};")
        e.emit(f"or.pred {d}, {d}, {tmp};")
        return
    e.emit(f"selp.b{max(16, _width(ty))} {d}, {t}, {f}, {c};")  # an i8 lives in a b16 register


def _int_ext(e: _KernelEmitter, op: Operation) -> None:
    signed = isinstance(op, arith.ExtSIOp)
    src, dst_ty = op.operands[0], op.results[0].type
    wi, wo = _width(src.type), _width(dst_ty)
    d = e.define(op.results[0])
    if wi == 1:
        # an i8 lives in a b16 register (PTX has no selp.u8)
        e.emit(f"selp.{'s' if signed else 'u'}{max(16, wo)} {d}, {-1 if signed else 1}, 0, {e.use(src)};")
    else:
        letter = "s" if signed else "u"
        e.emit(f"cvt.{letter}{wo}.{letter}{wi} {d}, {e.use(src)};")


def _trunci(e: _KernelEmitter, op: arith.TruncIOp) -> None:
    src = op.input
    wi, wo = _width(src.type), _width(op.result.type)
    if wo == 1:
        tmp = e.fresh(src.type)
        e.emit(f"and.b{max(16, wi)} {tmp}, {e.use(src)}, 1;")
        e.emit(f"setp.ne.b{max(16, wi)} {e.define(op.result)}, {tmp}, 0;")
        return
    e.emit(f"cvt.u{wo}.u{wi} {e.define(op.result)}, {e.use(src)};")


def _int_to_float(e: _KernelEmitter, op: Operation) -> None:
    src, ty = op.operands[0], op.results[0].type
    letter = "s" if isinstance(op, arith.SIToFPOp) else "u"
    wi = _width(src.type)
    if wi == 1:
        raise PtxEmitError(f"{op.name} from i1: extend to i32 first", op)
    if isinstance(ty, BFloat16Type) and (not e.bf16_alu or wi == 8):
        # through f32, as torch rounds ints to bf16 (exact for i8, which no cvt takes with bf16)
        wide = e.fresh(Float32Type())
        e.emit(f"cvt.rn.f32.{letter}{wi} {wide}, {e.use(src)};")
        e.emit(f"cvt.rn.bf16.f32 {e.define(op.results[0])}, {wide};")
        return
    e.emit(f"cvt.rn.{_ftype(ty)}.{letter}{wi} {e.define(op.results[0])}, {e.use(src)};")


def _float_to_int(e: _KernelEmitter, op: Operation) -> None:
    src, ty = op.operands[0], op.results[0].type
    letter = "s" if isinstance(op, arith.FPToSIOp) else "u"
    wo = _width(ty)
    if wo == 1:
        raise PtxEmitError(f"{op.name} to i1 has no PTX form", op)
    if isinstance(src.type, BFloat16Type) and (not e.bf16_alu or wo == 8):  # bf16 -> f32 is exact
        e.emit(f"cvt.rzi.{letter}{wo}.f32 {e.define(op.results[0])}, {e.to_f32(src)};")
        return
    e.emit(f"cvt.rzi.{letter}{wo}.{_ftype(src.type)} {e.define(op.results[0])}, {e.use(src)};")


def _float_cast(e: _KernelEmitter, op: Operation) -> None:
    src, ty = op.operands[0], op.results[0].type
    if fp8_casts.is_fp8(ty) or fp8_casts.is_fp8(src.type):  # computed on the bits, as torch rounds
        fp8_casts.emit_fp8_cast(e, op)
        return
    fi, fo = _ftype(src.type), _ftype(ty)
    if {fi, fo} == {"f16", "bf16"} and not e.bf16_alu:
        # no cvt between f16 and bf16 before sm_90: through f32, which holds either exactly
        wide = e.fresh(Float32Type())
        e.emit(f"cvt.f32.{fi} {wide}, {e.use(src)};")
        e.emit(f"cvt.rn.{fo}.f32 {e.define(op.results[0])}, {wide};")
        return
    narrowing = _width(ty) < _width(src.type) or (fi, fo) == ("f16", "bf16") or (fi, fo) == ("bf16", "f16")
    rnd = ".rn" if narrowing else ""
    e.emit(f"cvt{rnd}.{fo}.{fi} {e.define(op.results[0])}, {e.use(src)};")


def _bitcast(e: _KernelEmitter, op: arith.BitcastOp) -> None:
    src, ty = op.input, op.result.type
    if _width(src.type) != _width(ty) or _is_pred(ty):
        raise PtxEmitError(f"arith.bitcast {src.type} -> {ty}: widths differ or i1")
    e.emit(f"mov.b{max(16, _width(ty))} {e.define(op.result)}, {e.use(src)};")  # no mov.b8


# scf ---------------------------------------------------------------------------------------------


def _parallel_copy(e: _KernelEmitter, dsts: Sequence[str], srcs: Sequence[str], types: Sequence[Attribute]) -> None:
    """dsts[i] = srcs[i] for all i at once: sources that are also destinations go via temps."""
    dst_set = set(dsts)
    staged = list(srcs)
    for i, (d, s, ty) in enumerate(zip(dsts, srcs, types)):
        if s in dst_set and s != d:
            tmp = e.fresh(ty)
            e.mov(tmp, s, ty)
            staged[i] = tmp
    for d, s, ty in zip(dsts, staged, types):
        e.mov(d, s, ty)


_READS_BEFORE_WRITE = (*_FLOAT_BINARY, *_INT_BINARY, math.FmaOp, arith.NegfOp)
"""Ops whose printed code reads every operand before it writes the result (one instruction,
or temporaries and the result written last), so the result may take an operand's register.
Not on i1 (a predicate select or logic op writes its result in steps)."""


def _tied_root(v: SSAValue) -> SSAValue:
    """The value whose register `v` shares through tied template operands (a wgmma chain's
    results live in its first accumulator input's registers); `v` itself if none."""
    while isinstance(v, OpResult) and isinstance(v.owner, ptx.TemplateOp):
        tied = v.owner.tied_operands()
        if not tied:
            break
        v = tied[v.index]
    return v


def _coalesce_carried(e: _KernelEmitter, body: Block, carried: Sequence[SSAValue], regs: Sequence[str]) -> None:
    """Let the body write a yielded wgmma accumulator straight into its carried registers.

    A carried accumulator `acc` that the body rescales before the next dot (`acc * alpha`
    feeding a wgmma chain, as attention's P @ V) would otherwise live in two register sets:
    the carried one, and the chain's, copied back at the back edge. ptxas then keeps both, and
    gives the chain the registers of the loop's other dot (31 SASS moves per iteration at
    attention's d=64). Triton's PTX uses one set. Here the first value of the chain (`root`,
    whose registers the tied wgmma results reuse) is defined in the carried register when that
    is free: `acc` (with every value that shares its register) has no use after `root`'s op, or
    only that op reads it and reads before it writes (`_READS_BEFORE_WRITE`); `root` is an op
    result at the body's top level (defined on every path), of the same register class, and no
    other carried value took it. The back edge's copy then copies a register onto itself and
    is not printed. Only yielded values that are the results of tied template ops (wgmma
    accumulators) are considered: a loop's scalars keep their copies, which ptxas folds.
    """
    y = body.last_op
    if not isinstance(y, scf.YieldOp):
        return
    index = {op: i for i, op in enumerate(body.ops)}

    def position(op: Operation) -> int:
        while op.parent is not body:
            parent = op.parent_op()
            assert parent is not None
            op = parent
        return index[op]

    # carried value -> every value sharing its register (tied results chained from it)
    sharing: dict[SSAValue, list[SSAValue]] = {a: [a] for a in carried}
    for op in body.walk():
        if isinstance(op, ptx.TemplateOp):
            for res in op.results:
                root = _tied_root(res)
                if root in sharing:
                    sharing[root].append(res)
    taken: set[SSAValue] = set()
    for arg, reg, out in zip(carried, regs, y.arguments):
        root = _tied_root(out)
        if root is out or not isinstance(root, OpResult) or root in taken or root in e.regs:
            continue
        owner = root.owner
        if owner.parent is not body or _reg_class(root.type) != _reg_class(arg.type):
            continue
        at = index[owner]
        in_place = isinstance(owner, _READS_BEFORE_WRITE) and not _is_pred(root.type)
        uses = [u.operation for v in sharing[arg] for u in v.uses]
        if all(position(u) < at or (u is owner and in_place) for u in uses):
            e.preset[root] = reg
            taken.add(root)


def _for(e: _KernelEmitter, op: scf.ForOp) -> None:
    body = op.body.block
    iv, *carried = body.args
    ty = iv.type
    if not isinstance(ty, IntegerType) or ty.width.data not in (32, 64):
        raise PtxEmitError(f"scf.for: the induction variable must be i32 or i64, got {ty}")
    w = ty.width.data
    lb, ub, step = e.use(op.lb), e.use(op.ub), e.use(op.step)
    iv_reg = e.define(iv)
    carried_regs = [e.define(a) for a in carried]
    _coalesce_carried(e, body, carried, carried_regs)
    loop, done = e.label("loop"), e.label("loop_end")
    e.emit(f"// scf.for {iv_reg} = {lb} to {ub} step {step}, carried: {', '.join(carried_regs) or 'none'}")
    e.mov(iv_reg, lb, ty)
    for reg, init in zip(carried_regs, op.iter_args):
        e.mov(reg, e.use(init), init.type)
    guard = e.fresh(IntegerType(1))
    e.emit(f"setp.ge.s{w} {guard}, {iv_reg}, {ub};")
    e.emit(f"@{guard} bra {done};")
    e.lines.append(f"{loop}:")
    e.block(body, skip_terminator=True)
    yield_op = body.last_op
    if isinstance(yield_op, scf.YieldOp):
        _parallel_copy(e, carried_regs, [e.use(v) for v in yield_op.arguments], [a.type for a in carried])
    e.emit(f"add.s{w} {iv_reg}, {iv_reg}, {step};")
    e.emit(f"setp.lt.s{w} {guard}, {iv_reg}, {ub};")
    e.emit(f"@{guard} bra {loop};")
    e.lines.append(f"{done}:")
    for res, reg in zip(op.results, carried_regs):
        e.alias(res, reg)


def _while(e: _KernelEmitter, op: scf.WhileOp) -> None:
    """A top-tested loop: the before block computes the condition and the values it passes
    (copied to the after block's registers, which are also the results), a false condition
    leaves; the after block's yields go back to the before block's registers."""
    before, after = op.before_region.block, op.after_region.block
    carried = [e.define(a) for a in before.args]
    passed = [e.define(a) for a in after.args]
    loop, done = e.label("while"), e.label("while_end")
    e.emit(f"// scf.while carried: {', '.join(carried) or 'none'}")
    for reg, init in zip(carried, op.arguments):
        e.mov(reg, e.use(init), init.type)
    e.lines.append(f"{loop}:")
    e.block(before, skip_terminator=True)
    cond = before.last_op
    if not isinstance(cond, scf.ConditionOp):
        raise PtxEmitError("scf.while: the before region must end with scf.condition")
    _parallel_copy(e, passed, [e.use(v) for v in cond.args], [a.type for a in after.args])
    e.emit(f"@!{e.use(cond.condition)} bra {done};")
    e.block(after, skip_terminator=True)
    y = after.last_op
    if isinstance(y, scf.YieldOp):
        _parallel_copy(e, carried, [e.use(v) for v in y.arguments], [a.type for a in before.args])
    e.emit(f"bra {loop};")
    e.lines.append(f"{done}:")
    for res, reg in zip(op.results, passed):
        e.alias(res, reg)


def _if(e: _KernelEmitter, op: scf.IfOp) -> None:
    result_regs = [e.define(r) for r in op.results]
    has_else = bool(op.false_region.blocks) and (
        bool(op.results) or any(not isinstance(o, scf.YieldOp) for o in op.false_region.block.ops)
    )
    else_label, end_label = e.label("else"), e.label("endif")
    cond = e.use(op.cond)
    e.emit(f"@!{cond} bra {else_label if has_else else end_label};")

    def region(block: Block) -> None:
        e.block(block, skip_terminator=True)
        y = block.last_op
        if isinstance(y, scf.YieldOp):
            _parallel_copy(e, result_regs, [e.use(v) for v in y.arguments], [r.type for r in op.results])

    region(op.true_region.block)
    if has_else:
        e.emit(f"bra.uni {end_label};")
        e.lines.append(f"{else_label}:")
        region(op.false_region.block)
    e.lines.append(f"{end_label}:")


def _yield(e: _KernelEmitter, op: scf.YieldOp) -> None:
    raise PtxEmitError("scf.yield outside an scf.for/scf.if body")


# ptx ---------------------------------------------------------------------------------------------


def _regs(e: _KernelEmitter, values: Iterable[SSAValue], *, define: bool = False) -> str:
    regs = [e.define(v) if define else e.use(v) for v in values]
    return regs[0] if len(regs) == 1 else "{" + ", ".join(regs) + "}"


def _addr(e: _KernelEmitter, addr: SSAValue, offset: int) -> str:
    return f"[{e.use(addr)}+{offset}]" if offset else f"[{e.use(addr)}]"


def _vec(n: int) -> str:
    return "" if n == 1 else f".v{n}"


def _ld(e: _KernelEmitter, op: ptx.LdGlobalOp | ptx.LdSharedOp) -> None:
    space = "global" if isinstance(op, ptx.LdGlobalOp) else "shared"
    ty = op.res[0].type
    regs = [e.define(r) for r in op.res]
    for reg, other in zip(regs, op.other):
        e.mov(reg, e.use(other), ty)
    guard = f"@{e.use(op.mask)} " if op.mask is not None else ""
    cache = f".{op.cache.data}" if op.cache is not None else ""
    dst = regs[0] if len(regs) == 1 else "{" + ", ".join(regs) + "}"
    e.emit(
        f"{guard}ld.{space}{cache}{_vec(len(regs))}.b{_width(ty)} {dst}, {_addr(e, op.addr, op.offset.value.data)};"
    )


def _st(e: _KernelEmitter, op: ptx.StGlobalOp | ptx.StSharedOp) -> None:
    space = "global" if isinstance(op, ptx.StGlobalOp) else "shared"
    ty = op.values[0].type
    guard = f"@{e.use(op.mask)} " if op.mask is not None else ""
    cache = f".{op.cache.data}" if op.cache is not None else ""
    e.emit(
        f"{guard}st.{space}{cache}{_vec(len(op.values))}.b{_width(ty)} "
        f"{_addr(e, op.addr, op.offset.value.data)}, {_regs(e, op.values)};"
    )


def _cp_async(e: _KernelEmitter, op: ptx.CpAsyncOp) -> None:
    size = op.size.value.data
    head = f"cp.async.{op.cache.data}.shared.global [{e.use(op.dst)}], [{e.use(op.src)}], {size}"
    if op.mask is None:
        e.emit(f"{head};")
        return
    src_size = e.fresh(IntegerType(32))
    e.emit(f"selp.b32 {src_size}, {size}, 0, {e.use(op.mask)};")
    e.emit(f"{head}, {src_size};")


def _ldmatrix(e: _KernelEmitter, op: ptx.LdMatrixOp) -> None:
    trans = ".trans" if op.trans is not None else ""
    regs = "{" + ", ".join(e.define(r) for r in op.res) + "}"
    e.emit(f"ldmatrix.sync.aligned.m8n8.x{len(op.res)}{trans}.shared.b16 {regs}, [{e.use(op.addr)}];")


def _group(e: _KernelEmitter, values: Iterable[SSAValue]) -> str:
    return "{" + ", ".join(e.use(v) for v in values) + "}"


def _mma_sp(e: _KernelEmitter, op: ptx.MmaSpOp) -> None:
    t = op.ab_type.data
    acc = ptx.mma_acc_name(t)
    a, b, c = _group(e, op.a), _group(e, op.b), _group(e, op.c)
    meta = e.use(op.meta)
    d = "{" + ", ".join(e.define(r) for r in op.res) + "}"
    e.emit(
        f"mma.sp::ordered_metadata.sync.aligned.m16n8k{ptx.mma_sp_k(t)}.row.col.{acc}.{t}.{t}.{acc} "
        f"{d}, {a}, {b}, {c}, {meta}, 0x{op.selector.value.data:x};"
    )


def _mma(e: _KernelEmitter, op: ptx.MmaOp) -> None:
    t = op.ab_type.data
    a, b, c = _group(e, op.a), _group(e, op.b), _group(e, op.c)
    d = "{" + ", ".join(e.define(r) for r in op.res) + "}"
    e.emit(f"mma.sync.aligned.m16n8k16.row.col.f32.{t}.{t}.f32 {d}, {a}, {b}, {c};")


def _asm(e: _KernelEmitter, op: ptx.AsmOp) -> None:
    regs = [e.define(r) for r in op.res] + [e.use(a) for a in op.args]

    def sub(m: re.Match[str]) -> str:
        i = int(m.group(1))
        if i >= len(regs):
            raise PtxEmitError(f"ptx.asm: ${i} out of range in {op.template.data!r} ({len(regs)} registers)")
        return regs[i]

    text = re.sub(r"\$(\d+)", sub, op.template.data)
    for line in text.splitlines():
        if line.strip():
            e.emit(line.strip())


def _template(e: _KernelEmitter, op: ptx.TemplateOp) -> None:
    """Any `ptx.TemplateOp` (the wgmma and mbarrier ops): its `asm_template()` with `$i`
    replaced by registers; results tied to operands (`tied_operands`) reuse their registers."""
    tied = op.tied_operands()
    if tied:
        for res, src in zip(op.results, tied):
            e.alias(res, e.use(src))
        regs = [e.use(r) for r in op.results]
    else:
        regs = [e.define(r) for r in op.results]
    regs += [e.use(a) for a in op.operands]
    text = re.sub(r"\$(\d+)", lambda m: regs[int(m.group(1))], op.asm_template())
    for line in text.splitlines():
        e.emit(line.strip())


def _sreg(e: _KernelEmitter, op: ptx.SpecialRegOp) -> None:
    e.emit(f"mov.u32 {e.define(op.result)}, %{op.reg.data};")


def _shared_base(e: _KernelEmitter, op: ptx.SharedBaseOp) -> None:
    e.uses_smem = True
    e.emit(f"mov.u32 {e.define(op.result)}, {SMEM_SYMBOL};")


_HANDLERS: dict[type[Operation], Callable[[_KernelEmitter, Any], None]] = {
    arith.ConstantOp: _constant,
    **{cls: _int_binary for cls in _INT_BINARY},
    **{cls: _shift for cls in _SHIFTS},
    **{cls: _float_binary for cls in _FLOAT_BINARY},
    arith.NegfOp: _negf,
    math.FmaOp: _fma,
    **{cls: _math_unary for cls in _MATH_UNARY},
    math.AbsIOp: _absi,
    arith.CmpiOp: _cmpi,
    arith.CmpfOp: _cmpf,
    arith.SelectOp: _select,
    arith.ExtSIOp: _int_ext,
    arith.ExtUIOp: _int_ext,
    arith.TruncIOp: _trunci,
    arith.SIToFPOp: _int_to_float,
    arith.UIToFPOp: _int_to_float,
    arith.FPToSIOp: _float_to_int,
    arith.FPToUIOp: _float_to_int,
    arith.ExtFOp: _float_cast,
    arith.TruncFOp: _float_cast,
    arith.BitcastOp: _bitcast,
    scf.ForOp: _for,
    scf.IfOp: _if,
    scf.WhileOp: _while,
    scf.YieldOp: _yield,
    ptx.ReturnOp: lambda e, op: e.emit("ret;"),
    ptx.SpecialRegOp: _sreg,
    ptx.SharedBaseOp: _shared_base,
    ptx.LdGlobalOp: _ld,
    ptx.LdSharedOp: _ld,
    ptx.StGlobalOp: _st,
    ptx.StSharedOp: _st,
    ptx.CpAsyncOp: _cp_async,
    ptx.CpAsyncCommitGroupOp: lambda e, op: e.emit("cp.async.commit_group;"),
    ptx.CpAsyncWaitGroupOp: lambda e, op: e.emit(f"cp.async.wait_group {op.n.value.data};"),
    ptx.LdMatrixOp: _ldmatrix,
    ptx.MmaSpOp: _mma_sp,
    ptx.MmaOp: _mma,
    ptx.BarSyncOp: lambda e, op: e.emit(f"bar.sync {op.barrier.value.data}"
                                        f"{'' if op.threads is None else f', {op.threads.value.data}'};"),
    ptx.PackOp: lambda e, op: e.emit(f"mov.b32 {e.define(op.result)}, {{{e.use(op.lo)}, {e.use(op.hi)}}};"),
    ptx.UnpackOp: lambda e, op: e.emit(f"mov.b32 {{{e.define(op.lo)}, {e.define(op.hi)}}}, {e.use(op.input)};"),
    ptx.CvtPackOp: lambda e, op: e.emit(
        f"cvt.rn.{op.elem_type.data}x2.f32 {e.define(op.result)}, {e.use(op.hi)}, {e.use(op.lo)};"
    ),
    ptx.AsmOp: _asm,
    ptx.TemplateOp: _template,  # (found through each subclass's MRO, `_handler_for`)
}


# ----------------------------------------------------------------------------------------------
# Module


def kernels_of(module: ModuleOp | ptx.KernelOp) -> list[ptx.KernelOp]:
    """The `ptx.kernel`s of a module (top level or nested in builtin.module), in order."""
    if isinstance(module, ptx.KernelOp):
        return [module]
    return [op for op in module.walk() if isinstance(op, ptx.KernelOp)]


def emit_ptx(module: ModuleOp | ptx.KernelOp, *, verify: bool = True) -> str:
    """PTX text for every `ptx.kernel` in `module` (they must share one target).

    `verify=False` skips xDSL's verifier: the compiler's own lowering builds ops it has already
    checked, and verifying ~12k ops costs more than printing them (`SPARSECC_DEBUG=1` turns it
    back on there); hand-built modules keep the default.
    """
    kernels = kernels_of(module)
    if not kernels:
        raise PtxEmitError("emit_ptx: the module holds no ptx.kernel")
    targets = sorted({k.target.data for k in kernels})
    if len(targets) != 1:
        raise PtxEmitError(f"emit_ptx: kernels of one module need one target, got {targets}")
    bodies: list[list[str]] = []
    uses_smem = False
    for k in kernels:
        if verify:
            k.verify()
        problem = k.target_problem()  # also unverified: a bad target or budget is never printed
        if problem is not None:
            raise PtxEmitError(f"kernel {k.kernel_name}: {problem}", k)
        emitter = _KernelEmitter(k)
        bodies.append(emitter.run())
        uses_smem |= emitter.uses_smem
    out = [
        "//",
        "// Generated by sparsecc",
        "//",
        "",
        f".version {PTX_VERSION}",
        f".target {targets[0]}",
        ".address_size 64",
        "",
    ]
    if uses_smem:
        out += [f".extern .shared .align 16 .b8 {SMEM_SYMBOL}[];", ""]
    for body in bodies:
        out += body
        out.append("")
    return "\n".join(out)
