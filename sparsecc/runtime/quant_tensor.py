"""`QuantizedSparseTensor`: a 2:4-sparse matrix whose kept values are 4- or 8-bit codes with a
scale (and optionally a zero point) per group of K columns: the formats `NV24.w4g128`,
`NV24.w8c`, `NV24.w4g64z` (`sparsecc.formats.quant` documents the arrays bit by bit).

Like `SparseTensor` it is not a `torch.Tensor` subclass: `@sparsecc.jit` recognises it by duck
typing (`values`, `meta`, `encoding`) and passes the arrays its format decomposes into (values,
meta, scales, zeros for a `z` scheme). Shape, strides and dtype describe the DENSE logical
M x K matrix: the dtype is the scales' (fp16 or bf16), the type kernels compute with.

    >>> import torch, sparsecc
    >>> w = sparsecc.prune_2to4(torch.randn(32, 128, generator=torch.Generator().manual_seed(0)))
    >>> q = sparsecc.compress(w.half(), quant="w4g128")
    >>> q
    QuantizedSparseTensor(shape=(32, 128), dtype=torch.float16, device=cpu, encoding='NV24.w4g128', values=(32, 32), meta=(2, 128), scales=(32, 1))
    >>> bool(((q.to_dense() != 0) <= (w != 0)).all())
    True
"""

from __future__ import annotations

from typing import Any

import torch

from sparsecc import formats
from sparsecc.formats import QuantScheme, SparseFormat
from sparsecc.runtime.codec import check_dense, compress_arrays, decode_meta_tile, runtime_dtypes
from sparsecc.runtime.matrix_like import CompressedMatrix
from sparsecc.runtime.quant_codec import dequantize_tile, pack_codes, quantize_kept

__all__ = ["QuantizedSparseTensor", "quant_format"]

_BASE = formats.NV24
"""The format whose kept values are quantized (the only quantizable one today)."""
_NAME = "QuantizedSparseTensor"


def quant_format(spec: str | QuantScheme | SparseFormat) -> SparseFormat:
    """The quantized format a scheme or format names: `"w4g128"`, `QuantScheme(...)`,
    `"NV24.w4g128"` or that SparseFormat. Raises `formats.UnknownFormatError` for a bad scheme
    and ValueError for a format that is not quantized.

        >>> quant_format("w8c").name, quant_format("NV24.w4g64z").quant.zero_point
        ('NV24.w8c', True)
    """
    if isinstance(spec, SparseFormat):
        fmt = spec
    elif isinstance(spec, QuantScheme):
        fmt = formats.lookup(f"{_BASE.name}.{spec.spec}")
    elif isinstance(spec, str):
        fmt = formats.lookup(spec if "." in spec or spec in formats.names() else f"{_BASE.name}.{spec}")
    else:
        raise TypeError(f"{_NAME}: a quantization scheme or format must be a string (\"w4g128\", "
                        f"\"NV24.w4g128\") or a QuantScheme, got {type(spec).__name__}")
    if fmt.quant is None:
        raise ValueError(f"{_NAME}: format {fmt.name!r} is not quantized (quantized formats are "
                         f"{_BASE.name}.<scheme>, e.g. '{_BASE.name}.w4g128'; use SparseTensor for {fmt.name})")
    return fmt


