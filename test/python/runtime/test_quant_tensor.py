"""QuantizedSparseTensor and `sparsecc.compress(..., quant=...)`: round trips within half a
quantization step, the 2:4 pattern kept, wrapping without re-quantizing, pickling, errors, and
how the jit front end specializes and flattens it."""

from __future__ import annotations

import importlib
import pickle

import pytest
import torch

import sparsecc
from sparsecc import formats
from sparsecc.frontend.jit import _is_sparse_tensor, flatten_args, specialize
from sparsecc.runtime.compress import compress, decompress, prune_2to4
from sparsecc.runtime.quant_tensor import QuantizedSparseTensor, quant_format
from sparsecc.runtime.sparse_tensor import SparseTensor

DTYPES = [torch.float16, torch.bfloat16]
UNIT_ROUNDOFF = {torch.float16: 2.0**-11, torch.bfloat16: 2.0**-8}
SCHEMES = [f"w{b}{g}{z}" for b in (4, 8) for g in ("g64", "g128", "c") for z in ("", "z")]
SHAPES = [(1, 128), (17, 256), (45, 384), (16, 128)]


def random_24(m: int, k: int, dtype: torch.dtype, seed: int = 0, positive: bool = False) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(m, k, generator=gen) * 3
    if positive:
        x = x.abs() + 0.5
    return prune_2to4(x.to(dtype))


