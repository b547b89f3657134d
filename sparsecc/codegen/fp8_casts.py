"""PTX for float -> fp8 casts (`x.to(tl.float8e4nv)`, `x.to(tl.float8e5)`), rounded as torch rounds.

PTX's fp8 conversion (`cvt.rn.satfinite.e4m3x2.f32`) exists from sm_89 on only; so the cast is
computed on the f32 bits, with the steps of torch's `fp8e4m3fn_from_fp32_value` /
`fp8e5m2_from_fp32_value` (c10/util), on every target, giving the bytes torch's `.to()` gives
(and so the interpreter's, which casts with torch; torch 2.13):

- NaN: 0x7F with x's sign;
- |x| from 448 on, infinities too: e4m3fn saturates to 448 (0x7E); from 65536 on e5m2 gives inf
  (0x7C; its values from 61440 on round up to inf on their own);
- |x| below the smallest normal fp8: an f32 add of a power of two that puts the fp8 denormal
  step at the f32 unit in the last place, so the add rounds to nearest even exactly where fp8
  does; its low bits are the code;
- otherwise the exponent rebiased and the mantissa rounded to nearest even by adding half an
  fp8 step less one, plus the kept mantissa's lowest bit, and shifting.

The sign is or-ed back in. About 19 integer instructions a value, for the memory-bound kernels
that quantize (sparsecc.ops.quantize_rows). Casts from fp8 to wider floats are exact (`_widen`);
between the two fp8 types there is no cast (go through tl.float32).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from xdsl.dialects.builtin import (
    BFloat16Type,
    Float8E4M3FNType,
    Float8E5M2Type,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerType,
)
from xdsl.ir import Attribute, Operation, SSAValue

from sparsecc.codegen.ptx_errors import PtxEmitError


class _KernelEmitter(Protocol):
    """What the casts need of the PTX printer's kernel emitter (ptx_printer._KernelEmitter)."""

    def fresh(self, ty: Attribute) -> str: ...
    def define(self, value: SSAValue) -> str: ...
    def use(self, value: SSAValue) -> str: ...
    def emit(self, line: str) -> None: ...


@dataclass(frozen=True)
class _Fp8Format:
    """The constants of torch's f32 -> fp8 rounding for one format (f32 bit patterns)."""

    overflow_bits: int  # |x| bits from which the result is the overflow code
    overflow_code: int  # that code for non-NaN values (e4m3fn: 448, e5m2: inf)
    normal_min_bits: int  # the smallest normal fp8 value's f32 bits
    denorm_magic_bits: int  # the power of two whose f32 ulp is the fp8 denormal step
    shift: int  # 23 - the fp8 mantissa width
    rebias: int  # added to the f32 bits: the exponent rebiased, plus half a step less one


_E4M3FN = _Fp8Format(0x43E00000, 0x7E, 121 << 23, 141 << 23, 20, (((7 - 127) << 23) + 0x7FFFF) & 0xFFFFFFFF)
_E5M2 = _Fp8Format(143 << 23, 0x7C, 113 << 23, 134 << 23, 21, (((15 - 127) << 23) + 0xFFFFF) & 0xFFFFFFFF)


def is_fp8(ty: Attribute) -> bool:
    return isinstance(ty, Float8E4M3FNType | Float8E5M2Type)


def emit_fp8_cast(e: _KernelEmitter, op: Operation) -> None:
    """Print the cast `op` (arith.truncf to an fp8 type, or extf from one) into `e`."""
    src, ty = op.operands[0], op.results[0].type
    if is_fp8(src.type) and is_fp8(ty):
        raise PtxEmitError(f"{op.name} {src.type} -> {ty}: no PTX cast between fp8 types (cast through "
                           "tl.float32)", op)
    if is_fp8(src.type):
        _widen(e, op)
        return
    fmt = _E4M3FN if isinstance(ty, Float8E4M3FNType) else _E5M2
    x = _f32_register(e, src, op)
    absf, t = e.fresh(Float32Type()), e.fresh(Float32Type())
    bits, mag, sgn, den, nrm, odd, res = (e.fresh(IntegerType(32)) for _ in range(7))
    p_den, p_ovf = e.fresh(IntegerType(1)), e.fresh(IntegerType(1))
    e.emit(f"mov.b32 {bits}, {x};")
    e.emit(f"and.b32 {sgn}, {bits}, -2147483648;")
    e.emit(f"and.b32 {mag}, {bits}, 2147483647;")
    # the denormal range: the f32 add rounds to nearest even at the fp8 denormal step
    e.emit(f"mov.b32 {absf}, {mag};")
    e.emit(f"add.rn.f32 {t}, {absf}, 0f{fmt.denorm_magic_bits:08X};")
    e.emit(f"mov.b32 {den}, {t};")
    e.emit(f"sub.s32 {den}, {den}, {fmt.denorm_magic_bits};")
    # the normal range: rebias, round to nearest even, shift the code down
    e.emit(f"shr.u32 {odd}, {mag}, {fmt.shift};")
    e.emit(f"and.b32 {odd}, {odd}, 1;")
    e.emit(f"add.s32 {nrm}, {mag}, {fmt.rebias};")
    e.emit(f"add.s32 {nrm}, {nrm}, {odd};")
    e.emit(f"shr.u32 {nrm}, {nrm}, {fmt.shift};")
    e.emit(f"setp.lt.u32 {p_den}, {mag}, {fmt.normal_min_bits};")
    e.emit(f"selp.b32 {res}, {den}, {nrm}, {p_den};")
    e.emit(f"setp.ge.u32 {p_ovf}, {mag}, {fmt.overflow_bits};")
    e.emit(f"selp.b32 {res}, {fmt.overflow_code}, {res}, {p_ovf};")
    e.emit(f"setp.gt.u32 {p_ovf}, {mag}, 2139095040;")  # NaN: bits past inf's
    e.emit(f"selp.b32 {res}, 127, {res}, {p_ovf};")
    e.emit(f"shr.u32 {sgn}, {sgn}, 24;")
    e.emit(f"or.b32 {res}, {res}, {sgn};")
    e.emit(f"cvt.u16.u32 {e.define(op.results[0])}, {res};")


