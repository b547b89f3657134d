"""Dot operands and tensor-core ops: ldmatrix fragment loads and mma.sp / mma.sync.

Fragment keys (analysis/layouts.py documents the register layouts):
- A (values of a sparse A, or a dense A): (i, kk) -> 4 b32, i = the warp's i-th m16 tile,
  kk = 16-column step of the stored tile (for values: one m16n8k32 step).
- B: (j, k16) -> 2 b32, j = the warp's j-th n8 tile, k16 = 16-row step of K.
- metadata: (i, q) -> [b32], q = 64-word group of the metadata tile (ldmatrix.trans, seed
  003's trick). Which steps a register feeds, with which sparsity selector, and which words it
  holds is the format's data (`formats.base.MetaFragment` of the dot's `Instruction`): for
  16-bit and tf32 values k32/k16 steps 2q and 2q + 1 with selectors 0 and 1, for 8-bit ones
  the one k64 step q with selector 0, from the same words in another order (permuted rows).

8-bit operands (fp8 e4m3/e5m2, int8) are read as 16-bit pairs along K (ptx.py's docstring):
their A and K-major B tiles give the same fragments as a 16-bit tile half as wide, so the keys
count 16-bit columns, and one k64 step takes the registers of one 16-bit k32 step.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects import arith
from xdsl.dialects.builtin import FloatAttr, TensorType, f32, i64
from xdsl.ir import Attribute, SSAValue

from sparsecc import formats
from sparsecc.analysis.dtypes import esize
from sparsecc.analysis.layouts import distributed, mma_warp_coords, stored_coords
from sparsecc.analysis.swizzle import mode
from sparsecc.codegen.lower_base import (
    Frag,
    LoweringContext,
    LoweringError,
    Regs,
    Smem,
    SmemOperand,
)
from sparsecc.codegen.lower_mem import smem_offset
from sparsecc.dialects import ptx
from sparsecc.dialects import ptx_wgmma as wg
from sparsecc.dialects.ttg import DotOperandEncodingAttr, MmaEncodingAttr, SharedEncodingAttr
from sparsecc.formats import Instruction, MetaFragment


def _warp_tile(L: LoweringContext, mma: MmaEncodingAttr, dim: int, rep: int, tiles: int) -> list[SSAValue]:
    """Tile index (in units of 16 rows / 8 cols) of the warp's rep-th tile along dim, mod tiles."""
    em = L.em
    w = mma.warps_per_cta[dim]
    t = mma_warp_coords(mma)[dim]
    wid = em.term_sum((t,), L.ids.lane, L.ids.warp)
    if w * rep > tiles:
        return [em.remu(em.add(wid, r * w), tiles) for r in range(rep)]
    return [em.add(wid, r * w) for r in range(rep)]


def _py_tiles(mma: MmaEncodingAttr, dim: int, rep: int, tiles: int, warp: int) -> list[int]:
    """Python twin of _warp_tile for one warp id."""
    w = mma.warps_per_cta[dim]
    wid = mma_warp_coords(mma)[dim].eval(0, warp)
    if w * rep > tiles:
        return [(wid + r * w) % tiles for r in range(rep)]
    return [wid + r * w for r in range(rep)]


def _ldsm_offsets(sm: Smem, py_rc: list, n: int, num_warps: int) -> tuple[int, ...]:
    """Element offset each (warp, lane) passes to an ldmatrix.x{n} (Python evaluation)."""
    enc = sm.ty.encoding
    assert isinstance(enc, SharedEncodingAttr)
    shape = sm.ty.get_shape()
    out = []
    for warp in range(num_warps):
        for lane in range(32):
            mat = lane // 8 if lane // 8 < n else 0  # lanes past the matrices: as _ldmatrix
            row, col = py_rc[mat](lane % 8, warp)
            out.append(enc.swizzled_offset(*stored_coords(enc, row, col, shape)))
    return tuple(out)


