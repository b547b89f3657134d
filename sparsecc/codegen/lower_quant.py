"""`tt.dequantize` in registers: each thread builds the kept values it owns in the result's
layout straight from the codes and scales in shared memory.

sparse-gpu-encoding stages a dequantize's loaded operands through shared memory, so the
pipeline streams them with the other K-loop tiles (async copies overlapping the mma of earlier
iterations); their `ttg.local_load`s lower to nothing (the lowering keeps the buffer, see
handlers/shared.py), and here a thread reads, for each of its result elements (r, j), the byte holding
code j of row r, its nibble, the scale (and zero point) of its group, and computes
`(code - zero) * scale` rounded once to f16/bf16, the interpreter's value bit for bit: f16
pairs with f16x2 arithmetic on codes placed in the mantissa of 1024.0 (no conversions), bf16
in f32.
Operands that arrive in registers (a loop the pipeline left alone) are first stored row-major
into the op's scratch buffer, except the scales (and zero points) of a fragment dequantization
held in the wgmma accumulator layout (`analysis.dequantize.scales_in_registers`): each thread
already holds the scales of its own fragment rows, and reads them from its registers. A run of consecutive elements of one row shares one scale read
and one word of codes.

When the result is the dot's values operand itself (`#ttg.dot_op<{opIdx = 0, meta = 0}>`,
sparse-gpu-encoding's choice for fp16 results, `fragment_dequantize`), the values never touch
shared memory: a thread reads whole 16-byte chunks of code rows (all four threads of a quad
read the same chunk, one wavefront a warp), picks the bytes of its fragment registers with
`prmt` (thread t of an m16n8k32 A fragment holds kept columns 2t, 2t + 1 and 8 + 2t, 9 + 2t of
each 16-column step, rows g and g + 8) and builds each register's f16 pair from them.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import arith
from xdsl.dialects.builtin import FloatAttr, TensorType, f16, f32, i8, i16, i32
from xdsl.ir import SSAValue

from sparsecc.analysis.dequantize import scale_registers, scales_in_registers
from sparsecc.analysis.dtypes import esize
from sparsecc.analysis.layouts import contiguous_run, distributed
from sparsecc.analysis.shared_memory import dequantize_padded_bytes
from sparsecc.codegen.lower_base import Frag, LoweringContext, LoweringError, Regs, Smem
from sparsecc.codegen.lower_dot import warp_m_tiles
from sparsecc.codegen.lower_mem import smem_addr, store_shared
from sparsecc.dialects import ptx, tt
from sparsecc.dialects import ttg as ttgd


def _row_major(ty: TensorType) -> ttgd.MemDescType:
    return ttgd.MemDescType(ty.get_shape(), ty.element_type, ttgd.SharedEncodingAttr(1, 1, 1, (1, 0)), True)


def _buffers(L: LoweringContext, op: tt.DequantizeOp, scratch: SSAValue | None) -> list[Smem | Regs]:
    out: list[Smem | Regs] = []
    offset = 0
    stored = False
    for v in op.operands:
        got = L.get(v)
        ty = v.type
        assert isinstance(ty, TensorType)
        if isinstance(got, Smem):
            out.append(got)
        elif isinstance(got, Regs) and scales_in_registers(op, v):
            out.append(got)  # each thread holds the scales of its own fragment rows
        elif isinstance(got, Regs):
            if scratch is None:
                raise LoweringError("tt.dequantize: an operand in registers needs the op's scratch buffer")
            sm = Smem(L.em.add(scratch, offset), _row_major(ty))
            store_shared(L, sm, got)
            stored = True
            out.append(sm)
            offset += dequantize_padded_bytes(v)
        else:
            raise LoweringError("tt.dequantize: operands must be tensors in registers or shared memory")
    if stored:
        L.after_shared_write()
    L.before_shared_read()
    return out


@dataclass
class _Operands:
    """A dequantize's shapes and its operands' shared-memory buffers."""

    bits: int
    rows: int
    cols: int
    per_scale: int  # kept columns a scale covers
    codes: Smem
    scales: Smem | Regs
    zeros: Smem | Regs | None


def _operands(L: LoweringContext, op: tt.DequantizeOp, scratch: SSAValue | None) -> _Operands:
    res_ty, scales_ty = op.result.type, op.scales.type
    assert isinstance(res_ty, TensorType) and isinstance(scales_ty, TensorType)
    rows, cols = res_ty.get_shape()
    bufs = _buffers(L, op, scratch)
    if not isinstance(bufs[0], Smem) or (not isinstance(res_ty.encoding, ttgd.DotOperandEncodingAttr)
                                         and not all(isinstance(b, Smem) for b in bufs)):
        raise LoweringError("internal: tt.dequantize reads its codes, and outside a fragment dequantization "
                            "every operand, from shared memory")
    return _Operands(op.bits.value.data, rows, cols, cols // scales_ty.get_shape()[1], bufs[0], bufs[1],
                     bufs[2] if len(bufs) > 2 else None)


def lower_dequantize(L: LoweringContext, op: tt.DequantizeOp, scratch: SSAValue | None) -> Regs | Frag:
    """The op's result registers (see the module docstring)."""
    ops = _operands(L, op, scratch)
    if isinstance(op.result.type.encoding, ttgd.DotOperandEncodingAttr):
        return _fragments(L, op, ops)
    em = L.em
    bits, rows, cols, per_scale = ops.bits, ops.rows, ops.cols, ops.per_scale
    codes_sm, scales_sm, zeros_sm = ops.codes, ops.scales, ops.zeros
    per_byte = 8 // bits
    res_ty = op.result.type
    assert isinstance(res_ty, TensorType)
    elt = res_ty.element_type
    dl = distributed(res_ty.encoding, (rows, cols))
    coords = L.coords(dl)
    # a run of consecutive columns of one row: within one byte-aligned word and one scale group
    run = max(1, min(contiguous_run(dl, 1, 8), per_scale, 32 // bits))  # one 32-bit word at most
    word_bytes = run * bits // 8
    if word_bytes not in (1, 2, 4) or run % per_byte:
        run, word_bytes = 1, 1
    half_pairs = elt == f16 and run % 2 == 0 and run > 1
    if not half_pairs:  # the f32 path's constants
        fixed_zero = em.val(arith.ConstantOp(FloatAttr(float(1 << (bits - 1)), f32)))
        mask = em.c((1 << bits) - 1)
    regs: list[SSAValue] = []
    for r0 in range(0, dl.num_regs, run):
        r, j = coords[r0]
        byte_col = em.divu(j, per_byte) if per_byte > 1 else j
        word = _load_codes(L, codes_sm, (r, byte_col), word_bytes)
        group = em.divu(j, per_scale) if per_scale > 1 else j
        if half_pairs:
            regs += _f16_pairs(L, word, run, bits, scales_sm, zeros_sm, (r, group))
            continue
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
    narrow = i16 if nbytes == 2 else i8
    return em.val(arith.ExtUIOp(em.op(ptx.LdSharedOp(addr, narrow, 1)).results[0], i32))


# f16 pairs without conversions: a code c placed in the low mantissa bits of 0x6400 (1024.0)
# is the half 1024 + c, exact for c < 1024; subtracting 1024 + zero leaves the integer c - zero
# exactly, and one f16x2 multiply rounds (c - zero) * scale once, as the f32 path does.
_NIBBLE_PAIR = ("shl.b32 %dq1, %dq0, 12;\n"
                "lop3.b32 %dq0, %dq0, 0xF, 0x64006400, 0xEA;\n"
                "lop3.b32 %dq0, %dq1, 0xF0000, %dq0, 0xEA;\n")
_PAIR_TAIL = "sub.f16x2 %dq0, %dq0, $3;\nmul.rn.f16x2 %dq0, %dq0, $4;\nmov.b32 {$0, $1}, %dq0;\n}"


def _pair_template(bits: int, e: int) -> str:
    """PTX for kept values e, e + 1 of a code word ($2) with {1024 + zero} x2 ($3) and
    {scale} x2 ($4): two f16 results ($0, $1)."""
    head = "{\n.reg .b32 %dq<2>;\n"
    if bits == 8:
        sel = 0x4040 | (e + 1) << 8 | e
        return head + f"prmt.b32 %dq0, $2, 0x64646464, {sel:#06x};\n" + _PAIR_TAIL
    shift = f"shr.b32 %dq0, $2, {4 * e};\n" if e else "mov.b32 %dq0, $2;\n"
    return head + shift + _NIBBLE_PAIR + _PAIR_TAIL


def _zeros_and_scales(L: LoweringContext, bits: int, scales_sm: Smem | Regs, zeros_sm: Smem | Regs | None,
                      idx: tuple[SSAValue, SSAValue] | int, nibbles: bool = False) -> tuple[SSAValue, SSAValue]:
    """{1024 + zero} x2 and {scale} x2 (f16 pairs in b32) of the group at `idx`: (row, group
    column) in shared memory, or the register index where the operands are in registers.
    With `nibbles`, the first is {1024 + zero, 64 + zero}, for _W4_CHUNK's pairs."""
    em = L.em

    def element(src: Smem | Regs) -> SSAValue:
        if isinstance(src, Regs):
            assert isinstance(idx, int)
            return src.regs[idx]
        assert isinstance(idx, tuple)
        return em.op(ptx.LdSharedOp(smem_addr(L, src, idx), f16, 1)).results[0]

    scale = element(scales_sm)
    scales = em.op(ptx.AsmOp("mov.b32 $0, {$1, $1};", [scale], [i32], pure=True)).results[0]
    if zeros_sm is None:
        biased = 0x6400 + (1 << (bits - 1))
        return em.c(NIBBLE_FIXED_OFFSETS if nibbles else biased << 16 | biased), scales
    zero = element(zeros_sm)
    if nibbles:
        return em.op(ptx.AsmOp(NIBBLE_OFFSETS, [zero], [i32], pure=True)).results[0], scales
    zeros = em.op(ptx.AsmOp("{\n.reg .b16 %zq<2>;\nmov.b16 %zq0, 0x6400;\nadd.rn.f16 %zq1, $1, %zq0;\n"
                            "mov.b32 $0, {%zq1, %zq1};\n}", [zero], [i32], pure=True)).results[0]
    return zeros, scales


def _f16_pairs(L: LoweringContext, word: SSAValue, run: int, bits: int, scales_sm: Smem,
               zeros_sm: Smem | None, idx: tuple[SSAValue, SSAValue]) -> list[SSAValue]:
    em = L.em
    zeros, scales = _zeros_and_scales(L, bits, scales_sm, zeros_sm, idx)
    out: list[SSAValue] = []
    for e in range(0, run, 2):
        pair = em.op(ptx.AsmOp(_pair_template(bits, e), [word, zeros, scales], [f16, f16], pure=True))
        out += list(pair.results)
    return out


# byte t of each word of a 16-byte chunk of 4-bit codes (w0..w3 = $4..$7, $8 = the selector
# t | t << 8, which puts byte t in bytes 0 and 2) as {1024 + lo nibble, 64 + hi nibble} ($0..$3):
# one prmt and one lop3 a pair. The high nibble stays in bits 4-7 of its half, which under the
# exponent of 64.0 (0x5400) weigh 1/16 each; subtracting {1024 + zero, 64 + zero} leaves both
# halves `code - zero` exactly.
_W4_CHUNK = ("{\n.reg .b32 %fq<4>;\n"
             + "".join(f"prmt.b32 %fq{w}, ${4 + w}, ${4 + w}, $8;\n"
                       f"lop3.b32 ${w}, %fq{w}, 0x00F0000F, 0x54006400, 0xEA;\n" for w in range(4))
             + "}")
# bytes 2t, 2t + 1 and 8 + 2t, 9 + 2t of a 16-byte chunk of 8-bit codes (w0..w3 = $2..$5, $6 =
# the selector 2t | (2t + 1) << 4) as the f16 pairs 1024 + code ($0, $1)
_W8_CHUNK = ("{\n.reg .b32 %fq<2>;\n"
             "prmt.b32 %fq0, $2, $3, $6;\nprmt.b32 %fq1, $4, $5, $6;\n"
             "prmt.b32 $0, %fq0, 0x64646464, 0x4140;\nprmt.b32 $1, %fq1, 0x64646464, 0x4140;\n}")
CHUNK_TEMPLATE = {4: _W4_CHUNK, 8: _W8_CHUNK}
"""Per code width: the PTX that turns one 16-byte chunk (4 words) and the thread's selector into
its f16 pairs (1024 + code each half for 8-bit codes, {1024 + lo, 64 + hi} for 4-bit ones)."""
CHUNK_SELECTOR = {4: (257, 0), 8: (34, 16)}
"""Per code width: the thread's prmt selector is t * a + b for t = lane % 4 (t | t << 8 for
4-bit codes, 2t | (2t + 1) << 4 for 8-bit ones)."""
CHUNK_PLACES = {4: ((0, 0), (0, 1), (1, 0), (1, 1)), 8: ((0, 0), (0, 1))}
"""Per code width: where each f16 pair of a chunk goes in the A fragments, as (16-column step
within the chunk, position): position 0 is register `half` (kept columns 2t, 2t + 1 of the
step), 1 register `2 + half` (columns 8 + 2t, 9 + 2t); a chunk of 4-bit codes spans two steps."""
_SCALE_PAIR = "sub.f16x2 $0, $1, $2;\nmul.rn.f16x2 $0, $0, $3;"
_ZERO_PAIR = "sub.f16x2 $0, $1, $2;"
"""`code - zero` alone, for a dequantization whose dot applies the scales (`ttg.scale_after_dot`)."""
NIBBLE_FIXED_OFFSETS = 0x54806408
"""{1032.0, 72.0} as an f16x2 word: what _W4_CHUNK's pairs subtract for the fixed zero point 8."""
NIBBLE_OFFSETS = ("{\n.reg .b16 %zq<4>;\nmov.b16 %zq2, 0x6400;\nmov.b16 %zq3, 0x5400;\n"
                  "add.rn.f16 %zq0, $1, %zq2;\nadd.rn.f16 %zq1, $1, %zq3;\nmov.b32 $0, {%zq0, %zq1};\n}")
"""{1024 + zero, 64 + zero} ($0) from an f16 zero point ($1): what _W4_CHUNK's pairs subtract."""
_SCALE_F32 = "{\n.reg .b16 %sq<2>;\nmov.b32 {%sq0, %sq1}, $1;\ncvt.f32.f16 $0, %sq0;\n}"
"""The f32 scale of a {scale} x2 pair."""


def _fragments(L: LoweringContext, op: tt.DequantizeOp, ops: _Operands) -> Frag:
    """The A fragments (load_frag's keys: (i, kk) -> 4 b32) of the dot's values, dequantized
    from the codes in shared memory (module docstring).

    For a wgmma (`quant_wgmma`) the fragments are wgmma's register A, read asynchronously: no
    instruction may write them until a `wgmma.wait_group` retired every group that reads them.
    In a K loop the body writes the same PTX registers each trip, so the drain below comes
    first. With one dot per body (`frag_keep` 0) that is `wait_group 0`: step j+1 dequantizes
    only after group j landed, and the tensor cores idle meanwhile. Unrolled by two
    (`wgmma_unroll`, part of `linear_config.QUANT_WGMMA_RING`; `frag_keep` 1), dots 2i and
    2i+1 have register sets of their own, R0 and R1: before dot j+1 writes R_{(j+1) % 2}, the
    wait keeps one group, g_j (reading R_{j % 2} and its B slot), and retires g_{j-1}, the last
    reader of R_{(j+1) % 2}; so step j+1 is dequantized while g_j runs (issue 26; checked on the
    PTX by test/python/codegen/test_wgmma_ring_in_flight.py)."""
    em = L.em
    res_ty = op.result.type
    assert isinstance(res_ty, TensorType)
    enc = res_ty.encoding
    assert isinstance(enc, ttgd.DotOperandEncodingAttr) and isinstance(enc.parent, ttgd.MmaEncodingAttr)
    bits, cols, per_scale = ops.bits, ops.cols, ops.per_scale
    codes_enc = ops.codes.ty.encoding
    assert isinstance(codes_enc, ttgd.SharedEncodingAttr)
    if codes_enc.max_phase > 1 and codes_enc.vec * esize(ops.codes.ty.element_type) < 16:
        raise LoweringError("internal: tt.dequantize's codes must keep 16-byte chunks contiguous in shared memory")
    if enc.parent.version_major == 3:
        L.wgmma_drain(keep=L.groups.frag_keep)  # wgmma reads A registers asynchronously
    rep, tiles = warp_m_tiles(L, enc.parent, ops.rows)
    g, t = em.divu(L.ids.lane, 4), em.remu(L.ids.lane, 4)
    scale, offset = CHUNK_SELECTOR[bits]
    sel = em.add(em.mul(t, scale), offset)
    per_chunk = 16 * 8 // bits  # kept columns a 16-byte chunk holds: 32 (two k32 steps) or 16
    groups: dict[tuple[int, int, int], tuple[SSAValue, SSAValue]] = {}

    in_regs = None
    if ops.zeros is not None and isinstance(ops.zeros, Regs) != isinstance(ops.scales, Regs):
        raise LoweringError("internal: tt.dequantize's scales and zero points must both be in registers or neither")
    if isinstance(ops.scales, Regs):
        in_regs = scale_registers(enc.parent, ops.rows, ops.scales.ty.get_shape()[1])
        if in_regs is None:
            raise LoweringError("internal: tt.dequantize's scales are in registers no thread can read its own from")

    def zeros_and_scales(i: int, half: int, row: SSAValue, col: int) -> tuple[SSAValue, SSAValue]:
        key = (i, half, col // per_scale)
        if key not in groups:
            where = in_regs[key] if in_regs is not None else (row, em.c(col // per_scale))
            groups[key] = _zeros_and_scales(L, bits, ops.scales, ops.zeros, where, nibbles=bits == 4)
        return groups[key]

    after_dot = ttgd.SCALE_AFTER_DOT in op.attributes
    if after_dot and enc.parent.version_major != 2:
        raise LoweringError("internal: ttg.scale_after_dot on a dequantization that feeds a wgmma dot")
    frags: dict[tuple[int, int], list[SSAValue]] = {}
    for i in range(rep):
        for half in (0, 1):
            row = em.add(em.add(em.mul(tiles[i], 16), g), 8 * half)
            for c in range(cols // per_chunk):
                words = list(em.op(ptx.LdSharedOp(smem_addr(L, ops.codes, (row, em.c(16 * c))), i32, 4)).results)
                pairs = em.op(ptx.AsmOp(CHUNK_TEMPLATE[bits], [*words, sel], [i32] * (16 // bits),
                                        pure=True)).results
                for pair, (dk, pos) in zip(pairs, CHUNK_PLACES[bits]):
                    kk = c * (per_chunk // 16) + dk
                    zeros, scales = zeros_and_scales(i, half, row, 16 * kk + 8 * pos)
                    template, args = (_ZERO_PAIR, [pair, zeros]) if after_dot else (_SCALE_PAIR, [pair, zeros, scales])
                    value = em.op(ptx.AsmOp(template, args, [i32], pure=True)).results[0]
                    frags.setdefault((i, kk), [None] * 4)[half + 2 * pos] = value
    return Frag(res_ty, frags, _row_scales(L, groups, list(frags), per_scale) if after_dot else None)


def _row_scales(L: LoweringContext, groups: dict[tuple[int, int, int], tuple[SSAValue, SSAValue]],
                keys: list[tuple[int, int]], per_scale: int) -> dict[tuple[int, int], tuple[SSAValue, SSAValue]]:
    """Per fragment (m16 tile i, K step kk) the f32 scales of the thread's rows g and g + 8, for
    a dot that applies them (`ttg.scale_after_dot`): one tuple a scale group, so that the dot
    sees where a group ends. Every step lies in one group (the pass checked per_scale % 16)."""
    em = L.em
    by_group: dict[tuple[int, int], tuple[SSAValue, SSAValue]] = {}
    out = {}
    for i, kk in keys:
        group = 16 * kk // per_scale
        if (i, group) not in by_group:
            by_group[(i, group)] = tuple(
                em.op(ptx.AsmOp(_SCALE_F32, [groups[(i, h, group)][1]], [f32], pure=True)).results[0]
                for h in (0, 1))
        out[(i, kk)] = by_group[(i, group)]
    return out


def _load_f32(L: LoweringContext, sm: Smem, idx: tuple[SSAValue, SSAValue]) -> SSAValue:
    em = L.em
    elt = sm.ty.element_type
    v = em.op(ptx.LdSharedOp(smem_addr(L, sm, idx), elt, 1)).results[0]
    return v if elt == f32 else em.val(arith.ExtFOp(v, f32))