def dense_scales(q: QuantizedSparseTensor) -> torch.Tensor:
    """The scale of every dense element (float32, M x K)."""
    m, k = q.shape
    return q.scales.float().repeat_interleave(k // q.scales.shape[1], dim=1)


def check_round_trip(q: QuantizedSparseTensor, dense: torch.Tensor) -> None:
    out = q.to_dense()
    assert out.dtype == dense.dtype and out.shape == dense.shape
    # Stored scales and zero points are finite, as is every dequantized value.
    assert bool(torch.isfinite(q.scales).all()) and bool(torch.isfinite(out).all())
    assert q.zeros is None or bool(torch.isfinite(q.zeros).all())
    # Zeros stay zero: the metadata keeps the input's 2:4 pattern (a tiny nonzero may round to 0).
    assert not bool(((out != 0) & (dense == 0)).any())
    # Round to nearest: every value within half a step of the stored scale, plus the output's
    # own rounding to the dtype (half an ulp, or of the smallest subnormal).
    u = UNIT_ROUNDOFF[dense.dtype]
    sub = torch.finfo(dense.dtype).smallest_normal * torch.finfo(dense.dtype).eps
    s = dense_scales(q).double()
    tol = s * (0.5 + 2.0**-14) + u * out.double().abs() + sub
    err = (out.double() - dense.double()).abs()
    assert bool((err <= tol).all()), f"max error {float((err - tol).max())} over the bound"


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("shape", SHAPES)
def test_round_trip_within_half_a_step(scheme, dtype, shape):
    m, k = shape
    group = quant_format(scheme).quant.group
    if group is not None and k % group:
        pytest.skip(f"K = {k} is not a multiple of {group}")
    dense = random_24(m, k, dtype, seed=m * k)
    q = compress(dense, quant=scheme)
    assert isinstance(q, QuantizedSparseTensor)
    assert q.encoding == f"NV24.{scheme}" and q.format is formats.lookup(q.encoding)
    assert q.scheme.spec == scheme and q.dtype == dtype and q.values.dtype == torch.int8
    assert q.shape == torch.Size((m, k)) and q.size() == q.shape and q.size(1) == k
    assert q.stride() == (k, 1) and q.stride(0) == k and q.numel() == m * k
    assert q.ndim == q.dim() == 2 and not q.is_cuda and q.device == torch.device("cpu")
    assert (q.zeros is not None) == scheme.endswith("z")
    for a in q.format.arrays:
        t = getattr(q, a.suffix)
        assert tuple(t.shape) == a.shape(formats.INT, m, k) and t.is_contiguous()
    assert q.nbytes == sum(getattr(q, a.suffix).nbytes for a in q.format.arrays)
    check_round_trip(q, dense)
    assert torch.equal(decompress(q), q.to_dense())


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("scheme", ["w4g64z", "w8cz", "w4g128", "w8g64"])
@pytest.mark.parametrize("sign", [1, -1])
def test_groups_of_one_sign(scheme, dtype, sign):
    """A zero point's grid must reach a group whose values all have one sign."""
    dense = sign * random_24(16, 128, dtype, seed=3, positive=True)
    check_round_trip(compress(dense, quant=scheme), dense)


@pytest.mark.parametrize("dtype", DTYPES)
def test_exact_values_and_all_zero_groups(dtype):
    """Values on the grid come back exactly; an all-zero row and all-zero 2:4 groups stay 0."""
    dense = torch.zeros(17, 128, dtype=dtype)
    dense[0, 0:4] = torch.tensor([0.0, -7.0, 0.0, 3.0])
    dense[0, 8:12] = torch.tensor([7.0, 0.0, 0.0, 0.0])
    dense[5, 64:68] = torch.tensor([0.0, 0.0, 2.5, 0.0])
    for scheme in ("w4g64", "w4c"):  # scale 7 / 7: -7, 3 and 7 are on the grid
        q = compress(dense, quant=scheme)
        assert torch.equal(q.to_dense(), dense), scheme
    for scheme in ("w8g128z", "w4cz", "w8c"):  # off the grid: the same nonzeros, near
        out = compress(dense, quant=scheme).to_dense()
        assert torch.equal(out != 0, dense != 0), scheme
        assert torch.allclose(out.float(), dense.float(), atol=0.5), scheme


def _edge_matrix(kind: str, dtype: torch.dtype, m: int = 16, k: int = 256, seed: int = 0) -> torch.Tensor:
    """A 2:4 matrix whose groups sit at a range edge of `dtype` (see test_round_trip_at_range_edges)."""
    fi = torch.finfo(dtype)
    gen = torch.Generator().manual_seed(seed)
    unit = torch.rand(m, k, generator=gen) * 2 - 1
    if kind == "max":  # +-max in every row's first group, random values up to max elsewhere
        x = unit * fi.max
        x[:, 0], x[:, 1] = fi.max, -fi.max
    elif kind == "top binade":  # magnitudes in [max/2, max], both signs
        x = (unit.sign() * (0.5 + unit.abs() / 2)) * fi.max
    elif kind == "one sign max":
        x = (0.5 + unit.abs() / 2) * fi.max
    elif kind == "tiny":  # subnormal and smallest-normal magnitudes
        x = torch.randint(-4, 5, (m, k), generator=gen).float() * fi.smallest_normal * fi.eps
        x[:, 4:8] = fi.smallest_normal
    elif kind == "all equal":
        x = torch.full((m, k), 3.0)
        x[1::2] = -fi.max
    elif kind == "mixed":  # a row with huge, tiny and zero groups (per-row scales span them all)
        x = unit * 1e-3
        x[:, :64] = unit[:, :64] * fi.max
        x[:, 64:128] = 0
    else:
        raise AssertionError(kind)
    return prune_2to4(x.clamp(-fi.max, fi.max).to(dtype))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("kind", ["max", "top binade", "one sign max", "tiny", "all equal", "mixed"])
def test_round_trip_at_range_edges(kind, scheme, dtype):
    """Values at the dtype's max, tiny ones, equal ones: finite scales and zero points, and
    every value within half a step (a scale rounded up past max/127 once gave inf, and
    (hi - lo) overflowed float32 for bf16, giving NaN)."""
    dense = _edge_matrix(kind, dtype)
    check_round_trip(compress(dense, quant=scheme), dense)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("scheme", SCHEMES)
def test_every_group_maximum_in_the_top_binade(scheme, dtype):
    """One row per representable value v in [max/2, max] (fp16: 1024, bf16: 128), its groups
    holding +-v and random smaller values: no v overflows or leaves half a step."""
    fi = torch.finfo(dtype)
    lo_bits = int(torch.tensor(fi.max / 2, dtype=dtype).view(torch.int16))
    hi_bits = int(torch.tensor(fi.max, dtype=dtype).view(torch.int16))
    top = torch.arange(lo_bits, hi_bits + 1, dtype=torch.int16).view(dtype).float()
    gen = torch.Generator().manual_seed(1)
    x = (torch.rand(top.numel(), 128, generator=gen) * 2 - 1) * top[:, None]
    x[:, 0::8], x[:, 5::8] = top[:, None], -top[:, None]
    if scheme.endswith("z"):
        x[1::2, 5::8] = 0  # one-sided groups too
    dense = prune_2to4(x.to(dtype))
    check_round_trip(compress(dense, quant=scheme), dense)


def test_the_reported_range_edge_cases():
    """The reliability trial's cases: fp16 +-65504 (w8g128) came back +-inf, bf16 +-3e38
    (w4g128z) came back NaN."""
    x = torch.tensor([[65504.0, 0.0, -65504.0, 0.0] * 32], dtype=torch.float16)
    q = compress(x, quant="w8g128")
    assert bool(torch.isfinite(q.to_dense()).all())
    check_round_trip(q, x)
    y = torch.tensor([[3e38, 0.0, -3e38, 0.0] * 32], dtype=torch.bfloat16)
    q = compress(y, quant="w4g128z")
    assert bool(torch.isfinite(q.scales).all()) and bool(torch.isfinite(q.to_dense()).all())
    check_round_trip(q, y)


@pytest.mark.parametrize("scheme", ["w4g128", "w8c", "w4g64z", "w8g128z"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_constructor_wraps_without_requantizing(scheme, dtype):
    q = compress(random_24(45, 256, dtype, seed=7), quant=scheme)
    w = QuantizedSparseTensor(q.values, q.meta, q.scales, q.shape, q.encoding, q.zeros)
    assert torch.equal(w.to_dense(), q.to_dense())
    assert w.values.data_ptr() == q.values.data_ptr()  # contiguous arrays are taken as they are
    # Scales doubled by hand double every value: the arrays are used as given.
    d = QuantizedSparseTensor(q.values, q.meta, q.scales * 2, q.shape, q.encoding, q.zeros)
    assert torch.equal(d.to_dense().float(), q.to_dense().float() * 2)


def test_constructor_makes_arrays_contiguous_and_accepts_uint8():
    q = compress(random_24(32, 256, torch.float16, seed=1), quant="w4g128")
    values_t = q.values.t().contiguous().t()
    assert not values_t.is_contiguous()
    w = QuantizedSparseTensor(values_t.view(torch.uint8), q.meta, q.scales, q.shape, q.encoding)
    assert w.values.dtype == torch.int8 and w.values.is_contiguous()
    assert torch.equal(w.to_dense(), q.to_dense())


@pytest.mark.parametrize("scheme", ["w4g128", "w8g64z"])
def test_pickle_to_and_cpu(scheme):
    q = compress(random_24(17, 256, torch.bfloat16, seed=2), quant=scheme)
    r = pickle.loads(pickle.dumps(q))
    assert isinstance(r, QuantizedSparseTensor) and r.encoding == q.encoding and r.shape == q.shape
    for a in q.format.arrays:
        assert torch.equal(getattr(r, a.suffix), getattr(q, a.suffix))
    assert torch.equal(r.to_dense(), q.to_dense())
    assert q.to("cpu") is q and q.cpu() is q and q.to(torch.device("cpu"), torch.bfloat16) is q
    with pytest.raises(TypeError, match="cannot change the logical dtype"):
        q.to(torch.float16)
    assert repr(q).startswith("QuantizedSparseTensor(shape=(17, 256), dtype=torch.bfloat16")


def test_compress_by_format_name_and_package_exports():
    dense = random_24(16, 128, torch.float16)
    a = sparsecc.compress(dense, "NV24.w4g64z")
    b = sparsecc.compress(dense, quant="w4g64z")
    c = sparsecc.compress(dense, "NV24", quant=formats.QuantScheme.parse("w4g64z"))
    d = QuantizedSparseTensor.from_dense(dense, formats.lookup("NV24.w4g64z"))
    for t in (b, c, d):
        assert t.encoding == a.encoding and torch.equal(t.to_dense(), a.to_dense())
    assert sparsecc.QuantizedSparseTensor is QuantizedSparseTensor
    assert "QuantizedSparseTensor" in sparsecc.__all__
    # Without quant, nothing changed.
    s = sparsecc.compress(dense)
    assert isinstance(s, SparseTensor) and torch.equal(s.to_dense(), dense)


# ---- errors ---------------------------------------------------------------------------------


def test_compress_errors():
    dense = random_24(16, 128, torch.float16)
    bad = dense.clone()
    bad[3, 8:12] = torch.tensor([1.0, 2.0, 3.0, 0.0])
    with pytest.raises(ValueError, match=r"not 2:4 sparse: row 3, columns 8\.\.11 have 3 nonzeros"):
        compress(bad, quant="w4g128")
    with pytest.raises(ValueError, match="K = 200 is not a multiple of the quantization group 128"):
        compress(torch.zeros(4, 200, dtype=torch.float16), quant="w4g128")
    with pytest.raises(ValueError, match="K = 192 is not a multiple of the quantization group 128"):
        compress(random_24(4, 192, torch.float16), quant="w8g128z")
    with pytest.raises(TypeError, match=r"unsupported dtype torch.float32 \(NV24.w4g128 supports"):
        compress(dense.float(), quant="w4g128")
    with pytest.raises(TypeError, match="unsupported dtype torch.int8"):
        compress(torch.zeros(16, 128, dtype=torch.int8), quant="w8c")
    with pytest.raises(ValueError, match="2-D"):
        compress(dense[0], quant="w4g128")
    with pytest.raises(formats.UnknownFormatError, match='"NV24.w3g128".*bits must be 4 or 8'):
        compress(dense, quant="w3g128")
    with pytest.raises(formats.UnknownFormatError, match="group size must be a power of two"):
        compress(dense, quant="w4g100")
    with pytest.raises(formats.UnknownFormatError, match="unknown quantization scheme"):
        compress(dense, quant="int4")
    with pytest.raises(formats.UnknownFormatError, match="NV12 values cannot be quantized"):
        compress(dense, "NV12", quant="w4g128")
    with pytest.raises(ValueError, match="disagree"):
        compress(dense, "NV24.w8c", quant="w4g128")
    with pytest.raises(TypeError, match="quant must be a scheme"):
        compress(dense, quant=4)
    nan = dense.clone()
    nan[2, 5] = float("inf")
    with pytest.raises(ValueError, match="non-finite value: row 2, column 5 is inf"):
        compress(prune_2to4(nan), quant="w8c")
    with pytest.raises(ValueError, match="'NV24' is not quantized"):
        QuantizedSparseTensor.from_dense(dense, "NV24")


def _arrays(scheme: str = "w4g128", m: int = 17, k: int = 256) -> dict:
    q = compress(random_24(m, k, torch.float16, seed=5), quant=scheme)
    return {"values": q.values, "meta": q.meta, "scales": q.scales, "shape": (m, k),
            "encoding": q.encoding, "zeros": q.zeros}


@pytest.mark.parametrize(("change", "error", "message"), [
    ({"encoding": "NV24"}, ValueError, "'NV24' is not quantized"),
    ({"encoding": "NV24.w5g128"}, ValueError, "bits must be 4 or 8"),
    ({"encoding": 3}, TypeError, "encoding must be a format name"),
    ({"values": [1, 2]}, TypeError, "values must be a torch.Tensor, got list"),
    ({"shape": (17, 256, 1)}, ValueError, "shape must be 2-D"),
    ({"shape": (17, 200)}, ValueError, "K a positive multiple of 16 and of the quantization group 128"),
    ({"shape": (0, 256)}, ValueError, "M >= 1"),
    ({"values": "float16"}, TypeError, "values must be int8 \\(or uint8\\) packed codes, got torch.float16"),
    ({"meta": "int32"}, TypeError, "meta must be int16, got torch.int32"),
    ({"meta": "float16"}, TypeError, "meta must be int16, got torch.float16"),
    ({"scales": "float32"}, TypeError, "scales must be torch.float16 or torch.bfloat16"),
    ({"values": (17, 128)}, ValueError, r"values of a 17x256 NV24.w4g128 matrix must have shape \(17, 64\)"),
    ({"meta": (1, 256)}, ValueError, r"meta of a 17x256 NV24.w4g128 matrix must have shape \(2, 256\)"),
    ({"scales": (17, 1)}, ValueError, r"scales of a 17x256 NV24.w4g128 matrix must have shape \(17, 2\)"),
    ({"zeros": "like scales"}, ValueError, "symmetric \\(no zero points\\) but zeros were given"),
    ({"scales": "meta"}, ValueError, "one device"),
])
def test_constructor_errors(change, error, message):
    args = _arrays()
    for name, how in change.items():
        t = args.get(name)
        if isinstance(how, str) and hasattr(torch, how) and isinstance(t, torch.Tensor):
            args[name] = t.to(getattr(torch, how))
        elif isinstance(how, tuple) and name != "shape":
            args[name] = torch.zeros(how, dtype=t.dtype)
        elif how == "like scales":
            args[name] = torch.ones_like(args["scales"])
        elif how == "meta":
            args[name] = args[name].to("meta")
        else:
            args[name] = how
    with pytest.raises(error, match=message):
        QuantizedSparseTensor(**args)


def test_constructor_zero_point_errors():
    args = _arrays("w4g64z")
    assert args["zeros"] is not None
    ok = QuantizedSparseTensor(**args)
    assert ok.zeros is not None
    with pytest.raises(ValueError, match="NV24.w4g64z has zero points: zeros .* is missing"):
        QuantizedSparseTensor(**{**args, "zeros": None})
    with pytest.raises(TypeError, match="zeros must be torch.float16 like the scales, got torch.bfloat16"):
        QuantizedSparseTensor(**{**args, "zeros": args["zeros"].bfloat16()})
    with pytest.raises(ValueError, match=r"zeros of a 17x256 NV24.w4g64z matrix must have shape \(17, 4\)"):
        QuantizedSparseTensor(**{**args, "zeros": args["zeros"][:, :2]})
    per_row = _arrays("w8c")
    QuantizedSparseTensor(**per_row)  # any K multiple of 16 for a per-row scale
    with pytest.raises(ValueError, match=r"scales of a 17x256 NV24.w8c matrix must have shape \(17, 1\)"):
        QuantizedSparseTensor(**{**per_row, "scales": per_row["scales"].reshape(17)})


# ---- the jit front end ----------------------------------------------------------------------


@pytest.mark.parametrize(("scheme", "dtype", "kind"), [
    ("w4g128", torch.float16, "*fp16:NV24.w4g128"),
    ("w8c", torch.bfloat16, "*bf16:NV24.w8c"),
    ("w4g64z", torch.float16, "*fp16:NV24.w4g64z"),
])
def test_jit_specializes_and_flattens(scheme, dtype, kind):
    q = compress(random_24(16, 128, dtype), quant=scheme)
    assert _is_sparse_tensor(q)
    assert specialize(q, "W", "k") == kind
    flat = flatten_args([q, 3])
    expected = [q.values, q.meta, q.scales] + ([q.zeros] if q.zeros is not None else []) + [3]
    assert len(flat) == len(expected) and all(a is b for a, b in zip(flat, expected))
    assert formats.flat_params("W", kind)[0] == ("W.values", "*i8")
    # A plain SparseTensor still specializes by its values' dtype.
    assert specialize(compress(random_24(16, 128, dtype)), "A", "k") == kind.split(":")[0] + ":NV24"


def test_jit_fast_key_tells_the_logical_dtypes_apart(monkeypatch):
    """fp16 and bf16 tensors of one encoding have the same int8 values: the launch fast path's
    key must still tell them apart (it would reuse the other's compiled kernel otherwise)."""
    jit_mod = importlib.import_module("sparsecc.frontend.jit")  # the package's `jit` is the decorator

    @sparsecc.jit
    def kernel(W, n):
        pass

    monkeypatch.setattr(jit_mod, "_TENSOR", torch.Tensor)
    monkeypatch.setattr(jit_mod, "_SPARSE_CLASSES", {QuantizedSparseTensor})
    keys = [kernel.fast_key((compress(random_24(16, 128, dt), quant="w4g128"), 16), {}) for dt in DTYPES]
    assert keys[0] is not None and keys[0] != keys[1]
    assert torch.float16 in keys[0][1] and torch.bfloat16 in keys[1][1]


def test_duck_typed_sparse_tensor_without_dtype_still_specializes():
    class Duck:
        def __init__(self):
            self.values = torch.zeros(16, 64, dtype=torch.bfloat16)
            self.meta = torch.zeros(1, 128, dtype=torch.int16)
            self.encoding = "NV24"

    assert specialize(Duck(), "A", "k") == "*bf16:NV24"


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("scheme", ["w8g128", "w4g128z", "w8c", "w4g64"])
@pytest.mark.parametrize("kind", ["max", "top binade", "tiny", "mixed"])
def test_gpu_dequantizes_range_edges_as_the_interpreter_does(kind, scheme, dtype):
    """The GPU's in-register dequantization of range-edge groups equals `to_dense` bit for bit:
    with x the identity, y = x @ W.T is W.T itself (one exact product per output, fp32 sums)."""
    from sparsecc.ops.sparse_linear import sparse_linear

    k = 256
    q = compress(_edge_matrix(kind, dtype, m=64, k=k), quant=scheme)
    eye = torch.eye(k, dtype=dtype, device="cuda")
    y = torch.full((k, 64), float("nan"), dtype=dtype, device="cuda")
    y.copy_(sparse_linear(eye, q.cuda()))
    want = q.to_dense().t().cuda()
    assert torch.isfinite(y).all()
    assert torch.equal(y, want)