def _ldmatrix(L: LoweringContext, sm: Smem, rows_cols: list, n: int, trans: bool, py_rc: list | None = None) -> list[SSAValue]:
    """ldmatrix.x{n}: `rows_cols(matrix, r)` -> (row, col) of matrix row r's first element.

    With `py_rc` (the same map in Python, (r, warp) -> (row, col)), an address whose offset
    differs from an earlier ldmatrix of the same buffer type by one constant for every thread
    reuses that offset register plus an immediate: few live address registers in the loop.
    """
    em = L.em
    enc = sm.ty.encoding
    assert isinstance(enc, SharedEncodingAttr)
    shape = sm.ty.get_shape()
    esz = esize(sm.ty.element_type)
    if py_rc is not None:
        offs = _ldsm_offsets(sm, py_rc, n, L.cfg.num_warps)
        refs = L.caches.ldsm_refs.setdefault((sm.ty, id(em.block)), [])
        for ref_offs, ref_reg in refs:
            delta = offs[0] - ref_offs[0]
            if all(a - b == delta for a, b in zip(offs, ref_offs)):
                addr = em.add(em.add(sm.addr, ref_reg), delta * esz)
                return list(em.op(ptx.LdMatrixOp(addr, n, trans=trans)).results)
    mat = em.divu(L.ids.lane, 8) if n > 1 else em.c(0)
    r = em.remu(L.ids.lane, 8)
    if n == 1:
        row, col = rows_cols[0](r)
    else:
        # choose the (row, col) of matrix `mat` with selects (the matrices differ by constants)
        cands = [rc(r) for rc in rows_cols]
        row, col = cands[0]
        for k in range(1, n):
            is_k = em.cmp("eq", mat, k)
            row = em.select(is_k, cands[k][0], row)
            col = em.select(is_k, cands[k][1], col)
    off = em.mul(smem_offset(L, enc, *stored_coords(enc, row, col, shape)), esz)
    if py_rc is not None:
        refs.append((offs, off))
    addr = em.add(sm.addr, off)
    op = em.op(ptx.LdMatrixOp(addr, n, trans=trans))
    return list(op.results)


