"""Triton names that are small on their own (issue 29): the functional `add`/`sub`/`mul`,
`swizzle2d`, `PropagateNan`, `condition`, the type names kernels write in annotations
(`tensor`, `const`, `tuple`, `block_type`, ...), tensor descriptors and
`inline_asm_elementwise`.

    @sparsecc.jit
    def copy_tile(X, Y, M, N, BM: tl.constexpr, BN: tl.constexpr):
        src = tl.make_tensor_descriptor(X, [M, N], [N, 1], [BM, BN])
        dst = tl.make_tensor_descriptor(Y, [M, N], [N, 1], [BM, BN])
        tile = src.load([tl.program_id(0) * BM, 0])     # out-of-bounds elements read 0
        dst.store([tl.program_id(0) * BM, 0], tile)      # and are not written
"""

from __future__ import annotations

import builtins as _py
import enum
from typing import Any

from sparsecc.language.core import builtin, constexpr, dtype, int32, pointer_type

TRITON_MAX_TENSOR_NUMEL = constexpr(1 << 20)
"""The most elements one tensor may have (Triton's limit, and sparsecc's): a constexpr, e.g.
`tl.static_assert(BLOCK_M * BLOCK_N <= tl.TRITON_MAX_TENSOR_NUMEL)`."""

pi32_t = pointer_type(int32)
"""Triton's name for the type "pointer to int32" (`tl.pointer_type(tl.int32)`)."""


class PropagateNan(enum.IntEnum):
    """How `tl.maximum`/`tl.minimum`/`tl.clamp` treat NaN, as in Triton: `NONE` (the default)
    returns the other operand when one is NaN (IEEE maxNum, PTX `max.f32`); `ALL` returns NaN
    when either is (PTX `max.NaN.f32`): `tl.maximum(x, y, propagate_nan=tl.PropagateNan.ALL)`."""

    NONE = 0x0000
    ALL = 0xFFFF


class const:  # noqa: N801 - Triton's spelling
    """Annotation of a pointer to read-only data (`def k(X: tl.const, Y)`); accepted, as Triton
    takes it, but sparsecc does not forbid a store through such a pointer."""


class constexpr_type:  # noqa: N801
    """Triton's type of a compile-time value: `tl.constexpr_type(4).value == 4`. In sparsecc a
    constexpr is a Python value while the kernel compiles, so this is for host code and
    annotations; in a kernel use `tl.constexpr`."""

    def __init__(self, value: Any):
        self.value = value.value if isinstance(value, constexpr) else value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, constexpr_type) and other.value == self.value

    def __hash__(self) -> int:
        return hash(("constexpr_type", repr(self.value)))

    def __repr__(self) -> str:
        return f"constexpr_type[{self.value!r}]"


class tensor:  # noqa: N801
    """The type of a runtime value in annotations of @jit helpers (`def f(x: tl.tensor)`).
    Values in a sparsecc kernel are IR values, not instances of this class."""


class void:  # noqa: N801
    """Triton's type of "no value" (the result of a function that returns nothing): `tl.void`
    compares and prints like a dtype (`.name == "void"`); it is not a dtype a tensor can have."""

    name = "void"

    def is_floating(self) -> bool:
        return False

    def is_int(self) -> bool:
        return False

    def is_ptr(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "tl.void"

    __str__ = __repr__


void = void()  # type: ignore[misc]  # Triton's `tl.void` is an instance of `void`


class block_type:  # noqa: N801
    """A tensor type: element dtype and shape, `tl.block_type(tl.float32, [16, 16])`, for host code
    and annotations (`.element_ty`, `.shape`, `.numel`, `.scalar`); a value's own type is `x.dtype`
    and `x.shape` in a kernel."""

    def __init__(self, element_ty: dtype, shape: Any):
        self.element_ty = element_ty
        self.shape = _py.tuple(s.value if isinstance(s, constexpr) else s for s in shape)
        self.numel = 1
        for s in self.shape:
            self.numel *= s

    @property
    def scalar(self) -> dtype:
        return self.element_ty

    def is_block(self) -> bool:
        return True

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, block_type) and other.element_ty == self.element_ty
                and other.shape == self.shape)

    def __hash__(self) -> int:
        return hash((self.element_ty, self.shape))

    def __repr__(self) -> str:
        return f"<{list(self.shape)}, {self.element_ty!r}>"


