"""`weight16_fused` (one @sparsecc.jit launch: dequantization and 2:4 decompression of a weight)
against `densify._weight16` (the torch ops), bit for bit: on the interpreter for every scheme
(w4g128, w8g128, w4g64z, w8g128z, w4c, bf16 logical type, int8 / fp8 values with a per-channel
scale, 16-bit values), both forms (kept values N x K/2, dense N x K), ragged N and K, poisoned
outputs and rows past N untouched, extreme scales and codes, NaN / -0 values moved as bits;
its PTX assembled for sm_90a and sm_80 (16-byte stores of kept values, 8-byte ones of dense
groups, no shared memory); `weight16`'s choice between the
kernel and the torch ops; and on the GPU (`gpu`) the same comparisons on Llama shapes, the
kernel inside a CUDA graph, and no torch-op fallback across many forms in one process."""

from __future__ import annotations

import warnings

import pytest
import torch
from ptxas_tools import needs_ptxas
from torch import nn

import sparsecc
from sparsecc.codegen import ptxas
from sparsecc.nn import SparseLinear
from sparsecc.ops import densify
from sparsecc.ops.weight16_kernel import (
    SOURCES,
    weight16_compiled,
    weight16_config,
    weight16_fused,
    weight16_kernel,
)

QUANT = ["w4g128", "w8g128", "w4g64z", "w8g128z", "w4c", "w8c"]
EIGHT = {"int8": torch.int8, "fp8": torch.float8_e4m3fn}
POISON = {torch.float16: 0x7E01, torch.bfloat16: 0x7FC1}
"""A NaN bit pattern per output type that no conversion produces."""


@pytest.fixture(autouse=True)
def _quiet_interpreter():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the CPU tensors run on the interpreter: that is the point
        yield


def _arrays(scheme: str, n: int, k: int, dtype: torch.dtype = torch.float16, seed: int = 0,
            device: str = "cpu") -> tuple:
    """(values, meta, scales, zeros, weight_scale, bits, k, dtype) of a random 2:4 weight:
    "fp16" (16-bit values of `dtype`), "int8" / "fp8" (8-bit values, per-channel fp32 scale) or a
    quant scheme."""
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(n, k, generator=g) * torch.logspace(-2, 2, n)[:, None]
    w = sparsecc.prune_2to4(w.to(device)).to(dtype)
    if scheme == "fp16":
        s = sparsecc.compress(w)
        return s.values, s.meta, None, None, None, 16, k, dtype
    if scheme in EIGHT:
        linear = nn.Linear(k, n, dtype=dtype, device=device)
        with torch.no_grad():
            linear.weight.copy_(w)
        layer = SparseLinear.from_linear(linear, weight_dtype=EIGHT[scheme])
        return layer.values, layer.meta, None, None, layer.weight_scale, 16, k, dtype
    q = sparsecc.compress(w, quant=scheme)
    return q.values, q.meta, q.scales, q.zeros, None, q.scheme.bits, k, dtype


def _poisoned(shape: tuple[int, int], dtype: torch.dtype, device: str = "cpu") -> torch.Tensor:
    """A buffer one row taller than `shape`, every element a NaN pattern."""
    return torch.full((shape[0] + 1, shape[1]), POISON[dtype], dtype=torch.int16, device=device).view(dtype)


def _assert_same(args: tuple, dense: bool) -> None:
    """The kernel's output equals the torch ops' bit for bit; it writes every element of a
    poisoned output and nothing past it."""
    ref = densify._weight16(*args, dense)
    n = args[0].shape[0]
    buf = _poisoned((n, ref.shape[1]), ref.dtype, ref.device.type)
    got = weight16_fused(*args, dense, out=buf[:n])
    assert got.dtype == ref.dtype and got.shape == ref.shape
    assert torch.equal(got.view(torch.int16), ref.view(torch.int16)), (args[5], dense)
    assert (buf[n].view(torch.int16) == POISON[ref.dtype]).all(), "wrote past the output"