def warp_m_tiles(L: LoweringContext, mma: MmaEncodingAttr, rows: int) -> tuple[int, list[SSAValue]]:
    """How many m16 tiles of an A operand of `rows` rows each warp holds, and their indices."""
    rep = max(1, rows // (16 * mma.warps_per_cta[0]))
    return rep, _warp_tile(L, mma, 0, rep, rows // 16)


def _elements(units: int, esz: int) -> int:
    """16-bit units along a stored row -> elements of `esz` bytes (ldmatrix moves 16-bit units)."""
    return units * 2 // esz


def load_frag(L: LoweringContext, sm: Smem, ty: TensorType) -> Frag | SmemOperand:
    """The registers (or, for wgmma, the shared buffer) of the dot operand `ty` held in `sm`:
    A values, B, or the metadata (the keys in the module docstring)."""
    enc = ty.encoding
    assert isinstance(enc, DotOperandEncodingAttr)
    mma = enc.parent
    assert isinstance(mma, MmaEncodingAttr)
    if mma.version_major == 3:
        if enc.op_idx == 1:
            return SmemOperand(sm, ty)  # wgmma reads B from shared memory through a descriptor
        if enc.meta == 0 and L.cfg.a_from_shared and _canonical_k_major(sm) is not None:
            return SmemOperand(sm, ty)  # and A values too, when they sit in a canonical layout
        if enc.meta == -1 and _canonical_k_major(sm) is not None:
            # a dense A always, as Triton does: in registers a 128x64 tile would take 32 more
            # registers per thread beside the accumulators (ptxas spilled at 128x128, 4 warps)
            return SmemOperand(sm, ty)
        # A and metadata registers are read by wgmma asynchronously; a loop body rewrites the
        # same PTX registers every iteration, so the group that read them must be done first
        # (with an unrolled body that is the group before the last one)
        L.wgmma_drain(keep=L.groups.frag_keep)
    if len(sm.ty.get_shape()) != 2:
        raise LoweringError("ttg.local_load to #ttg.dot_op needs a 2-D memdesc")
    if esize(sm.ty.element_type) not in (1, 2, 4):
        raise LoweringError(f"dot operands must be 32-, 16- or 8-bit, got {sm.ty.element_type}")
    L.before_shared_read()
    if enc.meta == 1:
        return Frag(ty, _meta_frags(L, sm, mma, _meta_fragment(sm, enc, mma)))
    if enc.op_idx == 0:
        return Frag(ty, _a_frags(L, sm, mma))
    return Frag(ty, _b_frags(L, sm, mma))


def _meta_fragment(sm: Smem, enc: DotOperandEncodingAttr, mma: MmaEncodingAttr) -> MetaFragment:
    """How the instruction of this dot fills its metadata registers, as the format states it:
    the metadata's element type names the format (NV24 i16, NV12 i32), kWidth (values per b32)
    the width of the values, the mma version the instruction (mma.sp or wgmma.sp)."""
    fmt = formats.of_dot_metadata(sm.ty.element_type)
    bits = 32 // enc.k_width
    instr = fmt.instruction(bits, warpgroup=mma.version_major == 3)
    if instr is None:
        raise LoweringError(f"no {fmt.name} sparse tensor-core instruction takes {bits}-bit values")
    return instr.meta


_MATRIX_ROW_BITS = 3
"""Bits of an ldmatrix matrix row index (8 rows)."""


def _meta_frags(L: LoweringContext, sm: Smem, mma: MmaEncodingAttr, meta: MetaFragment) -> dict:
    """The metadata registers, (i, q) -> [b32]: `ldmatrix.trans`, one 8x8 matrix of 16-bit
    words per m16 tile i and 64-word group q, up to four matrices per instruction."""
    mb, bk = sm.ty.get_shape()
    units = esize(sm.ty.element_type) // 2  # 16-bit words per element (NV12 stores them in int32 pairs)
    bk = bk * units  # in 16-bit words
    rep = max(1, (mb * 16) // (16 * mma.warps_per_cta[0]))
    tiles = _warp_tile(L, mma, 0, rep, mb)
    keys = [(i, q) for i in range(rep) for q in range((bk + 63) // 64)]
    frags: dict[tuple[int, int], list[SSAValue]] = {}
    pos = 0
    while pos < len(keys):
        left = len(keys) - pos
        n = 4 if left >= 4 else (2 if left >= 2 else 1)
        chunk = keys[pos:pos + n]
        pos += n
        maps = [_meta_rows(L, mma, meta, tiles[i], (rep, mb, i), q, min(8, (bk - 64 * q) // 8), units)
                for i, q in chunk]
        regs = _ldmatrix(L, sm, [m[0] for m in maps], n, trans=True, py_rc=[m[1] for m in maps])
        for kidx, key in enumerate(chunk):
            frags[key] = [regs[kidx]]
    return frags


def _meta_rows(L: LoweringContext, mma: MmaEncodingAttr, meta: MetaFragment, tile: SSAValue,
               py_tile: tuple[int, int, int], q: int, rows: int, units: int) -> tuple[Callable, Callable]:
    """(IR, Python) maps of ldmatrix row r -> (row, column) of the metadata tile for group q of
    tile `tile` (`py_tile`: _py_tiles' rep, tiles, index): the row's words start
    `meta.word_offset(r)` words into the group. A group with fewer than 8 rows of words (the
    tile's last, when K ends within it) reads its rows again past them."""
    em = L.em
    rep, mb, i = py_tile

    def rc(r: SSAValue) -> tuple[SSAValue, SSAValue]:
        r = em.remu(r, rows) if rows < 8 else r
        col: SSAValue | None = None
        for lo, bits, words in meta.row_fields:
            x = em.divu(r, 1 << lo) if lo else r
            x = em.remu(x, 1 << bits) if lo + bits < _MATRIX_ROW_BITS else x
            term = em.mul(x, words)
            col = term if col is None else em.add(col, term)
        assert col is not None
        col = em.add(col, 64 * q)
        return tile, (em.divu(col, units) if units > 1 else col)

    def py(r: int, warp: int) -> tuple[int, int]:
        r = r % rows if rows < 8 else r
        return _py_tiles(mma, 0, rep, mb, warp)[i], (meta.word_offset(r) + 64 * q) // units
    return rc, py


def _a_frags(L: LoweringContext, sm: Smem, mma: MmaEncodingAttr) -> dict:
    """A's registers (values of a sparse A, or a dense A), (i, kk) -> 4 b32: `ldmatrix.x4` of
    the four 8x8 quadrants of each 16x16 block of 16-bit units."""
    em = L.em
    esz = esize(sm.ty.element_type)
    m, ka = sm.ty.get_shape()
    if m % 16 or ka % _elements(16, esz):
        raise LoweringError(f"dot operand A tile {m}x{ka} must be a multiple of 16x{_elements(16, esz)}")
    rep = max(1, m // (16 * mma.warps_per_cta[0]))
    tiles = _warp_tile(L, mma, 0, rep, m // 16)
    frags: dict[tuple[int, int], list[SSAValue]] = {}
    for i in range(rep):
        for kk in range(ka // _elements(16, esz)):
            fns, pys = [], []
            for j in range(4):
                def rc(r, j=j, i=i, kk=kk):
                    return (em.add(em.mul(tiles[i], 16), em.add(r, 8 * (j % 2))),
                            em.c(_elements(16 * kk + 8 * (j // 2), esz)))

                def py(r, warp, j=j, i=i, kk=kk):
                    return (_py_tiles(mma, 0, rep, m // 16, warp)[i] * 16 + r + 8 * (j % 2),
                            _elements(16 * kk + 8 * (j // 2), esz))
                fns.append(rc)
                pys.append(py)
            frags[(i, kk)] = _ldmatrix(L, sm, fns, 4, trans=False, py_rc=pys)
    return frags


def _b_frags(L: LoweringContext, sm: Smem, mma: MmaEncodingAttr) -> dict:
    """B's registers, (j, k16) -> 2 b32: ldmatrix of 8x8 blocks, up to four (two k16 steps)
    per instruction.

    An N-major tile (rows of N) is read transposed: matrix row r = 8 columns at k + r. A
    K-major tile (order [0, 1], stored as N rows of K) already has the fragment's shape:
    matrix row r = 8 k's of column n + r, plain ldmatrix."""
    em = L.em
    esz = esize(sm.ty.element_type)
    k, n = sm.ty.get_shape()
    if k % _elements(16, esz) or n % 8:
        raise LoweringError(f"dot operand B tile {k}x{n} must be a multiple of {_elements(16, esz)}x8")
    rep = max(1, n // (8 * mma.warps_per_cta[1]))
    tiles = _warp_tile(L, mma, 1, rep, n // 8)
    kmajor = tuple(sm.ty.encoding.order) == (0, 1)
    if esz != 2 and not kmajor:
        raise LoweringError(
            f"internal error: a {sm.ty.element_type} B operand staged N-major (ldmatrix transposes "
            "16-bit elements only; sparse-gpu-encoding stages 8-bit and tf32 B K-major)")
    k16s = k // _elements(16, esz)
    frags: dict[tuple[int, int], list[SSAValue]] = {}
    for j in range(rep):
        for k32 in range(0, k16s, 2):
            nmat = 4 if k32 + 1 < k16s else 2
            fns, pys = [], []
            for mt in range(nmat):
                def rc(r, mt=mt, j=j, k32=k32):
                    if kmajor:
                        return em.c(_elements(16 * k32 + 8 * mt, esz)), em.add(em.mul(tiles[j], 8), r)
                    return em.add(r, 16 * k32 + 8 * mt), em.mul(tiles[j], 8)

                def py(r, warp, mt=mt, j=j, k32=k32):
                    col = _py_tiles(mma, 1, rep, n // 8, warp)[j] * 8
                    return (_elements(16 * k32 + 8 * mt, esz), col + r) if kmajor else (r + 16 * k32 + 8 * mt, col)
                fns.append(rc)
                pys.append(py)
            regs = _ldmatrix(L, sm, fns, nmat, trans=not kmajor, py_rc=pys)
            frags[(j, k32)] = regs[0:2]
            if nmat == 4:
                frags[(j, k32 + 1)] = regs[2:4]
    return frags


def _ab_type(elt: Attribute) -> str:
    """The PTX operand type of a sparse dot of `elt` elements (ptx.mma_ab_type's map)."""
    t = ptx.mma_ab_type(elt)
    if t is None:
        raise LoweringError(f"tt.dot: operands must be f16, bf16, f8E4M3FN, f8E5M2 or i8, got {elt}")
    return t


def _sparse_instruction(a_elt: Attribute, meta: Frag, warpgroup: bool) -> Instruction:
    """The format's instruction for a sparse dot of `a_elt` values and metadata `meta`."""
    fmt = formats.of_dot_metadata(meta.ty.element_type)
    instr = fmt.instruction(ptx.bit_width(a_elt), warpgroup)
    if instr is None:
        raise LoweringError(f"tt.dot: no {fmt.name} sparse tensor-core instruction takes {a_elt} values")
    return instr


_SWIZZLE_NAME = {width: name for name, width in wg.SWIZZLE_BYTES.items() if name != "none"}
"""Row width in bytes of a swizzled colBlock layout -> the descriptor's swizzle mode."""


def _canonical_k_major(sm: Smem) -> int | None:
    """Row width W in bytes when `sm` (rows x K values) is wgmma's canonical K-major layout with
    a W-byte swizzle: rows of exactly W bytes, 16-byte chunks XORed with (row / (128 / W)) mod
    W / 16 (mma_swizzle's choice for such rows), or longer rows cut into 128-byte column blocks
    (dot_staging.kmajor_col_blocks: W = 128, the block's width); None otherwise."""
    enc = sm.ty.encoding
    if not isinstance(enc, SharedEncodingAttr) or enc.meta_pack or tuple(enc.order) != (1, 0):
        return None
    esz = esize(sm.ty.element_type)
    width = (enc.col_block or sm.ty.get_shape()[1]) * esz
    if enc.col_block and width != 128:
        return None
    if width not in _SWIZZLE_NAME or (enc.vec * esz, enc.per_phase, enc.max_phase) != mode(width):
        return None
    return width


def _kmajor_step_offset(step_bytes: int, width: int, rows: int) -> int:
    """Byte offset, in a K-major tile of `rows` rows stored as column blocks of `width` bytes
    (rows x width each, one after the other; a single block when K fits one), of the K step
    starting `step_bytes` into a row: its block's start plus its offset inside the block. A
    step never straddles two blocks (32 bytes of K a step, blocks of 32/64/128 bytes), so
    the descriptor's start address alone names it and the hardware applies the swizzle."""
    block, within = divmod(step_bytes, width)
    return block * rows * width + within


def _wgmma_a_desc(L: LoweringContext, a: SmemOperand, rep_m: int, steps: int) -> dict[tuple[int, int], SSAValue]:
    """The i64 descriptor of A's m64 block (i, s) of K step s for this thread's warpgroup: rows
    64 * warpgroup + 16 * num_warps * i (the rows the accumulator layout gives the warpgroup's
    four warps), K-major, SBO = 8 rows, the step's 32 bytes of values (a k32 step of 16-bit
    values, a k64 step of 8-bit ones) added to the start address (past the column blocks
    before the step's, for rows longer than 128 bytes)."""
    em = L.em
    width = _canonical_k_major(a.sm)
    assert width is not None
    rows = a.sm.ty.get_shape()[0]
    bits = wg.smem_desc_bits(0, lbo=rows * width, sbo=8 * width, swizzle=_SWIZZLE_NAME[width])
    const = em.c(wg.as_signed64(bits), i64)
    group_base = em.add(a.sm.addr, em.mul(em.divu(L.ids.warp, 4), 64 * width))
    return {(i, s): _desc(L, em.add(group_base, 16 * L.cfg.num_warps * i * width
                                    + _kmajor_step_offset(32 * s, width, rows)), const)
            for i in range(rep_m) for s in range(steps)}


def _desc(L: LoweringContext, addr: SSAValue, const: SSAValue) -> SSAValue:
    """A matrix descriptor: the address field ((addr >> 4) & 0x3FFF) or-ed into the constant
    fields (LBO, SBO, swizzle; wg.smem_desc_bits with address 0)."""
    em = L.em
    field = em.band(em.divu(addr, 16), em.c(0x3FFF))
    return em.val(arith.OrIOp(em.ext64(field, signed=False), const))


def _desc_past(L: LoweringContext, desc: SSAValue, offset: int) -> SSAValue:
    """The descriptor of the address `offset` bytes past `desc`'s: `desc + offset / 16` (one
    add of a constant instead of a shift, a mask and an or per wgmma step). Exact: both
    addresses lie in the CTA's shared memory (under 2**18 bytes: 228 KiB on sm_90), so the
    address field (addr >> 4) & 0x3FFF of the second is the first's plus offset / 16 with no
    carry out of its 14 bits, and `offset` is a multiple of 16 (descriptor addresses are
    16-byte aligned)."""
    if offset % 16:
        raise LoweringError(f"internal error: a wgmma step {offset} bytes into a tile is not 16-byte aligned")
    return L.em.add(desc, offset // 16)


def _wgmma_b_desc(b: SmemOperand, kstep: int) -> tuple[int, Callable[[int], int], int]:
    """(descriptor bits without the address, K step s -> its byte offset in the tile, imm-trans-b)
    of B."""
    enc = b.sm.ty.encoding
    assert isinstance(enc, SharedEncodingAttr)
    k, n = b.sm.ty.get_shape()
    esz = esize(b.sm.ty.element_type)
    if tuple(enc.order) == (0, 1):  # K-major: N rows of K, each row (or column block) one atom
        width = (enc.col_block or k) * esz
        if width not in _SWIZZLE_NAME or (enc.vec * esz, enc.per_phase, enc.max_phase) != mode(width):
            raise LoweringError(f"a K-major wgmma B must be N rows of 32/64/128-byte swizzle atoms, got {enc}")
        bits = wg.smem_desc_bits(0, lbo=n * width, sbo=8 * width, swizzle=_SWIZZLE_NAME[width])

        # column block (N rows of one atom each), then within it
        return bits, lambda s: _kmajor_step_offset(s * kstep * esz, width, n), 0
    if esz != 2:
        raise LoweringError(f"wgmma reads {b.sm.ty.element_type} B K-major only (order [0, 1]), got {enc}")
    width = enc.col_block * esz
    if width not in _SWIZZLE_NAME:
        raise LoweringError(f"wgmma B must be staged in a 32/64/128-byte swizzled colBlock layout, got {enc}")
    # MN-major canonical layout: LBO = from one column block to the next, SBO = 8 K rows.
    bits = wg.smem_desc_bits(0, lbo=k * width, sbo=8 * width, swizzle=_SWIZZLE_NAME[width])
    return bits, lambda s: s * kstep * width, 1


def lower_wgmma(L: LoweringContext, a: Frag | SmemOperand, b: SmemOperand, c: Regs, meta: Frag, result_ty: TensorType,
                defer_wait: bool = False, scale_d: SSAValue | None = None) -> Regs:
    """A sparse tt.dot as sm_90a `wgmma.mma_async.sp.m64nNk32`s.

    Metadata comes in registers (the per-warp mma.sp layout); A values in registers too (the
    register-A form shares that layout) or, when staged in a canonical K-major swizzled layout
    (CompileOptions.wgmma_a_smem), through a descriptor; B is read through a descriptor. Each
    warpgroup issues, per k32 step, one wgmma per m64 block it owns, then commits. Without
    `defer_wait` it waits for the group, so the accumulators are ordinary values after the
    dot. With it (a K-loop accumulation, see analysis.kloops.only_feeds_next_iteration) the group stays
    in flight: the next iteration's barrier and fragment loads overlap it, and the lowering
    drains it (`wgmma.wait_group 0`) before the next shared-memory write and after the loop.
    """
    em = L.em
    m, n = result_ty.get_shape()
    rep_m = m // (16 * L.cfg.num_warps)
    k = b.sm.ty.get_shape()[0]
    t = _ab_type(a.ty.element_type)
    instr = _sparse_instruction(a.ty.element_type, meta, warpgroup=True)
    kstep = instr.shape[2]
    if k % kstep:
        raise LoweringError(f"sparse tt.dot: K = {k} must be a multiple of {kstep}")
    bits, step_offset, trans_b = _wgmma_b_desc(b, kstep)
    const = em.c(wg.as_signed64(bits), i64)
    L.before_shared_read()
    a_ops = _wgmma_a_desc(L, a, rep_m, k // kstep) if isinstance(a, SmemOperand) else a.frags
    b0 = _desc(L, b.sm.addr, const)
    em.op(wg.WgmmaFenceOp())
    acc = list(c.regs)
    per = n // 2
    for s in range(k // kstep):
        desc = _desc_past(L, b0, step_offset(s))
        q, selector = instr.meta.step(s)
        for i in range(rep_m):
            op = em.op(wg.WgmmaMmaAsyncSpOp(a_ops[(i, s)], desc, meta.frags[(i, q)][0], n=n, ab_type=t,
                                            acc=acc[i * per:(i + 1) * per], selector=selector, trans_b=trans_b,
                                            scale_d=scale_d if s == 0 else None))
            acc[i * per:(i + 1) * per] = list(op.results)
    _commit_group(L, defer_wait)
    return Regs(result_ty, acc)


def _commit_group(L: LoweringContext, defer_wait: bool) -> None:
    """Commit the wgmmas just issued as one group; wait for it now, or (`defer_wait`) leave it
    in flight, pending, for the next shared write or register read to drain."""
    L.em.op(wg.WgmmaCommitGroupOp())
    L.groups.drained.clear()
    if defer_wait:
        L.groups.pending = True
    else:
        L.em.op(wg.WgmmaWaitGroupOp(0))


DENSE_WGMMA_K = 16
"""K of one dense 16-bit `wgmma.mma_async` (m64nNk16)."""


def lower_wgmma_dense(L: LoweringContext, a: Frag | SmemOperand, b: SmemOperand, c: Regs, result_ty: TensorType,
                      defer_wait: bool = False, scale_d: SSAValue | None = None, fresh: bool = False) -> Regs:
    """A dense 16-bit tt.dot as sm_90a `wgmma.mma_async.m64nNk16`s (what Triton emits on Hopper).

    The same frame as `lower_wgmma` without metadata: B through a descriptor, A through one
    when it sits in a canonical K-major layout (a k16 step is the same 32 bytes of a row as a
    sparse k32 step of values) or else in registers, in the mma.sync A layout `_a_frags`
    loads (its (i, kk) keys are k16 steps). Each warpgroup issues, per k16 step, one wgmma per
    m64 block it owns, then commits; `defer_wait` leaves the group in flight as there.
    `fresh`: `c` is zeros (attention's Q K^T), so the first step's wgmmas take no accumulator
    (scale-d 0, as Triton emits) instead of zeroing N/2 registers before every dot.
    """
    em = L.em
    m, n = result_ty.get_shape()
    rep_m = m // (16 * L.cfg.num_warps)
    k = b.sm.ty.get_shape()[0]
    t = _ab_type(a.ty.element_type)
    if t not in wg.DENSE_WGMMA_AB_TYPES:
        raise LoweringError(f"tt.dot: a dense {t} dot has no wgmma lowering (dense dots take f16 or bf16)")
    if k % DENSE_WGMMA_K:
        raise LoweringError(f"tt.dot: K = {k} must be a multiple of {DENSE_WGMMA_K}")
    steps = k // DENSE_WGMMA_K
    bits, step_offset, trans_b = _wgmma_b_desc(b, DENSE_WGMMA_K)
    const = em.c(wg.as_signed64(bits), i64)
    L.before_shared_read()
    a_ops = _wgmma_a_desc(L, a, rep_m, steps) if isinstance(a, SmemOperand) else a.frags
    b0 = _desc(L, b.sm.addr, const)
    em.op(wg.WgmmaFenceOp())
    acc = list(c.regs)
    per = n // 2
    for s in range(steps):
        desc = _desc_past(L, b0, step_offset(s))
        for i in range(rep_m):
            step_acc = [] if fresh and s == 0 and scale_d is None else acc[i * per:(i + 1) * per]
            op = em.op(wg.WgmmaMmaAsyncOp(a_ops[(i, s)], desc, n=n, ab_type=t, acc=step_acc,
                                          trans_b=trans_b, scale_d=scale_d if s == 0 else None))
            acc[i * per:(i + 1) * per] = list(op.results)
    _commit_group(L, defer_wait)
    return Regs(result_ty, acc)


def lower_dot(L: LoweringContext, a: Frag | SmemOperand, b: Frag | SmemOperand, c: Regs, meta: Frag | None,
              result_ty: TensorType, defer_wait: bool = False, scale_d: SSAValue | None = None,
              fresh: bool = False) -> Regs:
    """`scale_d` (wgmma only, i1): whether the dot adds `c` (false: the sum restarts).
    `fresh`: `c` is a zero constant (dense wgmma then starts without an accumulator)."""
    enc = result_ty.encoding
    if not isinstance(enc, MmaEncodingAttr):
        raise LoweringError("tt.dot: the result must have a #ttg.mma layout")
    t = _ab_type(a.ty.element_type)
    if c.ty.element_type != ptx.mma_acc_type(t):
        raise LoweringError(f"tt.dot: a {t} dot accumulates in {ptx.mma_acc_type(t)} on the GPU, got "
                            f"{c.ty.element_type}: not supported on the GPU (use out_dtype=tl.float32 and "
                            "convert the result with .to())")
    if enc.version_major == 3:
        if not isinstance(b, SmemOperand):
            raise LoweringError("tt.dot: #ttg.mma version 3 (wgmma) needs B in shared memory")
        if meta is None:
            return lower_wgmma_dense(L, a, b, c, result_ty, defer_wait, scale_d, fresh)
        return lower_wgmma(L, a, b, c, meta, result_ty, defer_wait, scale_d)
    if isinstance(b, SmemOperand) or isinstance(a, SmemOperand):
        raise LoweringError("tt.dot: operands in shared memory need a #ttg.mma version 3 result")
    m, n = result_ty.get_shape()
    wm, wn = enc.warps_per_cta
    rep = (max(1, m // (16 * wm)), max(1, n // (8 * wn)))
    assert distributed(enc, (m, n)).num_regs == rep[0] * rep[1] * 4
    if meta is not None:
        return Regs(result_ty, _mma_sp_steps(L, a, b, c, meta, t, rep))
    return Regs(result_ty, _mma_steps(L, a, b, c, t, rep))


def _mma_sp_steps(L: LoweringContext, a: Frag, b: Frag, c: Regs, meta: Frag, t: str,
                  rep: tuple[int, int]) -> list[SSAValue]:
    """The accumulators after the `mma.sp`s of a sparse dot: per K step (the format's
    instruction's k), one per (m16, n8) tile of the warp, with the step's metadata register
    and sparsity selector.

    An A of `code - zero` values whose scales the dot applies (`a.row_scales`,
    `ttg.scale_after_dot`): each scale group's steps sum into fp32 registers of their own,
    started at zero, and at the group's last step one FMA a register adds scale * sum to the
    accumulator (registers 0, 1 of an m16n8 tile are row g, 2, 3 row g + 8)."""
    em = L.em
    instr = _sparse_instruction(a.ty.element_type, meta, warpgroup=False)
    k, kstep = b.ty.get_shape()[0], instr.shape[2]
    if k % kstep:
        raise LoweringError(f"sparse tt.dot: K = {k} must be a multiple of {kstep}")
    rep_m, rep_n = rep
    steps, scales = k // kstep, a.row_scales
    acc = list(c.regs)
    zero = em.val(arith.ConstantOp(FloatAttr(0.0, f32))) if scales is not None else None
    sums: dict[tuple[int, int], list[SSAValue]] = {}
    for s in range(steps):
        q, selector = instr.meta.step(s)
        for i in range(rep_m):
            ends = scales is not None and (s + 1 == steps or scales[(i, s + 1)] is not scales[(i, s)])
            for j in range(rep_n):
                base = (i * rep_n + j) * 4
                bregs = b.frags[(j, 2 * s)] + b.frags[(j, 2 * s + 1)]
                into = acc[base:base + 4] if scales is None else sums.get((i, j), [zero] * 4)
                op = em.op(ptx.MmaSpOp(a.frags[(i, s)], bregs, into, meta.frags[(i, q)][0],
                                       ab_type=t, selector=selector))
                if scales is None:
                    acc[base:base + 4] = list(op.results)
                    continue
                sums[(i, j)] = list(op.results)
                if ends:
                    part = sums.pop((i, j))
                    for r in range(4):
                        acc[base + r] = em.op(ptx.AsmOp(_FMA_F32, [scales[(i, s)][r // 2], part[r], acc[base + r]],
                                                        [f32], pure=True)).results[0]
    return acc


_FMA_F32 = "fma.rn.f32 $0, $1, $2, $3;"


def _mma_steps(L: LoweringContext, a: Frag, b: Frag, c: Regs, t: str, rep: tuple[int, int]) -> list[SSAValue]:
    """The accumulators after the `mma.sync` m16n8k16s of a dense dot."""
    em = L.em
    if t not in ptx.MMA_AB_TYPES:
        raise LoweringError(f"tt.dot: a dense {t} dot has no GPU lowering (dense dots take f16 or bf16)")
    k = b.ty.get_shape()[0]
    if k % 16:
        raise LoweringError(f"tt.dot: K = {k} must be a multiple of 16")
    rep_m, rep_n = rep
    acc = list(c.regs)
    for kk in range(k // 16):
        for i in range(rep_m):
            for j in range(rep_n):
                base = (i * rep_n + j) * 4
                op = em.op(ptx.MmaOp(a.frags[(i, kk)], b.frags[(j, kk)], acc[base:base + 4], ab_type=t))
                acc[base:base + 4] = list(op.results)
    return acc


__all__ = ["load_frag", "lower_dot", "lower_wgmma", "lower_wgmma_dense"]
