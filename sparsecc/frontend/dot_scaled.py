"""`tl.dot_scaled` (microscaled matmul, OCP MX formats) as Triton emulates it where the hardware has
no native form: each operand is decoded to f32, multiplied by its e8m0 block scales (one per 32
elements along K), rounded to bf16 and fed to `tl.dot` with an f32 accumulator.

For e2m1, e4m3 and e5m2 operands the bf16 rounding is exact (their mantissas are at most 3 bits
and a power-of-two scale keeps them), so the result is the exact products summed in f32; fp16
operands lose their 3 low mantissa bits in bf16, as in Triton's emulation.

Operand encodings (Triton's): e2m1 is two values per uint8, the first in the low nibble, packed
along K (`lhs_k_pack` / `rhs_k_pack`: packing along M or N is not supported here); e4m3 and e5m2
are uint8 bits or the fp8 dtypes; scales are uint8 e8m0 (2**(s - 127), 255 is NaN), `lhs_scale`
shaped [M, K // 32] and `rhs_scale` [N, K // 32], or None (a scale of 1).
"""

from __future__ import annotations

from typing import Any

from xdsl.dialects import arith
from xdsl.dialects.builtin import bf16, f16, f32, i8, i16, i32
from xdsl.ir import SSAValue

import sparsecc.language as tl
from sparsecc.frontend import semantic as sem
from sparsecc.frontend.builtins import IMPLS, impl
from sparsecc.frontend.errors import SemanticError
from sparsecc.frontend.semantic import Emitter
from sparsecc.frontend.types import bitwidth, describe, is_float, is_int

FORMATS = ("e2m1", "e4m3", "e5m2", "bf16", "fp16")
GROUP = 32
"""Elements along K that share one e8m0 scale (the MX block size)."""


def _bits_to_f32(em: Emitter, bits: SSAValue) -> SSAValue:
    return em.value(arith.BitcastOp(bits, sem.like(bits.type, f32)))


def _as_i32(em: Emitter, v: SSAValue) -> SSAValue:
    """The uint8 bits of `v` (an 8-bit integer or fp8 tensor) as i32 in 0..255."""
    t = sem.elem(v)
    if is_float(t):  # fp8 dtypes: their bits
        v = em.value(arith.BitcastOp(v, sem.like(v.type, i8)))
    wide = sem.cast(em, v, i32)
    return sem.binary(em, "&", wide, 0xFF)


def _e2m1(em: Emitter, nib: SSAValue) -> SSAValue:
    """f32 of 4-bit e2m1 codes (s ee m, bias 1: 0, 0.5, 1, 1.5, 2, 3, 4, 6 and negatives)."""
    e = sem.binary(em, "&", sem.binary(em, ">>", nib, 1), 3)
    m = sem.binary(em, "&", nib, 1)
    normal = sem.binary(em, "|", sem.binary(em, "<<", sem.binary(em, "+", e, 126), 23), sem.binary(em, "<<", m, 22))
    mag = sem.select(em, sem.compare(em, "==", e, 0), sem.binary(em, "*", sem.cast(em, m, f32), 0.5),
                     _bits_to_f32(em, normal))
    return sem.select(em, sem.compare(em, "!=", sem.binary(em, "&", nib, 8), 0), em.value(arith.NegfOp(mag)), mag)


def _e4m3(em: Emitter, b: SSAValue) -> SSAValue:
    """f32 of e4m3fn bytes (s eeee mmm, bias 7, no infinities, 0x7F/0xFF NaN)."""
    e = sem.binary(em, "&", sem.binary(em, ">>", b, 3), 15)
    m = sem.binary(em, "&", b, 7)
    normal = _bits_to_f32(em, sem.binary(em, "|", sem.binary(em, "<<", sem.binary(em, "+", e, 120), 23),
                                          sem.binary(em, "<<", m, 20)))
    sub = sem.binary(em, "*", sem.cast(em, m, f32), 2.0 ** -9)
    mag = sem.select(em, sem.compare(em, "==", e, 0), sub, normal)
    nan = _bits_to_f32(em, sem.constant(em, 0x7FC00000, i32))
    mag = sem.select(em, sem.compare(em, "==", sem.binary(em, "&", b, 0x7F), 0x7F), nan, mag)
    return sem.select(em, sem.compare(em, "!=", sem.binary(em, "&", b, 0x80), 0), em.value(arith.NegfOp(mag)), mag)


def _e5m2(em: Emitter, b: SSAValue) -> SSAValue:
    """f32 of e5m2 bytes: an e5m2 byte is the high byte of the fp16 with the same value."""
    half = em.value(arith.BitcastOp(sem.cast(em, sem.binary(em, "<<", b, 8), i16), sem.like(b.type, f16)))
    return sem.cast(em, half, f32)


def _e8m0(em: Emitter, s: SSAValue) -> SSAValue:
    """f32 of e8m0 scale bytes: 2**(s - 127), 2**-127 (a subnormal) for 0, NaN for 255."""
    bits = sem.select(em, sem.compare(em, "==", s, 0), 0x00400000, sem.binary(em, "<<", s, 23))
    bits = sem.select(em, sem.compare(em, "==", s, 255), 0x7FC00000, bits)
    return _bits_to_f32(em, bits)


