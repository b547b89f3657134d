"""Spellings of types: `tl` dtypes, signature strings ("*fp16:NV24") and IR types.

One table (`_IR`) ties the three together so that the frontend, `sparsecc.compile`'s
signatures and launch specialization agree on every name.
"""

from __future__ import annotations

from xdsl.dialects.builtin import (
    BFloat16Type,
    Float8E4M3FNType,
    Float8E5M2Type,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerType,
    Signedness,
    TensorType,
    bf16,
    f8E4M3FN,
    f8E5M2,
    f16,
    f32,
    f64,
    i1,
    i8,
    i16,
    i32,
    i64,
)
from xdsl.ir import Attribute

import sparsecc.language as tl
from sparsecc import formats
from sparsecc.dialects.tt import PointerType, SparseEncodingAttr, sparse_encoding_of

_IR: dict[str, Attribute] = {
    "fp8e4nv": f8E4M3FN, "fp8e5": f8E5M2, "fp16": f16, "bf16": bf16, "fp32": f32, "fp64": f64,
    "i1": i1, "i8": i8, "i16": i16, "i32": i32, "i64": i64,
    "u8": IntegerType(8, Signedness.UNSIGNED), "u16": IntegerType(16, Signedness.UNSIGNED),
    "u32": IntegerType(32, Signedness.UNSIGNED), "u64": IntegerType(64, Signedness.UNSIGNED),
}
"""The unsigned entries exist only inside the frontend: `erase_signedness` turns every `ui<N>` of
a finished kernel into the signless `i<N>` the rest of the compiler takes (signedness lives in
the ops the frontend picked: divui, shrui, cmpi ult, extui, uitofp, ...)."""

POINTEE_NAMES = ("fp16", "bf16", "fp32", "fp64", "fp8e4nv", "fp8e5", "i1", "i8", "i16", "i32", "i64",
                 "u8", "u16", "u32", "u64")
SCALAR_NAMES = ("i1", "i32", "i64", "fp32", "u32", "u64")
FLOAT_TYPES = (Float8E4M3FNType, Float8E5M2Type, Float16Type, BFloat16Type, Float32Type, Float64Type)


def ir_type(dt: tl.dtype) -> Attribute:
    """The IR type of a `tl` dtype (pointers become `!tt.ptr<..>`)."""
    if isinstance(dt, tl.pointer_type):
        enc = SparseEncodingAttr(dt.encoding) if dt.encoding else None
        return PointerType(ir_type(dt.element_ty), enc)
    return _IR[dt.name]


def tl_dtype(ty: Attribute) -> tl.dtype:
    """The `tl` dtype of an IR scalar type or of a tensor's elements."""
    if isinstance(ty, TensorType):
        ty = ty.element_type
    if isinstance(ty, PointerType):
        enc = sparse_encoding_of(ty)
        return tl.pointer_type(tl_dtype(ty.pointee), enc.format.data if enc else None)
    for name, t in _IR.items():
        if t == ty:
            return tl.DTYPES[name]
    raise ValueError(f"no tl dtype for IR type {ty}")


def parse_signature_type(text: str) -> Attribute:
    """`"*fp16"`, `"*fp16:NV24"`, `"i32"`, ... -> IR type; ValueError naming what is wrong."""
    s = text.strip()
    if s.startswith("*"):
        name, _, enc = s[1:].partition(":")
        if name not in POINTEE_NAMES:
            raise ValueError(f"unknown pointer type '{text}' (pointers: "
                             + ", ".join("*" + n for n in POINTEE_NAMES) + ")")
        if enc in PTR_HINTS:
            return PointerType(_IR[name])
        if enc:
            try:
                fmt = formats.lookup(enc)
            except formats.UnknownFormatError as e:
                raise ValueError(f"'{text}': {e}") from None
            if fmt.element(name) is None:
                raise ValueError(f"'{text}': {fmt.element_rule('*')}")
            return PointerType(_IR[name], SparseEncodingAttr(enc))
        return PointerType(_IR[name])
    s, _, hint = s.partition(":")
    if s not in SCALAR_NAMES:
        raise ValueError(f"unknown signature type '{text}' (scalars: {', '.join(SCALAR_NAMES)}; "
                         "pointers: *fp16, *bf16, ..., with :NV24 for 2:4-sparse)")
    if hint and (hint not in INT_HINTS or s not in ("i32", "i64", "u32", "u64")):
        raise ValueError(f"'{text}': an integer may carry ':16' (a multiple of 16) or ':1' (equal to 1), "
                         "nothing else may carry a hint")
    return _IR[s]


