"""Launching `kernel[grid](*args)`: specialization, caching, argument flattening, dispatch."""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types

import pytest
import torch
from kernels import dot_kernel

import sparsecc
import sparsecc.language as tl
from sparsecc.compiler import StageResult

compile_mod = importlib.import_module("sparsecc.frontend.compile")  # the module, not the function
jit_mod = importlib.import_module("sparsecc.frontend.jit")

HAVE_DECOMPOSE = importlib.util.find_spec("sparsecc.passes.decompose_sparse_tensors") is not None
HAVE_INTERPRETER = importlib.util.find_spec("sparsecc.runtime.interpreter") is not None
HAVE_SPARSE_TENSOR = importlib.util.find_spec("sparsecc.runtime.sparse_tensor") is not None


@sparsecc.jit
def scale_kernel(X, Y, n, alpha, flag, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(X + offs, mask=mask, other=0.0)
    if flag:
        x = x * alpha
    tl.store(Y + offs, x, mask=mask)


class FakeSparse:
    """Duck-typed stand-in for sparsecc.SparseTensor (values, meta, encoding)."""

    def __init__(self, m: int, k: int, dtype=torch.float16, device="cpu"):
        gen = torch.Generator().manual_seed(m * 1000 + k)
        self.values = torch.randn(m, k // 2, generator=gen).to(dtype).to(device)
        self.meta = torch.full(((m + 15) // 16, k), 0x4444, dtype=torch.int16, device=device)
        self.shape = (m, k)
        self.dtype = dtype
        self.device = self.values.device
        self.encoding = "NV24"


@pytest.fixture(autouse=True)
def decompose_stub(monkeypatch):
    """Until decompose-sparse-tensors lands in this checkout, a no-op stands in for it."""
    if HAVE_DECOMPOSE:
        return
    from xdsl.passes import ModulePass

    from sparsecc import passes

    class NoOp(ModulePass):
        name = "decompose-sparse-tensors"

        def apply(self, ctx, op):  # noqa: ARG002
            return None

    monkeypatch.setitem(passes.PASSES, "decompose-sparse-tensors", lambda: NoOp)


@pytest.fixture
def fake_interpreter(monkeypatch):
    calls: list[dict] = []
    mod = types.ModuleType("sparsecc.runtime.interpreter")

    def run(module, func_name, grid, args):
        calls.append({"module": module, "func_name": func_name, "grid": grid, "args": list(args)})

    mod.run = run
    monkeypatch.setitem(sys.modules, "sparsecc.runtime.interpreter", mod)
    monkeypatch.delenv("SPARSECC_INTERPRET", raising=False)
    return calls


def fresh(kernel):
    kernel.cache.clear()
    return kernel


def test_sparse_tensor_specializes_to_nv24_and_flattens(fake_interpreter):
    k = fresh(dot_kernel)
    d = torch.zeros(32, 16, dtype=torch.float16)
    a = FakeSparse(32, 64)
    b = torch.randn(64, 16, dtype=torch.float16)
    k[(1,)](d, a, b, BLOCK_M=32, BLOCK_N=16, BLOCK_K=64)
    (call,) = fake_interpreter
    assert call["func_name"] == "dot_kernel"
    assert call["grid"] == (1, 1, 1)
    assert [x is y for x, y in zip(call["args"], [d, a.values, a.meta, b])] == [True] * 4
    (ck,) = k.cache.values()
    assert ck.signature == {"D": "*fp16", "A": "*fp16:NV24", "B": "*fp16"}
    assert ck.constexprs == {"BLOCK_M": 32, "BLOCK_N": 16, "BLOCK_K": 64}
    assert ck.flat_signature == ["*fp16", "*fp16", "*i16", "*fp16"]
    assert call["module"] is ck.module
    assert '#tt.sparse<"NV24">' in ck.asm["ttir"]


def test_compiles_once_per_specialization(fake_interpreter):
    k = fresh(dot_kernel)
    d = torch.zeros(32, 16, dtype=torch.float16)
    b = torch.randn(64, 16, dtype=torch.float16)
    blocks = {"BLOCK_M": 32, "BLOCK_N": 16, "BLOCK_K": 64}
    k[(2, 3)](d, FakeSparse(32, 64), b, **blocks)
    k[(2, 3)](d, FakeSparse(32, 64), b, **blocks)
    assert len(k.cache) == 1 and len(fake_interpreter) == 2
    assert fake_interpreter[0]["grid"] == (2, 3, 1)
    k[(1,)](d, FakeSparse(32, 64), b, **blocks, num_warps=8)  # options are part of the key
    k[(1,)](d, torch.randn(32, 64, dtype=torch.float16), b, **blocks)  # dense A: another signature
    assert len(k.cache) == 3
    dense = [ck for ck in k.cache.values() if ck.signature["A"] == "*fp16"]
    assert len(dense) == 1 and '#tt.sparse' not in dense[0].asm["ttir"]
    assert fake_interpreter[-1]["args"][1].shape == (32, 64)  # a dense tensor is passed as-is


def test_scalar_specialization_and_callable_grid(fake_interpreter):
    k = fresh(scale_kernel)
    x = torch.randn(100)
    y = torch.empty(100)
    seen = {}

    def grid(meta):
        seen.update(meta)
        return (triton_cdiv(min(meta["n"], 100), meta["BLOCK"]),)  # (2**40 / 32 programs: past CUDA's x limit)

    k[grid](x, y, 100, 0.5, True, BLOCK=32)
    k[grid](x, y, 2**40, 0.5, False, BLOCK=32)
    sigs = sorted((ck.signature["n"], ck.signature["alpha"], ck.signature["flag"]) for ck in k.cache.values())
    assert sigs == [("i32", "fp32", "i1"), ("i64:16", "fp32", "i1")]  # 2**40 is a multiple of 16
    assert seen["BLOCK"] == 32 and seen["num_warps"] == 4 and seen["num_stages"] == 3
    assert fake_interpreter[0]["grid"] == (4, 1, 1)
    assert fake_interpreter[0]["args"][2:] == [100, 0.5, True]


def triton_cdiv(a: int, b: int) -> int:
    return (a + b - 1) // b


def test_wrong_argument_count_names_kernel_and_parameters(fake_interpreter):
    k = fresh(dot_kernel)
    with pytest.raises(TypeError, match=r"dot_kernel\[grid\]\(\.\.\.\): missing a required argument: "
                                        r"'B'; parameters are \(D, A, B, BLOCK_M, BLOCK_N, BLOCK_K\)"):
        k[(1,)](torch.zeros(1), torch.zeros(1), BLOCK_M=32, BLOCK_N=16, BLOCK_K=64)
    with pytest.raises(TypeError, match="too many positional arguments"):
        k[(1,)](1, 2, 3, 4, 5, 6, 7)
    with pytest.raises(TypeError, match="argument 'D' of type str cannot be passed"):
        k[(1,)]("x", torch.zeros(1), torch.zeros(1), BLOCK_M=32, BLOCK_N=16, BLOCK_K=64)
    assert fake_interpreter == []


def test_gpu_tensors_go_to_the_launcher_with_the_device_target(monkeypatch):
    launches, targets = [], []
    launcher = types.ModuleType("sparsecc.runtime.launcher")
    launcher.launch = lambda ck, grid, args, num_warps: launches.append((ck, grid, args, num_warps))
    monkeypatch.setitem(sys.modules, "sparsecc.runtime.launcher", launcher)
    monkeypatch.setattr(jit_mod, "current_target", lambda: "sm_90")
    monkeypatch.delenv("SPARSECC_INTERPRET", raising=False)

    def fake_compile_module(ttir, opts):
        targets.append(opts.target)
        return StageResult(asm={"ttir": "", "ttir-decomposed": "", "ptx": "//ptx"}, module=ttir)

    monkeypatch.setattr(compile_mod, "compile_module", fake_compile_module)
    k = fresh(scale_kernel)
    x = torch.empty(64, device="meta")  # not on the CPU: the GPU path
    k[(2,)](x, x, 64, 1.0, True, BLOCK=32, num_warps=2)
    (ck, grid, args, nw), = launches
    assert targets == ["sm_90"] and ck.target == "sm_90" and grid == (2, 1, 1) and nw == 2
    assert args[0] is x and args[2:] == [64, 1.0, True]
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")  # forces the interpreter even off-CPU
    interp = types.ModuleType("sparsecc.runtime.interpreter")
    ran = []
    interp.run = lambda module, name, grid, args: ran.append(name)
    monkeypatch.setitem(sys.modules, "sparsecc.runtime.interpreter", interp)
    k[(2,)](x, x, 64, 1.0, True, BLOCK=32)
    assert ran == ["scale_kernel"] and targets[-1] is None


def test_sparsecc_namespace_is_cheap_and_lazy():
    assert callable(sparsecc.jit) and callable(sparsecc.compile)
    assert issubclass(sparsecc.CompilationError, Exception)
    assert sparsecc.CompileOptions().num_warps == 4
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        sparsecc.nope  # noqa: B018


@pytest.mark.skipif(not (HAVE_INTERPRETER and HAVE_SPARSE_TENSOR and HAVE_DECOMPOSE),
                    reason="needs the interpreter, SparseTensor and decompose-sparse-tensors")
def test_end_to_end_sparse_dot_on_the_interpreter(monkeypatch):
    monkeypatch.delenv("SPARSECC_INTERPRET", raising=False)
    torch.manual_seed(0)
    dense = sparsecc.prune_2to4(torch.randn(32, 64, dtype=torch.float16))
    a = sparsecc.compress(dense)
    b = torch.randn(64, 16, dtype=torch.float16)
    d = torch.full((32, 16), float("nan"), dtype=torch.float16)
    fresh(dot_kernel)[(1,)](d, a, b, BLOCK_M=32, BLOCK_N=16, BLOCK_K=64)
    ref = dense.float() @ b.float()
    assert torch.allclose(d.float(), ref, atol=2e-2 * 8, rtol=1e-2)


@sparsecc.jit
def add_constexpr_kernel(X, Y, F: tl.constexpr):
    tl.store(Y, tl.load(X) + F)


@sparsecc.jit
def store_constexpr_kernel(Y, F: tl.constexpr):
    tl.store(Y, F)


def test_constexprs_python_calls_equal_get_their_own_specializations(monkeypatch):
    """F=1 (an i32 constant: i32 max + 1 wraps) and F=1.0 (fp32: no wrap) are different kernels,
    though 1 == 1.0 in Python; so are True and 1, and -0.0 and 0.0. Each launch, first or
    repeated (the fast path), runs its own specialization; a NaN finds its own again."""
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    k = fresh(add_constexpr_kernel)
    x = torch.tensor([2**31 - 1], dtype=torch.int32)
    wraps, exact = -(2.0**31), 2.0**31  # (not a dict: its keys 1, 1.0 and True would collide too)
    for f, want in [(1, wraps), (1.0, exact), (True, wraps), (1, wraps), (1.0, exact), (True, wraps), (1.0, exact)]:
        y = torch.full((1,), float("nan"))
        k[(1,)](x, y, F=f)
        assert y.item() == want, (f, y.item())
    assert len(k.cache) == 3
    s = fresh(store_constexpr_kernel)
    for f in [0.0, -0.0, float("nan"), float("nan"), -0.0, 0.0]:
        y = torch.full((1,), 5.0)
        s[(1,)](y, f)  # positional: the fast path's per-argument key
        if f != f:
            assert y.isnan().item()
        else:
            assert y.item() == f and torch.signbit(y).item() == (str(f) == "-0.0"), (f, y.item())
    assert len(s.cache) == 3
    key = jit_mod.constexpr_key
    assert len({key(1), key(1.0), key(True), key(-0.0), key(0.0), key((1,)), key((1.0,))}) == 7
    assert key(float("nan")) == key(float("nan")) and key(tl.constexpr(2)) == key(2)


def test_grids_and_launch_options_must_be_ints_never_truncated(fake_interpreter):
    """grid=(1.9,) and num_warps=4.7 used to launch as 1 and 4; now each is one error naming
    the kernel and the value, raised before anything runs, on the first launch and on a repeat."""
    k = fresh(scale_kernel)
    x, y = torch.randn(100), torch.empty(100)
    k[(4,)](x, y, 100, 0.5, True, BLOCK=32)
    for grid, error, message in [
        ((1.9,), TypeError, r"scale_kernel\[grid\]: grid extent x must be an int, got float 1.9"),
        ((True,), TypeError, r"grid extent x must be an int, got bool True"),
        ((4, 2.0), TypeError, r"grid extent y must be an int, got float 2.0"),
        ((-1,), ValueError, r"grid extent x must be non-negative, got -1"),
        ((4, 70000), ValueError, r"grid extent y = 70000 exceeds CUDA's limit of 65535"),
        (lambda meta: (meta["n"] / meta["BLOCK"],), TypeError, r"got float 3.125"),
        ("4", TypeError, r"grid must be a tuple of 1 to 3 ints"),
    ]:
        with pytest.raises(error, match=message):
            k[grid](x, y, 100, 0.5, True, BLOCK=32)
    for option, value in [("num_warps", 4.7), ("num_warps", True), ("num_stages", 2.5), ("num_ctas", 2.0),
                          ("num_ctas", True)]:
        with pytest.raises(ValueError, match=rf"scale_kernel\[grid\]\(...\): {option} must be .*, got {value!r}"):
            k[(4,)](x, y, 100, 0.5, True, BLOCK=32, **{option: value})
    assert [c["grid"] for c in fake_interpreter] == [(4, 1, 1)]
    k[(4,)](x, y, 100, 0.5, True, BLOCK=32, num_warps=4)  # the fast path is still taken for good ones
    assert [c["grid"] for c in fake_interpreter] == [(4, 1, 1)] * 2


def test_a_switch_changed_in_the_process_takes_effect_after_drop_fast_paths(monkeypatch):
    """The launch fast path keeps the kernel its specialization's first launch compiled: a switch
    set in the environment afterwards changes nothing until `drop_fast_paths()`, after which the
    next launch takes the full path, reads it, and compiles (and caches) a kernel of its own."""
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    monkeypatch.delenv("SPARSECC_TMA", raising=False)
    k = fresh(add_constexpr_kernel)
    x = torch.tensor([3], dtype=torch.int32)
    y = torch.zeros(1, dtype=torch.int32)
    k[(1,)](x, y, F=4)
    k[(1,)](x, y, F=4)
    assert len(k.cache) == 1 and len(k.fast) == 1
    monkeypatch.setenv("SPARSECC_TMA", "0")
    k[(1,)](x, y, F=4)
    assert len(k.cache) == 1  # the fast path: the environment was not read
    jit_mod.drop_fast_paths()
    assert not k.fast
    y.zero_()
    k[(1,)](x, y, F=4)
    assert y.item() == 7 and len(k.cache) == 2
    assert any(not key[2].tma for key in k.cache)