class QuantizedSparseTensor(CompressedMatrix):
    """A 2:4-sparse M x K matrix with quantized kept values: `values` (int8 packed codes,
    M x K/4 for 4 bits, M x K/2 for 8), `meta` (int16, NV24's), `scales` (fp16/bf16, M x K/G or
    M x 1) and, for a `z` scheme, `zeros` (like `scales`).

    Build one with `sparsecc.compress(dense, quant="w4g128")` (or `from_dense`); the
    constructor wraps prebuilt arrays as they are, without re-quantizing, after checking that
    they fit the format (contents are not inspected). uint8 values are viewed as int8.

        >>> q = QuantizedSparseTensor(torch.zeros(16, 16, dtype=torch.uint8),
        ...     torch.full((1, 32), 0x4444, dtype=torch.int16), torch.ones(16, 1, dtype=torch.bfloat16),
        ...     (16, 32), "NV24.w8c")
        >>> q.values.dtype, q.dtype, q.stride(), q.nbytes
        (torch.int8, torch.bfloat16, (32, 1), 352)
    """

    __slots__ = ("_format", "_meta", "_scales", "_shape", "_values", "_zeros")

    def __init__(self, values: torch.Tensor, meta: torch.Tensor, scales: torch.Tensor,
                 shape: tuple[int, int] | torch.Size, encoding: str,
                 zeros: torch.Tensor | None = None) -> None:
        fmt = _encoding_format(encoding)
        scheme = fmt.quant
        assert scheme is not None
        arrays = {"values": values, "meta": meta, "scales": scales}
        if zeros is not None or scheme.zero_point:
            arrays["zeros"] = zeros
        for name, t in arrays.items():
            if not isinstance(t, torch.Tensor):
                if t is None:
                    raise ValueError(f"{_NAME}: {fmt.name} has zero points: zeros (like scales) is missing")
                raise TypeError(f"{_NAME}: {name} must be a torch.Tensor, got {type(t).__name__}")
        if zeros is not None and not scheme.zero_point:
            raise ValueError(f"{_NAME}: {fmt.name} is symmetric (no zero points) but zeros were given; "
                             f"zero points need a '{scheme.spec}z' scheme")
        m, k = _check_shape(shape, scheme)
        if values.dtype == torch.uint8:
            values = values.view(torch.int8)
        arrays["values"] = values
        _check_dtypes(arrays, fmt)
        for a in fmt.arrays:
            want, got = a.shape(formats.INT, m, k), tuple(arrays[a.suffix].shape)
            if got != want:
                raise ValueError(f"{_NAME}: {a.suffix} of a {m}x{k} {fmt.name} matrix must have shape "
                                 f"{want}, got {got}")
        devices = {str(t.device) for t in arrays.values()}
        if len(devices) > 1:
            where = ", ".join(f"{n} on {t.device}" for n, t in arrays.items())
            raise ValueError(f"{_NAME}: the arrays must be on one device, got {where}")
        # Kernels index every array as a dense row-major buffer.
        self._values = values.contiguous()
        self._meta = meta.contiguous()
        self._scales = scales.contiguous()
        self._zeros = zeros.contiguous() if zeros is not None else None
        self._shape = torch.Size((m, k))
        self._format = fmt

    @classmethod
    def from_dense(cls, dense: torch.Tensor,
                   scheme_or_format: str | QuantScheme | SparseFormat) -> QuantizedSparseTensor:
        """Quantize the kept values of a 2:4-sparse fp16/bf16 M x K matrix (round to nearest,
        scales in the matrix's dtype); same as `sparsecc.compress(dense, quant=...)`. Raises
        naming the first group that is not 2:4, or the first non-finite value.

            >>> d = torch.tensor([[0.0, 3.0, 0.0, -7.0] * 8], dtype=torch.float16)
            >>> q = QuantizedSparseTensor.from_dense(d, "w4c")
            >>> q.scales.tolist(), q.to_dense()[0, :4].tolist()
            ([[1.0]], [0.0, 3.0, 0.0, -7.0])
        """
        fmt = quant_format(scheme_or_format)
        scheme = fmt.quant
        assert scheme is not None
        if (isinstance(dense, torch.Tensor) and dense.dim() == 2 and dense.dtype in runtime_dtypes(fmt)
                and scheme.group is not None and dense.shape[1] % scheme.group):
            raise ValueError(f"compress: K = {dense.shape[1]} is not a multiple of the quantization "
                             f"group {scheme.group} ({fmt.name} has a scale per {scheme.group} "
                             "columns); pad K first")
        check_dense(dense, fmt)
        kept, meta = compress_arrays(dense, _BASE)
        if not bool(torch.isfinite(kept).all()):
            bad = ~torch.isfinite(dense.detach())
            row, col = divmod(int(torch.argmax(bad.flatten().to(torch.uint8))), dense.shape[1])
            raise ValueError(f"compress: cannot quantize a non-finite value: row {row}, column {col} "
                             f"is {float(dense[row, col])}")
        codes, scales, zeros = quantize_kept(kept, scheme, dense.dtype)
        return cls(pack_codes(codes, scheme), meta, scales, tuple(dense.shape), fmt.name, zeros)

    @property
    def scales(self) -> torch.Tensor:
        """The scales (the logical dtype): M x K/G, or M x 1 for a per-row scheme."""
        return self._scales

    @property
    def zeros(self) -> torch.Tensor | None:
        """The zero points (like `scales`) of a `z` scheme; None for a symmetric one."""
        return self._zeros

    @property
    def format(self) -> SparseFormat:
        """The SparseFormat (`sparsecc.formats.lookup(self.encoding)`)."""
        return self._format

    @property
    def scheme(self) -> QuantScheme:
        """How the kept values are quantized (bits, group, zero points)."""
        assert self._format.quant is not None
        return self._format.quant

    @property
    def dtype(self) -> torch.dtype:
        """The logical element type (the scales' dtype, fp16 or bf16), not the codes' int8."""
        return self._scales.dtype

    def to_dense(self) -> torch.Tensor:
        """The dense M x K matrix in the logical dtype: each kept value `(code - zero) * scale`
        (rounded once), placed by the metadata; every other element is 0."""
        s = self.scheme
        kept = dequantize_tile(self._values, self._scales, self._zeros, s.bits, self.dtype)
        return decode_meta_tile(kept, self._meta, _BASE)

    def to(self, device: torch.device | str | int | None = None, dtype: torch.dtype | None = None,
           non_blocking: bool = False) -> QuantizedSparseTensor:
        """Move every array to `device`. A different logical `dtype` is an error (it would round
        the scales: quantize the dense matrix again instead); the same one is accepted."""
        if isinstance(device, torch.dtype):
            device, dtype = None, device
        if dtype is not None and dtype != self.dtype:
            raise TypeError(f"{_NAME}.to: cannot change the logical dtype {self.dtype} to {dtype} "
                            "(the scales would round); compress the dense matrix in that dtype instead")
        if device is None or torch.device(device) == self.device:
            return self
        moved = [t.to(device=device, non_blocking=non_blocking) if t is not None else None
                 for t in (self._values, self._meta, self._scales, self._zeros)]
        values, meta, scales, zeros = moved
        assert values is not None and meta is not None and scales is not None
        return QuantizedSparseTensor(values, meta, scales, self._shape, self.encoding, zeros)

    def __repr__(self) -> str:
        m, k = self._shape
        zeros = f", zeros={tuple(self._zeros.shape)}" if self._zeros is not None else ""
        return (f"{_NAME}(shape=({m}, {k}), dtype={self.dtype}, device={self.device}, "
                f"encoding={self.encoding!r}, values={tuple(self._values.shape)}, "
                f"meta={tuple(self._meta.shape)}, scales={tuple(self._scales.shape)}{zeros})")

    def __reduce__(self) -> tuple[Any, ...]:
        return (QuantizedSparseTensor, (self._values, self._meta, self._scales, tuple(self._shape),
                                        self.encoding, self._zeros))


