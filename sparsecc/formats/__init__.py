"""Sparse formats as data: one file per format, looked up by name.

A format's name is what `#tt.sparse<"NAME">` and the `*fp16:NAME` signature suffix say; its
definition (a `SparseFormat`, see `base.py`) is what every stage asks about it. Adding a format
is adding a file here (plus its lowering) and listing it in `_FORMATS`.

    >>> from sparsecc import formats
    >>> formats.lookup("NV24").values.suffix
    'values'
"""

from __future__ import annotations

from sparsecc.formats.base import (
    INT,
    META_8BIT,
    META_16BIT,
    Arith,
    ArrayMap,
    ElementType,
    GroupShape,
    Instruction,
    IntArith,
    MetadataLayout,
    MetaFragment,
    SparseFormat,
)
from sparsecc.formats.nv12 import NV12
from sparsecc.formats.nv24 import NV24
from sparsecc.formats.quant import compose
from sparsecc.formats.scheme import QuantScheme, QuantSchemeError

_FORMATS: dict[str, SparseFormat] = {f.name: f for f in (NV24, NV12)}
_QUANTIZABLE = (NV24,)
"""The formats whose kept values may be quantized (`NV24.w4g128`, `formats.quant`)."""
_COMPOSED: dict[str, SparseFormat] = {}

DOT_FORMAT = NV24
"""The default format of a decomposed sparse `tt.dot` (see `of_dot_metadata`)."""


def of_dot_metadata(element: object) -> SparseFormat:
    """The format of a decomposed sparse `tt.dot` whose metadata operand has IR element type
    `element`: the metadata array's element tells the formats apart (NV24 i16, NV12 i32).

        >>> from xdsl.dialects.builtin import i32
        >>> of_dot_metadata(i32).name
        'NV12'
    """
    for f in _FORMATS.values():
        if f.metadata.element is not None and f.metadata.element.ir == element:
            return f
    return DOT_FORMAT


def for_dtype(torch_name: str) -> SparseFormat:
    """The format `sparsecc.compress` gives a matrix of torch dtype `torch_name` ("float32" ->
    NV12, the 16- and 8-bit types -> NV24).

        >>> for_dtype("float32").name, for_dtype("float8_e4m3fn").name
        ('NV12', 'NV24')
    """
    for f in _FORMATS.values():
        if any(e.torch_name == torch_name for e in f.runtime_element_types):
            return f
    return DOT_FORMAT


class UnknownFormatError(ValueError):
    """A sparse format name that no file in `sparsecc.formats` defines."""


def names() -> tuple[str, ...]:
    """The names of every known format, in registry order."""
    return tuple(_FORMATS)


def known() -> str:
    """The known names for messages: `"NV24"` (quoted, comma-separated), and the quantized
    spelling."""
    base = ", ".join(f'"{n}"' for n in _FORMATS)
    return base + "".join(f', "{f.name}.<scheme>" (e.g. "{f.name}.w4g128")' for f in _QUANTIZABLE)


def get(name: str) -> SparseFormat | None:
    """The format called `name`, or None."""
    try:
        return lookup(name)
    except UnknownFormatError:
        return None


def lookup(name: str) -> SparseFormat:
    """The format called `name`; UnknownFormatError listing the known ones otherwise. A
    quantized format is its base's name and a scheme (`formats.quant`): `"NV24.w4g128"`.

        >>> lookup("NV24.w8c").quant.spec
        'w8c'
        >>> lookup("NV42")
        Traceback (most recent call last):
        ...
        sparsecc.formats.UnknownFormatError: unknown sparse format "NV42"; known formats: "NV24", "NV12", "NV24.<scheme>" (e.g. "NV24.w4g128")
    """
    fmt = _FORMATS.get(name) if isinstance(name, str) else None
    if fmt is not None:
        return fmt
    if not isinstance(name, str):
        raise UnknownFormatError(f"a sparse format name must be a string, got {type(name).__name__}")
    fmt = _COMPOSED.get(name)
    if fmt is not None:
        return fmt
    base_name, dot, scheme = name.partition(".")
    base = _FORMATS.get(base_name)
    if not dot or base is None:
        raise UnknownFormatError(f'unknown sparse format "{name}"; known formats: {known()}')
    if base not in _QUANTIZABLE:
        raise UnknownFormatError(f'sparse format "{name}": {base_name} values cannot be quantized '
                                 f"(only {', '.join(f.name for f in _QUANTIZABLE)})")
    try:
        fmt = compose(base, QuantScheme.parse(scheme))
    except QuantSchemeError as e:
        raise UnknownFormatError(f'sparse format "{name}": {e}') from None
    _COMPOSED[name] = fmt
    return fmt


def of_signature(kind: str) -> SparseFormat | None:
    """The format a signature string names (`"*fp16:NV24"` -> NV24), None for a dense one.

    Only pointers carry a format; an integer's `:16` hint is not one, nor a dense pointer's
    alignment hint (`"*fp32:16"`).
    """
    if not kind.startswith("*"):
        return None
    _, _, suffix = kind.partition(":")
    return lookup(suffix) if suffix and not suffix.isdigit() else None


def flat_params(name: str, kind: str) -> list[tuple[str, str]]:
    """(name, kind) of the arguments one signature entry becomes after decomposition:
    `("A", "*fp16:NV24")` -> `[("A.values", "*fp16"), ("A.meta", "*i16")]`, a dense one itself."""
    fmt = of_signature(kind)
    if fmt is None:
        return [(name, kind)]
    element = kind[1:].partition(":")[0]
    return list(zip(fmt.flat_names(name), fmt.flat_kinds(element), strict=True))


def is_array_name(name: str) -> bool:
    """Whether a decomposed argument name is a sparse array (`A.values`, `A.meta`): the
    launcher requires those contiguous, as kernels index them as dense row-major buffers."""
    _, dot, suffix = name.rpartition(".")
    return bool(dot) and suffix in _ARRAY_SUFFIXES


_ARRAY_SUFFIXES = frozenset(
    a.suffix for f in (*_FORMATS.values(), *(compose(b, QuantScheme(4, 16, True)) for b in _QUANTIZABLE))
    for a in f.arrays)


__all__ = [
    "DOT_FORMAT",
    "INT",
    "META_8BIT",
    "META_16BIT",
    "NV12",
    "NV24",
    "Arith",
    "ArrayMap",
    "ElementType",
    "GroupShape",
    "Instruction",
    "IntArith",
    "MetadataLayout",
    "MetaFragment",
    "QuantScheme",
    "QuantSchemeError",
    "SparseFormat",
    "UnknownFormatError",
    "flat_params",
    "for_dtype",
    "get",
    "is_array_name",
    "known",
    "lookup",
    "names",
    "of_dot_metadata",
    "of_signature",
]
