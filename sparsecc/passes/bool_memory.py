"""bool tensors on the GPU: a `torch.bool` element is one byte (0 or 1), and PTX has no 1-bit
memory access, so before the GPU stages every load through a `*i1` pointer becomes a byte load
tested `!= 0`, and every store of i1 values a store of their bytes (`extui`: 0 or 1):

    %x = tt.load %p, %m, %o : tensor<128x!tt.ptr<i1>>
    ->
    %p8 = tt.bitcast %p : tensor<128x!tt.ptr<i1>> -> tensor<128x!tt.ptr<i8>>
    %o8 = arith.extui %o : tensor<128xi1> to tensor<128xi8>
    %b = tt.load %p8, %m, %o8 : tensor<128x!tt.ptr<i8>>
    %x = arith.cmpi ne, %b, 0

The interpreter keeps the i1 form (it reads torch.bool tensors directly). Block pointers to i1
are left alone (the GPU limits check refuses them at the kernel line).
"""

from __future__ import annotations

from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    IntegerAttr,
    ModuleOp,
    TensorType,
    i1,
    i8,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from sparsecc.dialects import arith as arith_ext
from sparsecc.dialects import tt
from sparsecc.dialects.tt import PointerType


def _is_bool_pointer(ty: Attribute) -> bool:
    elt = ty.element_type if isinstance(ty, TensorType) else ty
    return isinstance(elt, PointerType) and not elt.is_block and elt.pointee == i1


def _like(ty: Attribute, elt: Attribute) -> Attribute:
    return TensorType(elt, ty.get_shape()) if isinstance(ty, TensorType) else elt


def _before(op: Operation, new: Operation) -> SSAValue:
    """Insert `new` before `op`, at `op`'s kernel line; its first result."""
    Rewriter.insert_op(new, InsertPoint.before(op))
    new.location = op.location
    return new.results[0] if new.results else None  # type: ignore[return-value]


def _zero_i8(op: Operation, ty: Attribute) -> SSAValue:
    if isinstance(ty, TensorType):
        attr = DenseIntOrFPElementsAttr.from_list(TensorType(i8, ty.get_shape()), [0])
        return _before(op, arith.ConstantOp(attr))
    return _before(op, arith.ConstantOp(IntegerAttr(0, i8)))


def _bytes_pointer(op: Operation, ptr: SSAValue) -> SSAValue:
    return _before(op, tt.PtrBitcastOp(ptr, _like(ptr.type, PointerType(i8))))


def _rewrite_load(op: tt.LoadOp) -> None:
    ptr = _bytes_pointer(op, op.ptr)
    other = op.other
    if other is not None:
        other = _before(op, arith_ext.ExtUIOp(other, _like(other.type, i8)))
    operands = [ptr] + ([op.mask] if op.mask is not None else []) + ([other] if other is not None else [])
    res_ty = op.results[0].type
    load = tt.LoadOp.create(operands=operands, result_types=[_like(res_ty, i8)],
                            properties=dict(op.properties), attributes=dict(op.attributes))
    loaded = _before(op, load)
    test = _before(op, arith_ext.CmpiOp(loaded, _zero_i8(op, res_ty), "ne"))
    op.results[0].replace_all_uses_with(test)
    Rewriter.erase_op(op)


def _rewrite_store(op: tt.StoreOp) -> None:
    ptr = _bytes_pointer(op, op.ptr)
    value = _before(op, arith_ext.ExtUIOp(op.value, _like(op.value.type, i8)))
    operands = [ptr, value] + ([op.mask] if op.mask is not None else [])
    store = tt.StoreOp.create(operands=operands, properties=dict(op.properties), attributes=dict(op.attributes))
    _before(op, store)
    Rewriter.erase_op(op)


def bool_memory_as_bytes(module: ModuleOp) -> None:
    """Rewrite every load and store through a (tensor of) `*i1` pointer(s) as byte accesses."""
    for op in list(module.walk()):
        if isinstance(op, tt.LoadOp) and _is_bool_pointer(op.ptr.type):
            _rewrite_load(op)
        elif isinstance(op, tt.StoreOp) and _is_bool_pointer(op.ptr.type):
            _rewrite_store(op)
