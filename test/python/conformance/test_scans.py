"""Triton's scans, sorts and gathers (`tl.cumsum`, `tl.cumprod`, `tl.associative_scan`,
`tl.gather`, `tl.flip`, `tl.sort`, `tl.topk`, `tl.bitonic_merge`, `tl.histogram`,
`tl.reduce_or`, `tl.softmax`) in real-style kernels: on the interpreter against torch (random
data, ties, ragged masks), compiled for sm_90a and sm_80 (ptxas), and on the GPU against torch
and against the interpreter. Bad uses are one located error."""

from __future__ import annotations

import pytest
import scan_kernels as K
import torch

import sparsecc
import sparsecc.language as tl
from sparsecc.frontend.errors import CompilationError

TARGETS = ["sm_90a", "sm_80"]


def _nan(*shape, device="cpu", dtype=torch.float32):
    return torch.full(shape, float("nan"), device=device, dtype=dtype)


def _randn(*shape, device="cpu", dtype=torch.float32):
    return torch.randn(*shape).to(dtype).to(device)


def run_cumsum(device: str, axis: int, reverse: bool, m: int = 37, n: int = 50, block_m: int = 16,
               block_n: int = 64):
    x = _randn(m, n, device=device)
    y = _nan(m, n, device=device)
    K.cumsum_kernel[((m + block_m - 1) // block_m,)](x, y, m, n, n, BLOCK_M=block_m, BLOCK_N=block_n, AXIS=axis,
                                                     REVERSE=reverse)
    # the scan sees masked-off elements as 0, so along axis 0 rows past m (in the last block) add nothing
    if axis == 0:
        want = torch.cat([_block_cumsum(x[i:i + block_m], 0, reverse) for i in range(0, m, block_m)])
    else:
        want = _block_cumsum(x, 1, reverse)
    return y, want


def _block_cumsum(x: torch.Tensor, dim: int, reverse: bool) -> torch.Tensor:
    return x.flip(dim).cumsum(dim).flip(dim) if reverse else x.cumsum(dim)


def run_cumsum_int(device: str, n: int = 1000):
    x = torch.randint(-50, 50, (n,), dtype=torch.int32).to(device)
    y = torch.full((n,), -7, dtype=torch.int32, device=device)
    K.cumsum_1d_kernel[(1,)](x, y, n, BLOCK=1024)
    return y, x.cumsum(0).to(torch.int32)


def run_cumprod(device: str, reverse: bool, n: int = 200):
    x = (1 + 0.01 * torch.randn(n)).to(device)
    y = _nan(n, device=device)
    K.cumprod_kernel[(1,)](x, y, n, BLOCK=256, REVERSE=reverse)
    return y, (x.flip(0).cumprod(0).flip(0) if reverse else x.cumprod(0))


def run_linear_recurrence(device: str, reverse: bool, n: int = 1500):
    a = torch.rand(n).to(device)
    b = torch.randn(n).to(device)
    h = _nan(n, device=device)
    K.linear_recurrence_kernel[(1,)](a, b, h, n, BLOCK=2048, REVERSE=reverse)
    want = torch.zeros(n, dtype=torch.float64)
    s = 0.0
    steps = range(n - 1, -1, -1) if reverse else range(n)
    ac, bc = a.double().cpu(), b.double().cpu()
    for t in steps:
        s = ac[t] * s + bc[t]
        want[t] = s
    return h, want.float()


def run_running_max(device: str, m: int = 7, n: int = 50):
    x = torch.randint(-8, 8, (m, n)).to(torch.float16).to(device)  # many ties
    y = _nan(m, n, device=device, dtype=torch.float16)
    K.running_max_kernel[(1,)](x, y, m, n, BLOCK_M=8, BLOCK_N=64)
    return y, torch.cummax(x.float(), 1).values


def run_gather(device: str, M: int = 16, N: int = 32, k: int = 64):
    x = _randn(M, N, device=device)
    idx = torch.randint(0, N, (M, k), dtype=torch.int32).to(device)
    y = _nan(M, k, device=device)
    K.gather_kernel[(1,)](x, idx, y, M=M, N=N, K=k)
    return y, torch.gather(x, 1, idx.long())


def run_gather0(device: str, M: int = 32, N: int = 16, k: int = 8):
    x = _randn(M, N, device=device, dtype=torch.float16)
    idx = torch.randint(0, M, (k, N), dtype=torch.int64).to(device)
    y = _nan(k, N, device=device, dtype=torch.float16)
    K.gather0_kernel[(1,)](x, idx, y, M=M, N=N, K=k)
    return y, torch.gather(x, 0, idx)


def run_flip(device: str, dim: int):
    x = _randn(8, 32, device=device)
    y = _nan(8, 32, device=device)
    K.flip_kernel[(1,)](x, y, M=8, N=32, DIM=dim)
    return y, x.flip(dim)


def run_sort(device: str, descending: bool, ties: bool = False):
    x = (torch.randint(0, 5, (4, 64)).float() if ties else torch.randn(4, 64)).to(device)
    y = _nan(4, 64, device=device)
    K.sort_kernel[(1,)](x, y, M=4, N=64, DESCENDING=descending)
    return y, x.sort(1, descending=descending).values


def run_topk(device: str):
    x = _randn(16, 64, device=device)
    y = _nan(16, 4, device=device)
    K.topk_kernel[(1,)](x, y, M=16, N=64, K=4)
    return y, x.topk(4, 1).values


def run_bitonic_merge(device: str, descending: bool):
    up = torch.randint(-1000, 1000, (64,), dtype=torch.int32).sort().values
    down = torch.randint(-1000, 1000, (64,), dtype=torch.int32).sort(descending=True).values
    x = torch.cat([up, down]).to(device)
    y = torch.full((128,), -1, dtype=torch.int32, device=device)
    K.bitonic_merge_kernel[(1,)](x, y, N=128, DESCENDING=descending)
    return y, x.sort(descending=descending).values


def run_histogram(device: str, n: int = 1000):
    x = torch.randint(-3, 20, (n,), dtype=torch.int32).to(device)  # values outside 0..15 too
    h = torch.zeros(16, dtype=torch.int32, device=device)
    K.histogram_kernel[((n + 255) // 256,)](x, h, n, BLOCK=256, BINS=16)
    xs = x.cpu().long()
    want = torch.bincount(xs[(xs >= 0) & (xs < 16)], minlength=16).to(torch.int32)
    return h, want


def run_reduce_or(device: str):
    x = (1 << torch.randint(0, 31, (16, 32))).to(torch.int32).to(device)
    y = torch.zeros(16, dtype=torch.int32, device=device)
    K.reduce_or_kernel[(1,)](x, y, M=16, N=32)
    want = torch.zeros(16, dtype=torch.int32)
    for j in range(32):
        want |= x[:, j].cpu()
    return y, want


def run_softmax(device: str):
    x = (3 * torch.randn(8, 128)).to(device)
    y = _nan(8, 128, device=device)
    K.softmax_kernel[(1,)](x, y, M=8, N=128)
    return y, torch.softmax(x, 1)


RUNS = {
    "cumsum-axis1": lambda d: run_cumsum(d, 1, False),
    "cumsum-axis1-reverse": lambda d: run_cumsum(d, 1, True),
    "cumsum-axis0": lambda d: run_cumsum(d, 0, False, m=150, n=20, block_m=64, block_n=32),
    "cumsum-axis0-reverse": lambda d: run_cumsum(d, 0, True, m=150, n=20, block_m=64, block_n=32),
    "cumsum-int32-method": run_cumsum_int,
    "cumprod": lambda d: run_cumprod(d, False),
    "cumprod-reverse": lambda d: run_cumprod(d, True),
    "linear-recurrence": lambda d: run_linear_recurrence(d, False),
    "linear-recurrence-reverse": lambda d: run_linear_recurrence(d, True),
    "running-max-fp16": run_running_max,
    "gather-axis1": run_gather,
    "gather-axis0-fp16-i64": run_gather0,
    "flip-dim0": lambda d: run_flip(d, 0),
    "flip-dim1": lambda d: run_flip(d, 1),
    "sort": lambda d: run_sort(d, False),
    "sort-descending": lambda d: run_sort(d, True),
    "sort-ties": lambda d: run_sort(d, False, ties=True),
    "topk": run_topk,
    "bitonic-merge": lambda d: run_bitonic_merge(d, False),
    "bitonic-merge-descending": lambda d: run_bitonic_merge(d, True),
    "histogram": run_histogram,
    "reduce-or": run_reduce_or,
    "softmax": run_softmax,
}
TOL = {"cumsum-axis1": 1e-5, "cumsum-axis1-reverse": 1e-5, "cumsum-axis0": 1e-4, "cumsum-axis0-reverse": 1e-4,
       "cumprod": 1e-5, "cumprod-reverse": 1e-5, "linear-recurrence": 1e-4, "linear-recurrence-reverse": 1e-4,
       "softmax": 1e-5}


def _check(name: str, got: torch.Tensor, want: torch.Tensor) -> None:
    tol = TOL.get(name, 0.0)
    torch.testing.assert_close(got.cpu().to(want.dtype) if not want.is_floating_point() else got.float().cpu(),
                               want.cpu() if not want.is_floating_point() else want.float().cpu(),
                               rtol=tol, atol=tol)


@pytest.mark.parametrize("name", sorted(RUNS))
def test_on_the_interpreter(name, monkeypatch):
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    torch.manual_seed(0)
    got, want = RUNS[name]("cpu")
    _check(name, got, want)


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(RUNS))
def test_on_the_gpu_against_torch_and_the_interpreter(name, monkeypatch):
    torch.manual_seed(1)
    got, want = RUNS[name]("cuda")
    _check(name, got, want)
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")  # the same inputs on the interpreter
    torch.manual_seed(1)
    cpu, _ = RUNS[name]("cpu")
    _check(name, got, cpu.to(got.dtype) if not got.is_floating_point() else cpu)


_CUMSUM = {"X": "*fp32", "Y": "*fp32", "m": "i32", "n": "i32", "stride": "i32"}
SIGS = {
    "cumsum-axis1": (K.cumsum_kernel, _CUMSUM, {"BLOCK_M": 16, "BLOCK_N": 64, "AXIS": 1, "REVERSE": False}),
    "cumsum-axis0-reverse": (K.cumsum_kernel, _CUMSUM, {"BLOCK_M": 64, "BLOCK_N": 32, "AXIS": 0, "REVERSE": True}),
    "cumsum-int32": (K.cumsum_1d_kernel, {"X": "*i32", "Y": "*i32", "n": "i32"}, {"BLOCK": 1024}),
    "cumprod-reverse": (K.cumprod_kernel, {"X": "*fp32", "Y": "*fp32", "n": "i32"}, {"BLOCK": 256, "REVERSE": True}),
    "linear-recurrence": (K.linear_recurrence_kernel, {"A": "*fp32", "B": "*fp32", "H": "*fp32", "n": "i32"},
                          {"BLOCK": 2048, "REVERSE": False}),
    "running-max-fp16": (K.running_max_kernel, {"X": "*fp16", "Y": "*fp16", "m": "i32", "n": "i32"},
                         {"BLOCK_M": 8, "BLOCK_N": 64}),
    "gather": (K.gather_kernel, {"X": "*fp32", "IDX": "*i32", "Y": "*fp32"}, {"M": 16, "N": 32, "K": 64}),
    "gather0": (K.gather0_kernel, {"X": "*fp16", "IDX": "*i64", "Y": "*fp16"}, {"M": 32, "N": 16, "K": 8}),
    "flip": (K.flip_kernel, {"X": "*fp32", "Y": "*fp32"}, {"M": 8, "N": 32, "DIM": 1}),
    "sort": (K.sort_kernel, {"X": "*fp32", "Y": "*fp32"}, {"M": 4, "N": 64, "DESCENDING": True}),
    "topk": (K.topk_kernel, {"X": "*fp32", "Y": "*fp32"}, {"M": 16, "N": 64, "K": 4}),
    "bitonic-merge": (K.bitonic_merge_kernel, {"X": "*i32", "Y": "*i32"}, {"N": 128, "DESCENDING": False}),
    "histogram": (K.histogram_kernel, {"X": "*i32", "H": "*i32", "n": "i32"}, {"BLOCK": 256, "BINS": 16}),
    "reduce-or": (K.reduce_or_kernel, {"X": "*i32", "Y": "*i32"}, {"M": 16, "N": 32}),
    "softmax": (K.softmax_kernel, {"X": "*fp32", "Y": "*fp32"}, {"M": 8, "N": 128}),
}
SCANS = {"cumsum-axis1", "cumsum-axis0-reverse", "cumsum-int32", "cumprod-reverse", "linear-recurrence",
         "running-max-fp16"}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", sorted(SIGS))
def test_assembles(name, target):
    kernel, sig, consts = SIGS[name]
    ck = sparsecc.compile(kernel, sig, consts, target=target, num_warps=4)
    assert isinstance(ck.asm["cubin"], bytes) and ck.asm["cubin"]
    if name in SCANS:
        assert "shfl.sync.up" in ck.asm["ptx"] or "shfl.sync.down" in ck.asm["ptx"]


def _bad_scan_fn(X):
    x = tl.load(X + tl.arange(0, 16))
    tl.store(X + tl.arange(0, 16), tl.associative_scan(x, 0, 3))


def _bad_gather_rank(X):
    x = tl.load(X + tl.arange(0, 16))
    tl.store(X + tl.arange(0, 16), tl.gather(x, tl.arange(0, 4)[:, None], 0))


def _bad_sort_length(X):
    x = tl.load(X + tl.arange(0, 16)[:, None] * 16 + tl.arange(0, 16)[None, :])
    tl.store(X + tl.arange(0, 16), tl.topk(tl.sum(x, 1), 3))


@pytest.mark.parametrize("kernel, message", [
    (_bad_scan_fn, "combine_fn must be a @sparsecc.jit function"),
    (_bad_gather_rank, "the index must have the source's rank"),
    (_bad_sort_length, "tl.topk's k needs a power-of-two length, got 3"),
])
def test_bad_use_is_one_located_error(kernel, message):
    with pytest.raises(CompilationError) as info:
        sparsecc.compile(sparsecc.jit(kernel), {"X": "*fp32"}, {})
    assert message in str(info.value)
    assert "test_scans.py:" in str(info.value)
