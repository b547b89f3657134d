"""The `ttg` dialect: Triton's TritonGPU IR (layouts, shared memory, async copies).

What it models (syntax follows upstream Triton's `ttg` dialect; the lit tests under
test/lit/ttg show every form):
- Distributed layouts, used as `tensor<...>` encodings: `#ttg.blocked`, `#ttg.slice`,
  `#ttg.mma` (mma.sync / mma.sp m16n8 accumulators) and `#ttg.dot_op` (dot operands, with
  seed 001's `meta` field: -1 dense, 0 the 2:4 values, 1 their metadata).
- Shared memory: `#ttg.shared` swizzles, `!ttg.memdesc` buffers and the ops that fill and
  read them (`local_alloc`, `local_load`, `local_store`, `memdesc_subview`).
- Asynchronous global->shared copies (`async_copy_global_to_local`, `async_commit_group`,
  `async_wait`) for software pipelining.
- Hopper pipelines: TMA copies (`async_tma_copy`) and rings of shared-memory mbarriers
  (`init_barrier`, `wait_barrier`, `arrive_barrier` with kind "copies" / "warps" / "threads" / "tma")
  plus `dot_wait` (wgmma groups still running), as tritongpu-pipeline{mbarriers/tma} emits
  them.

The layout attributes expose their parameters as plain Python ints/tuples
(`BlockedEncodingAttr.size_per_thread`, ...) for the lowering; the thread -> element
mapping itself lives in sparsecc/analysis/layouts.py, not here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    IntAttr,
    IntegerAttr,
    IntegerType,
    NoneAttr,
    StringAttr,
    TensorType,
    i32,
    i64,
)
from xdsl.ir import (
    Attribute,
    Dialect,
    Operation,
    ParametrizedAttribute,
    SSAValue,
    TypeAttribute,
)
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.traits import MemoryReadEffect, MemoryWriteEffect, Pure
from xdsl.utils.exceptions import VerifyException

from sparsecc.analysis import swizzle
from sparsecc.dialects import ptx_targets
from sparsecc.dialects.tt import PointerType, element_type, loaded_type, shape_of

THREADS_PER_WARP = 32
META_CLASSES = {-1: "dense", 0: "values", 1: "metadata"}
"""`#ttg.dot_op` meta field: which array of a (possibly sparse) operand a tensor is."""


def _require(cond: bool, message: str) -> None:
    if not cond:
        raise VerifyException(message)


def _ints(values: Sequence[int]) -> ArrayAttr[IntAttr]:
    return ArrayAttr([IntAttr(int(v)) for v in values])


def _tuple(arr: ArrayAttr[IntAttr]) -> tuple[int, ...]:
    return tuple(a.data for a in arr.data)


def _is_permutation(order: Sequence[int], rank: int) -> bool:
    return sorted(order) == list(range(rank))


# --------------------------------------------------------------------------------------
# `<{key = value, ...}>` parameter syntax shared by every ttg attribute
# --------------------------------------------------------------------------------------

_Value = int | tuple[int, ...] | Attribute


def _parse_struct(parser: AttrParser, what: str, required: Sequence[str], optional: Sequence[str] = ()) -> dict[str, _Value]:
    """Parse `<{k = v, ...}>` where v is an int, `[ints]`, `true`/`false` or an attribute."""
    entries: dict[str, _Value] = {}

    def parse_entry() -> None:
        pos = parser.pos
        key = parser.parse_identifier(f" (a {what} parameter name)")
        if key not in required and key not in optional:
            parser.raise_error(
                f"unknown {what} parameter '{key}'; expected one of: "
                + ", ".join(list(required) + list(optional)),
                pos,
                parser.pos,
            )
        if key in entries:
            parser.raise_error(f"{what} parameter '{key}' given twice", pos, parser.pos)
        parser.parse_punctuation("=")
        value: _Value
        if parser.parse_optional_punctuation("[") is not None:
            items: list[int] = []
            if parser.parse_optional_punctuation("]") is None:
                items.append(parser.parse_integer(allow_boolean=False))
                while parser.parse_optional_punctuation(",") is not None:
                    items.append(parser.parse_integer(allow_boolean=False))
                parser.parse_punctuation("]")
            value = tuple(items)
        elif (b := parser.parse_optional_boolean()) is not None:
            value = int(b)
        elif (i := parser.parse_optional_integer(allow_boolean=False)) is not None:
            value = i
        else:
            value = parser.parse_attribute()
        entries[key] = value

    with parser.in_angle_brackets():
        parser.parse_comma_separated_list(parser.Delimiter.BRACES, parse_entry)
    missing = [k for k in required if k not in entries]
    if missing:
        parser.raise_error(f"{what} is missing parameter(s): {', '.join(missing)}")
    return entries


def _print_struct(printer: Printer, entries: Sequence[tuple[str, _Value]]) -> None:
    printer.print_string("<{")
    for idx, (key, value) in enumerate(entries):
        if idx:
            printer.print_string(", ")
        printer.print_string(f"{key} = ")
        if isinstance(value, tuple):
            printer.print_string("[" + ", ".join(str(v) for v in value) + "]")
        elif isinstance(value, int):
            printer.print_string(str(value))
        else:
            printer.print_attribute(value)
    printer.print_string("}>")


def _as_int(value: _Value, key: str) -> int:
    if not isinstance(value, int):
        raise VerifyException(f"parameter '{key}' must be an integer")
    return value


def _as_ints(value: _Value, key: str) -> tuple[int, ...]:
    if not isinstance(value, tuple):
        raise VerifyException(f"parameter '{key}' must be a list of integers, e.g. [1, 0]")
    return value


class _CheckedParse:
    """Verifies a parsed attribute at once, so a bad parameter is reported at its source location."""

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        start = parser.pos
        params = cls._parse_params(parser)  # type: ignore[attr-defined]
        try:
            cls.new(params)  # type: ignore[attr-defined]
        except VerifyException as err:
            parser.raise_error(str(err), start, parser.pos)
        return params


# --------------------------------------------------------------------------------------
# Distributed layouts
# --------------------------------------------------------------------------------------


@irdl_attr_definition
class BlockedEncodingAttr(_CheckedParse, ParametrizedAttribute):
    """`#ttg.blocked<{sizePerThread, threadsPerWarp, warpsPerCTA, order}>`.

    Triton's BlockedEncoding: each thread owns `sizePerThread` contiguous elements,
    `order[0]` is the fastest-varying dim; the CTA tile wraps over bigger tensors and
    replicates over smaller ones.
    """

    name = "ttg.blocked"

    sizePerThread: ArrayAttr[IntAttr]
    threadsPerWarp: ArrayAttr[IntAttr]
    warpsPerCTA: ArrayAttr[IntAttr]
    order_attr: ArrayAttr[IntAttr]

    def __init__(
        self,
        size_per_thread: Sequence[int],
        threads_per_warp: Sequence[int],
        warps_per_cta: Sequence[int],
        order: Sequence[int],
    ):
        super().__init__(_ints(size_per_thread), _ints(threads_per_warp), _ints(warps_per_cta), _ints(order))

    @property
    def size_per_thread(self) -> tuple[int, ...]:
        return _tuple(self.sizePerThread)

    @property
    def threads_per_warp(self) -> tuple[int, ...]:
        return _tuple(self.threadsPerWarp)

    @property
    def warps_per_cta(self) -> tuple[int, ...]:
        return _tuple(self.warpsPerCTA)

    @property
    def order(self) -> tuple[int, ...]:
        """`order` as a tuple (`order` itself is the ArrayAttr parameter)."""
        return _tuple(self.order_attr)

    @property
    def rank(self) -> int:
        return len(self.sizePerThread.data)

    @property
    def num_warps(self) -> int:
        return math.prod(self.warps_per_cta)

    def shape_per_cta_tile(self) -> tuple[int, ...]:
        """Elements one repetition of the layout covers per dim (before wrapping)."""
        return tuple(
            s * t * w
            for s, t, w in zip(self.size_per_thread, self.threads_per_warp, self.warps_per_cta)
        )

    def verify(self) -> None:
        rank = self.rank
        _require(rank >= 1, "#ttg.blocked needs rank >= 1")
        fields = {
            "sizePerThread": self.size_per_thread,
            "threadsPerWarp": self.threads_per_warp,
            "warpsPerCTA": self.warps_per_cta,
            "order": self.order,
        }
        for key, vals in fields.items():
            _require(len(vals) == rank, f"#ttg.blocked: {key} has rank {len(vals)}, sizePerThread has rank {rank}")
            if key != "order":
                _require(all(v >= 1 for v in vals), f"#ttg.blocked: {key} entries must be >= 1")
        _require(
            math.prod(self.threads_per_warp) == THREADS_PER_WARP,
            f"#ttg.blocked: product of threadsPerWarp must be {THREADS_PER_WARP}, got "
            f"{math.prod(self.threads_per_warp)}",
        )
        _require(_is_permutation(self.order, rank), f"#ttg.blocked: order {list(self.order)} is not a permutation of 0..{rank - 1}")

    @classmethod
    def _parse_params(cls, parser: AttrParser) -> Sequence[Attribute]:
        keys = ("sizePerThread", "threadsPerWarp", "warpsPerCTA", "order")
        e = _parse_struct(parser, "#ttg.blocked", keys)
        try:
            return [_ints(_as_ints(e[k], k)) for k in keys]
        except VerifyException as err:
            parser.raise_error(f"#ttg.blocked: {err}")

    def print_parameters(self, printer: Printer) -> None:
        _print_struct(
            printer,
            [
                ("sizePerThread", self.size_per_thread),
                ("threadsPerWarp", self.threads_per_warp),
                ("warpsPerCTA", self.warps_per_cta),
                ("order", self.order),
            ],
        )


@irdl_attr_definition
class MmaEncodingAttr(_CheckedParse, ParametrizedAttribute):
    """`#ttg.mma<{versionMajor = 2, warpsPerCTA = [2, 2], instrShape = [16, 8]}>`.

    The accumulator layout of mma.sync / mma.sp m16n8: lane l of a warp holds, per
    m16n8 tile, (row l/4, cols 2*(l%4)+{0,1}) and (row l/4+8, same cols).

    `versionMajor = 3, warpsPerCTA = [4k, 1], instrShape = [64, N]`: the accumulator of Hopper
    `wgmma.mma_async(.sp).m64nN`. Warp w of warpgroup G owns rows 16w.. of the 64-row block, with
    the same per-thread map as version 2, so it is version 2's register layout with
    warpsPerCTA [4k, 1]: warp w's i-th m16 tile is tile i*4k + w, and the N/2 registers of one
    wgmma are one row of m16n8 tiles (layouts.mma needs no second formula).
    """

    name = "ttg.mma"

    versionMajor: IntAttr
    warpsPerCTA: ArrayAttr[IntAttr]
    instrShape: ArrayAttr[IntAttr]

    def __init__(self, warps_per_cta: Sequence[int], version_major: int = 2, instr_shape: Sequence[int] = (16, 8)):
        super().__init__(IntAttr(version_major), _ints(warps_per_cta), _ints(instr_shape))

    @property
    def version_major(self) -> int:
        return self.versionMajor.data

    @property
    def warps_per_cta(self) -> tuple[int, ...]:
        return _tuple(self.warpsPerCTA)

    @property
    def instr_shape(self) -> tuple[int, ...]:
        return _tuple(self.instrShape)

    @property
    def rank(self) -> int:
        return 2

    @property
    def num_warps(self) -> int:
        return math.prod(self.warps_per_cta)

    def verify(self) -> None:
        _require(self.version_major in (2, 3),
                 f"#ttg.mma: versionMajor must be 2 (mma.sync/mma.sp) or 3 (wgmma), got {self.version_major}")
        _require(len(self.warps_per_cta) == 2, "#ttg.mma: warpsPerCTA must have 2 entries (M, N)")
        _require(all(w >= 1 for w in self.warps_per_cta), "#ttg.mma: warpsPerCTA entries must be >= 1")
        if self.version_major == 2:
            _require(self.instr_shape == (16, 8), f"#ttg.mma: instrShape must be [16, 8], got {list(self.instr_shape)}")
            return
        wm, wn = self.warps_per_cta
        _require(wn == 1 and wm % 4 == 0,
                 f"#ttg.mma: versionMajor = 3 stacks whole warpgroups along M: warpsPerCTA must be [4k, 1], got {list(self.warps_per_cta)}")
        _require(len(self.instr_shape) == 2 and self.instr_shape[0] == 64 and self.instr_shape[1] % 8 == 0
                 and 8 <= self.instr_shape[1] <= 256,
                 f"#ttg.mma: versionMajor = 3 needs instrShape [64, N] with N a multiple of 8 up to 256, got {list(self.instr_shape)}")

    @classmethod
    def _parse_params(cls, parser: AttrParser) -> Sequence[Attribute]:
        e = _parse_struct(parser, "#ttg.mma", ("versionMajor", "warpsPerCTA", "instrShape"))
        try:
            return [
                IntAttr(_as_int(e["versionMajor"], "versionMajor")),
                _ints(_as_ints(e["warpsPerCTA"], "warpsPerCTA")),
                _ints(_as_ints(e["instrShape"], "instrShape")),
            ]
        except VerifyException as err:
            parser.raise_error(f"#ttg.mma: {err}")

    def print_parameters(self, printer: Printer) -> None:
        _print_struct(
            printer,
            [
                ("versionMajor", self.version_major),
                ("warpsPerCTA", self.warps_per_cta),
                ("instrShape", self.instr_shape),
            ],
        )


@irdl_attr_definition
class SliceEncodingAttr(_CheckedParse, ParametrizedAttribute):
    """`#ttg.slice<{dim = 1, parent = #ttg.blocked<...>}>`: `parent` with dim `dim` removed.

    The layout of a 1-D tensor that `tt.expand_dims(axis=dim)` turns into a tensor
    with layout `parent`.
    """

    name = "ttg.slice"

    dim_attr: IntAttr
    parent: Attribute

    def __init__(self, dim: int, parent: Attribute):
        super().__init__(IntAttr(dim), parent)

    @property
    def dim(self) -> int:
        return self.dim_attr.data

    @property
    def rank(self) -> int:
        return layout_rank(self.parent) - 1

    def verify(self) -> None:
        _require(
            isinstance(self.parent, BlockedEncodingAttr | MmaEncodingAttr | SliceEncodingAttr),
            "#ttg.slice: parent must be a #ttg.blocked, #ttg.mma or #ttg.slice layout",
        )
        prank = layout_rank(self.parent)
        _require(0 <= self.dim < prank, f"#ttg.slice: dim {self.dim} out of range for a rank-{prank} parent")

    @classmethod
    def _parse_params(cls, parser: AttrParser) -> Sequence[Attribute]:
        e = _parse_struct(parser, "#ttg.slice", ("dim", "parent"))
        if not isinstance(e["parent"], Attribute):
            parser.raise_error("#ttg.slice: parent must be a layout attribute")
        try:
            return [IntAttr(_as_int(e["dim"], "dim")), e["parent"]]
        except VerifyException as err:
            parser.raise_error(f"#ttg.slice: {err}")

    def print_parameters(self, printer: Printer) -> None:
        _print_struct(printer, [("dim", self.dim), ("parent", self.parent)])


@irdl_attr_definition
class DotOperandEncodingAttr(_CheckedParse, ParametrizedAttribute):
    """`#ttg.dot_op<{opIdx = 0, parent = #ttg.mma<...>, kWidth = 2, meta = 0}>`.

    opIdx 0 is the A side, 1 the B side. `meta` (seed 001) tells the passes which array of
    the operand the tensor is: -1 dense (not printed), 0 the 2:4 values (M x K/2),
    1 the i16 metadata (ceil(M/16) x K). Values and metadata belong to A (opIdx 0).
    """

    name = "ttg.dot_op"

    opIdx: IntAttr
    parent: Attribute
    kWidth: IntAttr
    meta_attr: IntAttr

    def __init__(self, op_idx: int, parent: Attribute, k_width: int = 2, meta: int = -1):
        super().__init__(IntAttr(op_idx), parent, IntAttr(k_width), IntAttr(meta))

    @property
    def op_idx(self) -> int:
        return self.opIdx.data

    @property
    def k_width(self) -> int:
        return self.kWidth.data

    @property
    def meta(self) -> int:
        """-1 dense, 0 sparse values, 1 sparse metadata."""
        return self.meta_attr.data

    @property
    def is_sparse_values(self) -> bool:
        return self.meta_attr.data == 0

    @property
    def is_sparse_meta(self) -> bool:
        return self.meta_attr.data == 1

    @property
    def rank(self) -> int:
        return 2

    def verify(self) -> None:
        _require(self.op_idx in (0, 1), f"#ttg.dot_op: opIdx must be 0 or 1, got {self.op_idx}")
        _require(self.meta in META_CLASSES, f"#ttg.dot_op: meta must be -1, 0 or 1, got {self.meta}")
        _require(
            self.meta == -1 or self.op_idx == 0,
            f"#ttg.dot_op: meta = {self.meta} ({META_CLASSES[self.meta]}) needs opIdx = 0: only A may be sparse",
        )
        _require(isinstance(self.parent, MmaEncodingAttr), "#ttg.dot_op: parent must be a #ttg.mma layout")
        _require(self.k_width >= 1, f"#ttg.dot_op: kWidth must be >= 1, got {self.k_width}")

    @classmethod
    def _parse_params(cls, parser: AttrParser) -> Sequence[Attribute]:
        e = _parse_struct(parser, "#ttg.dot_op", ("opIdx", "parent"), ("kWidth", "meta"))
        if not isinstance(e["parent"], Attribute):
            parser.raise_error("#ttg.dot_op: parent must be a #ttg.mma attribute")
        try:
            return [
                IntAttr(_as_int(e["opIdx"], "opIdx")),
                e["parent"],
                IntAttr(_as_int(e.get("kWidth", 2), "kWidth")),
                IntAttr(_as_int(e.get("meta", -1), "meta")),
            ]
        except VerifyException as err:
            parser.raise_error(f"#ttg.dot_op: {err}")

    def print_parameters(self, printer: Printer) -> None:
        entries: list[tuple[str, _Value]] = [
            ("opIdx", self.op_idx),
            ("parent", self.parent),
            ("kWidth", self.k_width),
        ]
        if self.meta != -1:
            entries.append(("meta", self.meta))
        _print_struct(printer, entries)


def layout_rank(layout: Attribute) -> int:
    """Tensor rank a distributed layout describes."""
    if isinstance(layout, BlockedEncodingAttr | SliceEncodingAttr | MmaEncodingAttr | DotOperandEncodingAttr):
        return layout.rank
    raise VerifyException(f"not a ttg layout: {layout}")


def is_distributed_layout(attr: Attribute) -> bool:
    return isinstance(attr, BlockedEncodingAttr | SliceEncodingAttr | MmaEncodingAttr | DotOperandEncodingAttr)


# --------------------------------------------------------------------------------------
# Shared memory
# --------------------------------------------------------------------------------------


@irdl_attr_definition
class SharedEncodingAttr(_CheckedParse, ParametrizedAttribute):
    """`#ttg.shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [1, 0]}>`.

    Triton's swizzled shared layout: with order [1, 0], element (row, col) of a tile with
    rows of ROWLEN elements lives at
        row*ROWLEN + ((col/vec) ^ ((row/perPhase) % maxPhase))*vec + col%vec.
    vec = perPhase = maxPhase = 1 is no swizzle. Higher-rank memdescs (a leading ring
    buffer dim) apply this per 2-D slice.

    `colBlock = C` (printed only when set): the contiguous dim is cut into blocks of C columns,
    each stored as its own rows x C sub-tile (block after block), with the swizzle above inside
    it (ROWLEN = C). With C*elementBytes = 128, vec = 8, perPhase = 1, maxPhase = 8 this is the
    Hopper wgmma "128B swizzle" canonical layout of an MN-major operand (64B: C = 32, perPhase
    2, maxPhase 4; 32B: C = 16, perPhase 4, maxPhase 2); the tile base must be 1024-aligned.

    `metaPack = 1` (Deviation, printed only when set; see the contract's "Deviations"):
    a marker on the NV24 metadata tile (R x BK i16, BK % 64 == 0, no swizzle). Storage is
    plain row-major; the marker says every aligned 64-word group [64q, 64q+64) of a row is
    one 8x8 b16 matrix (row R = 2c + m//8 for word 64q + 16c + m, 16 contiguous bytes) that
    one `ldmatrix.trans` phase reads conflict-free (8 rows = 128 contiguous bytes) and that
    hands lane 4g+t the metadata b32 {(row g, chunk 4q+t), (row g+8, chunk 4q+t)}: the
    register of K-step 2q for selector 0 (t = 0, 1) and of K-step 2q+1 for selector 1
    (t = 2, 3) at once (seed 003).
    """

    name = "ttg.shared"

    vec_attr: IntAttr
    perPhase: IntAttr
    maxPhase: IntAttr
    order_attr: ArrayAttr[IntAttr]
    metaPack: IntAttr
    colBlock: IntAttr

    def __init__(self, vec: int, per_phase: int, max_phase: int, order: Sequence[int], meta_pack: int = 0,
                 col_block: int = 0):
        super().__init__(IntAttr(vec), IntAttr(per_phase), IntAttr(max_phase), _ints(order), IntAttr(meta_pack),
                         IntAttr(col_block))

    @property
    def col_block(self) -> int:
        """Column-block width in elements (0: the rows are not cut; see the class docstring)."""
        return self.colBlock.data

    @property
    def vec(self) -> int:
        return self.vec_attr.data

    @property
    def per_phase(self) -> int:
        return self.perPhase.data

    @property
    def max_phase(self) -> int:
        return self.maxPhase.data

    @property
    def order(self) -> tuple[int, ...]:
        return _tuple(self.order_attr)

    @property
    def meta_pack(self) -> int:
        return self.metaPack.data

    @property
    def is_swizzled(self) -> bool:
        return self.max_phase > 1

    def verify(self) -> None:
        for key, v in (("vec", self.vec), ("perPhase", self.per_phase), ("maxPhase", self.max_phase)):
            _require(v >= 1, f"#ttg.shared: {key} must be >= 1, got {v}")
        _require(_is_permutation(self.order, len(self.order)) and self.order, "#ttg.shared: order must be a permutation of 0..rank-1")
        _require(self.meta_pack in (0, 1), f"#ttg.shared: metaPack must be 0 or 1, got {self.meta_pack}")
        _require(
            self.meta_pack == 0 or (self.vec, self.per_phase, self.max_phase) == (1, 1, 1),
            "#ttg.shared: metaPack = 1 marks an unswizzled metadata tile (vec = perPhase = maxPhase = 1)",
        )
        _require(self.col_block >= 0 and (self.col_block == 0 or self.col_block % self.vec == 0),
                 f"#ttg.shared: colBlock must be 0 or a multiple of vec, got {self.col_block}")
        _require(self.col_block == 0 or self.meta_pack == 0, "#ttg.shared: colBlock and metaPack exclude each other")

    def swizzled_offset(self, row: Any, col: Any, row_len: int, rows: int = 0) -> Any:
        """Element offset of (row, col) in a row-major 2-D tile (order [1, 0]) of `rows` rows
        (ints, numpy arrays or IR-building values: `sparsecc.analysis.swizzle`)."""
        return swizzle.swizzled_offset(row, col, row_len, self.vec, self.per_phase, self.max_phase, rows, self.col_block)

    @classmethod
    def _parse_params(cls, parser: AttrParser) -> Sequence[Attribute]:
        e = _parse_struct(parser, "#ttg.shared", ("vec", "perPhase", "maxPhase", "order"), ("metaPack", "colBlock"))
        try:
            return [
                IntAttr(_as_int(e["vec"], "vec")),
                IntAttr(_as_int(e["perPhase"], "perPhase")),
                IntAttr(_as_int(e["maxPhase"], "maxPhase")),
                _ints(_as_ints(e["order"], "order")),
                IntAttr(_as_int(e.get("metaPack", 0), "metaPack")),
                IntAttr(_as_int(e.get("colBlock", 0), "colBlock")),
            ]
        except VerifyException as err:
            parser.raise_error(f"#ttg.shared: {err}")

    def print_parameters(self, printer: Printer) -> None:
        entries: list[tuple[str, _Value]] = [
            ("vec", self.vec),
            ("perPhase", self.per_phase),
            ("maxPhase", self.max_phase),
            ("order", self.order),
        ]
        if self.meta_pack:
            entries.append(("metaPack", self.meta_pack))
        if self.col_block:
            entries.append(("colBlock", self.col_block))
        _print_struct(printer, entries)


@irdl_attr_definition
class MemDescType(_CheckedParse, ParametrizedAttribute, TypeAttribute):
    """`!ttg.memdesc<3x64x32xf16, #ttg.shared<{...}>[, mutable]>`: a shared-memory buffer."""

    name = "ttg.memdesc"

    shape: ArrayAttr[IntAttr]
    element_type: Attribute
    encoding: Attribute
    mutable: IntAttr

    def __init__(self, shape: Sequence[int], element_type: Attribute, encoding: Attribute, mutable: bool = False):
        super().__init__(_ints(shape), element_type, encoding, IntAttr(int(mutable)))

    def get_shape(self) -> tuple[int, ...]:
        return _tuple(self.shape)

    @property
    def is_mutable(self) -> bool:
        return bool(self.mutable.data)

    def with_shape(self, shape: Sequence[int]) -> MemDescType:
        return MemDescType(shape, self.element_type, self.encoding, self.is_mutable)

    def verify(self) -> None:
        _require(len(self.shape.data) >= 1, "!ttg.memdesc needs rank >= 1")
        _require(all(d >= 1 for d in self.get_shape()), "!ttg.memdesc dims must be >= 1")
        _require(isinstance(self.encoding, SharedEncodingAttr), "!ttg.memdesc encoding must be #ttg.shared")
        assert isinstance(self.encoding, SharedEncodingAttr)
        order_rank = len(self.encoding.order)
        _require(
            order_rank <= len(self.shape.data),
            f"!ttg.memdesc: #ttg.shared order has rank {order_rank}, more than the buffer's rank {len(self.shape.data)}",
        )
        _require(self.mutable.data in (0, 1), "!ttg.memdesc mutable flag must be 0 or 1")

    @classmethod
    def _parse_params(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            dims, elt = parser.parse_ranked_shape()
            parser.parse_punctuation(",")
            enc = parser.parse_attribute()
            mutable = 0
            if parser.parse_optional_punctuation(",") is not None:
                parser.parse_keyword("mutable")
                mutable = 1
        return [_ints(dims), elt, enc, IntAttr(mutable)]

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string("<" + "x".join(str(d) for d in self.get_shape()) + "x")
        printer.print_attribute(self.element_type)
        printer.print_string(", ")
        printer.print_attribute(self.encoding)
        if self.is_mutable:
            printer.print_string(", mutable")
        printer.print_string(">")


@irdl_attr_definition
class AsyncTokenType(ParametrizedAttribute, TypeAttribute):
    """`!ttg.async.token`: orders async copies, commit groups and waits."""

    name = "ttg.async.token"


# --------------------------------------------------------------------------------------
# Op helpers
# --------------------------------------------------------------------------------------


def _type_str(ty: Attribute) -> str:
    from io import StringIO

    out = StringIO()
    Printer(stream=out).print_attribute(ty)
    return out.getvalue()


def _same_shape_and_elt(a: Attribute, b: Attribute, what: str) -> None:
    sa = a.get_shape() if isinstance(a, MemDescType | TensorType) else ()
    sb = b.get_shape() if isinstance(b, MemDescType | TensorType) else ()
    ea = a.element_type if isinstance(a, MemDescType | TensorType) else a
    eb = b.element_type if isinstance(b, MemDescType | TensorType) else b
    _require(tuple(sa) == tuple(sb), f"{what}: shapes differ: {_type_str(a)} vs {_type_str(b)}")
    _require(ea == eb, f"{what}: element types differ: {_type_str(a)} vs {_type_str(b)}")


def _check_tensor_layout(ty: Attribute, what: str) -> None:
    _require(isinstance(ty, TensorType), f"{what} must be a ranked tensor")
    assert isinstance(ty, TensorType)
    enc = ty.encoding
    if isinstance(enc, NoneAttr):
        return
    if is_distributed_layout(enc):
        _require(
            layout_rank(enc) == len(ty.get_shape()),
            f"{what}: layout rank {layout_rank(enc)} does not match tensor rank {len(ty.get_shape())}",
        )


def _print_types(printer: Printer, src: Attribute, dst: Attribute) -> None:
    printer.print_string(" : ")
    printer.print_attribute(src)
    printer.print_string(" -> ")
    printer.print_attribute(dst)


def _parse_arrow_types(parser: Parser) -> tuple[Attribute, Attribute]:
    parser.parse_punctuation(":")
    src = parser.parse_type()
    parser.parse_punctuation("->")
    dst = parser.parse_type()
    return src, dst


# --------------------------------------------------------------------------------------
# Ops
# --------------------------------------------------------------------------------------


@irdl_op_definition
class ConvertLayoutOp(IRDLOperation):
    """`%y = ttg.convert_layout %x : tensor<..., #a> -> tensor<..., #b>`: same values, new layout."""

    name = "ttg.convert_layout"
    src = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$src attr-dict `:` type($src) `->` type($result)"

    def __init__(self, src: SSAValue, result_type: Attribute):
        super().__init__(operands=[src], result_types=[result_type])

    def verify_(self) -> None:
        _same_shape_and_elt(self.src.type, self.result.type, "ttg.convert_layout")
        _check_tensor_layout(self.src.type, "ttg.convert_layout source")
        _check_tensor_layout(self.result.type, "ttg.convert_layout result")


@irdl_op_definition
class LocalAllocOp(IRDLOperation):
    """`ttg.local_alloc %x : (tensor) -> !ttg.memdesc` or `ttg.local_alloc : () -> !ttg.memdesc<..., mutable>`."""

    name = "ttg.local_alloc"
    src = opt_operand_def(TensorType)
    result = result_def(MemDescType)
    traits = traits_def(MemoryWriteEffect())

    def __init__(self, result_type: MemDescType, src: SSAValue | None = None):
        super().__init__(operands=[[src] if src is not None else []], result_types=[result_type])

    def verify_(self) -> None:
        mt = self.result.type
        assert isinstance(mt, MemDescType)
        if self.src is None:
            _require(mt.is_mutable, "ttg.local_alloc without an initial value must produce a mutable memdesc")
            return
        _same_shape_and_elt(self.src.type, mt, "ttg.local_alloc")
        _check_tensor_layout(self.src.type, "ttg.local_alloc source")

    @classmethod
    def parse(cls, parser: Parser) -> LocalAllocOp:
        src = parser.parse_optional_unresolved_operand()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        parser.parse_punctuation("(")
        src_ty = None
        if parser.parse_optional_punctuation(")") is None:
            src_ty = parser.parse_type()
            parser.parse_punctuation(")")
        parser.parse_punctuation("->")
        pos = parser.pos
        res = parser.parse_type()
        if not isinstance(res, MemDescType):
            parser.raise_error("ttg.local_alloc produces a !ttg.memdesc", pos, parser.pos)
        if (src is None) != (src_ty is None):
            parser.raise_error("ttg.local_alloc: operand and `(type)` must both be given or both omitted")
        op = cls(res, parser.resolve_operand(src, src_ty) if src is not None and src_ty is not None else None)
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        if self.src is not None:
            printer.print_string(" ")
            printer.print_operand(self.src)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : (")
        if self.src is not None:
            printer.print_attribute(self.src.type)
        printer.print_string(") -> ")
        printer.print_attribute(self.result.type)


@irdl_op_definition
class LocalLoadOp(IRDLOperation):
    """`%t = ttg.local_load %m : !ttg.memdesc<...> -> tensor<..., #layout>`: shared -> registers."""

    name = "ttg.local_load"
    src = operand_def(MemDescType)
    result = result_def(TensorType)
    traits = traits_def(MemoryReadEffect())
    assembly_format = "$src attr-dict `:` type($src) `->` type($result)"

    def __init__(self, src: SSAValue, result_type: Attribute):
        super().__init__(operands=[src], result_types=[result_type])

    def verify_(self) -> None:
        _same_shape_and_elt(self.src.type, self.result.type, "ttg.local_load")
        _check_tensor_layout(self.result.type, "ttg.local_load result")


@irdl_op_definition
class LocalStoreOp(IRDLOperation):
    """`ttg.local_store %x, %m : tensor<...> -> !ttg.memdesc<..., mutable>`: registers -> shared."""

    name = "ttg.local_store"
    src = operand_def(TensorType)
    dst = operand_def(MemDescType)
    traits = traits_def(MemoryWriteEffect())
    assembly_format = "$src `,` $dst attr-dict `:` type($src) `->` type($dst)"

    def __init__(self, src: SSAValue, dst: SSAValue):
        super().__init__(operands=[src, dst])

    def verify_(self) -> None:
        _same_shape_and_elt(self.src.type, self.dst.type, "ttg.local_store")
        dt = self.dst.type
        assert isinstance(dt, MemDescType)
        _require(dt.is_mutable, "ttg.local_store needs a mutable memdesc")


@irdl_op_definition
class MemDescSubviewOp(IRDLOperation):
    """`%s = ttg.memdesc_subview %m[%i, %c0, %c0] : !ttg.memdesc<3x64x32...> -> !ttg.memdesc<64x32...>`.

    One i32 offset per source dim; the result drops leading dims (a ring-buffer slot) and
    keeps the trailing shape, element type, encoding and mutability.
    """

    name = "ttg.memdesc_subview"
    src = operand_def(MemDescType)
    offsets = var_operand_def(i32)
    result = result_def(MemDescType)
    traits = traits_def(Pure())

    def __init__(self, src: SSAValue, offsets: Sequence[SSAValue], result_type: MemDescType):
        super().__init__(operands=[src, offsets], result_types=[result_type])

    def verify_(self) -> None:
        st, rt = self.src.type, self.result.type
        assert isinstance(st, MemDescType) and isinstance(rt, MemDescType)
        ss, rs = st.get_shape(), rt.get_shape()
        _require(len(self.offsets) == len(ss), f"ttg.memdesc_subview needs {len(ss)} offsets, got {len(self.offsets)}")
        _require(len(rs) <= len(ss), "ttg.memdesc_subview cannot add dims")
        tail = ss[len(ss) - len(rs):]
        _require(all(r <= s for r, s in zip(rs, tail)), f"ttg.memdesc_subview: {list(rs)} does not fit in {list(ss)}")
        _require(st.element_type == rt.element_type, "ttg.memdesc_subview keeps the element type")
        _require(st.encoding == rt.encoding, "ttg.memdesc_subview keeps the shared encoding")
        _require(st.is_mutable == rt.is_mutable, "ttg.memdesc_subview keeps mutability")

    @classmethod
    def parse(cls, parser: Parser) -> MemDescSubviewOp:
        src = parser.parse_unresolved_operand()
        offs = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_unresolved_operand)
        attrs = parser.parse_optional_attr_dict()
        st, rt = _parse_arrow_types(parser)
        if not isinstance(rt, MemDescType):
            parser.raise_error("ttg.memdesc_subview produces a !ttg.memdesc")
        op = cls(parser.resolve_operand(src, st), [parser.resolve_operand(o, i32) for o in offs], rt)
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.src)
        printer.print_string("[")
        printer.print_list(self.offsets, printer.print_operand)
        printer.print_string("]")
        printer.print_op_attributes(self.attributes)
        _print_types(printer, self.src.type, self.result.type)


@irdl_op_definition
class AsyncCopyGlobalToLocalOp(IRDLOperation):
    """`%tok = ttg.async_copy_global_to_local %ptr, %dst {boundaryCheck, padding} : ptr-type -> memdesc`.

    Block pointer form: copies the tile `%ptr` addresses (out-of-bounds elements of the
    `boundaryCheck` dims read as zero). Tensor-of-pointers form: `%ptrs, %dst[, %mask[, %other]]`.
    """

    name = "ttg.async_copy_global_to_local"
    src = operand_def()
    dst = operand_def(MemDescType)
    mask = opt_operand_def()
    other = opt_operand_def()
    boundaryCheck = opt_prop_def(DenseArrayBase)
    padding = opt_prop_def(IntegerAttr[IntegerType])
    token = result_def(AsyncTokenType)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())

    def __init__(
        self,
        src: SSAValue,
        dst: SSAValue,
        mask: SSAValue | None = None,
        other: SSAValue | None = None,
        boundary_check: Sequence[int] = (),
        padding: int | None = None,
    ):
        props: dict[str, Attribute] = {}
        if boundary_check:
            props["boundaryCheck"] = DenseArrayBase.from_list(i32, list(boundary_check))
        if padding is not None:
            props["padding"] = IntegerAttr(padding, i32)
        super().__init__(
            operands=[src, dst, [mask] if mask else [], [other] if other else []],
            properties=props,
            result_types=[AsyncTokenType()],
        )

    @property
    def is_block_pointer(self) -> bool:
        return isinstance(self.src.type, PointerType) and self.src.type.is_block

    def verify_(self) -> None:
        dt = self.dst.type
        assert isinstance(dt, MemDescType)
        _require(dt.is_mutable, "ttg.async_copy_global_to_local needs a mutable destination memdesc")
        st = self.src.type
        is_block = isinstance(st, PointerType) and st.is_block
        is_tensor = isinstance(st, TensorType) and isinstance(st.element_type, PointerType)
        _require(is_block or is_tensor, "ttg.async_copy_global_to_local copies through a block pointer or a tensor of pointers")
        tile = loaded_type(st)
        _require(shape_of(tile) == dt.get_shape(), f"ttg.async_copy_global_to_local: source tile {list(shape_of(tile))} and destination {list(dt.get_shape())} differ in shape")
        _require(element_type(tile) == dt.element_type, "ttg.async_copy_global_to_local: element types differ")
        if is_block:
            _require(self.mask is None and self.other is None, "block-pointer async copies use boundaryCheck, not a mask")
            rank = len(dt.get_shape())
            if self.boundaryCheck is not None:
                for d in self.boundaryCheck.get_values():
                    _require(0 <= d < rank, f"boundaryCheck dim {d} out of range for rank {rank}")
        else:
            _require(self.boundaryCheck is None, "boundaryCheck applies to block pointers only")
            if self.mask is not None:
                _require(shape_of(self.mask.type) == shape_of(st) and element_type(self.mask.type) == IntegerType(1), "async copy mask must be i1 with the pointers' shape")
        if self.other is not None:
            _require(self.mask is not None, "async copy 'other' needs a mask")

    @classmethod
    def parse(cls, parser: Parser) -> AsyncCopyGlobalToLocalOp:
        names = [parser.parse_unresolved_operand()]
        while parser.parse_optional_punctuation(",") is not None:
            names.append(parser.parse_unresolved_operand())
        if not 2 <= len(names) <= 4:
            parser.raise_error("ttg.async_copy_global_to_local takes src, dst[, mask[, other]]")
        attrs = parser.parse_optional_attr_dict()
        st, dt = _parse_arrow_types(parser)
        src = parser.resolve_operand(names[0], st)
        dst = parser.resolve_operand(names[1], dt)
        mask = other = None
        if len(names) > 2:
            mask = parser.resolve_operand(names[2], TensorType(IntegerType(1), shape_of(st), st.encoding if isinstance(st, TensorType) else NoneAttr()))
        if len(names) > 3:
            other = parser.resolve_operand(names[3], loaded_type(st))
        op = cls(src, dst, mask, other)
        bc = attrs.pop("boundaryCheck", None)
        pad = attrs.pop("padding", None)
        if bc is not None:
            op.boundaryCheck = bc
        if pad is not None:
            op.padding = pad
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list(self.operands, printer.print_operand)
        props: dict[str, Attribute] = {}
        if self.boundaryCheck is not None:
            props["boundaryCheck"] = self.boundaryCheck
        if self.padding is not None:
            props["padding"] = self.padding
        printer.print_op_attributes(props | dict(self.attributes))
        _print_types(printer, self.src.type, self.dst.type)


def _parse_tokens(parser: Parser) -> list[SSAValue]:
    """Optional `%t, ...`; backs off when those names are the next op's results (`%x = ...`)."""
    start = parser.pos
    names = []
    if (first := parser.parse_optional_unresolved_operand()) is not None:
        names.append(first)
        while parser.parse_optional_punctuation(",") is not None:
            names.append(parser.parse_unresolved_operand())
        if parser._current_token.text in ("=", ":"):
            parser._resume_from(start)
            names = []
    return [parser.resolve_operand(n, AsyncTokenType()) for n in names]


def _print_tokens(printer: Printer, tokens: Sequence[SSAValue]) -> None:
    if tokens:
        printer.print_string(" ")
        printer.print_list(tokens, printer.print_operand)


@irdl_op_definition
class AsyncCommitGroupOp(IRDLOperation):
    """`%g = ttg.async_commit_group %tok...`: closes a group of async copies (cp.async.commit_group)."""

    name = "ttg.async_commit_group"
    tokens = var_operand_def(AsyncTokenType)
    result = result_def(AsyncTokenType)
    traits = traits_def(MemoryWriteEffect())

    def __init__(self, tokens: Sequence[SSAValue] = ()):
        super().__init__(operands=[list(tokens)], result_types=[AsyncTokenType()])

    @classmethod
    def parse(cls, parser: Parser) -> AsyncCommitGroupOp:
        tokens = _parse_tokens(parser)
        attrs = parser.parse_optional_attr_dict()
        op = cls(tokens)
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        _print_tokens(printer, self.tokens)
        printer.print_op_attributes(self.attributes)


@irdl_op_definition
class AsyncWaitOp(IRDLOperation):
    """`ttg.async_wait %g... {num = 1 : i32}`: wait until at most `num` commit groups are pending."""

    name = "ttg.async_wait"
    tokens = var_operand_def(AsyncTokenType)
    num = prop_def(IntegerAttr[IntegerType])
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, tokens: Sequence[SSAValue], num: int):
        super().__init__(operands=[list(tokens)], properties={"num": IntegerAttr(num, i32)})

    @property
    def num_(self) -> int:
        return self.num.value.data

    def verify_(self) -> None:
        _require(self.num_ >= 0, f"ttg.async_wait: num must be >= 0, got {self.num_}")

    @classmethod
    def parse(cls, parser: Parser) -> AsyncWaitOp:
        tokens = _parse_tokens(parser)
        pos = parser.pos
        attrs = parser.parse_optional_attr_dict()
        num = attrs.pop("num", None)
        if not isinstance(num, IntegerAttr):
            parser.raise_error("ttg.async_wait needs {num = N : i32}", pos, parser.pos)
        op = cls(tokens, num.value.data)
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        _print_tokens(printer, self.tokens)
        printer.print_op_attributes({"num": self.num} | dict(self.attributes))


@irdl_op_definition
class BarrierOp(IRDLOperation):
    """`ttg.barrier`: every shared-memory access of the CTA before it happens before every one
    after it (a `bar.sync`; in a wgmma kernel also the wgmma drain and the proxy fence that
    make earlier generic writes visible to wgmma). Placed by tritongpu-insert-barriers; the
    lowering issues it right before the next op's first shared access, so that op's address
    arithmetic is not held up by the wait. In a warp-specialized function a barrier after the
    split belongs to one side (`{side = "producer"}` or `{side = "consumer"}`, `BARRIER_SIDE`):
    only that side's warps meet at it."""

    name = "ttg.barrier"
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    assembly_format = "attr-dict"

    def __init__(self, side: str | None = None) -> None:
        super().__init__(attributes={BARRIER_SIDE: StringAttr(side)} if side else {})

    def verify_(self) -> None:
        side = self.attributes.get(BARRIER_SIDE)
        if side is not None and not (isinstance(side, StringAttr) and side.data in ("producer", "consumer")):
            raise VerifyException(f'ttg.barrier: {BARRIER_SIDE} must be "producer" or "consumer", got {side}')


BARRIER_SIDE = "side"
"""On a `ttg.barrier` of a warp-specialized function: the side whose warps meet at it."""


# ----------------------------------------------------------------------------------------------
# Discardable attributes: what one pass tells a later one (and the lowering) through the IR

SHARED_OFFSET = "ttg.shared_offset"
"""On an op with a shared buffer or scratch (local_alloc, convert_layout, reduce, reshape,
dequantize, a broadcast atomic): its byte offset in the kernel's one dynamic shared array, as
allocate-shared-memory decided it (`ttg.shared_offset = 1024 : i32`)."""
SHARED_TOTAL = "ttg.shared"
"""On the module: the shared bytes a block of the kernel needs (allocate-shared-memory; the
launch attribute's `shared`)."""
EXPLICIT_BARRIERS = "ttg.explicit_barriers"
"""On a tt.func: tritongpu-insert-barriers placed its CTA barriers (`ttg.barrier`); the lowering
adds none of its own between ops (only an op's internal write-then-read round trip, and the
barriers that are part of an op: ttg.async_wait, ttg.init_barrier, a releasing atomic)."""
SLOT_SAFE = "ttg.slot_safe"
"""On an async copy: its slot is none that was read since the last CTA barrier, so the
lowering needs no barrier before it (the reads since then target the next slot)."""
SCALE_AFTER_DOT = "ttg.scale_after_dot"
"""On a tt.dequantize: its mma.sp dot applies the scales to each group's fp32 sums; the
fragments hold `code - zero` (tritongpu-scale-after-dot)."""
SLOT_GUARDED = "ttg.slot_guarded"
"""On an async copy (mbarrier mode): a ttg.wait_barrier on the slot's empty barrier came
first, so the lowering needs neither a CTA barrier nor a wgmma drain before it."""
WGMMA_IN_FLIGHT = "ttg.wgmma_in_flight"
"""On a ttg.async_wait (tritongpu-pipeline{wgmma-in-flight}): the wgmma group committed last may
stay in flight across its CTA barrier (`wgmma.wait_group 1` before the `bar.sync`): the ring
slots that group reads are not written until the next iteration's barrier."""
PRODUCER_WARPS = "ttg.producer-warps"
"""On a `tt.func` (tritongpu-warp-specialize): the number of warps after the `ttg.num-warps`
compute warps that only issue the function's TMA copies, e.g. `"ttg.producer-warps" = 1 : i32`: one
warp, or a warpgroup of 4 whose registers go to the compute warps (`setmaxnreg`)."""
PRODUCER_WARP_COUNTS = (1, 4)
"""The values `PRODUCER_WARPS` may take."""
BOX_STAGED = "ttg.box_staged"
"""On a `ttg.local_alloc` whose tile only a `ttg.async_tma_store` reads, e.g.
`{ttg.box_staged = 64 : i32}`: the buffer holds one staged box of the tile (a block of
`col_block` elements of dim 0 by that many elements of dim 1), and the store writes and stores
the tile box by box through it (tritongpu-coalesce-mma-stores{box-staging}; ping-pong's
tritongpu-warp-specialize halves the count where both groups' buffers would not fit)."""
STAGED_ROWS_MIN = 16
"""The fewest elements of dim 1 a staged box may have: one `stmatrix` group of a wgmma tile
spans 16 (two 8-column blocks), and a group must fall in one box."""

CONSUMER_GROUPS = "ttg.consumer-groups"
"""On a warp-specialized `tt.func`: 2 when two compute warpgroups (each the function's
`ttg.num-warps` = 4 warps) take the trips of its outer ring loop in turn (ping-pong,
tritongpu-warp-specialize{pingpong}); absent: one group of all compute warps."""

PRODUCER = "ttg.producer"
"""On the top-level ops of a warp-specialized `tt.func` (a contiguous run, from the first that
issues TMA copies to the last): the producer warp runs them too (their copies and empty-slot
waits), the compute warps run them without the copies. Ops before the run execute in every
warp, ops after it in the compute warps only."""
CONSUMER_ONLY = "ttg.consumer_only"
"""On an scf.if inside the producer's ops: the producer warp skips it (nothing in it takes part
in the pipeline's synchronisation, e.g. a persistent GEMM's per-tile epilogue) and carries the
values its else branch passes on. On any other op (in the body of an outer ring loop, whose
results the producer never reads: the epilogue of a grouped GEMM's token tile): the producer
skips it."""


# ----------------------------------------------------------------------------------------------
# Module attributes: the launch shape and target convert-tt-to-ttg records on a ttgir module

NUM_WARPS = "ttg.num-warps"
NUM_CTAS = "ttg.num-ctas"
TARGET = "ttg.target"
SUPPORTED_WARPS = (1, 2, 4, 8, 16, 32)
"""Warps per CTA the layouts and the lowering handle: powers of two up to a block's 1024
threads (Triton's limit too); tritongpu-warp-specialize adds a producer warp only where it
fits (16 warps and fewer)."""
MAX_THREADS = 1024
"""Threads one CUDA block may have."""
SUPPORTED_CTAS = (1, 2)
"""CTAs per cluster: one, or a CTA pair sharing B tiles (tritongpu-pipeline's num-ctas)."""
MAX_STAGES = 16
"""The most pipeline stages (tritongpu-pipeline's num-stages, `num_stages`) a K loop may get:
twice what any tuned tile uses; each stage is one more ring slot of every pipelined tile."""


class ModuleAttributeError(VerifyException):
    """A module's `ttg.*` attribute names a launch shape or target the compiler cannot run;
    `op` is the module, whose location the error reports."""

    def __init__(self, message: str, op: Operation):
        super().__init__(message)
        self.op = op


def _module_choice(module: Operation, key: str, default: int, allowed: Sequence[int]) -> int:
    attr = module.attributes.get(key)
    if attr is None:
        return default
    if not isinstance(attr, IntegerAttr) or attr.value.data not in allowed:
        shown = attr.value.data if isinstance(attr, IntegerAttr) else attr
        raise ModuleAttributeError(f'"{key}" = {shown} is not supported: it must be one of '
                                   f'{", ".join(map(str, allowed))}', module)
    return attr.value.data


def module_num_warps(module: Operation) -> int:
    """The module's `ttg.num-warps` (4 when it has none), checked once for every pass that reads
    it: a `ModuleAttributeError` at the module unless it is one of `SUPPORTED_WARPS`.

        >>> from xdsl.dialects.builtin import ModuleOp
        >>> module_num_warps(ModuleOp([], attributes={NUM_WARPS: IntegerAttr(8, i32)}))
        8
    """
    return _module_choice(module, NUM_WARPS, 4, SUPPORTED_WARPS)


def consumer_groups(func: Operation) -> int:
    """The compute groups of a function that take its outer loop's trips in turn
    (`CONSUMER_GROUPS`; 1 when absent).

        >>> from xdsl.dialects.builtin import ModuleOp
        >>> consumer_groups(ModuleOp([], attributes={CONSUMER_GROUPS: IntegerAttr(2, i32)}))
        2
    """
    groups = func.attributes.get(CONSUMER_GROUPS)
    return groups.value.data if isinstance(groups, IntegerAttr) else 1


def module_num_ctas(module: Operation) -> int:
    """The module's `ttg.num-ctas` (1 when it has none), one of `SUPPORTED_CTAS` (else a
    `ModuleAttributeError` at the module).

        >>> from xdsl.dialects.builtin import ModuleOp
        >>> module_num_ctas(ModuleOp([]))
        1
    """
    return _module_choice(module, NUM_CTAS, 1, SUPPORTED_CTAS)


def module_target(module: Operation) -> str | None:
    """The module's `ttg.target` (None when it has none), one of
    `ptx_targets.SUPPORTED_TARGETS` (else a `ModuleAttributeError` at the module).

        >>> from xdsl.dialects.builtin import ModuleOp
        >>> module_target(ModuleOp([], attributes={TARGET: StringAttr("sm_90a")}))
        'sm_90a'
    """
    attr = module.attributes.get(TARGET)
    if attr is None:
        return None
    problem = ptx_targets.check_target(attr.data) if isinstance(attr, StringAttr) else (
        f"it must be a string such as \"sm_90a\", got {attr}")
    if problem is not None:
        raise ModuleAttributeError(f'"{TARGET}": {problem}', module)
    return attr.data


# mbarrier synchronisation of a pipelined K loop (tritongpu-pipeline{mbarriers=true})


def _check_barrier_ring(ring: SSAValue, what: str) -> None:
    ty = ring.type
    _require(isinstance(ty, MemDescType) and len(ty.get_shape()) == 1 and ty.element_type == i64,
             f"{what}: the barrier ring must be a rank-1 !ttg.memdesc of i64 (one mbarrier per slot)")


@irdl_op_definition
class InitBarrierOp(IRDLOperation):
    """`ttg.init_barrier %ring {count = N : i32} : !ttg.memdesc<Sxi64, ...>`: every mbarrier of
    the ring expects `count` arrivals per phase (initialised once, before any use)."""

    name = "ttg.init_barrier"
    ring = operand_def(MemDescType)
    count = prop_def(IntegerAttr[IntegerType])
    traits = traits_def(MemoryWriteEffect())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$ring attr-dict `:` type($ring)"

    def __init__(self, ring: SSAValue, count: int):
        super().__init__(operands=[ring], properties={"count": IntegerAttr(count, i32)})

    def verify_(self) -> None:
        _check_barrier_ring(self.ring, "ttg.init_barrier")
        _require(self.count.value.data > 0, "ttg.init_barrier: count must be > 0")


@irdl_op_definition
class WaitBarrierOp(IRDLOperation):
    """`ttg.wait_barrier %ring[%slot], %parity : !ttg.memdesc<...>`: wait until the phase of
    parity `%parity` (0 or 1) of mbarrier `slot` is over (acquire: what the arrivals released
    is visible afterwards)."""

    name = "ttg.wait_barrier"
    ring = operand_def(MemDescType)
    slot = operand_def(i32)
    parity = operand_def(i32)
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    assembly_format = "$ring `[` $slot `]` `,` $parity attr-dict `:` type($ring)"

    def __init__(self, ring: SSAValue, slot: SSAValue, parity: SSAValue):
        super().__init__(operands=[ring, slot, parity])

    def verify_(self) -> None:
        _check_barrier_ring(self.ring, "ttg.wait_barrier")


ARRIVAL_KINDS = ("copies", "warps", "threads", "tma")


@irdl_op_definition
class ArriveBarrierOp(IRDLOperation):
    """`ttg.arrive_barrier %ring[%slot] {kind = "copies"|"warps"|"threads"|"tma"} : !ttg.memdesc<...>`:
    arrive on mbarrier `slot`. "copies": every thread arrives once the async copies it issued so
    far have landed (the ring's count is the thread count); "warps": one arrival per warp, once
    the warp got here (count = warps); "threads": every thread arrives once it got here (count =
    threads: each thread releases its own shared-memory reads); "tma": one thread arrives and
    announces `bytes` of TMA copies (count = 1; the phase completes when those bytes have landed
    too)."""

    name = "ttg.arrive_barrier"
    ring = operand_def(MemDescType)
    slot = operand_def(i32)
    kind = prop_def(StringAttr)
    bytes = opt_prop_def(IntegerAttr[IntegerType])
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$ring `[` $slot `]` attr-dict `:` type($ring)"

    def __init__(self, ring: SSAValue, slot: SSAValue, kind: str, nbytes: int | None = None):
        props: dict[str, Attribute] = {"kind": StringAttr(kind)}
        if nbytes is not None:
            props["bytes"] = IntegerAttr(nbytes, i32)
        super().__init__(operands=[ring, slot], properties=props)

    def verify_(self) -> None:
        _check_barrier_ring(self.ring, "ttg.arrive_barrier")
        _require(self.kind.data in ARRIVAL_KINDS,
                 f"ttg.arrive_barrier: kind must be one of {', '.join(ARRIVAL_KINDS)}, got {self.kind.data!r}")
        _require((self.kind.data == "tma") == (self.bytes is not None),
                 "ttg.arrive_barrier: kind \"tma\" and only it takes {bytes = N : i32}")


@irdl_op_definition
class DotWaitOp(IRDLOperation):
    """`ttg.dot_wait {pendings = N : i32}`: wait until at most N asynchronous dot groups (wgmma)
    of this warpgroup are still running; the shared memory and registers the others read are
    free afterwards."""

    name = "ttg.dot_wait"
    pendings = prop_def(IntegerAttr[IntegerType])
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "attr-dict"

    def __init__(self, pendings: int):
        super().__init__(properties={"pendings": IntegerAttr(pendings, i32)})

    def verify_(self) -> None:
        _require(self.pendings.value.data >= 0, "ttg.dot_wait: pendings must be >= 0")


@irdl_op_definition
class AsyncTmaCopyOp(IRDLOperation):
    """`ttg.async_tma_copy %ptr, %dst, %ring[%slot] : ptr-type -> memdesc-type, ring-type`: one
    thread copies the block pointer's tile into `dst` with the tensor memory accelerator (boxes
    out of bounds read as zero); the bytes count toward mbarrier `slot` of `ring`, whose phase
    completes once they and its arrivals are in (see `ttg.arrive_barrier {kind = "tma"}`)."""

    name = "ttg.async_tma_copy"
    src = operand_def(PointerType)
    dst = operand_def(MemDescType)
    ring = operand_def(MemDescType)
    slot = operand_def(i32)
    multicast = opt_prop_def(IntegerAttr[IntegerType])
    """{multicast = 2}: the two CTAs of a cluster copy the same tile; each issues half of its
    boxes into both CTAs' shared memory (and barriers), so L2 serves the tile once per pair."""
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$src `,` $dst `,` $ring `[` $slot `]` attr-dict `:` type($src) `->` type($dst) `,` type($ring)"

    def __init__(self, src: SSAValue, dst: SSAValue, ring: SSAValue, slot: SSAValue, multicast: int = 1):
        props = {"multicast": IntegerAttr(multicast, i32)} if multicast > 1 else {}
        super().__init__(operands=[src, dst, ring, slot], properties=props)

    @property
    def ctas(self) -> int:
        """How many CTAs of the cluster receive this copy (1: only the issuing one)."""
        return self.multicast.value.data if self.multicast is not None else 1

    def verify_(self) -> None:
        _require(self.ctas in (1, 2), f"ttg.async_tma_copy: multicast must be 2 (a CTA pair), got {self.ctas}")
        _check_barrier_ring(self.ring, "ttg.async_tma_copy")
        pt = self.src.type
        _require(isinstance(pt, PointerType) and pt.is_block, "ttg.async_tma_copy: the source must be a block pointer")
        _same_shape_and_elt(loaded_type(pt), self.dst.type, "ttg.async_tma_copy")
        _require(self.dst.type.is_mutable, "ttg.async_tma_copy needs a mutable memdesc")


@irdl_op_definition
class AsyncTmaStoreOp(IRDLOperation):
    """`ttg.async_tma_store %ptr, %src : ptr-type, memdesc-type`: the CTA's shared tile `src`
    goes to the block pointer's tile by the tensor memory accelerator (what lies outside the
    pointer's shape is not written). Every thread's writes of `src` are fenced for the async
    proxy and synced (a CTA barrier is part of the op); one thread then issues the boxes as one
    bulk group. `src` must stay unwritten until a `ttg.async_tma_store_wait` after it."""

    name = "ttg.async_tma_store"
    dst = operand_def(PointerType)
    src = operand_def(MemDescType)
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    assembly_format = "$dst `,` $src attr-dict `:` type($dst) `,` type($src)"

    def __init__(self, dst: SSAValue, src: SSAValue):
        super().__init__(operands=[dst, src])

    def verify_(self) -> None:
        pt = self.dst.type
        _require(isinstance(pt, PointerType) and pt.is_block, "ttg.async_tma_store: the destination must be a block pointer")
        _same_shape_and_elt(loaded_type(pt), self.src.type, "ttg.async_tma_store")
        _require(len(self.src.type.get_shape()) == 2, "ttg.async_tma_store: the tile must be 2-D")


@irdl_op_definition
class AsyncTmaStoreWaitOp(IRDLOperation):
    """`ttg.async_tma_store_wait {pendings = N : i32}`: the thread that issued this CTA's
    `ttg.async_tma_store`s waits until at most N of them are still reading their shared tiles,
    then a CTA barrier: every thread may write those tiles again (and the CTA may exit)."""

    name = "ttg.async_tma_store_wait"
    pendings = prop_def(IntegerAttr[IntegerType])
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "attr-dict"

    def __init__(self, pendings: int = 0):
        super().__init__(properties={"pendings": IntegerAttr(pendings, i32)})

    def verify_(self) -> None:
        _require(self.pendings.value.data >= 0, "ttg.async_tma_store_wait: pendings must be >= 0")


TTG = Dialect(
    "ttg",
    [
        ConvertLayoutOp,
        LocalAllocOp,
        LocalLoadOp,
        LocalStoreOp,
        MemDescSubviewOp,
        AsyncCopyGlobalToLocalOp,
        AsyncCommitGroupOp,
        AsyncWaitOp,
        InitBarrierOp,
        WaitBarrierOp,
        ArriveBarrierOp,
        DotWaitOp,
        AsyncTmaCopyOp,
        AsyncTmaStoreOp,
        AsyncTmaStoreWaitOp,
        BarrierOp,
    ],
    [
        BlockedEncodingAttr,
        SliceEncodingAttr,
        MmaEncodingAttr,
        DotOperandEncodingAttr,
        SharedEncodingAttr,
        MemDescType,
        AsyncTokenType,
    ],
)

LayoutAttr = BlockedEncodingAttr | SliceEncodingAttr | MmaEncodingAttr | DotOperandEncodingAttr
"""Any distributed (register) layout."""

__all__ = [
    "TTG",
    "THREADS_PER_WARP",
    "META_CLASSES",
    "BlockedEncodingAttr",
    "SliceEncodingAttr",
    "MmaEncodingAttr",
    "DotOperandEncodingAttr",
    "SharedEncodingAttr",
    "MemDescType",
    "AsyncTokenType",
    "ConvertLayoutOp",
    "LocalAllocOp",
    "LocalLoadOp",
    "LocalStoreOp",
    "MemDescSubviewOp",
    "AsyncCopyGlobalToLocalOp",
    "InitBarrierOp",
    "WaitBarrierOp",
    "ArriveBarrierOp",
    "DotWaitOp",
    "AsyncTmaCopyOp",
    "AsyncTmaStoreOp",
    "AsyncTmaStoreWaitOp",
    "BarrierOp",
    "EXPLICIT_BARRIERS",
    "BARRIER_SIDE",
    "AsyncCommitGroupOp",
    "AsyncWaitOp",
    "LayoutAttr",
    "SHARED_OFFSET",
    "SHARED_TOTAL",
    "SLOT_SAFE",
    "SLOT_GUARDED",
    "WGMMA_IN_FLIGHT",
    "PRODUCER_WARPS",
    "PRODUCER_WARP_COUNTS",
    "CONSUMER_GROUPS",
    "consumer_groups",
    "BOX_STAGED",
    "STAGED_ROWS_MIN",
    "PRODUCER",
    "CONSUMER_ONLY",
    "NUM_WARPS",
    "NUM_CTAS",
    "TARGET",
    "SUPPORTED_WARPS",
    "MAX_THREADS",
    "SUPPORTED_CTAS",
    "MAX_STAGES",
    "ModuleAttributeError",
    "module_num_warps",
    "module_num_ctas",
    "module_target",
    "layout_rank",
    "is_distributed_layout",
]