INT_HINTS = ("1", "16")
"""Specialization hints of integer parameters: ':16' = a multiple of 16 (the IR argument gets
`tt.divisibility = 16`, which lets the lowering drop unaligned fallback paths), ':1' = equal to
1 (the kernel body sees the constant 1; Triton specializes the same two properties)."""


PTR_HINTS = ("16",)
"""Specialization hint of a dense pointer parameter: ':16' = its address is a multiple of 16
bytes (`"*fp32:16"`; the IR argument gets `tt.divisibility = 16`, which lets loads and stores
through it be 128-bit vectors). A launch adds it for 16-byte-aligned tensors, as Triton does."""


def signature_hint(text: str) -> str | None:
    """The ':16' / ':1' hint of an integer signature string ("i32:16" -> "16") or the ':16' of
    a dense pointer ("*fp32:16" -> "16"), else None (a sparse format is not a hint)."""
    s = text.strip()
    if s.startswith("*"):
        hint = s.partition(":")[2]
        return hint if hint in PTR_HINTS else None
    return s.partition(":")[2] or None


def signless_name(text: str) -> str:
    """The kind the signless IR shows for signature type `text`: "*u8" -> "*i8", "u32:16" ->
    "i32" (hints dropped, as `signature_string` of the module's parameter has none)."""
    s = text.strip()
    ptr = s.startswith("*")
    name = s.lstrip("*").partition(":")[0]
    if name in ("u8", "u16", "u32", "u64"):
        name = "i" + name[1:]
    return ("*" if ptr else "") + name


def signature_string(ty: Attribute) -> str:
    """Inverse of `parse_signature_type` for the types kernels take."""
    if isinstance(ty, PointerType):
        enc = sparse_encoding_of(ty)
        return "*" + tl_dtype(ty.pointee).name + (f":{enc.format.data}" if enc else "")
    return tl_dtype(ty).name


def is_float(ty: Attribute) -> bool:
    return isinstance(ty, FLOAT_TYPES)


def is_int(ty: Attribute) -> bool:
    return isinstance(ty, IntegerType)


def is_unsigned(ty: Attribute) -> bool:
    """A frontend `ui<N>` (tl.uint8 ... tl.uint64); i1 counts as signless, as in Triton."""
    return isinstance(ty, IntegerType) and ty.signedness.data == Signedness.UNSIGNED


def signless(ty: Attribute) -> Attribute:
    """`ui<N>` -> `i<N>`; any other type unchanged."""
    return IntegerType(ty.width.data) if is_unsigned(ty) else ty


def bitwidth(ty: Attribute) -> int:
    if isinstance(ty, IntegerType):
        return ty.width.data
    return {Float8E4M3FNType: 8, Float8E5M2Type: 8, Float16Type: 16, BFloat16Type: 16, Float32Type: 32,
            Float64Type: 64}[type(ty)]


def describe(ty: Attribute) -> str:
    """A short name for messages: fp16, i32, tensor<32x64xf16>, !tt.ptr<f16>."""
    try:
        if not isinstance(ty, TensorType | PointerType):
            return tl_dtype(ty).name
    except ValueError:
        pass
    from sparsecc.dialects.tt import _type_str

    return _type_str(ty)
