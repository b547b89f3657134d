"""The vocabulary a sparse format is written in: element types, groups, metadata, arrays.

A `SparseFormat` (one per file in this folder, e.g. `nv24.py`) is plain data plus the index
arithmetic that follows from it. Everything that has to agree on a format asks it: the
`#tt.sparse<"...">` attribute (which element types it holds), the signature parser (`*fp16:NV24`),
`decompose-sparse-tensors` (shapes, strides, offsets, tiles of the values and metadata arrays),
the frontend and launcher (the decomposed arguments `A.values`, `A.meta`), the interpreter and
`sparsecc.compress` (the bit layout of a metadata word). Nothing here imports torch or a dialect,
so every stage can import it.

The index arithmetic is written once over an `Arith` (integer division, rounded down or up), so
the same map serves Python ints (the launcher, the codec, tests) and IR values (the pass hands
in a builder that emits folded `arith` ops).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TypeVar

from xdsl.ir import Attribute

if TYPE_CHECKING:
    from sparsecc.formats.scheme import QuantScheme

T = TypeVar("T")


@dataclass(frozen=True)
class ElementType:
    """One element type a format may hold, in every spelling the stages use.

    `name` is the signature / `tl` spelling (`"fp16"`), `ir` the IR type (`f16`), `torch_name`
    the attribute of the `torch` module (`"float16"`, looked up only where torch is loaded).
    """

    name: str
    ir: Attribute
    torch_name: str
    bits: int


@dataclass(frozen=True)
class GroupShape:
    """`kept` of every `size` consecutive elements along K may be nonzero (2 of 4 for NV24)."""

    kept: int
    size: int



@dataclass(frozen=True)
class MetadataLayout:
    """How the kept positions of a dense M x K matrix are packed into words.

    Each group's kept positions are `index_bits`-bit indices, smallest first, lowest bits first;
    a word of `element.bits` bits holds the groups of `word_cols` consecutive columns of one
    row. Words are stored in row blocks: the word of row `m` and column chunk `c` lives at
    `meta[m // block_rows, block_rows * c + m % block_rows]`, so the array is
    `ceil(M / block_rows) x (K / word_cols * block_rows)`; rows past M (up to the block) hold
    `pad_word`, which is a valid word, so kernels load whole row blocks.
    """

    element: ElementType
    index_bits: int
    word_cols: int
    block_rows: int
    pad_word: int
    halves: bool = False
    """Groups of one kept element (1:2) written as 2:4 over 16-bit halves: kept element i is
    indices (2i, 2i + 1), so a group takes two indices like NV24's (tf32's 1:2, PTX)."""

    def groups_per_word(self, group: GroupShape) -> int:
        """Groups one word covers (4 for NV24: 16 columns of 4-column groups)."""
        return self.word_cols // group.size

    @property
    def group_bits(self) -> int:
        """Bits one group takes in a word: two indices (of 2:4 positions) per group."""
        return 2 * self.index_bits


@dataclass(frozen=True)
class MetaFragment:
    """How one thread's 32-bit metadata register of an instruction is made of 16-bit words.

    The lowering reads a 16-row block of metadata with `ldmatrix.trans`, one 8x8 matrix per
    64-word column group: thread t of quad g gets rows 2t (bits 15:0) and 2t + 1 (bits 31:16)
    of the matrix, column g; matrix row r reads the 8 words that start `word_offset(r)` words
    into the group (word 16 c + m of a group is row m of 16-column chunk c, `MetadataLayout`).
    So `row_fields` places each thread's two words, and `selectors` says how many
    instructions share the register:

    * 16- and 32-bit values (selectors 2, row r at 8 r): thread t holds chunk t of rows g and
      g + 8; threads 0-1 of a quad feed step 2q (selector 0), threads 2-3 step 2q + 1;
    * 8-bit values (selectors 1, rows with bits 0 and 1 swapped): thread t holds chunks
      2 (t // 2) and 2 (t // 2) + 1 of row g + 8 (t % 2): 32 columns of one row, every thread
      feeding the one k64 step of the group (measured on the H100, bench/results/NOTES.md).

        >>> MetaFragment(2, ((0, 3, 8),)).word_offset(5), MetaFragment(2, ((0, 3, 8),)).step(3)
        (40, (1, 1))
    """

    selectors: int
    """Instructions one register feeds, told apart by the sparsity selector (2 or 1)."""
    row_fields: tuple[tuple[int, int, int], ...]
    """Bit fields of the matrix row r, as (lowest bit, bits, words per unit), summed in this order
    (the lowering emits them so): word_offset(r) = sum((r >> lo) % 2**bits * words)."""

    def word_offset(self, r: int) -> int:
        """Words from the start of a 64-word group to the first word of ldmatrix row `r`."""
        return sum((r >> lo) % (1 << bits) * words for lo, bits, words in self.row_fields)

    def step(self, s: int) -> tuple[int, int]:
        """(64-word group q of the metadata tile, sparsity selector) of instruction step `s`."""
        return s // self.selectors, s % self.selectors


META_16BIT = MetaFragment(selectors=2, row_fields=((0, 3, 8),))
"""The metadata register of the 16-bit (and tf32) `mma.sp` / `wgmma.sp` steps."""
META_8BIT = MetaFragment(selectors=1, row_fields=((2, 1, 32), (0, 1, 16), (1, 1, 8)))
"""The metadata register of the 8-bit (k64) steps."""


@dataclass(frozen=True)
class Instruction:
    """A GPU instruction that consumes the format's values and metadata directly.

    `ptx` is the opcode stem, `shape` its largest (m, n, k) in dense elements, `min_target` the
    lowest `sm_XY` it runs on, `note` how it reads the metadata, `elements` the value types it
    takes, `meta` how its metadata register is filled (the A values and B fragments are the
    same for every instruction, counted in 16-bit units: `analysis/layouts.py`).
    """

    ptx: str
    shape: tuple[int, int, int]
    min_target: str
    note: str
    elements: tuple[ElementType, ...]
    meta: MetaFragment

    @property
    def warpgroup(self) -> bool:
        """Whether a warpgroup issues it (`wgmma`), not a warp (`mma.sp`)."""
        return self.ptx.startswith("wgmma")

    @property
    def element_bits(self) -> int:
        """The width of the values it takes (one width per instruction)."""
        return self.elements[0].bits


class Arith(Protocol[T]):
    """Integer division the index maps need; `d` is a positive compile-time constant."""

    def div(self, v: T, d: int) -> T:
        """`v // d` (rounded down)."""
        ...

    def ceil_div(self, v: T, d: int) -> T:
        """`-(-v // d)` (rounded up)."""
        ...

    def const_like(self, value: int, like: T) -> T:
        """The constant `value`, of `like`'s type."""
        ...


class IntArith:
    """`Arith` over Python ints."""

    @staticmethod
    def div(v: int, d: int) -> int:
        """`v // d`."""
        return v // d

    @staticmethod
    def ceil_div(v: int, d: int) -> int:
        """`v / d` rounded up."""
        return -(-v // d)

    @staticmethod
    def const_like(value: int, like: int) -> int:
        """`value` itself."""
        return value


INT = IntArith()
"""The `Arith` for plain integers."""


@dataclass(frozen=True)
class ArrayMap:
    """One array a sparse tensor decomposes into, as a map from dense indices.

    Dense row `r` and column `c` (a multiple of `col_div`) land in row `r // row_div`, column
    `c // col_div` of this array; a dense row stride `sM` becomes `sM // row_stride_div`. Extents
    along M round up (a partial row block is padded), extents along K divide exactly (K is a
    multiple of the format's word width). `element` None: the dense tensor's element type.
    `col_div` 0: one column per row whatever K is (a per-row scale), at offset 0, row stride 1.
    `suffix` names the decomposed argument (`A.values`; `A_values` in the IR), and is also the
    attribute of a `SparseTensor` that holds the array.
    """

    suffix: str
    element: ElementType | None
    row_div: int
    col_div: int
    row_stride_div: int
    masked_fill: int | None = None
    """What a masked-off element of this array loads as: None, the dense load's `other`."""

    def _d(self, ar: Arith[T], v: T, d: int, up: bool = False) -> T:
        if d == 1:
            return v
        return ar.ceil_div(v, d) if up else ar.div(v, d)

    @property
    def per_row(self) -> bool:
        """One element per row (`col_div` 0): a per-channel scale."""
        return self.col_div == 0

    def shape(self, ar: Arith[T], m: T, k: T) -> tuple[T, T]:
        """The array's extent for a dense M x K extent."""
        rows = self._d(ar, m, self.row_div, up=True)
        return rows, (ar.const_like(1, k) if self.per_row else self._d(ar, k, self.col_div))

    def strides(self, ar: Arith[T], sm: T, sk: T) -> tuple[T, T]:
        """The array's strides for dense strides (sM, sK) of a row-major dense matrix."""
        if self.per_row:
            return ar.const_like(1, sm), sk
        return self._d(ar, sm, self.row_stride_div), sk

    def offsets(self, ar: Arith[T], om: T, ok: T) -> tuple[T, T]:
        """Where a dense block at (om, ok) starts in the array (om, ok on word boundaries)."""
        cols = ar.const_like(0, ok) if self.per_row else self._d(ar, ok, self.col_div)
        return self._d(ar, om, self.row_div), cols

    def tile(self, bm: int, bk: int) -> tuple[int, int]:
        """The array tile of a dense BM x BK tile (a pointer tensor's 1 stays 1; a per-row
        array's tile is one column)."""
        cols = 1 if bk <= 1 or self.per_row else max(1, bk // self.col_div)
        return (bm // self.row_div if bm > 1 else 1), cols

    @property
    def row_offset_div(self) -> int:
        """What a dense element offset along M (row * sM) is divided by after grouping rows."""
        return self.row_div * self.row_stride_div


@dataclass(frozen=True)
class SparseFormat:
    """One sparse format: a name, what it holds, and how it decomposes. See `nv24.py`.

    `element_types` are the types `#tt.sparse<name>` and a `*T:name` signature accept
    (`element_kind` says what they have in common, for messages);
    `runtime_element_types` the subset that `sparsecc.compress`, `SparseTensor` and the GPU
    lowering handle today. `arrays` are the decomposed arrays in argument order (values first).
    `tile_multiple` is what a sparse tile's (rows, columns) must be multiples of.
    """

    name: str
    summary: str
    element_types: tuple[ElementType, ...]
    element_kind: str
    runtime_element_types: tuple[ElementType, ...]
    group: GroupShape
    meta: MetadataLayout
    values: ArrayMap
    metadata: ArrayMap
    tile_multiple: tuple[int, int]
    instructions: tuple[Instruction, ...]
    extra: tuple[ArrayMap, ...] = ()
    """Arrays after values and metadata: a quantized format's scales (and zero points)."""
    quant: QuantScheme | None = None
    """How the kept values are quantized (`formats.quant`); None: stored as the element type."""

    @property
    def arrays(self) -> tuple[ArrayMap, ...]:
        """The decomposed arrays in argument order: values, metadata, then any `extra`."""
        return (self.values, self.metadata, *self.extra)

    # ---- element types ----------------------------------------------------------------

    def element(self, name: str) -> ElementType | None:
        """The element type spelled `name` ("fp16") if the format holds it, else None."""
        return next((e for e in self.element_types if e.name == name), None)

    def element_of_ir(self, ty: Attribute) -> ElementType | None:
        """The element type whose IR type is `ty` if the format holds it, else None."""
        return next((e for e in self.element_types if e.ir == ty), None)

    def rejects(self, ty: Attribute) -> str | None:
        """Why the format cannot hold IR element type `ty` (None: it can)."""
        if self.element_of_ir(ty) is not None:
            return None
        return self.element_rule()

    def element_rule(self, prefix: str = "") -> str:
        """What the format holds, for messages: `NV24 sparsity needs a 16- or 8-bit element
        type (fp16, bf16, fp8e4nv, i8)`; `prefix` goes before each name (`*` in signatures)."""
        names = ", ".join(prefix + e.name for e in self.element_types)
        return f"{self.name} sparsity needs {self.element_kind} ({names})"

    # ---- the decomposed arguments -------------------------------------------------------

    def flat_names(self, param: str) -> list[str]:
        """Names of the arguments a sparse parameter becomes: `A` -> `A.values`, `A.meta`."""
        return [f"{param}.{a.suffix}" for a in self.arrays]

    def flat_kinds(self, element: str) -> list[str]:
        """Signature kinds of those arguments: `fp16` -> `*fp16`, `*i16`."""
        return [f"*{(a.element.name if a.element else element)}" for a in self.arrays]

    def array_element(self, array: ArrayMap, dense: Attribute) -> Attribute:
        """The IR element type of `array` for a dense element type `dense`."""
        return array.element.ir if array.element is not None else dense

    def instruction(self, element_bits: int, warpgroup: bool) -> Instruction | None:
        """The `mma.sp` (`warpgroup` False) or `wgmma.sp` instruction that takes the format's
        values of `element_bits` bits; None: none does.

            >>> from sparsecc.formats.nv24 import NV24
            >>> NV24.instruction(8, warpgroup=False).shape
            (16, 8, 64)
        """
        return next((i for i in self.instructions
                     if i.element_bits == element_bits and i.warpgroup == warpgroup), None)

    def check_tile(self, bm: int, bk: int) -> str | None:
        """Why a dense BM x BK tile cannot be decomposed (None: it can)."""
        rm, rk = self.tile_multiple
        if bm % rm or bk % rk:
            return f"a sparse {self.name} tile must have {self.tile_rule()}, got {bm}x{bk}"
        return self.quant.check_tile(bk) if self.quant is not None else None

    def tile_rule(self) -> str:
        """What a sparse tile's extents must be, and why, for messages."""
        rm, rk = self.tile_multiple
        dims = (f"rows and columns that are multiples of {rm}" if rm == rk else
                f"rows that are multiples of {rm} and columns that are multiples of {rk}")
        return (f"{dims} (one metadata word covers {self.meta.word_cols} columns of a row, "
                f"one metadata row the words of {self.meta.block_rows} rows)")