def _unpack_k(em: Emitter, lo: SSAValue, hi: SSAValue, k_axis: int) -> SSAValue:
    """Interleave the low and high nibbles' values along K (`k_axis` 1 for lhs, 0 for rhs)."""
    j = IMPLS["join"](em, lo, hi)  # [..., 2]
    a, b = sem.shape(lo)
    if k_axis == 1:
        return IMPLS["reshape"](em, j, (a, 2 * b))
    return IMPLS["reshape"](em, IMPLS["permute"](em, j, (0, 2, 1)), (2 * a, b))


def _decode(em: Emitter, x: Any, fmt: str, k_axis: int, what: str) -> SSAValue:
    """The f32 values of one operand, [M, K] or [K, N]."""
    v = sem.require_value(x, f"tl.dot_scaled's {what}")
    sem.require_dense(v, "tl.dot_scaled")
    if len(sem.shape(v)) != 2:
        raise SemanticError(f"tl.dot_scaled's {what} must be 2-D, got {describe(v.type)}")
    t = sem.elem(v)
    if fmt in ("bf16", "fp16"):
        if t != (bf16 if fmt == "bf16" else f16):
            raise SemanticError(f"tl.dot_scaled's {what} in format {fmt!r} must be {fmt}, got {describe(t)}")
        return sem.cast(em, v, f32)
    if bitwidth(t) != 8 or not (is_int(t) or is_float(t)):
        raise SemanticError(f"tl.dot_scaled's {what} in format {fmt!r} must hold bytes (uint8 or an fp8 dtype), "
                            f"got {describe(t)}")
    b = _as_i32(em, v)
    if fmt == "e2m1":
        return _unpack_k(em, _e2m1(em, sem.binary(em, "&", b, 15)), _e2m1(em, sem.binary(em, ">>", b, 4)), k_axis)
    return _e4m3(em, b) if fmt == "e4m3" else _e5m2(em, b)


def _scaled(em: Emitter, vals: SSAValue, scale: Any, k_axis: int, what: str) -> SSAValue:
    """`vals` times its block scales, broadcast over each group of 32 along K."""
    if scale is None:
        return vals
    s = sem.require_value(scale, f"tl.dot_scaled's {what}")
    rows, k = sem.shape(vals) if k_axis == 1 else tuple(reversed(sem.shape(vals)))
    if k % GROUP or tuple(sem.shape(s)) != (rows, k // GROUP):
        raise SemanticError(f"tl.dot_scaled's {what} must have shape [{rows}, {k // GROUP}] (one e8m0 scale per "
                            f"{GROUP} elements along K={k}), got {describe(s.type)}")
    if not is_int(sem.elem(s)) or bitwidth(sem.elem(s)) != 8:
        raise SemanticError(f"tl.dot_scaled's {what} must be uint8 (e8m0), got {describe(s.type)}")
    f = _e8m0(em, _as_i32(em, s))  # [rows, K/32]
    f = IMPLS["reshape"](em, IMPLS["broadcast_to"](em, IMPLS["expand_dims"](em, f, 2), (rows, k // GROUP, GROUP)),
                         (rows, k))
    if k_axis == 0:
        f = IMPLS["permute"](em, f, (1, 0))
    return sem.binary(em, "*", vals, f)


@impl
def dot_scaled(em: Emitter, lhs: Any, lhs_scale: Any, lhs_format: Any, rhs: Any, rhs_scale: Any, rhs_format: Any,
               acc: Any = None, fast_math: Any = False, lhs_k_pack: Any = True, rhs_k_pack: Any = True,
               out_dtype: Any = tl.float32) -> Any:
    for fmt, side in ((lhs_format, "lhs_format"), (rhs_format, "rhs_format")):
        if fmt not in FORMATS:
            raise SemanticError(f"tl.dot_scaled's {side} must be one of {', '.join(map(repr, FORMATS))}, got {fmt!r}")
    if out_dtype != tl.float32:
        raise SemanticError(f"tl.dot_scaled: out_dtype must be tl.float32 (as in Triton), got {out_dtype}")
    for pack, side in ((lhs_k_pack, "lhs"), (rhs_k_pack, "rhs")):
        if pack is not True:
            raise SemanticError(f"tl.dot_scaled: {side}_k_pack=False (e2m1 packed along M or N) is not supported; "
                                "pack e2m1 pairs along K")
    for fmt, scale, side in ((lhs_format, lhs_scale, "lhs"), (rhs_format, rhs_scale, "rhs")):
        if fmt in ("bf16", "fp16") and scale is not None:
            raise SemanticError(f"tl.dot_scaled: a {fmt} {side} takes no scale ({side}_scale=None)")
    a = _scaled(em, _decode(em, lhs, lhs_format, 1, "lhs"), lhs_scale, 1, "lhs_scale")
    b = _scaled(em, _decode(em, rhs, rhs_format, 0, "rhs"), rhs_scale, 0, "rhs_scale")
    if sem.shape(a)[1] != sem.shape(b)[0]:
        raise SemanticError(f"tl.dot_scaled: lhs has K={sem.shape(a)[1]}, rhs has K={sem.shape(b)[0]}")
    a, b = sem.cast(em, a, bf16), sem.cast(em, b, bf16)
    return IMPLS["dot"](em, a, b, acc, tl.float32, None, None)
