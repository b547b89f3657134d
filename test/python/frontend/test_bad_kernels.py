"""Every bad kernel of the gallery (bad_kernels.py) fails with one located user error, the same
one on the CPU interpreter (a launch with CPU tensors) and when compiled for the H100
(`target="sm_90a"`, which runs every stage but the launch on this machine). Kernels the
interpreter runs but the GPU cannot must say so at the offending line; bad launches fail before
either path is chosen. bench/results/bad-kernels.md lists what each did before these checks."""

from __future__ import annotations

import importlib
import inspect
import os

import bad_kernels as bk
import pytest

import sparsecc
from sparsecc.frontend.errors import CompilationError
from sparsecc.frontend.jit import specialize

jit_mod = importlib.import_module("sparsecc.frontend.jit")

ids = lambda cases: [c.name for c in cases]  # noqa: E731


def expected_line(case: bk.Case) -> int:
    """The line the error must name: the one holding `case.line`, or the kernel's `def` line."""
    lines, first = inspect.getsourcelines(case.kernel.fn)
    if case.line is None:
        hits = [i for i, line in enumerate(lines) if line.lstrip().startswith("def ")]
    else:
        hits = [i for i, line in enumerate(lines) if case.line in line]
    assert hits, f"{case.name}: no line holds {case.line!r}"
    return first + hits[0]


def assert_located(err: CompilationError, case: bk.Case) -> None:
    text = str(err)
    assert os.path.samefile(err.file, bk.__file__), text
    assert err.line == expected_line(case), text
    assert case.phrase in err.message, text
    assert text.count("error:") == 1, text  # one error, not a chain of them
    first = text.splitlines()[0]
    assert first.startswith(f"{err.file}:{err.line}:{err.col}: error: "), text
    for internal in ("internal error", "Traceback", "AttributeError", "KeyError", "IndexError", "TypeError:"):
        assert internal not in text, text


def launch_on_the_interpreter(case: bk.Case) -> None:
    case.kernel[case.grid](*case.args(), **case.constexprs, **case.options)


def compile_for_the_gpu(case: bk.Case) -> sparsecc.CompiledKernel:
    k = case.kernel
    sig = {n: specialize(v, n, k.__name__) for n, v in zip(k.runtime_names, case.args())}
    return sparsecc.compile(k, sig, case.constexprs, target="sm_90a", **case.options)


@pytest.fixture
def interpret(monkeypatch):
    monkeypatch.setenv("SPARSECC_INTERPRET", "1")


@pytest.mark.parametrize("case", bk.CASES, ids=ids(bk.CASES))
def test_bad_kernel_on_the_interpreter(case, interpret):
    with pytest.raises(CompilationError) as info:
        launch_on_the_interpreter(case)
    assert_located(info.value, case)


@pytest.mark.parametrize("case", bk.CASES, ids=ids(bk.CASES))
def test_bad_kernel_compiled_for_sm_90a(case):
    with pytest.raises(CompilationError) as info:
        compile_for_the_gpu(case)
    assert_located(info.value, case)


@pytest.mark.parametrize("case", bk.GPU_ONLY_CASES, ids=ids(bk.GPU_ONLY_CASES))
def test_the_interpreter_runs_what_only_the_gpu_refuses(case, interpret):
    launch_on_the_interpreter(case)
    with pytest.raises(CompilationError) as info:
        compile_for_the_gpu(case)
    assert_located(info.value, case)
    assert "GPU" in info.value.message


def test_the_gpu_tile_limit_scales_with_num_warps():
    case = next(c for c in bk.GPU_ONLY_CASES if c.name == "big_gpu_tile")
    small = bk.Case(case.name, case.kernel, case.args, case.wrong, case.phrase, case.line, {"B": 256})
    assert compile_for_the_gpu(small).asm["ptx"]  # 256x256 at 4 warps: 512 per thread, the limit
    with pytest.raises(CompilationError, match=r"at most 512 per thread \(131072 elements at this num_warps\)"):
        compile_for_the_gpu(bk.Case(case.name, case.kernel, case.args, case.wrong, case.phrase, case.line,
                                    {"B": 512}, options={"num_warps": 8}))


@pytest.mark.parametrize("case", bk.LAUNCH_CASES, ids=ids(bk.LAUNCH_CASES))
@pytest.mark.parametrize("path", ["interpreter", "gpu"])
def test_bad_launch_fails_before_the_path_is_chosen(case, path, monkeypatch):
    """On the GPU path the launch compiles for sm_90a and must fail before the launcher runs."""
    if path == "interpreter":
        monkeypatch.setenv("SPARSECC_INTERPRET", "1")
    else:
        monkeypatch.delenv("SPARSECC_INTERPRET", raising=False)
        monkeypatch.setattr(jit_mod, "_on_cpu", lambda values: False)
        monkeypatch.setattr(jit_mod, "current_target", lambda: "sm_90a")

        def no_launch(*args, **kwargs):
            raise AssertionError("a bad launch reached the GPU launcher")

        import sparsecc.runtime.launcher as launcher

        monkeypatch.setattr(launcher, "launch", no_launch)
    with pytest.raises(TypeError) as info:
        launch_on_the_interpreter(case)
    assert case.phrase in str(info.value)
    assert case.kernel.__name__ in str(info.value) or "grid" in str(info.value)


def test_the_gallery_is_large_and_the_good_kernel_runs(interpret):
    import torch

    assert len(bk.CASES) + len(bk.GPU_ONLY_CASES) >= 20
    x = torch.zeros(16)
    bk.plain[(1,)](x, 10, BLOCK=16)
    assert x.tolist() == [1.0] * 10 + [0.0] * 6
    assert compile_for_the_gpu(bk.Case("plain", bk.plain, lambda: [x, 10], "", "", None, {"BLOCK": 16})).asm["ptx"]