def _encoding_format(encoding: Any) -> SparseFormat:
    """The quantized format `encoding` names; ValueError (TypeError for a non-string) otherwise."""
    if not isinstance(encoding, str):
        raise TypeError(f"{_NAME}: encoding must be a format name such as 'NV24.w4g128', "
                        f"got {type(encoding).__name__}")
    try:
        fmt = formats.lookup(encoding)
    except formats.UnknownFormatError as e:
        raise ValueError(f"{_NAME}: {e}") from None
    if fmt.quant is None:
        raise ValueError(f"{_NAME}: encoding {encoding!r} is not quantized (use SparseTensor, or a "
                         f"quantized format such as '{_BASE.name}.w4g128')")
    return fmt


def _check_shape(shape: Any, scheme: QuantScheme) -> tuple[int, int]:
    """(M, K) of a dense shape that the scheme can store; ValueError otherwise."""
    try:
        dims = tuple(int(d) for d in shape)
    except TypeError:
        raise TypeError(f"{_NAME}: shape must be (M, K), got {shape!r}") from None
    if len(dims) != 2:
        raise ValueError(f"{_NAME}: shape must be 2-D (M, K), got {dims}")
    m, k = dims
    cols = _BASE.tile_multiple[1]
    group = f" and of the quantization group {scheme.group}" if scheme.group else ""
    if m < 1 or k < 1 or k % cols or (scheme.group and k % scheme.group):
        raise ValueError(f"{_NAME}: shape {dims} needs M >= 1 and K a positive multiple of {cols}{group}")
    return m, k


def _check_dtypes(arrays: dict[str, torch.Tensor], fmt: SparseFormat) -> None:
    """TypeError naming the first array of the wrong dtype."""
    logical = runtime_dtypes(fmt)
    scales = arrays["scales"].dtype
    if scales not in logical:
        raise TypeError(f"{_NAME}: scales must be {' or '.join(map(str, logical))} (the logical "
                        f"dtype), got {scales}")
    want = {"values": (torch.int8, "int8 (or uint8) packed codes"), "meta": (torch.int16, "int16"),
            "zeros": (scales, f"{scales} like the scales")}
    for name, t in arrays.items():
        if name in want and t.dtype != want[name][0]:
            raise TypeError(f"{_NAME}: {name} must be {want[name][1]}, got {t.dtype}")