@pytest.mark.parametrize("scheme", QUANT + list(EIGHT) + ["fp16"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("dense", [False, True], ids=["kept", "dense"])
@pytest.mark.parametrize("n, k", [(37, 256), (5, 384), (70, 1024)])
def test_bit_for_bit_the_torch_ops_on_the_interpreter(scheme, dtype, dense, n, k):
    _assert_same(_arrays(scheme, n, k, dtype, seed=n + k), dense)


def test_the_shapes_above_are_ragged_for_the_tiles():
    """The interpreter cases cut tiles both ways: N not a multiple of BLOCK_N (37, 5, 70 rows),
    the output width not a multiple of BLOCK_C (384 dense columns, 192 kept ones), one row."""
    for n, cols in ((37, 256), (37, 128), (5, 384), (5, 192), (70, 1024), (70, 512)):
        block_n, block_c, warps = weight16_config(n, cols)
        assert block_n * block_c == 8192 and warps == 8 and n % block_n
    assert weight16_config(5, 384)[1] == 512 and weight16_config(5, 192)[1] == 256


def test_extreme_codes_scales_and_zero_points():
    """Codes 0 and 15 / 255, negative, tiny (subnormal fp16) and huge scales (products that
    overflow to inf), zero points at both ends: the same bits as the torch ops."""
    g = torch.Generator().manual_seed(7)
    n, k = 19, 256
    base = _arrays("w4g64z", n, k)
    for bits in (4, 8):
        values = torch.randint(-128, 128, (n, k // (8 // bits * 2)), generator=g, dtype=torch.int8)
        values[0] = 0
        values[1] = -1  # every code at its maximum
        scales = torch.randn(n, 4, generator=g).half()
        scales[2] = torch.tensor([6e-8, -6e-8, 1e-5, 0.0])  # fp16 subnormals and 0
        scales[3] = torch.tensor([60000.0, -60000.0, 3000.0, 300.0])  # products past fp16's max
        zeros = torch.randint(0, 1 << bits, (n, 4), generator=g).half()
        zeros[4] = 0
        zeros[5] = (1 << bits) - 1
        for z in (zeros, None):
            for dense in (False, True):
                _assert_same((values, base[1], scales, z, None, bits, k, torch.float16), dense)


def test_sixteen_bit_values_move_as_bits():
    """NaN payloads, -0 and infinities among 16-bit kept values come out as the same bits, and
    a dropped position is +0."""
    values, meta, *_ = _arrays("fp16", 21, 128)
    bits = values.view(torch.int16).clone()
    bits[0, :6] = torch.tensor([0x7E55, -0x8000, 0x7C00, -0x0400, 0x0001, 0x7D01], dtype=torch.int16)
    _assert_same((bits.view(torch.float16), meta, None, None, None, 16, 128, torch.float16), True)


def _misaligned(values: torch.Tensor) -> torch.Tensor:
    """A copy of `values` whose data starts one byte past a 4-byte boundary."""
    flat = torch.empty(values.numel() * values.element_size() + 1, dtype=torch.uint8, device=values.device)
    out = flat[1:].view(values.dtype).view(values.shape) if values.element_size() == 1 else None
    assert out is not None and out.data_ptr() % 4 == 1
    out.copy_(values)
    return out


@pytest.mark.parametrize("scheme", ["w4g128", "w8g128"])
def test_codes_at_an_odd_address(scheme):
    """The kernel reads codes as 16- / 32-bit words: values not 4-byte aligned (a view into a
    larger buffer) are copied first, and the result is the same."""
    values, *rest = _arrays(scheme, 21, 256)
    for dense in (False, True):
        _assert_same((_misaligned(values), *rest), dense)


def test_dense_of_malformed_metadata_matches_the_torch_ops():
    """Metadata words with idx0 == idx1 or idx0 > idx1 (not NV24, but the torch ops define a
    result: idx1 wins): the kernel places the values the same way."""
    values, meta, scales, zeros, ws, bits, k, dtype = _arrays("w4g128", 16, 256)
    meta = torch.randint(-2**15, 2**15, meta.shape, generator=torch.Generator().manual_seed(3),
                         dtype=torch.int32).to(torch.int16)
    _assert_same((values, meta, scales, zeros, ws, bits, k, dtype), True)


def test_bad_arguments_are_one_clear_error():
    values, meta, scales, *_ = _arrays("w4g128", 16, 256)
    with pytest.raises(TypeError, match="dtype must be"):
        weight16_fused(values, meta, scales, None, None, 4, 256, torch.float32, False)
    with pytest.raises(TypeError, match="must be 16-bit"):
        weight16_fused(values, meta, None, None, None, 16, 256, torch.float16, True)
    with pytest.raises(ValueError, match="not a multiple of 16"):
        weight16_fused(values, meta, scales, None, None, 4, 264, torch.float16, False)
    with pytest.raises(ValueError, match="3 scales a row"):
        weight16_fused(values, meta, scales[:, :1].repeat(1, 3), None, None, 4, 256, torch.float16, False)
    with pytest.raises(ValueError, match="codes are 4 or 8 bits"):
        weight16_fused(values, meta, scales, None, None, 2, 256, torch.float16, False)


def test_an_empty_weight():
    values, meta, scales, *_ = _arrays("w4g128", 16, 256)
    out = weight16_fused(values[:0], meta[:0], scales[:0], None, None, 4, 256, torch.float16, True)
    assert out.shape == (0, 256)


def test_weight16_on_the_cpu_is_the_torch_ops(monkeypatch):
    """On the CPU `weight16` runs the torch ops (the interpreter is for checking kernels), the
    16-bit kept values are the stored tensor itself, and no kernel is launched."""
    monkeypatch.setattr("sparsecc.ops.weight16_kernel.weight16_launch",
                        lambda *a: pytest.fail("launched the kernel on the CPU"))
    args = _arrays("w4g128", 20, 256)
    assert torch.equal(densify.weight16(*args, True), densify._weight16(*args, True))
    s = _arrays("fp16", 20, 256)
    assert densify.weight16(*s, False) is s[0]


def test_one_compile_serves_every_row_count():
    """N and S are not specialized: weights of 16, 17, 1 and 33 rows share one compiled kernel."""
    before = len(weight16_kernel.cache)
    for n in (16, 17, 1, 33):
        _assert_same(_arrays("w4g64z", n, 128, seed=n), True)
    assert len(weight16_kernel.cache) - before <= 1


def test_weight16_compiled_knows_a_launch_it_has_seen():
    """The capture guard: `weight16_compiled` is False for a kind of arrays not launched before
    and True after one launch (here on the interpreter, whose launches are cached the same way)."""
    weight16_kernel.fast.clear()
    args = _arrays("w8g128z", 24, 256)
    out = torch.empty(24, 128, dtype=torch.float16)
    arrays = args[:5]
    assert not weight16_compiled(out, *arrays, 8, 256, False)
    weight16_fused(*args, False, out=out)
    assert weight16_compiled(out, *arrays, 8, 256, False)
    assert not weight16_compiled(torch.empty(24, 256, dtype=torch.float16), *arrays, 8, 256, True)


# -- the PTX ---------------------------------------------------------------------------------------


def _sig(source: str, out: str) -> dict[str, str]:
    """The signature of a launch on aligned arrays (N and S are never specialized; K is a
    multiple of 16)."""
    values = {"q4": "i8", "q8": "i8", "scaled": "fp8e4nv", "plain": out}[source]
    return {"OUT": f"*{out}:16", "VALUES": f"*{values}:16", "META": "*i16:16", "SCALES": f"*{out}:16",
            "ZEROS": f"*{out}:16", "WSCALE": "*fp32:16", "N": "i32", "K": "i32:16", "S": "i32"}


@needs_ptxas
@pytest.mark.parametrize("target", ["sm_90a", "sm_80"])
@pytest.mark.parametrize("source", list(SOURCES))
@pytest.mark.parametrize("out", ["fp16", "bf16"])
@pytest.mark.parametrize("dense", [False, True], ids=["kept", "dense"])
def test_ptx_assembles_without_spills(target, source, out, dense):
    block_n, block_c, warps = weight16_config(4096, 4096 if dense else 2048)
    zeros = source == "q4"
    shift = 6 if source.startswith("q") else -1
    kernel = sparsecc.compile(weight16_kernel, _sig(source, out),
                              {"BLOCK_N": block_n, "BLOCK_C": block_c, "SOURCE": SOURCES[source], "HAS_ZEROS": zeros,
                               "GROUP_SHIFT": shift, "DENSE": dense}, target=target, num_warps=warps)
    ptx = kernel.asm["ptx"]
    res = ptxas.assemble(ptx, target).kernel_resources()
    assert res.spill_stores == res.spill_loads == 0
    # the output in 16-byte stores (a run of 8 kept values), 8-byte ones when dense (a group)
    assert ("st.global.v2.b32" if dense else "st.global.v4.b32") in ptx and "st.global.b16" not in ptx
    assert "bar.sync" not in ptx and "st.shared" not in ptx  # no shuffles through shared memory
    assert ".ftz" not in ptx  # subnormal scales and products kept, as torch keeps them
    if not dense and source != "q4":  # a run of 8 values: one vector load
        assert "ld.global.v" in ptx


# -- the GPU ---------------------------------------------------------------------------------------

LLAMA = [(4096, 4096), (11008, 4096), (4096, 11008), (14336, 4096)]


@pytest.mark.gpu
@pytest.mark.parametrize("n, k", LLAMA)
@pytest.mark.parametrize("scheme", ["w4g128", "w8g128", "w4g64z", "w8g128z", "int8", "fp8", "fp16"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_bit_for_bit_the_torch_ops_on_the_gpu(n, k, scheme, dtype, monkeypatch):
    """`weight16` on CUDA (the kernel) against the torch ops on CUDA ($SPARSECC_DISPATCH_FUSE=0)
    and on the CPU, both forms, poisoned outputs."""
    args = _arrays(scheme, n, k, dtype, seed=n + k, device="cuda")
    for dense in (False, True):
        got = densify.weight16(*args, dense)
        monkeypatch.setenv(densify.FUSE_ENV, "0")
        ref = densify.weight16(*args, dense)
        monkeypatch.delenv(densify.FUSE_ENV)
        assert got.dtype == ref.dtype and torch.equal(got.view(torch.int16), ref.view(torch.int16)), (scheme, dense)
        cpu = densify._weight16(*[a.cpu() if isinstance(a, torch.Tensor) else a for a in args], dense)
        assert torch.equal(got.cpu().view(torch.int16), cpu.view(torch.int16)), (scheme, dense, "cpu")
        if scheme != "fp16" or dense:
            buf = _poisoned(tuple(ref.shape), ref.dtype, "cuda")
            weight16_fused(*args, dense, out=buf[:n])
            assert torch.equal(buf[:n].view(torch.int16), ref.view(torch.int16))
            assert (buf[n].view(torch.int16) == POISON[ref.dtype]).all()


@pytest.mark.gpu
@pytest.mark.parametrize("scheme", ["w4g128", "w8g128z", "fp8"])
def test_the_kernel_runs_inside_a_cuda_graph(scheme, monkeypatch):
    """Warmed up before the capture, `weight16` is the kernel inside the graph (no torch ops),
    and a replay after the output was poisoned writes the same bits again."""
    args = _arrays(scheme, 1000, 4096, seed=2, device="cuda")
    want = [densify._weight16(*args, dense) for dense in (False, True)]
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for dense in (False, True):
            densify.weight16(*args, dense)
    torch.cuda.current_stream().wait_stream(side)
    monkeypatch.setattr(densify, "_weight16", lambda *a: pytest.fail("torch ops in the capture"))
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        outs = [densify.weight16(*args, dense) for dense in (False, True)]
    for o in outs:
        o.view(torch.int16).fill_(POISON[o.dtype])
    graph.replay()
    torch.cuda.synchronize()
    for o, w in zip(outs, want):
        assert torch.equal(o.view(torch.int16), w.view(torch.int16))


@pytest.mark.gpu
def test_sixteen_bit_values_and_odd_addresses_on_the_gpu():
    """NaN payloads, -0, infinities and subnormals among 16-bit values keep their bits in the
    dense weight; codes at an odd address give the same result as aligned ones."""
    values, meta, *_ = _arrays("fp16", 300, 1024, device="cuda")
    bits = values.view(torch.int16).clone()
    bits[:, :6] = torch.tensor([0x7E55, -0x8000, 0x7C00, -0x0400, 0x0001, 0x7D01], dtype=torch.int16,
                               device="cuda")
    args = (bits.view(torch.float16), meta, None, None, None, 16, 1024, torch.float16, True)
    assert torch.equal(densify.weight16(*args).view(torch.int16), densify._weight16(*args).view(torch.int16))
    for scheme in ("w4g128", "w8g128"):
        values, *rest = _arrays(scheme, 300, 1024, device="cuda")
        for dense in (False, True):
            got = densify.weight16(_misaligned(values), *rest, dense)
            assert torch.equal(got.view(torch.int16), densify._weight16(values, *rest, dense).view(torch.int16))