@builtin
def add(x: Any, y: Any, sanitize_overflow: Any = True) -> Any:
    """`x + y` as a function (Triton's `tl.add`); `sanitize_overflow` is accepted (Triton checks
    integer overflow with it only in debug builds): `tl.add(acc, x)`."""


@builtin
def sub(x: Any, y: Any, sanitize_overflow: Any = True) -> Any:
    """`x - y` as a function: `tl.sub(x, mean)`."""


@builtin
def mul(x: Any, y: Any, sanitize_overflow: Any = True) -> Any:
    """`x * y` as a function: `tl.mul(x, scale)`."""


@builtin
def swizzle2d(i: Any, j: Any, size_i: Any, size_j: Any, size_g: Any) -> Any:
    """Triton's grouped tile order: the (i, j) of a row-major `size_i x size_j` grid mapped so that
    groups of `size_g` rows are walked column by column (better L2 reuse in a GEMM):
    `pid_m, pid_n = tl.swizzle2d(pid_m, pid_n, num_pid_m, num_pid_n, GROUP_M)`."""


@builtin
def condition(arg1: Any, disable_licm: Any = False) -> Any:
    """A `while` condition with Triton's loop hints: `while tl.condition(i < n, disable_licm=True):`.
    The condition is `arg1`; `disable_licm` is accepted (sparsecc hoists nothing out of a `while`)."""


@builtin
def tuple(args: Any = ()) -> Any:  # noqa: A001 - Triton's name
    """A tuple of kernel values, `tl.tuple((a, b))` (a Python tuple in sparsecc); also usable as an
    annotation of tuple arguments."""


@builtin
def slice(start: Any, stop: Any, step: Any = None) -> Any:  # noqa: A001 - Triton's name
    """Triton's slice object (`x[a:b]` makes one): a compile-time slice in sparsecc. Tensors are
    indexed with `:` and `None` only."""


@builtin
def make_tensor_descriptor(base: Any, shape: Any, strides: Any, block_shape: Any,
                           padding_option: Any = "zero") -> Any:
    """A descriptor of the row-major tensor at `base` (`shape`, `strides`, the last stride 1)
    whose `.load(offsets)` / `.store(offsets, value)` move one `block_shape` tile; elements
    outside `shape` read as 0 (`padding_option="nan"`: NaN) and are not written, as with TMA:
    `desc = tl.make_tensor_descriptor(X, [M, N], [N, 1], [BM, BN])`. sparsecc lowers each access
    to a block pointer with every dimension bounds-checked (TMA on sm_90a where it applies)."""


@builtin
def load_tensor_descriptor(desc: Any, offsets: Any) -> Any:
    """`desc.load(offsets)`: the tile of `desc` starting at element `offsets`."""


@builtin
def store_tensor_descriptor(desc: Any, offsets: Any, value: Any) -> Any:
    """`desc.store(offsets, value)`: write the tile `value` at element `offsets` of `desc`."""


class tensor_descriptor:  # noqa: N801
    """The type of `tl.make_tensor_descriptor`'s result, for annotations
    (`def load_tile(desc: tl.tensor_descriptor, ...)`). In a kernel a descriptor is a
    compile-time object holding the base pointer, shape and strides."""


@builtin
def inline_asm_elementwise(asm: Any, constraints: Any, args: Any, dtype: Any, is_pure: Any,
                           pack: Any) -> Any:
    """Run the PTX `asm` once per element (or per `pack` elements) of the broadcast `args`,
    registers named as in Triton: `$0..` the results, then the inputs; `constraints` like
    "=r,r" (one per register). GPU only (the interpreter cannot run PTX):
    `y = tl.inline_asm_elementwise("shf.l.wrap.b32 $0, $1, $2, 1;", "=r,r,r", [a, b], tl.int32,
    is_pure=True, pack=1)`."""
