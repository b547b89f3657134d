"""`.to()` with pointers, as Triton allows it: an int64 address to a pointer
(`tl.load(ptrs + g).to(tl.pointer_type(tl.float16))`, the grouped GEMM tutorial's table of data
pointers), a pointer to int64 (`p.to(tl.int64)`), and a pointer to a pointer of another element
type (`p.to(tl.pointer_type(tl.int8))`, the same address).

Only these: an address is 64 bits, so other integer widths, floats and 2:4-sparse pointers are
refused with the conversion named.
"""

from __future__ import annotations

from typing import Any

from xdsl.dialects.builtin import IntegerType, i64
from xdsl.ir import SSAValue

import sparsecc.language as tl
from sparsecc.dialects import tt
from sparsecc.dialects.tt import PointerType
from sparsecc.frontend import semantic as sem
from sparsecc.frontend.errors import SemanticError
from sparsecc.frontend.semantic import Emitter
from sparsecc.frontend.types import describe, ir_type, is_unsigned


def involves_pointers(v: SSAValue, dtype: Any) -> bool:
    """Whether `v.to(dtype)` is a pointer cast (either side a pointer)."""
    return isinstance(dtype, tl.pointer_type) or isinstance(sem.elem(v), PointerType)


def pointer_cast(em: Emitter, v: SSAValue, dtype: Any, bitcast: Any = False) -> SSAValue:
    """`v.to(dtype)` where `v` or `dtype` is a pointer: tt.int_to_ptr, tt.ptr_to_int or tt.bitcast."""
    src = sem.elem(v)
    if isinstance(src, PointerType) and src.is_block:
        raise SemanticError(f"cannot convert block pointer {describe(v.type)} with .to()")
    if not isinstance(dtype, tl.dtype):
        raise SemanticError(f".to() needs a tl dtype such as tl.pointer_type(tl.float16), got {sem.py_desc(dtype)}")
    dst = ir_type(dtype)
    for side in (src, dst):
        if isinstance(side, PointerType) and tt.is_sparse(side):
            raise SemanticError(f"cannot convert {describe(v.type)} to {dtype}: a 2:4-sparse pointer's address "
                                "is not a plain address (its values and metadata are two arrays)")
    if isinstance(src, PointerType) and isinstance(dst, PointerType):
        return v if src == dst else em.value(tt.PtrBitcastOp(v, sem.like(v.type, dst)))
    if isinstance(dst, PointerType):  # an address to a pointer
        if not (isinstance(src, IntegerType) and src.width.data == 64):
            raise SemanticError(f"only a 64-bit integer (tl.int64 or tl.uint64) converts to a pointer, got "
                                f"{describe(v.type)}; an address is 64 bits (convert with .to(tl.int64) first)")
        if is_unsigned(src):
            v = sem.reinterpret(em, v, i64)
        return em.value(tt.IntToPtrOp(v, sem.like(v.type, dst)))
    if not (isinstance(dst, IntegerType) and dst.width.data == 64):
        raise SemanticError(f"a pointer converts only to tl.int64 or tl.uint64 (its address), not to {dtype}")
    r = em.value(tt.PtrToIntOp(v, sem.like(v.type, i64)))
    return sem.reinterpret(em, r, dst) if is_unsigned(dst) else r


def make_pointer_type(element_ty: Any, address_space: Any = 1, const: Any = False) -> tl.pointer_type:
    """`tl.pointer_type(tl.float16)` inside a kernel: a compile-time dtype (Triton's optional
    `address_space` 1, global memory, and `const` are accepted)."""
    if not isinstance(element_ty, tl.dtype) or isinstance(element_ty, tl.pointer_type):
        raise SemanticError(f"tl.pointer_type needs an element dtype such as tl.float16, got {sem.py_desc(element_ty)}")
    if address_space != 1:
        raise SemanticError(f"tl.pointer_type: address_space={address_space!r} is not supported (only 1, global memory)")
    return tl.pointer_type(element_ty)
