"""`tt.dequantize` in registers: each thread builds the kept values it owns in the result's
layout straight from the codes and scales in shared memory.

sparse-gpu-encoding stages a dequantize's loaded operands through shared memory, so the
pipeline streams them with the other K-loop tiles (async copies overlapping the mma of earlier
iterations); their `ttg.local_load`s lower to nothing (the lowering keeps the buffer, see
`Lowerer`), and here a thread reads, for each of its result elements (r, j), the byte holding
code j of row r, its nibble, the scale (and zero point) of its group, and computes
`(code - zero) * scale` in f32, rounded once to f16/bf16: the interpreter's value bit for bit.
Operands that arrive in registers (a loop the pipeline left alone) are first stored row-major
into the op's scratch buffer. A run of consecutive elements of one row shares one scale read
and one word of codes.
"""

from __future__ import annotations

from xdsl.dialects import arith
from xdsl.dialects.builtin import FloatAttr, TensorType, f32, i8, i32
from xdsl.ir import SSAValue

from sparsecc.analysis.dtypes import esize
from sparsecc.analysis.layouts import contiguous_run, distributed
from sparsecc.codegen.lower_base import LoweringContext, LoweringError, Regs, Smem
from sparsecc.codegen.lower_mem import smem_addr, store_shared
from sparsecc.dialects import ptx, tt
from sparsecc.dialects import ttg as ttgd


def _row_major(ty: TensorType) -> ttgd.MemDescType:
    return ttgd.MemDescType(ty.get_shape(), ty.element_type, ttgd.SharedEncodingAttr(1, 1, 1, (1, 0)), True)


def scratch_bytes(op: tt.DequantizeOp) -> int:
    """Shared bytes the op needs for operands that arrive in registers (all of them, at most)."""
    total = 0
    for v in op.operands:
        ty = v.type
        assert isinstance(ty, TensorType)
        n = ty.get_shape()[0] * ty.get_shape()[1] * esize(ty.element_type)
        total += -(-n // 16) * 16
    return total


def _buffers(L: LoweringContext, op: tt.DequantizeOp, scratch: SSAValue | None) -> list[Smem]:
    out: list[Smem] = []
    offset = 0
    stored = False
    for v in op.operands:
        got = L.get(v)
        ty = v.type
        assert isinstance(ty, TensorType)
        if isinstance(got, Smem):
            out.append(got)
        elif isinstance(got, Regs):
            if scratch is None:
                raise LoweringError("tt.dequantize: an operand in registers needs the op's scratch buffer")
            sm = Smem(L.em.add(scratch, offset), _row_major(ty))
            store_shared(L, sm, got)
            stored = True
            out.append(sm)
        else:
            raise LoweringError("tt.dequantize: operands must be tensors in registers or shared memory")
        offset += -(-(ty.get_shape()[0] * ty.get_shape()[1] * esize(ty.element_type)) // 16) * 16
    if stored:
        L.after_shared_write()
    L.before_shared_read()
    return out


def lower_dequantize(L: LoweringContext, op: tt.DequantizeOp, scratch: SSAValue | None) -> Regs:
    """The op's result registers (see the module docstring)."""
    em = L.em
    bits = op.bits.value.data
    per_byte = 8 // bits
    res_ty = op.result.type
    assert isinstance(res_ty, TensorType)
    rows, cols = res_ty.get_shape()
    scales_ty = op.scales.type
    assert isinstance(scales_ty, TensorType)
    per_scale = cols // scales_ty.get_shape()[1]
    bufs = _buffers(L, op, scratch)
    codes_sm, scales_sm = bufs[0], bufs[1]
    zeros_sm = bufs[2] if len(bufs) > 2 else None
    elt = res_ty.element_type
    dl = distributed(res_ty.encoding, (rows, cols))
    coords = L.coords(dl)
    # a run of consecutive columns of one row: within one byte-aligned word and one scale group
    run = max(1, min(contiguous_run(dl, 1, 8), per_scale))
    word_bytes = run * bits // 8
    if word_bytes not in (1, 2, 4) or run % per_byte:
        run, word_bytes = 1, 1
    fixed_zero = em.val(arith.ConstantOp(FloatAttr(float(1 << (bits - 1)), f32)))
    mask = em.c((1 << bits) - 1)
    regs: list[SSAValue] = []
    for r0 in range(0, dl.num_regs, run):
        r, j = coords[r0]
        byte_col = em.divu(j, per_byte) if per_byte > 1 else j
        word = _load_codes(L, codes_sm, (r, byte_col), word_bytes)
        group = em.divu(j, per_scale) if per_scale > 1 else j
        scale = _load_f32(L, scales_sm, (r, group))
        zero = _load_f32(L, zeros_sm, (r, group)) if zeros_sm is not None else fixed_zero
        first_shift = em.mul(em.remu(j, per_byte), bits) if run == 1 and per_byte > 1 else None
        for e in range(run):
            if first_shift is not None:
                shift = first_shift
            else:
                shift = em.c(e * bits)
            code = em.val(arith.ShRUIOp(word, shift)) if (first_shift is not None or e) else word
            code = em.val(arith.AndIOp(code, mask))
            value = em.val(arith.UIToFPOp(code, f32))
            product = em.val(arith.MulfOp(em.val(arith.SubfOp(value, zero)), scale))
            regs.append(em.val(arith.TruncFOp(product, elt)))
    return Regs(res_ty, regs)


def _load_codes(L: LoweringContext, sm: Smem, idx: tuple[SSAValue, SSAValue], nbytes: int) -> SSAValue:
    """`nbytes` (1, 2 or 4) consecutive code bytes as one i32, the first byte lowest."""
    em = L.em
    addr = smem_addr(L, sm, idx)
    if nbytes == 4:
        return em.op(ptx.LdSharedOp(addr, i32, 1)).results[0]
    if nbytes == 2:
        lo = em.val(arith.ExtUIOp(em.op(ptx.LdSharedOp(addr, i8, 1)).results[0], i32))
        hi = em.val(arith.ExtUIOp(em.op(ptx.LdSharedOp(em.add(addr, 1), i8, 1)).results[0], i32))
        return em.val(arith.OrIOp(lo, em.val(arith.ShLIOp(hi, em.c(8)))))
    return em.val(arith.ExtUIOp(em.op(ptx.LdSharedOp(addr, i8, 1)).results[0], i32))


def _load_f32(L: LoweringContext, sm: Smem, idx: tuple[SSAValue, SSAValue]) -> SSAValue:
    em = L.em
    elt = sm.ty.element_type
    v = em.op(ptx.LdSharedOp(smem_addr(L, sm, idx), elt, 1)).results[0]
    return v if elt == f32 else em.val(arith.ExtFOp(v, f32))