def _f32_register(e: _KernelEmitter, value, op: Operation) -> str:  # noqa: ANN001 - an SSAValue
    """A register holding `value` as f32: exact from f16 / bf16; an f64 rounds to f32 first, as
    torch's fp8 types convert a double through float."""
    ty = value.type
    if isinstance(ty, Float32Type):
        return e.use(value)
    wide = e.fresh(Float32Type())
    if isinstance(ty, Float16Type):
        e.emit(f"cvt.f32.f16 {wide}, {e.use(value)};")
    elif isinstance(ty, BFloat16Type):
        e.emit(f"cvt.f32.bf16 {wide}, {e.use(value)};")
    elif isinstance(ty, Float64Type):
        e.emit(f"cvt.rn.f32.f64 {wide}, {e.use(value)};")
    else:
        raise PtxEmitError(f"{op.name} {ty} -> fp8: no PTX cast between fp8 types", op)
    return wide


def _widen(e: _KernelEmitter, op: Operation) -> None:
    """fp8 -> f16 / bf16 / f32 / f64, exact. e5m2 is the high byte of an f16. An e4m3fn byte's
    exponent and mantissa shifted into an f16 (sign apart) are its value / 2**8, denormals
    included (the biases differ by 8), so the f16 widened to f32 times 256 is the value; 0x7F
    is NaN."""
    src, ty = op.operands[0], op.results[0].type
    b16, f32 = IntegerType(16), Float32Type()
    byte, half = e.fresh(b16), e.fresh(b16)
    wide = e.fresh(f32)
    e.emit(f"and.b16 {byte}, {e.use(src)}, 255;")  # the register's high byte is not kept defined
    if isinstance(src.type, Float8E5M2Type):
        e.emit(f"shl.b16 {half}, {byte}, 8;")
        e.emit(f"cvt.f32.f16 {wide}, {half};")
    else:
        mag, sgn = e.fresh(b16), e.fresh(b16)
        nan = e.fresh(IntegerType(1))
        e.emit(f"and.b16 {mag}, {byte}, 127;")
        e.emit(f"and.b16 {sgn}, {byte}, 128;")
        e.emit(f"shl.b16 {sgn}, {sgn}, 8;")
        e.emit(f"shl.b16 {half}, {mag}, 7;")
        e.emit(f"or.b16 {half}, {half}, {sgn};")
        e.emit(f"cvt.f32.f16 {wide}, {half};")
        e.emit(f"mul.rn.f32 {wide}, {wide}, 0f43800000;")  # * 256: exact
        e.emit(f"setp.eq.u16 {nan}, {mag}, 127;")
        e.emit(f"selp.f32 {wide}, 0f7FC00000, {wide}, {nan};")
    d = e.define(op.results[0])
    if isinstance(ty, Float32Type):
        e.emit(f"mov.f32 {d}, {wide};")
    elif isinstance(ty, Float16Type):
        e.emit(f"cvt.rn.f16.f32 {d}, {wide};")  # exact: every fp8 value is an f16 one
    elif isinstance(ty, BFloat16Type):
        e.emit(f"cvt.rn.bf16.f32 {d}, {wide};")  # exact: 2-3 mantissa bits, in bf16's range
    elif isinstance(ty, Float64Type):
        e.emit(f"cvt.f64.f32 {d}, {wide};")
    else:
        raise PtxEmitError(f"{op.name} {src.type} -> {ty}: no PTX cast for this type", op)
